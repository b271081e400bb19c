//! What the engine knows, live, of whether one session is idle — for the cross review's
//! escalation guard, which may put a correction only into a session whose last turn has ended
//! and that waits on nobody's approval (docs/review.md). Every source the engine has is asked:
//! the bridge's own deliveries to it (queued or under way), the turn open in its transcript
//! (the busy watch's rule: someone else's work, not a turn the bridge started and stopped),
//! the panel holding it (its state and the approvals its shim lists), and a live Copilot
//! host's word on it.

use std::path::{Path, PathBuf};

use cross_agent_protocol::bridge::{CallerContext, TargetKey};
use cross_agent_protocol::panel::PanelSessionState;
use cross_agent_transports::panel::window;

use super::Engine;
use crate::Agent;
use crate::error::Result;
use crate::settings::UiHook;

/// One session as the engine sees it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionActivity {
    /// Its transcript (a Copilot session's: its default chat's SDK `events.jsonl`).
    pub transcript: PathBuf,
    /// Its working directory, when the store records one.
    pub cwd: Option<PathBuf>,
    /// Why it is not idle, when it is not (the first reason found).
    pub busy: Option<String>,
    /// The approval it waits on, when it waits on one.
    pub awaiting_approval: Option<String>,
}

impl Engine {
    /// The session `agent` / `session_id` as the live index finds it with `caller`'s stores,
    /// and whether it is idle; `None` when no store holds it. Blocking (reads its transcript).
    pub fn session_activity(
        &self,
        caller: &CallerContext,
        agent: Agent,
        session_id: &str,
    ) -> Result<Option<SessionActivity>> {
        let held = self.snapshot(caller, &[agent]);
        let Some(session) = held
            .sessions(agent)
            .iter()
            .find(|s| s.session_id() == session_id)
        else {
            return Ok(None);
        };
        let key = TargetKey::new(agent, session_id).to_string();
        let mut busy = None;
        let mut awaiting_approval = None;

        let queue = self.db().queue_info(&key)?;
        if queue.running > 0 {
            busy = Some(format!(
                "a bridge delivery into it is under way ({} running)",
                queue.running
            ));
        } else if queue.queued > 0 {
            busy = Some(format!(
                "{} bridge deliveries to it are queued and go first",
                queue.queued
            ));
        }
        if busy.is_none()
            && self
                .inner
                .dispatch
                .busy()
                .is_someone_else_working(agent, &key, &session.path())
        {
            busy = Some(format!(
                "its last turn has not ended: a turn is open in {}",
                session.path().display()
            ));
        }

        let panels = self.live_panels(UiHook::Auto);
        if let Some(panel) = window::hosting(&panels, agent, session_id)
            && let Some(tab) = panel
                .registration
                .sessions
                .iter()
                .find(|s| s.session_id.as_deref() == Some(session_id))
        {
            let shim = panel.registration.pid;
            if let Some(pending) = tab.pending_approvals.first() {
                awaiting_approval = Some(format!(
                    "its panel (shim pid {shim}) waits on an approval ({}{})",
                    pending.kind,
                    pending
                        .tool
                        .as_deref()
                        .map(|t| format!(" for {t}"))
                        .unwrap_or_default()
                ));
            }
            match tab.state {
                PanelSessionState::Working if busy.is_none() => {
                    busy = Some(format!(
                        "its panel (shim pid {shim}) says a turn is running"
                    ));
                }
                PanelSessionState::AwaitingApproval if awaiting_approval.is_none() => {
                    awaiting_approval = Some(format!(
                        "its panel (shim pid {shim}) says it waits on an approval"
                    ));
                }
                PanelSessionState::Working
                | PanelSessionState::AwaitingApproval
                | PanelSessionState::Idle => {}
            }
        }

        if let Some(copilot) = session.copilot() {
            if copilot.input_needed && awaiting_approval.is_none() {
                awaiting_approval =
                    Some("its Copilot host says a turn waits for the user's input".to_owned());
            }
            if copilot.in_progress && busy.is_none() {
                busy = Some("its Copilot host says a turn is running".to_owned());
            }
        }

        // A Copilot session is listed by its `session.db`; what it says is in its default
        // chat's SDK events (where the review read it), when those can be found.
        let transcript = session
            .copilot()
            .and_then(|details| {
                cross_agent_stores::copilot::events_of(&super::roots_for(caller).copilot, details)
            })
            .unwrap_or_else(|| session.path().into_owned());
        Ok(Some(SessionActivity {
            transcript,
            cwd: session.cwd().map(Path::to_path_buf),
            busy,
            awaiting_approval,
        }))
    }
}

impl Engine {
    /// The cross review's corrections sent to `agent` / `session_id` at or after `since_ms`.
    pub fn review_corrections(
        &self,
        agent: Agent,
        session_id: &str,
        since_ms: i64,
    ) -> Result<Vec<crate::records::SentCorrection>> {
        let key = TargetKey::new(agent, session_id).to_string();
        self.db().corrections_since(&key, since_ms)
    }

    /// Records a correction sent (`sent.target_key` as [`TargetKey`] spells it).
    pub fn record_review_correction(&self, sent: &crate::records::SentCorrection) -> Result<()> {
        self.db().record_correction(sent)
    }
}
