//! Return traffic (docs/spec/cross-agent-mcp.md "Return traffic needs a panel"): when a request
//! settles, its answer — `BRIDGE REPLY`, or the `DELIVERY FAILED` notice standing in for one —
//! and later a `LATE ANSWER` or a `PROGRESS (INFO)` notice go to the sender's live panel, each
//! queued as a delivery of its own that spends no hop and never resumes a CLI. [`Returns`] is
//! the answers part's: it holds the store and asks the rest only through [`ReturnNeighbours`]
//! (the live panels, the dispatcher's wake-up). The panel carrier puts a queued return into
//! the panel.

use std::sync::Arc;

use cross_agent_protocol::bridge::Transport;
use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState, TargetKey, TargetSelectedBy};
use cross_agent_protocol::panel::{InjectionKind, PanelSessionState};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::UnixMillis;
use cross_agent_transports::panel::registry::LivePanel;
use cross_agent_transports::panel::window;
use parking_lot::{Mutex, MutexGuard};

use super::transcript_answer;
use crate::db::HubDb;
use crate::engine::copilot_caller::verify_return;
use crate::envelope;
use crate::records::{CopilotReturn, Job, PanelJob};
use crate::settings::{CallSettings, UiHook};

/// What return traffic asks of the other parts, and nothing else: the live panels (is the
/// sender's open now) and the dispatcher's wake-up (a return delivery was queued). The engine
/// implements it; a test can stand in for it.
pub(in crate::engine) trait ReturnNeighbours: Send + Sync {
    /// The live panels under `ui_hook` (none under `off`).
    fn live_panels(&self, ui_hook: UiHook) -> Vec<LivePanel>;
    /// A return delivery was queued: the dispatcher looks at the queue.
    fn queued(&self);
}

/// The return traffic's own handles: the store and this daemon's generation (on every return
/// delivery it queues), and its neighbours.
pub(in crate::engine) struct Returns {
    db: Arc<Mutex<HubDb>>,
    generation: u64,
    others: Box<dyn ReturnNeighbours>,
}

impl Returns {
    pub(super) fn new(
        db: Arc<Mutex<HubDb>>,
        generation: u64,
        others: Box<dyn ReturnNeighbours>,
    ) -> Returns {
        Returns {
            db,
            generation,
            others,
        }
    }

    fn db(&self) -> MutexGuard<'_, HubDb> {
        self.db.lock()
    }

    /// The sender's live panel and session now, when it has one and its registration allows
    /// panels.
    pub(in crate::engine) fn sender_panel(
        &self,
        record: &DeliveryRecord,
        job: &Job,
    ) -> Option<(LivePanel, String)> {
        let agent = record.from_agent?;
        let session = record.from_session.clone()?;
        let ui_hook = CallSettings::from_settings(&job.settings).ui_hook;
        let panels = self.others.live_panels(ui_hook);
        window::hosting(&panels, agent, &session).map(|p| (p.clone(), session))
    }

    /// After a request settles: its answer (`BRIDGE REPLY`, or the `DELIVERY FAILED` notice
    /// standing in for one) goes to the sender's live panel as a delivery of its own, queued now
    /// and put there by the dispatcher. No panel: the answer stays on the record
    /// (`is_return_status_only`). Never a CLI. Spends no hop.
    pub(in crate::engine) fn route_return(&self, record: &mut DeliveryRecord, job: &Job) {
        if record.answer.answers_delivery_id.is_some() {
            // A return delivery's own record (or a late answer's): it is the return traffic.
            return;
        }
        let host = match &job.copilot_return {
            Some(back) => match verify_return(back) {
                Ok(_) => Some(back.clone()),
                Err(why) => {
                    tracing::info!(delivery = %record.delivery_id, %why, "the Copilot sender's return route did not hold; the answer stays on the record");
                    None
                }
            },
            None => None,
        };
        if host.is_none() && self.sender_panel(record, job).is_none() {
            record.is_return_status_only = true;
            return;
        }
        let (kind, text) = match record.state {
            DeliveryState::Delivered => (InjectionKind::Reply, reply_text(record)),
            _ if record.reply_preview.is_some() => (InjectionKind::Reply, reply_text(record)),
            _ => (
                InjectionKind::Notice,
                envelope::delivery_failed_notice(record),
            ),
        };
        match self.queue_return_by(record, job, kind, text, host) {
            Some(id) => {
                record.return_delivery_id = Some(id);
                record.is_return_status_only = false;
            }
            None => record.is_return_status_only = true,
        }
    }

    /// A late answer found by the watch goes to the sender's panel too — or, for a Copilot
    /// sender, into its own chat through its host when the route it was accepted with still
    /// holds (checked now, and again by the carrier right before the dispatch); otherwise it
    /// stays on the record.
    pub(super) fn route_late_answer(
        &self,
        request: &mut DeliveryRecord,
        late: &DeliveryRecord,
        text: &str,
    ) {
        let copilot_return = match self.db().copilot_return(&request.delivery_id) {
            Ok(back) => back,
            Err(error) => {
                tracing::warn!(%error, "could not read a Copilot sender's return route");
                None
            }
        };
        let host = copilot_return.filter(|back| match verify_return(back) {
            Ok(_) => true,
            Err(why) => {
                tracing::info!(delivery = %late.delivery_id, %why, "the Copilot sender's return route did not hold; the late answer stays on the record");
                false
            }
        });
        let job = Job {
            body: String::new(),
            raw: true,
            settings: Default::default(),
            child_env: Default::default(),
            bridge_env: Default::default(),
            cwd: request.target_cwd.clone().unwrap_or_default(),
            new_session_id: None,
            timeout_secs: crate::settings::DEFAULT_TIMEOUT_SECS,
            withheld_env: Vec::new(),
            pin_cwd_key: String::new(),
            panel: None,
            native: None,
            agent_host: None,
            copilot_return: None,
        };
        let mut late = late.clone();
        let queued = if host.is_none() && self.sender_panel(request, &job).is_none() {
            None
        } else {
            let header = late.answer.reply_header.clone().unwrap_or_default();
            let body = format!("{header}\n\n{text}");
            self.queue_return_by(&late, &job, InjectionKind::Reply, body, host)
        };
        late.is_return_status_only = queued.is_none();
        late.return_delivery_id = queued;
        if let Err(error) = self.db().update_delivery(&late) {
            tracing::warn!(%error, "could not record where a late answer went");
        }
    }

    /// A request running past patience: its `PROGRESS (INFO)` notice goes to the sender's
    /// idle panel, or — for a Copilot sender — into its own chat on its verified route (checked
    /// now, and again right before the dispatch), and there only while the chat is idle: the
    /// notice never waits for a busy sender, so a busy chat is skipped, never retried. Either
    /// way the note stays on the request (`progress_note`). Returns the notice's delivery id.
    pub(in crate::engine) fn queue_progress(
        &self,
        record: &DeliveryRecord,
        job: &Job,
        note: String,
    ) -> Option<String> {
        if let Some(back) = &job.copilot_return {
            if let Err(why) = verify_return(back) {
                tracing::info!(delivery = %record.delivery_id, %why, "the Copilot sender's return route did not hold; the progress note stays on the record");
                return None;
            }
            let mut back = back.clone();
            back.route.is_busy_skipped = true;
            return self.queue_return_by(record, job, InjectionKind::Notice, note, Some(back));
        }
        let idle_sender = self
            .sender_panel(record, job)
            .is_some_and(|(panel, session)| {
                panel
                    .registration
                    .sessions
                    .iter()
                    .find(|s| s.session_id.as_deref() == Some(session.as_str()))
                    .is_some_and(|s| s.state == PanelSessionState::Idle)
            });
        if !idle_sender {
            return None;
        }
        self.queue_return(record, job, InjectionKind::Notice, note)
    }

    /// Queues one return delivery to the sender's panel: its own record (target: the sender's
    /// session; `answers_delivery_id`: the request), no hop spent. Returns its id.
    pub(in crate::engine) fn queue_return(
        &self,
        request: &DeliveryRecord,
        job: &Job,
        kind: InjectionKind,
        text: String,
    ) -> Option<String> {
        self.queue_return_by(request, job, kind, text, None)
    }

    /// [`Returns::queue_return`], to a Copilot sender's own session on its host when `host` is
    /// its verified route (checked again by the carrier before it is sent), else to the panel.
    fn queue_return_by(
        &self,
        request: &DeliveryRecord,
        job: &Job,
        kind: InjectionKind,
        text: String,
        host: Option<CopilotReturn>,
    ) -> Option<String> {
        let agent = request.from_agent?;
        let session = request.from_session.clone()?;
        let now = now_rfc3339();
        let mut back = request.clone();
        back.delivery_id = envelope::delivery_id();
        back.state = DeliveryState::Queued;
        back.from_agent = Some(request.target_agent);
        back.from_session = request.target_session_id.clone();
        back.target_agent = agent;
        back.target_session_id = Some(session.clone());
        back.target_cwd = None;
        back.target_selected_by = TargetSelectedBy::Caller;
        back.will_create_session = false;
        back.transport = match host {
            Some(_) => Transport::AgentHost,
            None => Transport::Panel,
        };
        back.created_at = now;
        back.started_at = None;
        back.finished_at = None;
        back.expires_at = None;
        back.carrier_generation = Some(self.generation);
        back.peer_pid = None;
        back.error = None;
        back.is_killed_by_timeout = false;
        back.is_stopped_with_carrier = false;
        back.is_reply_recovered = false;
        back.is_undelivered = false;
        back.reply_preview = None;
        back.late_reply_delivery_id = None;
        back.return_delivery_id = None;
        back.progress_delivery_id = None;
        back.progress_note = None;
        back.message_chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
        back.is_orphaned = false;
        back.is_return_status_only = false;
        back.target_transcript = None;
        back.answer = cross_agent_protocol::bridge::AnswerMarks {
            answers_delivery_id: Some(
                request
                    .answer
                    .answers_delivery_id
                    .clone()
                    .unwrap_or_else(|| request.delivery_id.clone()),
            ),
            ..Default::default()
        };
        let return_job = Job {
            body: text,
            raw: true,
            settings: job.settings.clone(),
            child_env: Default::default(),
            bridge_env: Default::default(),
            cwd: job.cwd.clone(),
            new_session_id: None,
            timeout_secs: job.timeout_secs,
            withheld_env: Vec::new(),
            pin_cwd_key: String::new(),
            panel: host.is_none().then(|| PanelJob {
                kind,
                shim_pid: 0,
                session_id: Some(session.clone()),
                new_session: false,
                title: None,
                sender_label: None,
            }),
            native: None,
            agent_host: host.as_ref().map(|back| back.route.clone()),
            copilot_return: host,
        };
        let key = TargetKey::new(agent, session.as_str()).to_string();
        match self
            .db()
            .insert_delivery(&back, &key, UnixMillis::now().0, &return_job, false)
        {
            Ok(()) => {
                self.others.queued();
                Some(back.delivery_id)
            }
            Err(error) => {
                tracing::warn!(%error, "could not queue a return delivery");
                None
            }
        }
    }
}

/// The `BRIDGE REPLY` text: the header, then the whole answer read fresh from the peer's
/// transcript (the record keeps only its first 2,000 characters).
fn reply_text(record: &DeliveryRecord) -> String {
    let header = record.answer.reply_header.clone().unwrap_or_else(|| {
        format!(
            "=== BRIDGE REPLY === from: {} session {} | request: {}",
            record.target_agent,
            record.target_session_id.as_deref().unwrap_or("?"),
            record.request_id
        )
    });
    let full = transcript_answer(record)
        .filter(|text| {
            record
                .reply_preview
                .as_deref()
                .is_some_and(|preview| text.starts_with(preview.trim_end()))
        })
        .or_else(|| record.reply_preview.clone())
        .unwrap_or_default();
    format!("{header}\n\n{full}")
}
