//! A request carried into a panel: the shim it goes to, the injection followed to the turn's
//! end, and how it settles — its answer paired, or the delivery failed with the answer read back
//! from the transcript when the message was delivered. A conversation the panel opens for it is
//! recorded (its transcript, the busy lock moved to it, pinned); a turn whose shim went away is
//! followed in the transcript; a request past patience sends its sender's idle panel one
//! `PROGRESS (INFO)` notice.

use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState, Pin, TargetKey, Transport};
use cross_agent_protocol::panel::{
    Injection, InjectionKind, NO_EMPTY_SESSION,
};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::UnixMillis;
use cross_agent_transports::panel::registry::LivePanel;
use cross_agent_transports::panel::window;

use super::inject::{Ended, Following, WAKE};
use super::{Door, HeldLock, RequestEnd};
use crate::Agent;
use crate::engine::{recent_turns, watch_secs};
use crate::envelope;
use crate::records::{Job, PanelJob};
use crate::settings::{CallSettings, UiHook};

impl Door<'_> {
    /// Carries a request into its panel and waits for its turn to end (blocking; the worker
    /// runs it on the blocking pool): `inject`, then events read in one-second waits, with the
    /// peer's transcript read every `transcript_check` in between — a finished turn carrying
    /// the request id settles it (`is_reply_confirmed_by_transcript`). A shim that disappears
    /// mid-turn fails the delivery and the answer is read back from the transcript; nothing is
    /// ever sent twice. Past the larger of the timeout and `CROSS_AGENT_PANEL_PATIENCE` the
    /// sender's idle panel gets one `PROGRESS (INFO)` notice, and the wait goes on.
    pub(super) fn carry_panel_request(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        text: String,
        held: &HeldLock,
    ) -> RequestEnd {
        let Some(route) = job.panel.clone() else {
            return RequestEnd::Settled;
        };
        let agent = record.target_agent;
        let panels = self.cx.live_panels(UiHook::Auto);
        let Some(shim) = shim_for(&panels, agent, &route) else {
            shim_gone(record, &route);
            return RequestEnd::Settled;
        };
        // A new Grok conversation goes into whichever session the shim finds unprompted when
        // the message arrives: the one the registration showed may have been typed into since.
        let grok_new = agent == Agent::Grok && record.will_create_session;
        let socket = shim.registration.socket.clone();
        let agent_pid = shim.registration.agent_pid;
        let injection = request_injection(record, &route, text, grok_new);
        let settings = CallSettings::from_settings(&job.settings);
        let patience = Duration::from_secs(job.timeout_secs.max(settings.panel_patience_secs));
        let ended = self.wait_injection(
            record,
            &socket,
            injection,
            job,
            &mut Following {
                patience: Some(patience),
                held: Some(held),
                freed: None,
            },
        );
        self.approvals.set(&record.delivery_id, None);
        // A new Grok conversation the panel has no empty session for goes over the CLI instead.
        if let Ended::Undelivered(why) = &ended
            && grok_new
            && why.contains(NO_EMPTY_SESSION)
            && settings.ui_hook != UiHook::Require
        {
            tracing::info!(delivery = %record.delivery_id, "no empty grok session in the panel: the new conversation goes over the CLI");
            return RequestEnd::ToCli;
        }
        self.settle_request(record, job, ended, agent_pid);
        RequestEnd::Settled
    }

    /// Records how a request's panel turn ended: its answer paired, or the delivery failed —
    /// with the answer read back from the transcript when the message was delivered.
    fn settle_request(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        ended: Ended,
        agent_pid: Option<u32>,
    ) {
        let watch = watch_secs(job);
        match ended {
            Ended::Done(Some(answer)) => {
                self.cx.pair_answer(record, &answer, watch);
            }
            Ended::Confirmed(answer) => {
                record.answer.is_reply_confirmed_by_transcript = true;
                self.cx.pair_answer(record, &answer, watch);
            }
            Ended::Done(None) => {
                let why = "the panel's turn ended without an answer".to_owned();
                record.state = DeliveryState::Failed;
                record.error = Some(why.clone());
                self.cx.recover(record, &why);
            }
            Ended::Undelivered(why) => {
                record.state = DeliveryState::Failed;
                record.is_undelivered = true;
                record.error = Some(format!(
                    "not delivered: {why}. The peer never received the message; sending again \
                     is safe"
                ));
            }
            Ended::Broken(why) => {
                if record.target_session_id.is_some() {
                    self.follow_orphaned_turn(record, job, agent_pid);
                }
                record.state = DeliveryState::Failed;
                record.error = Some(format!(
                    "{why}; the message was delivered, so it is never sent again"
                ));
                self.cx.recover(record, &why);
            }
            Ended::Stopped => {
                let (pid, generation) = self.cx.daemon();
                record.state = DeliveryState::Failed;
                record.is_stopped_with_carrier = true;
                record.error = Some(format!(
                    "stopped with its carrier: the daemon (pid {}, generation {}) stopped while \
                     the panel's turn ran; the turn goes on in the panel, and its answer is read \
                     from the transcript",
                    pid, generation
                ));
                self.cx.recover(record, "the daemon stopped while the panel's turn ran");
            }
        }
    }

    /// A conversation the panel opened for a delivery has its id now: recorded with its
    /// transcript (where its answer is recovered from), its busy lock and queue key moved from
    /// `<agent>:new:<delivery id>` to the session, and pinned as a created session is.
    pub(super) fn panel_session_known(
        &self,
        record: &mut DeliveryRecord,
        id: String,
        job: &Job,
        held: Option<&HeldLock>,
    ) {
        if record.target_session_id.as_deref() == Some(id.as_str()) {
            return;
        }
        record.target_session_id = Some(id.clone());
        record.target_transcript = None;
        self.locate_transcript(record, job);
        let db = self.cx.db();
        if let Some(held) = held
            && record.will_create_session
        {
            let new_key = TargetKey::new(record.target_agent, id.as_str()).to_string();
            let mut key = held.key.lock();
            if *key != new_key {
                match db.rekey_lock(&key, &new_key, &held.token) {
                    Ok(()) => {
                        let _ = db.retarget_delivery(&record.delivery_id, &new_key);
                        *key = new_key;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "could not move a busy lock to the conversation a panel opened");
                    }
                }
            }
        }
        let _ = db.update_delivery(record);
        if record.will_create_session && record.transport == Transport::Panel {
            let pin = Pin {
                agent: record.target_agent,
                session_id: id,
                title: None,
                cwd: Some(job.cwd.clone()),
                sticky: false,
                pinned_at: now_rfc3339(),
            };
            if let Err(error) = db.set_pin(&pin, &job.pin_cwd_key, UnixMillis::now().0) {
                tracing::warn!(%error, "could not pin a conversation a panel opened");
            }
        }
    }

    /// Finds the peer's transcript once its session is known and the agent has written it.
    pub(super) fn locate_transcript(&self, record: &mut DeliveryRecord, job: &Job) {
        if record.target_transcript.is_some() {
            return;
        }
        let Some(id) = record.target_session_id.clone() else {
            return;
        };
        if let Some(path) = self.cx.transcript_of(record.target_agent, &id, job)
        {
            record.target_transcript = Some(path);
            let _ = self.cx.db().update_delivery(record);
        }
    }

    /// After the shim went away mid-turn an agent that outlived it (outside Linux, or behind an
    /// older shim) may still finish the turn (the message was delivered): its transcript is
    /// followed until a finished turn answers the request, the agent is gone, it has been
    /// still for the delivery's inactivity timeout, or the daemon stops. Never re-sent.
    fn follow_orphaned_turn(&self, record: &mut DeliveryRecord, job: &Job, agent_pid: Option<u32>) {
        let quiet_limit = Duration::from_secs(job.timeout_secs);
        let stop = self.cx.stop_signal();
        let mut last_change: Option<std::time::SystemTime> = None;
        let mut quiet_since = Instant::now();
        loop {
            self.locate_transcript(record, job);
            if confirmed_in_transcript(record).is_some() {
                return;
            }
            let modified = record
                .target_transcript
                .as_deref()
                .and_then(|path| std::fs::metadata(path).ok())
                .and_then(|meta| meta.modified().ok());
            if modified != last_change {
                last_change = modified;
                quiet_since = Instant::now();
            }
            // The agent ends with its shim (the shim asks the kernel for that): once it is
            // gone nothing more will be written, so what the transcript holds is read now.
            let agent_gone = agent_pid.is_some_and(|pid| !cross_agent_process::is_alive(pid));
            if *stop.borrow() || agent_gone || quiet_since.elapsed() >= quiet_limit {
                return;
            }
            std::thread::sleep(self.cx.transcript_check().min(WAKE));
        }
    }

    /// Sends the `PROGRESS (INFO)` notice of a request that runs past patience to the sender's
    /// idle panel or idle Copilot chat (it never waits for a busy sender), and notes it on the
    /// request.
    pub(super) fn send_progress(&self, record: &mut DeliveryRecord, job: &Job, waited: Duration) {
        let note = envelope::progress_notice(record, waited.as_secs());
        record.progress_note = Some(note.clone());
        if let Some(id) = self.cx.returns().queue_progress(record, job, note) {
            record.progress_delivery_id = Some(id);
        }
        let _ = self.cx.db().update_delivery(record);
    }
}

/// The live shim a request goes to: the panel holding its session, or — for a new
/// conversation — the shim that offered to open it.
fn shim_for<'p>(panels: &'p [LivePanel], agent: Agent, route: &PanelJob) -> Option<&'p LivePanel> {
    match &route.session_id {
        Some(id) if !route.new_session || agent == Agent::Grok => {
            window::hosting(panels, agent, id)
        }
        _ => panels.iter().find(|p| p.registration.pid == route.shim_pid),
    }
}

/// The panel a request was routed to closed before it went out: failed, never sent.
fn shim_gone(record: &mut DeliveryRecord, route: &PanelJob) {
    let agent = record.target_agent;
    record.state = DeliveryState::Failed;
    record.is_undelivered = true;
    record.error = Some(format!(
        "not delivered: the {agent} panel holding {} closed before the message went \
         out; nothing was sent and no CLI was started. Sending again is safe",
        route.session_id.as_deref().map_or_else(
            || "the new conversation".to_owned(),
            |id| format!("session {id}")
        )
    ));
}

/// The `inject` a request is written as.
fn request_injection(
    record: &DeliveryRecord,
    route: &PanelJob,
    text: String,
    grok_new: bool,
) -> Injection {
    Injection {
        delivery_id: record.delivery_id.clone(),
        kind: InjectionKind::Request,
        session_id: route.session_id.clone().filter(|_| !grok_new),
        new_session: route.new_session || grok_new,
        text,
        request_id: Some(record.request_id.clone()),
        title: route.title.clone(),
        sender_label: route.sender_label.clone(),
    }
}

/// A finished turn in the peer's transcript whose closing line echoes the request id: the
/// answer, whatever the shim says (it may have missed the turn's end).
pub(in crate::engine::carriers) fn confirmed_in_transcript(record: &DeliveryRecord) -> Option<String> {
    let path = record.target_transcript.as_deref()?;
    let started = record
        .started_at
        .as_deref()
        .and_then(UnixMillis::parse_rfc3339);
    let mut warnings = cross_agent_stores::Warnings::default();
    recent_turns(record.target_agent, Path::new(path), &mut warnings)
        .ok()?
        .finished_turn_answering(&record.request_id, started)
        .and_then(|turn| turn.final_text().map(str::to_owned))
}
