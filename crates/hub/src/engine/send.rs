//! `send_to_*`: the guards in the spec's order (docs/spec/cross-agent-mcp.md §5, §6), each a function that lets a
//! send through or refuses it, then [`Admission::accept`](super::admission::Admission::accept). A refusal writes nothing: no record, no
//! payload, no hop.

use std::path::{Path, PathBuf};

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{
    Refusal, RefusalReason, SendParams, SendReceipt, SendResponse, TargetSelectedBy,
};
use serde_json::{Value, json};

use super::admission::{Admission, Neighbours};
use super::carriers::{NotTaken, gui_takes};
use super::copilot_caller::map_copilot_caller;
use super::receipt::{Acceptance, Conversation};
use super::target::{TargetQuery, Unresolved};
use super::{Engine, Resolved, non_blank, refusal};
use crate::Agent;
use crate::caller::{Caller, identify};
use crate::envelope;
use crate::settings::{CallSettings, UiHook};

/// Room kept for the envelope around a message that must fit in one argument.
const ENVELOPE_ALLOWANCE: usize = 4 * 1024;

/// A send another machine's daemon forwarded: the id it recorded the delivery under, and
/// where it came from.
pub(super) struct Forwarded {
    pub(super) delivery_id: String,
    pub(super) from_machine: Option<String>,
}

/// A guard's verdict: go on, or this refusal.
type Guard = std::result::Result<(), Refusal>;

/// Why a send did not go through: refused by a guard, or the engine failed.
enum Stopped {
    Refused(Refusal),
    Failed(crate::Error),
}

impl From<Refusal> for Stopped {
    fn from(refusal: Refusal) -> Self {
        Stopped::Refused(refusal)
    }
}

impl From<crate::Error> for Stopped {
    fn from(error: crate::Error) -> Self {
        Stopped::Failed(error)
    }
}

impl From<Unresolved> for Stopped {
    fn from(unresolved: Unresolved) -> Self {
        match unresolved {
            Unresolved::Refused(refusal) => Stopped::Refused(refusal),
            Unresolved::Failed(error) => Stopped::Failed(error),
        }
    }
}

/// One send as the guards see it.
struct Request<'a> {
    params: &'a SendParams,
    settings: &'a CallSettings,
    /// `session_id`, when not blank.
    explicit: Option<&'a str>,
}

impl Engine {
    /// `send_to_*`: refuses, or records the delivery and answers with a receipt at once.
    pub fn send(&self, params: SendParams) -> crate::Result<SendResponse> {
        self.inner.admission.send(params, self, None, None)
    }

    /// `send_forwarded`: a send another machine's daemon accepted for a session here, taken
    /// through the same guards and doors as a local one but recorded under the id that daemon
    /// gave it (docs/remote.md). An id already recorded is refused: nothing is sent twice.
    pub fn send_forwarded(
        &self,
        delivery_id: &str,
        from_machine: Option<&str>,
        params: SendParams,
    ) -> crate::Result<SendResponse> {
        let well_formed = delivery_id.starts_with("dlv_")
            && delivery_id.len() <= 64
            && delivery_id[4..].chars().all(|c| c.is_ascii_alphanumeric());
        if !well_formed {
            return Ok(SendResponse::Refused(refusal(
                RefusalReason::InvalidArguments,
                format!(
                    "the forwarded delivery id {delivery_id:?} is not one a daemon gives                      (`dlv_` and letters or digits); nothing was sent"
                ),
                json!({"delivery_id": delivery_id}),
            )));
        }
        if self.db().delivery(delivery_id)?.is_some() {
            return Ok(SendResponse::Refused(refusal(
                RefusalReason::InvalidArguments,
                format!(
                    "delivery {delivery_id} is already recorded on this machine: a forwarded                      send is taken once and never again; ask bridge_status(delivery_id) for it"
                ),
                json!({"delivery_id": delivery_id}),
            )));
        }
        let forwarded = Forwarded {
            delivery_id: delivery_id.to_owned(),
            from_machine: from_machine.map(str::to_owned),
        };
        self.inner
            .admission
            .send(params, self, None, Some(&forwarded))
    }

    /// A cross review's correction, sent through the same guards and doors as any send (panel
    /// first) from a caller that is no session, its envelope naming `reviewer`
    /// ([`envelope::reviewer_name`]) as the sender. The daemon's `review_correction` is the
    /// only caller, after the escalation guard.
    pub fn send_review_correction(
        &self,
        params: SendParams,
        reviewer: &str,
    ) -> crate::Result<SendResponse> {
        self.inner
            .admission
            .send(params, self, Some(reviewer), None)
    }
}

impl Admission {
    /// `send_to_*`, its decision recorded; `others` are the other parts it asks.
    pub(super) fn send(
        &self,
        params: SendParams,
        others: &dyn Neighbours,
        reviewer: Option<&str>,
        forwarded: Option<&Forwarded>,
    ) -> crate::Result<SendResponse> {
        let agent = params.agent;
        let response = match self.try_send(&params, others, reviewer, forwarded) {
            Ok(receipt) => SendResponse::Accepted(receipt),
            Err(Stopped::Refused(refusal)) => SendResponse::Refused(refusal),
            Err(Stopped::Failed(error)) => return Err(error),
        };
        self.decisions.record_all(events::send(agent, &response));
        Ok(response)
    }

    /// The guards, in order, then the acceptance. Everything before the target's resolution
    /// runs before any lookup.
    fn try_send(
        &self,
        params: &SendParams,
        others: &dyn Neighbours,
        reviewer: Option<&str>,
        forwarded: Option<&Forwarded>,
    ) -> Result<SendReceipt, Stopped> {
        let agent = params.agent;
        let settings = CallSettings::from_settings(&params.caller.settings);
        let request = Request {
            params,
            settings: &settings,
            explicit: non_blank(params.session_id.as_deref()),
        };
        settings_readable(&settings)?;
        agent_available(agent, &settings)?;
        arguments_valid(&request)?;
        explicit_target_given(&request)?;
        some_route_left(&settings)?;

        let mut caller = identify(&params.caller, &others.started_turns());
        if let Err(why) = map_copilot_caller(&mut caller, &params.caller) {
            return Err(refusal(
                RefusalReason::CallerUnresolved,
                why,
                json!({
                    "copilot_agent_session_id": caller.copilot_sdk_session,
                    "copilot_caller_session": caller.copilot_host_session,
                }),
            )
            .into());
        }
        not_the_same_agent(&request, &caller)?;

        let cwd_text = working_directory(params)?;
        let cwd = PathBuf::from(&cwd_text);
        let own_session = caller
            .session_id
            .as_deref()
            .filter(|_| caller.agent == Some(agent));
        let resolved = self.resolve(
            TargetQuery {
                agent,
                params,
                explicit: request.explicit,
                cwd: &cwd,
                scope: params.scope.unwrap_or(settings.scope),
                settings: &settings,
                own_session,
            },
            &others.live_panels(settings.ui_hook),
        )?;
        not_the_caller_itself(agent, own_session, &resolved, &caller)?;
        panel_not_required(&settings, agent, &resolved)?;
        headless_allowed(&settings, agent, &resolved, others)?;
        let conversation = self.hop_left(params, &settings, &caller)?;

        Ok(self.accept(
            Acceptance {
                params,
                caller: &caller,
                resolved,
                settings: &settings,
                conversation,
                cwd_text: &cwd_text,
                reviewer,
                forwarded,
            },
            others,
        )?)
    }

    /// The hop budget: the conversation given (or inherited from the turn that calls) has a
    /// hop left for this relay.
    fn hop_left(
        &self,
        params: &SendParams,
        settings: &CallSettings,
        caller: &Caller,
    ) -> Result<Conversation, Stopped> {
        let conversation_given = non_blank(params.conversation_id.as_deref())
            .map(str::to_owned)
            .or(caller.conversation_id.clone());
        let is_new = conversation_given.is_none();
        let conversation_id = conversation_given.unwrap_or_else(envelope::conversation_id);
        let spent = self.db().conversation_hops(&conversation_id)?;
        if spent >= settings.max_hops {
            return Err(refusal(
                RefusalReason::HopBudget,
                format!(
                    "conversation {conversation_id} has used all {} of its hops \
                     (CROSS_AGENT_MAX_HOPS); this relay would be hop {}. Keep the result in your \
                     own final message instead of relaying it",
                    settings.max_hops,
                    spent + 1
                ),
                json!({"conversation_id": conversation_id, "hops_spent": spent, "max_hops": settings.max_hops}),
            )
            .into());
        }
        Ok(Conversation {
            id: conversation_id,
            is_new,
            hop: spent + 1,
        })
    }
}

/// A guard spelled wrong must not quietly stop guarding.
fn settings_readable(settings: &CallSettings) -> Guard {
    if settings.invalid.is_empty() {
        return Ok(());
    }
    Err(refusal(
        RefusalReason::InvalidSetting,
        format!(
            "this registration's settings cannot all be read: {}. Fix the value in the MCP \
             registration (or the environment of `cross-agent send`). Nothing was sent and no \
             hop was spent",
            settings.invalid.join("; ")
        ),
        json!({"invalid": settings.invalid}),
    ))
}

/// A message to send, one that fits where the peer takes it, and no contradicting arguments.
fn arguments_valid(request: &Request<'_>) -> Guard {
    let params = request.params;
    if params.message.trim().is_empty() {
        return Err(refusal(
            RefusalReason::InvalidArguments,
            "the message is empty; write the request for the peer in `message`",
            Value::Null,
        ));
    }
    // Grok takes its prompt only as an argument: refuse here what `build` would refuse after
    // queueing, leaving room for the envelope around the message.
    if params.agent == Agent::Grok
        && params.message.len() + ENVELOPE_ALLOWANCE
            > cross_agent_transports::headless::MAX_ARGUMENT_BYTES
    {
        return Err(refusal(
            RefusalReason::InvalidArguments,
            format!(
                "the message is {} bytes; Grok takes its prompt only as a command-line argument, \
                 which holds at most {} bytes with the envelope. Send a shorter message (put the \
                 bulk in a file in the session's folder and name the file). Nothing was sent and \
                 no hop was spent",
                params.message.len(),
                cross_agent_transports::headless::MAX_ARGUMENT_BYTES - ENVELOPE_ALLOWANCE
            ),
            json!({"message_bytes": params.message.len()}),
        ));
    }
    if request.explicit.is_some() && params.new_session {
        return Err(refusal(
            RefusalReason::InvalidArguments,
            "session_id and new_session=true cannot be used together: one names an existing \
             session, the other asks for a new one. Pass one of them",
            json!({"session_id": params.session_id, "new_session": true}),
        ));
    }
    cwd_is_a_directory(params.cwd.as_deref())
}

/// A `cwd` the engine would otherwise meet only at delivery, long after the caller was told
/// the message was accepted: it must be the absolute path of an existing directory (the daemon
/// has no directory of the caller's to take a relative one from).
fn cwd_is_a_directory(cwd: Option<&str>) -> Guard {
    let Some(given) = cwd.filter(|cwd| !cwd.trim().is_empty()) else {
        return Ok(());
    };
    let path = Path::new(given);
    let problem = if !path.is_absolute() {
        "is not an absolute path".to_owned()
    } else {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(_) => "is not a directory".to_owned(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                "does not exist".to_owned()
            }
            Err(error) => format!("cannot be read ({error})"),
        }
    };
    Err(refusal(
        RefusalReason::InvalidArguments,
        format!(
            "`cwd` {given} {problem}: a send's cwd is where the target session is looked for \
             and where a new one starts, so it must be the absolute path of an existing \
             directory; nothing was sent"
        ),
        json!({"cwd": given}),
    ))
}

/// Strict mode (`CROSS_AGENT_REQUIRE_EXPLICIT_TARGET`), before any lookup: a send must name
/// its session or ask for a new one.
fn explicit_target_given(request: &Request<'_>) -> Guard {
    let params = request.params;
    if !request.settings.require_explicit_target || request.explicit.is_some() || params.new_session
    {
        return Ok(());
    }
    Err(refusal(
        RefusalReason::RequireExplicitTarget,
        format!(
            "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET is set for this registration, so a send must \
             say where it goes: pass session_id (a session id or an exact conversation name) or \
             new_session=true to {}. A pin does not count. Nothing was sent and no hop was spent",
            params.agent.send_tool()
        ),
        json!({"session_id": params.session_id, "new_session": params.new_session}),
    ))
}

/// Panels off and headless off: no route is left, so refuse before any lookup.
fn some_route_left(settings: &CallSettings) -> Guard {
    if !(settings.disable_headless && settings.ui_hook == UiHook::Off) {
        return Ok(());
    }
    Err(refusal(
        RefusalReason::DisableHeadless,
        "CROSS_AGENT_UI_HOOK=off and CROSS_AGENT_DISABLE_HEADLESS are both set for this \
         registration: the first rules out editor panels, the second a headless CLI, so every \
         send is refused. Unset one of them. Nothing was sent, queued or spent",
        json!({"ui_hook": settings.ui_hook.as_str(), "disable_headless": true}),
    ))
}

/// Copilot is reached only through its editor's Agent Host, which `CROSS_AGENT_UI_HOOK=off`
/// rules out with the panels; there is no CLI to fall back to. Refused before any lookup.
fn agent_available(agent: Agent, settings: &CallSettings) -> Guard {
    match agent {
        Agent::Claude | Agent::Codex | Agent::Grok => Ok(()),
        Agent::Copilot if settings.ui_hook != UiHook::Off => Ok(()),
        Agent::Copilot => Err(refusal(
            RefusalReason::NotAvailable,
            "CROSS_AGENT_UI_HOOK=off is set for this registration: Copilot is reached only \
             through VS Code's Agent Host, which that setting rules out, and it has no CLI \
             fallback. Unset it (or set auto) to send to Copilot. Nothing was sent, queued or \
             spent"
                .to_owned(),
            json!({"target_agent": agent, "ui_hook": "off"}),
        )),
    }
}

/// The self-call guard: the peer tools cross from one product to another, so a call into the
/// caller's own agent must name its session (or, for Claude and Grok, say it means it).
fn not_the_same_agent(request: &Request<'_>, caller: &Caller) -> Guard {
    let params = request.params;
    let agent = params.agent;
    if caller.agent != Some(agent) {
        return Ok(());
    }
    let allowed = match agent {
        Agent::Claude | Agent::Grok => request.explicit.is_some() || params.allow_same_agent,
        Agent::Codex => request.explicit.is_some(),
        // Copilot never discovers: without a name, its only target is a sticky pin, which
        // allow_same_agent lets a Copilot caller use.
        Agent::Copilot => request.explicit.is_some() || params.allow_same_agent,
    };
    if allowed {
        return Ok(());
    }
    let elsewhere: Vec<&str> = Agent::ALL
        .iter()
        .filter(|a| **a != agent)
        .map(|a| a.send_tool())
        .collect();
    let how = match agent {
        Agent::Claude | Agent::Grok => {
            "name the session with session_id, or pass allow_same_agent=true"
        }
        Agent::Codex => "name the thread with session_id (send_to_codex has no allow_same_agent)",
        Agent::Copilot => "name the session with session_id",
    };
    Err(refusal(
        RefusalReason::SelfCall,
        format!(
            "this call comes from a {} session, and {} would relay into another session of the \
             same agent. The peer tools cross from one product to another: use {} to reach \
             another agent. To reach another {agent} session on purpose, {how}",
            agent.product_name(),
            agent.send_tool(),
            elsewhere.join(" or "),
        ),
        json!({"caller": caller.to_json(), "target_agent": agent}),
    ))
}

/// The directory the send is made from: `cwd`, else the caller's.
fn working_directory(params: &SendParams) -> Result<String, Refusal> {
    non_blank(params.cwd.as_deref())
        .or(non_blank(params.caller.cwd.as_deref()))
        .map(str::to_owned)
        .ok_or_else(|| {
            refusal(
                RefusalReason::InvalidArguments,
                "no working directory: pass cwd (the caller's directory was not sent either)",
                Value::Null,
            )
        })
}

/// A session cannot send to itself.
fn not_the_caller_itself(
    agent: Agent,
    own_session: Option<&str>,
    resolved: &Resolved,
    caller: &Caller,
) -> Guard {
    match (own_session, resolved.session_id.as_deref()) {
        (Some(own), Some(target)) if own == target => Err(refusal(
            RefusalReason::SelfCall,
            format!(
                "{agent} session {own} is the calling session itself; a session cannot send to \
                 itself. Name another session with session_id"
            ),
            json!({"caller": caller.to_json()}),
        )),
        _ => Ok(()),
    }
}

/// `CROSS_AGENT_UI_HOOK=require` (docs/spec/cross-agent-mcp.md "Never starting a headless CLI"): a send that names
/// no session (or asks for a new conversation) must go into a panel — the conversation in
/// front in this window's panel, or a new one a panel of this window opens. A session named by
/// `session_id` or a pin that no panel holds still goes over its CLI.
fn panel_not_required(settings: &CallSettings, agent: Agent, resolved: &Resolved) -> Guard {
    if settings.ui_hook != UiHook::Require
        || resolved.panel.is_some()
        || !matches!(
            resolved.selected_by,
            TargetSelectedBy::Discovery | TargetSelectedBy::NewSession
        )
    {
        return Ok(());
    }
    let what = match (&resolved.selected_by, &resolved.session_id) {
        (TargetSelectedBy::Discovery, Some(id)) => format!(
            "names no session, no conversation is open in this window's {agent} panel, and \
             discovery found {agent} session {id} in {} on disk only",
            resolved.cwd.display()
        ),
        _ => format!(
            "would open a new {agent} conversation, and no {agent} panel of this window can open \
             one"
        ),
    };
    Err(refusal(
        RefusalReason::UiHookRequire,
        format!(
            "CROSS_AGENT_UI_HOOK=require is set for this registration, and this send {what}; \
             it requires a panel and never falls back to a CLI. Open the conversation in its \
             editor panel, name the session with session_id or pin_agent_session to reach it \
             over its CLI, or set CROSS_AGENT_UI_HOOK to auto. Nothing was sent, queued or spent"
        ),
        json!({
            "ui_hook": settings.ui_hook.as_str(),
            "target_selected_by": resolved.selected_by,
            "target_session_id": resolved.session_id,
        }),
    ))
}

/// `CROSS_AGENT_DISABLE_HEADLESS`: a send must go into a session an editor panel holds (or,
/// for Copilot, its Agent Host), or through the GUI door when the person turned the GUI
/// fallback on (`carriers::gui`).
fn headless_allowed(
    settings: &CallSettings,
    agent: Agent,
    resolved: &Resolved,
    others: &dyn Neighbours,
) -> Guard {
    // Copilot is never reached headless: its route is its running Agent Host.
    if !settings.disable_headless || resolved.panel.is_some() || agent == Agent::Copilot {
        return Ok(());
    }
    let gui = gui_takes(agent, resolved, settings, &others.control_config());
    let gui_hint = match gui {
        Ok(()) => return Ok(()),
        Err(NotTaken::Off(how)) if resolved.session_id.is_some() => format!(
            " The GUI fallback could paste it into the session's editor window, but it is \
             off: turn it on with {how}."
        ),
        Err(NotTaken::Unreadable(why)) => format!(" The GUI fallback's settings: {why}."),
        Err(NotTaken::Off(_) | NotTaken::NotItsKind) => String::new(),
    };
    let which = resolved.session_id.as_deref().map_or_else(
        || format!("the new {agent} session it would create"),
        |id| format!("{agent} session {id}"),
    );
    Err(refusal(
        RefusalReason::DisableHeadless,
        format!(
            "CROSS_AGENT_DISABLE_HEADLESS is set for this registration, so a send must reach a \
             session an editor panel holds, and no live panel holds {which}. Open the \
             conversation in its panel first, or leave the setting off for this send.{gui_hint} \
             Nothing was sent, queued or spent"
        ),
        json!({"target_session_id": resolved.session_id}),
    ))
}
