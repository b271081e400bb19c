//! An accepted send: its delivery record, the job its worker runs, the automatic pin of a
//! created session, and the receipt the caller gets at once.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cross_agent_protocol::bridge::{
    DeliveryRecord, DeliveryState, PeerQueue, Pin, SendParams, SendReceipt, TargetKey,
    TargetSelectedBy, Transport,
};
use cross_agent_protocol::events::EngineEvent;
use cross_agent_protocol::settings as var;
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::UnixMillis;

use super::admission::{Admission, Neighbours};
use super::carriers::RouteQuery;
use super::{Resolved, cwd_key, roots_for};
use crate::Agent;
use crate::caller::Caller;
use crate::envelope::{self, EnvelopeFields};
use crate::error::Result;
use crate::records::{Job, QueueInfo};
use crate::settings::CallSettings;

/// A target idle longer than this gets a warning: resuming it starts a turn nobody watches.
const IDLE_WARNING_SECS: u64 = 24 * 60 * 60;

/// The conversation a send belongs to and the hop it spends.
#[derive(Debug, Clone)]
pub(super) struct Conversation {
    pub(super) id: String,
    /// Opened by this send (none was given or inherited).
    pub(super) is_new: bool,
    pub(super) hop: u32,
}

/// Everything the guards let through: what [`Admission::accept`] writes.
pub(super) struct Acceptance<'a> {
    pub(super) params: &'a SendParams,
    pub(super) caller: &'a Caller,
    pub(super) resolved: Resolved,
    pub(super) settings: &'a CallSettings,
    pub(super) conversation: Conversation,
    /// The directory the send was made from (the pin key of a created session).
    pub(super) cwd_text: &'a str,
    /// A cross review's correction: the reviewer the envelope names as its sender.
    pub(super) reviewer: Option<&'a str>,
    /// A send forwarded by another machine's daemon: its id and origin.
    pub(super) forwarded: Option<&'a super::send::Forwarded>,
}

/// When a send was accepted and what it is called: fixed once, at acceptance.
struct Stamp {
    now_ms: i64,
    now: String,
    delivery_id: String,
    request_id: String,
}

impl Stamp {
    fn now() -> Stamp {
        let now_ms = UnixMillis::now().0;
        Stamp {
            now_ms,
            now: now_rfc3339(),
            delivery_id: envelope::delivery_id(),
            request_id: envelope::request_id(now_ms),
        }
    }
}

/// What the queue held in front of the new delivery, and whether the peer works now.
struct InLine {
    queue: QueueInfo,
    peer_working: bool,
}

impl Admission {
    /// Writes an accepted send — its record, its payload and its hop, in one transaction — and
    /// answers with its receipt.
    pub(super) fn accept(
        &self,
        acceptance: Acceptance<'_>,
        others: &dyn Neighbours,
    ) -> Result<SendReceipt> {
        let mut stamp = Stamp::now();
        if let Some(forwarded) = acceptance.forwarded {
            // Both machines' records carry the sender's id (docs/remote.md).
            stamp.delivery_id = forwarded.delivery_id.clone();
        }
        let target_key = match &acceptance.resolved.session_id {
            Some(id) => TargetKey::new(acceptance.params.agent, id.as_str()),
            None => TargetKey::new_session(acceptance.params.agent, &stamp.delivery_id),
        }
        .to_string();
        let mut job = job_of(&acceptance, &stamp);
        // The one place a send's transport is chosen: the first carrier that takes it.
        let transport = others.route(
            &RouteQuery {
                agent: acceptance.params.agent,
                params: acceptance.params,
                caller: acceptance.caller,
                resolved: &acceptance.resolved,
            },
            &mut job,
        );
        let record = self.record_of(&acceptance, &stamp, transport);
        let in_line = self.enqueue(&acceptance, &stamp, &record, &target_key, &job, others)?;
        others.queued();
        self.emit(EngineEvent::DeliveryAccepted {
            delivery_id: stamp.delivery_id.clone(),
            target_agent: record.target_agent,
            target_session_id: record.target_session_id.clone(),
            transport,
        });
        Ok(self.receipt(
            acceptance,
            stamp,
            in_line,
            (transport, job.timeout_secs),
            others,
        ))
    }

    /// The delivery's record as it is queued.
    fn record_of(
        &self,
        acceptance: &Acceptance<'_>,
        stamp: &Stamp,
        transport: Transport,
    ) -> DeliveryRecord {
        let Acceptance {
            params,
            caller,
            resolved,
            settings,
            conversation,
            ..
        } = acceptance;
        let will_create = resolved.new_reason.is_some();
        let (delivery_id, request_id, now) = (&stamp.delivery_id, &stamp.request_id, &stamp.now);
        let (conversation_id, hop) = (&conversation.id, conversation.hop);
        let transcript = transcript_of(params, resolved);
        DeliveryRecord {
            forwarded_from: acceptance.forwarded.map(|f| {
                f.from_machine
                    .clone()
                    .unwrap_or_else(|| "another machine".to_owned())
            }),
            request_id: request_id.clone(),
            target_session_id: resolved.session_id.clone(),
            target_cwd: Some(resolved.cwd.to_string_lossy().into_owned()),
            target_selected_by: resolved.selected_by,
            will_create_session: will_create,
            conversation_id: conversation_id.clone(),
            hop,
            max_hops: settings.max_hops,
            transport,
            carrier_generation: Some(self.generation),
            target_transcript: transcript.map(|p| p.to_string_lossy().into_owned()),
            ..fresh_record(
                delivery_id.clone(),
                DeliveryState::Queued,
                caller,
                params,
                now.clone(),
            )
        }
    }

    /// Writes the record, its payload and (for a created session) its automatic pin in one
    /// transaction, and says what was in line before it.
    fn enqueue(
        &self,
        acceptance: &Acceptance<'_>,
        stamp: &Stamp,
        record: &DeliveryRecord,
        target_key: &str,
        job: &Job,
        others: &dyn Neighbours,
    ) -> Result<InLine> {
        let agent = record.target_agent;
        let resolved = &acceptance.resolved;
        let will_create = record.will_create_session;
        // Busy by the dispatcher's own rule (docs/spec/cross-agent-mcp.md §9): an open turn the bridge started and
        // stopped (killed for inactivity, orphaned by a crash) is nobody's work. Read before
        // the store's guard is taken: the check reads `hub.db` itself.
        let peer_working = match (&record.target_transcript, will_create) {
            (Some(path), false) => {
                others.someone_else_working(agent, target_key, std::path::Path::new(path))
            }
            (None, _) | (_, true) => resolved.is_working,
        };
        let mut db = self.db();
        let queue = db.queue_info(target_key)?;
        db.insert_delivery(record, target_key, stamp.now_ms, job, true)?;
        // A created Claude or Grok session has its id now: pin it at once, so the next send
        // queues behind this one instead of creating another.
        if will_create && let Some(id) = &resolved.session_id {
            db.set_pin(
                &Pin {
                    agent,
                    session_id: id.clone(),
                    title: None,
                    cwd: Some(resolved.cwd.to_string_lossy().into_owned()),
                    sticky: false,
                    pinned_at: stamp.now.clone(),
                },
                &job.pin_cwd_key,
                stamp.now_ms,
            )?;
        }
        Ok(InLine {
            queue,
            peer_working,
        })
    }

    /// The receipt the caller gets at once: where the message goes, what is in line, the
    /// warnings, and where its answer will be.
    fn receipt(
        &self,
        acceptance: Acceptance<'_>,
        stamp: Stamp,
        in_line: InLine,
        (transport, timeout_secs): (Transport, u64),
        others: &dyn Neighbours,
    ) -> SendReceipt {
        let Acceptance {
            params,
            caller,
            resolved,
            settings,
            conversation:
                Conversation {
                    id: conversation_id,
                    is_new: conversation_is_new,
                    hop,
                },
            ..
        } = acceptance;
        let Stamp {
            now_ms,
            delivery_id,
            request_id,
            ..
        } = stamp;
        let InLine {
            queue,
            peer_working,
        } = in_line;
        let agent = params.agent;
        let will_create = resolved.new_reason.is_some();
        let idle_secs = resolved
            .last_activity
            .map(|last| u64::try_from((now_ms - last.0).max(0) / 1000).unwrap_or(0));
        let mut warnings = target_warnings(agent, &resolved, idle_secs);
        if queue.queued + queue.running > 0 || peer_working {
            warnings.push(format!(
                "the peer session is busy ({} delivery(ies) ahead); this message waits in line \
                 and goes out when the session is free",
                queue.queued + queue.running
            ));
        }
        if conversation_is_new && caller.started_turn.is_some() {
            warnings.push(
                "a new conversation was opened although this call comes from a turn the bridge \
                 started; pass conversation_id to share the hop budget"
                    .to_owned(),
            );
        }
        // A Copilot sender's own session on the host that runs its MCP process counts as a
        // panel: the answer goes back there (checked again when it comes).
        let return_panel = caller.copilot_return.is_some()
            || others.has_return_panel(
                &params.caller,
                caller.agent,
                caller.session_id.as_deref(),
                settings,
            );
        if !return_panel {
            warnings.push(format!(
                "return_panel_available_now is false: the sender has no open panel for the \
                 answer to arrive in, so it will not come back as a message here. Read it with \
                 bridge_status(delivery_id=\"{delivery_id}\")"
            ));
        }
        let how = match (&resolved.panel, transport) {
            (_, Transport::AgentHost) => {
                "in the Copilot chat in VS Code, handed to the editor's running Agent Host"
                    .to_owned()
            }
            (Some(choice), _) => format!(
                "in the {agent} editor panel (shim pid {}), where the person watching sees it",
                choice.shim_pid
            ),
            (None, Transport::ClaudeNative) => {
                format!("in the live {agent} session, through its own cross-session messaging")
            }
            (None, Transport::Gui) => format!(
                "in the {agent} chat of its editor window, pasted there through the desktop \
                 (the GUI fallback)"
            ),
            (None, Transport::HeadlessCli | Transport::Panel) => {
                format!("in the background (headless {agent} CLI)")
            }
        };
        let back = if return_panel {
            "Its answer comes back into this session's panel as a BRIDGE REPLY when the turn \
             ends (this probe is not a promise: the route is resolved again then)"
                .to_owned()
        } else {
            "Its answer stays on the delivery record".to_owned()
        };
        let note = format!(
            "Accepted; no answer yet. The peer's turn runs {how}. {back}: read it any time with \
             bridge_status(delivery_id=\"{delivery_id}\")."
        );
        SendReceipt {
            delivery_id,
            host: None,
            accepted: true,
            note,
            target_agent: agent,
            target_session_id: resolved.session_id.clone(),
            target_title: resolved.title.clone(),
            target_selected_by: resolved.selected_by,
            transport,
            caller_supplied_session_id: params.session_id.clone(),
            will_create_session: will_create,
            target_last_activity_seconds_ago: idle_secs,
            queue_depth: queue.queued + queue.running,
            peer_queue: PeerQueue {
                queued_ahead: queue.queued,
                oldest_waiting_seconds: queue
                    .oldest_queued_ms
                    .map(|t| u64::try_from((now_ms - t).max(0) / 1000).unwrap_or(0)),
                peer_turn: Some(
                    if queue.running > 0 || peer_working {
                        "running"
                    } else {
                        "idle"
                    }
                    .to_owned(),
                ),
            },
            reply_lands_in_session: caller.session_id.clone(),
            return_panel_available_now: return_panel,
            conversation_id,
            hop,
            max_hops: settings.max_hops,
            request_id,
            idle_policy: match transport {
                Transport::AgentHost => format!(
                    "the answer is awaited up to {timeout_secs} s after the hand-over; the host \
                     runs the turn, and the message is never re-sent"
                ),
                Transport::Gui => format!(
                    "the answer is read from the session's transcript; inactivity timeout \
                     {timeout_secs} s of a still transcript after the paste, and the message is \
                     never re-sent"
                ),
                Transport::HeadlessCli | Transport::Panel | Transport::ClaudeNative => format!(
                    "inactivity timeout {timeout_secs} s, reset by CLI output or transcript \
                     writes; no wall-clock limit"
                ),
            },
            warnings,
        }
    }
}

/// The payload its worker runs (before a carrier writes its route into it).
fn job_of(acceptance: &Acceptance<'_>, stamp: &Stamp) -> Job {
    let Acceptance {
        params,
        caller,
        resolved,
        settings,
        conversation:
            Conversation {
                id: conversation_id,
                hop,
                ..
            },
        cwd_text,
        reviewer,
        ..
    } = acceptance;
    let (agent, hop, request_id) = (params.agent, *hop, &stamp.request_id);
    let will_create = resolved.new_reason.is_some();
    let body = if params.raw {
        params.message.clone()
    } else {
        envelope::body(
            &EnvelopeFields {
                from_agent: caller.agent,
                from_session: caller.session_id.as_deref(),
                conversation_id,
                hop,
                max_hops: settings.max_hops,
                request_id,
                from_telegram: caller.agent.is_none()
                    && reviewer.is_none()
                    && params.caller.client_name.as_deref() == Some(envelope::TELEGRAM_CLIENT),
                from_reviewer: *reviewer,
            },
            &params.message,
        )
    };
    // The child runs a bridge configured like the caller's: its settings (never
    // CROSS_AGENT_SELF), the conversation, and who it is.
    let mut bridge_env: BTreeMap<String, String> = params
        .caller
        .settings
        .iter()
        .filter(|(k, _)| k.starts_with(var::PREFIX) && k.as_str() != var::SELF)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    bridge_env.insert(var::CONVERSATION_ID.into(), conversation_id.clone());
    bridge_env.remove(var::SELF_SESSION);
    if let Some(id) = &resolved.session_id {
        bridge_env.insert(
            var::SELF_SESSION.into(),
            TargetKey::new(agent, id.as_str()).to_string(),
        );
    }
    Job {
        body,
        raw: params.raw,
        settings: params.caller.settings.clone(),
        child_env: params.caller.child_env.clone(),
        bridge_env,
        cwd: resolved.cwd.to_string_lossy().into_owned(),
        new_session_id: resolved.session_id.clone().filter(|_| will_create),
        timeout_secs: params
            .timeout
            .filter(|t| *t > 0)
            .unwrap_or(settings.timeout_secs),
        withheld_env: params.caller.withheld_env.clone(),
        pin_cwd_key: cwd_key(Some(cwd_text)),
        panel: None,
        native: None,
        agent_host: None,
        copilot_return: caller.copilot_return.clone(),
    }
}

/// Where the target's transcript is (or, for a Claude session not written yet, will be).
fn transcript_of(params: &SendParams, resolved: &Resolved) -> Option<PathBuf> {
    let agent = params.agent;
    resolved.transcript.clone().or_else(|| match agent {
        Agent::Claude => {
            let roots = roots_for(&params.caller);
            let id = resolved.session_id.as_deref()?;
            Some(
                cross_agent_stores::claude::projects_dir(roots.claude_config.as_deref()?)
                    .join(cross_agent_stores::claude::project_slug(&resolved.cwd))
                    .join(format!("{id}.jsonl")),
            )
        }
        Agent::Codex | Agent::Grok | Agent::Copilot => None,
    })
}

/// The warnings about the target itself: how it was chosen, where it is, how long it slept.
fn target_warnings(agent: Agent, resolved: &Resolved, idle_secs: Option<u64>) -> Vec<String> {
    let mut warnings = Vec::new();
    match resolved.selected_by {
        TargetSelectedBy::Discovery => warnings.push(format!(
            "unaddressed relay: nobody named the target, so the most recently active {agent} \
                 session in scope was chosen ({}). Check target_session_id is the conversation \
                 you meant; pass session_id every time for anything automated or continuing",
            resolved.session_id.as_deref().unwrap_or("?")
        )),
        TargetSelectedBy::PanelFocus => warnings.push(format!(
            "unaddressed relay: nobody named the target, so the conversation in front in \
                 this window's {agent} panel was chosen ({}, by {}). It moves when the person \
                 switches tabs: check target_session_id is the conversation you meant, and pass \
                 session_id every time for anything automated or continuing",
            resolved.session_id.as_deref().unwrap_or("?"),
            resolved
                .panel
                .as_ref()
                .and_then(|p| p.selected_by)
                .unwrap_or("panel focus")
        )),
        TargetSelectedBy::Caller | TargetSelectedBy::Pin | TargetSelectedBy::NewSession => {}
    }
    if let Some(choice) = resolved.panel.as_ref().filter(|p| p.other_window) {
        warnings.push(format!(
            "{agent} session {} is open in another VS Code window's panel (shim pid {}); \
                 it goes there because session_id named it",
            choice.session_id.as_deref().unwrap_or("?"),
            choice.shim_pid
        ));
    }
    if let Some(reason) = &resolved.new_reason {
        warnings.push(format!(
            "a new {agent} session is opened in {}: {reason}. It starts with no context; it \
                 is pinned, so later sends from here reach it",
            resolved.cwd.display()
        ));
    }
    if resolved.panel.is_none() && idle_secs.is_some_and(|s| s > IDLE_WARNING_SECS) {
        warnings.push(format!(
            "the target session has been idle for {} hours; resuming it starts a turn \
                 nobody is watching",
            idle_secs.unwrap_or(0) / 3600
        ));
    }
    warnings
}

/// A delivery's record as a send opens it, in `state`: from the caller to `params`' agent,
/// nothing happened to it yet (no start, finish, error, answer or related delivery), the
/// message's length counted. Each kind of send sets what it knows besides.
pub(super) fn fresh_record(
    delivery_id: String,
    state: DeliveryState,
    caller: &Caller,
    params: &SendParams,
    created_at: String,
) -> DeliveryRecord {
    DeliveryRecord {
        delivery_id,
        host: None,
        forwarded_from: None,
        request_id: String::new(),
        state,
        from_agent: caller.agent,
        from_session: caller.session_id.clone(),
        target_agent: params.agent,
        target_session_id: None,
        target_cwd: None,
        target_selected_by: TargetSelectedBy::Discovery,
        will_create_session: false,
        conversation_id: String::new(),
        hop: 0,
        max_hops: 0,
        transport: Transport::unnamed(),
        created_at,
        started_at: None,
        finished_at: None,
        expires_at: None,
        carrier_generation: None,
        peer_pid: None,
        error: None,
        is_killed_by_timeout: false,
        is_stopped_with_carrier: false,
        is_reply_recovered: false,
        is_undelivered: false,
        reply_preview: None,
        late_reply_delivery_id: None,
        return_delivery_id: None,
        progress_delivery_id: None,
        progress_note: None,
        message_chars: u64::try_from(params.message.chars().count()).unwrap_or(u64::MAX),
        is_orphaned: false,
        // Decided when the answer exists: the route back is resolved again then.
        is_return_status_only: false,
        target_transcript: None,
        outcome: None,
        answer: Default::default(),
    }
}
