//! Which Copilot session a send goes to (docs/spec/cross-agent-mcp.md §5, "Copilot (VS Code
//! Agent Host)"): Copilot's own rules inside the resolution. The target is named — an exact
//! conversation name, the editor UUID, or the host's session URI (`copilotcli:/…`,
//! `ahp-session:/…`) — or a sticky pin; nothing is discovered, nothing is "newest", and no
//! session is ever created. The session must be on a live Agent Host (its editor's endpoint
//! registry names a running one): otherwise the send is refused, naming the session and that
//! VS Code must be open. There is no CLI fallback for Copilot, so every way that fails here
//! refuses before anything is queued.

use std::path::PathBuf;

use cross_agent_protocol::bridge::{Refusal, RefusalReason, Scope, TargetSelectedBy};
use cross_agent_stores::Session;
use cross_agent_stores::copilot::editor_uuid;
use cross_agent_stores::held::{HeldSessions, SessionRef};
use cross_agent_stores::resolve::Lookup;
use serde_json::json;

use super::admission::Admission;
use super::refusal;
use super::roots_for;
use super::target::{Resolved, TargetQuery, Unresolved, lookup_refusal};
use crate::Agent;

impl Admission {
    /// The Copilot session a send goes to, or why none can be.
    pub(super) fn resolve_copilot(&self, query: TargetQuery<'_>) -> Result<Resolved, Unresolved> {
        let params = query.params;
        if params.new_session {
            return Err(refused(
                RefusalReason::InvalidArguments,
                "new_session=true is not supported for Copilot: the bridge never creates a \
                 Copilot conversation. Create the chat in VS Code first, then send to its exact \
                 name, UUID or session URI. Nothing was sent"
                    .to_owned(),
                json!({"new_session": true}),
            ));
        }
        let (session, selected_by) = match query.explicit {
            Some(named) => {
                // A URI names the session by its editor UUID (the catalog's key).
                let key = editor_uuid(named).unwrap_or(named);
                let lookup = Lookup {
                    agent: Agent::Copilot,
                    scope: Scope::Any,
                    cwd: query.cwd,
                    bound: None,
                };
                // A chat created a moment ago may not be in the index yet.
                let found = self.look_up_named(
                    &params.caller,
                    key,
                    lookup,
                    |_| true,
                    |_, found| found.map(|found| found.session.to_session()),
                );
                let found = found
                    .map_err(|error| Unresolved::Refused(lookup_refusal(error, Agent::Copilot)))?;
                (found, TargetSelectedBy::Caller)
            }
            None => {
                let held = self.held_sessions(&params.caller, Agent::Copilot);
                (
                    self.copilot_pinned(query, held.sessions(Agent::Copilot))?,
                    TargetSelectedBy::Pin,
                )
            }
        };
        on_live_host(&session)?;
        let mut resolved = Resolved::of(&session, selected_by, query.cwd);
        // The SDK's events are where a lost answer is read back from, by its request token.
        resolved.transcript = sdk_events_of(query, &session);
        Ok(resolved)
    }

    /// A sticky pin's session: Copilot's only target when none is named.
    fn copilot_pinned(
        &self,
        query: TargetQuery<'_>,
        sessions: &HeldSessions,
    ) -> Result<Session, Unresolved> {
        let pin = self
            .current_pin(Agent::Copilot, query.cwd)?
            .map(|(pin, _)| pin)
            .filter(|pin| pin.sticky);
        let Some(pin) = pin else {
            return Err(refused(
                RefusalReason::RequireExplicitTarget,
                "Copilot needs its target named: pass session_id (the chat's exact name, its \
                 editor UUID or its session URI, as list_agent_sessions(agent=\"copilot\") shows \
                 them), or pin one with pin_agent_session(agent=\"copilot\", sticky). No Copilot \
                 session is discovered or created. Nothing was sent"
                    .to_owned(),
                json!({"session_id": null}),
            ));
        };
        sessions
            .iter()
            .find(|s| s.agent() == Agent::Copilot && s.session_id() == pin.session_id)
            .map(SessionRef::to_session)
            .ok_or_else(|| {
                refused(
                    RefusalReason::NoSuchSession,
                    format!(
                        "the pinned Copilot session {} is not in any VS Code catalog any more; \
                         pin another with pin_agent_session, or name one with session_id. \
                         Nothing was sent",
                        pin.session_id
                    ),
                    json!({"pinned": pin.session_id}),
                )
            })
    }
}

/// The session's editor has a running Agent Host; otherwise the send is refused.
fn on_live_host(session: &Session) -> Result<(), Unresolved> {
    let details = session.copilot.as_deref();
    if details.is_some_and(|d| d.live) {
        return Ok(());
    }
    let name = session
        .title
        .as_deref()
        .map_or_else(String::new, |title| format!(" (\"{title}\")"));
    let editor = details.map_or_else(
        || "its editor".to_owned(),
        |d| format!("the editor at {}", d.user_data_dir),
    );
    Err(refused(
        RefusalReason::NotAvailable,
        format!(
            "host not running: the Copilot session {}{name} is in VS Code's catalog, but no \
             Agent Host is running for {editor}. Open VS Code (the window holding this \
             session) and send again; Copilot is reached only through its running host, never \
             a CLI or a new session. Nothing was sent",
            session.session_id
        ),
        json!({"session_id": session.session_id}),
    ))
}

/// The SDK `events.jsonl` of the session's default chat, when its place and SDK id are known.
fn sdk_events_of(query: TargetQuery<'_>, session: &Session) -> Option<PathBuf> {
    let details = session.copilot.as_deref()?;
    cross_agent_stores::copilot::events_of(&roots_for(&query.params.caller).copilot, details)
}

fn refused(reason: RefusalReason, message: String, details: serde_json::Value) -> Unresolved {
    let refusal: Refusal = refusal(reason, message, details);
    Unresolved::Refused(refusal)
}
