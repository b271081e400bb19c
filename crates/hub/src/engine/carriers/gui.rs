//! The GUI carrier (docs/desktop.md "Focus and GUI fallback"): a delivery pasted into the chat
//! input of its session's editor window through the desktop, by `control`'s GUI fallback. It
//! takes a send to an existing Claude or Codex session that no shim and no native door holds,
//! when a headless resume is off for it (`CROSS_AGENT_DISABLE_HEADLESS` for the caller) or the
//! person prefers the GUI (`prefer_gui = true` under `[control]`) — and only while the fallback
//! is turned on. Every outcome is the fallback's `gui_fallback` decision line; a refusal closes
//! the delivery undelivered with the fallback's words. The answer does not come back through
//! the desktop: like a panel request's, it is read from the agent's own transcript, a finished
//! turn whose closing line echoes the request id.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cross_agent_control::fallback::{self, Request, Verdict};
use cross_agent_control::settings::ControlConfig;
use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState, Transport};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_transports::panel::registry;
use parking_lot::Mutex;

use super::panel::confirmed_in_transcript;
use super::{Carried, Carrier, CarrierContext, Carrying, RouteQuery, message_text};
use crate::Agent;
use crate::engine::target::Resolved;
use crate::engine::watch_secs;
use crate::records::{Claimed, Job};
use crate::settings::{CallSettings, UiHook};

/// The longest wait between two looks at the transcript.
const LOOK: Duration = Duration::from_secs(1);

/// Pastes deliveries through the desktop; no state of its own.
#[derive(Default)]
pub(in crate::engine) struct GuiCarrier;

/// Why the GUI door does not take a send, for the no-headless refusal.
pub(in crate::engine) enum NotTaken {
    /// Not a send the GUI can carry (a new session, a panel's, an agent without a chat key).
    NotItsKind,
    /// The person did not turn the fallback on (the setting is named).
    Off(String),
    /// `[control]` could not be read.
    Unreadable(String),
}

/// Whether the GUI door takes a send to `agent` resolved as `resolved`: an existing Claude or
/// Codex session no panel holds, headless resume off for it or the GUI preferred, and the
/// fallback on. One rule for acceptance's guard and the carrier's route.
pub(in crate::engine) fn takes(
    agent: Agent,
    resolved: &Resolved,
    settings: &CallSettings,
    config: &cross_agent_control::Result<ControlConfig>,
) -> Result<(), NotTaken> {
    let its_kind = matches!(agent, Agent::Claude | Agent::Codex)
        && resolved.panel.is_none()
        && resolved.new_reason.is_none()
        && resolved.session_id.is_some();
    if !its_kind {
        return Err(NotTaken::NotItsKind);
    }
    let config = match config {
        Ok(config) => config,
        Err(error) => return Err(NotTaken::Unreadable(error.to_string())),
    };
    if !config.gui_fallback {
        return Err(NotTaken::Off(config.how_to_turn_on()));
    }
    if settings.disable_headless || config.prefer_gui {
        Ok(())
    } else {
        Err(NotTaken::NotItsKind)
    }
}

impl Carrier for GuiCarrier {
    fn transport(&self) -> Transport {
        Transport::Gui
    }

    fn route(&self, cx: &CarrierContext, send: &RouteQuery<'_>, _job: &mut Job) -> bool {
        let settings = CallSettings::from_settings(&send.params.caller.settings);
        let config = cross_agent_control::settings::load(cx.state_root());
        takes(send.agent, send.resolved, &settings, &config).is_ok()
    }

    fn carry(&self, cx: CarrierContext, claimed: Claimed) -> Carrying {
        Box::pin(async move {
            let delivery_id = claimed.record.delivery_id.clone();
            let renew = cx.renew_lease(
                Arc::new(Mutex::new(claimed.target_key.clone())),
                &claimed.lock_token,
                &delivery_id,
            );
            let worker = cx.clone();
            let carried = tokio::task::spawn_blocking(move || carry_by_gui(&worker, claimed)).await;
            renew.abort();
            if let Err(error) = carried {
                tracing::error!(%error, "a GUI delivery's outcome could not be recorded");
                cx.carried_no_more(&delivery_id);
            }
            cx.wake_dispatcher();
            Carried::Closed
        })
    }
}

/// The blocking part: the fallback run, the answer followed in the transcript, the delivery
/// closed.
fn carry_by_gui(cx: &CarrierContext, claimed: Claimed) {
    let Claimed {
        mut record,
        job,
        created_ms,
        target_key,
        lock_token,
    } = claimed;
    let text = message_text(&job, created_ms);
    let cwd = PathBuf::from(record.target_cwd.clone().unwrap_or_else(|| job.cwd.clone()));
    // Turns that finish from here on may answer it.
    record.started_at = Some(now_rfc3339());
    match paste(cx, &record, &cwd, &text) {
        Ok(()) => {
            record.state = DeliveryState::AwaitingPeer;
            let _ = cx.db().update_delivery(&record);
            follow_answer(cx, &mut record, &job);
        }
        Err(Pasted::Refused(why)) => {
            record.started_at = None;
            record.state = DeliveryState::Failed;
            record.is_undelivered = true;
            record.error = Some(format!(
                "not delivered: the GUI fallback refused: {why}. Nothing was typed; sending \
                 again is safe"
            ));
        }
        Err(Pasted::Failed(why)) => {
            record.state = DeliveryState::Failed;
            record.error = Some(format!(
                "the GUI fallback failed part-way: {why}. Part of the message may have been \
                 typed into the editor, so it is never sent again"
            ));
        }
    }
    cx.answer_pending(&record.delivery_id);
    cx.close_delivery(record, &job, &target_key, &lock_token);
}

/// How a paste did not happen.
enum Pasted {
    /// Nothing was typed.
    Refused(String),
    /// Keys were pressed, and then a step failed.
    Failed(String),
}

/// Runs the GUI fallback for a delivery on this daemon's desktop (`DISPLAY`).
fn paste(cx: &CarrierContext, record: &DeliveryRecord, cwd: &Path, text: &str) -> Result<(), Pasted> {
    let config = cross_agent_control::settings::load(cx.state_root())
        .map_err(|e| Pasted::Refused(e.to_string()))?;
    let editor_pids = registry::editor_pids(
        &cx.live_panels(UiHook::Auto),
        record.target_session_id.as_deref(),
        cwd,
    );
    let request = Request {
        agent: record.target_agent,
        session: record.target_session_id.as_deref(),
        delivery: Some(&record.delivery_id),
        cwd,
        editor_pids: &editor_pids,
        text,
    };
    let report = cross_agent_control::with_env(|control| {
        fallback::run(control, &config, &request, cx.decisions())
    });
    let window = report
        .window
        .as_ref()
        .map_or_else(String::new, |w| format!(" (window {})", w.describe()));
    match report.verdict {
        Verdict::Submitted => Ok(()),
        Verdict::Refused => Err(Pasted::Refused(format!("{}{window}", report.reason))),
        Verdict::Failed => Err(Pasted::Failed(format!(
            "{} at `{}`{window}",
            report.reason, report.guard
        ))),
    }
}

/// Reads the session's transcript for the finished turn that answers the request, until it
/// comes, the transcript has been still for the delivery's inactivity timeout, or the daemon
/// stops; the message was delivered, so it is never sent again.
fn follow_answer(cx: &CarrierContext, record: &mut DeliveryRecord, job: &Job) {
    let quiet_limit = Duration::from_secs(job.timeout_secs);
    let stop = cx.stop_signal();
    let mut last_change: Option<SystemTime> = None;
    let mut quiet_since = Instant::now();
    loop {
        locate_transcript(cx, record, job);
        if let Some(answer) = confirmed_in_transcript(record) {
            record.answer.is_reply_confirmed_by_transcript = true;
            cx.pair_answer(record, &answer, watch_secs(job));
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
        if *stop.borrow() {
            let (pid, generation) = cx.daemon();
            record.state = DeliveryState::Failed;
            record.is_stopped_with_carrier = true;
            record.error = Some(format!(
                "stopped with its carrier: the daemon (pid {pid}, generation {generation}) \
                 stopped while the turn pasted through the GUI ran; the turn goes on in the \
                 editor, and its answer is read from the transcript"
            ));
            cx.recover(record, "the daemon stopped while the GUI turn ran");
            return;
        }
        if quiet_since.elapsed() >= quiet_limit {
            let why = format!(
                "the message was pasted into the editor, but no turn answering it finished in \
                 the transcript, which was still for {} s",
                quiet_limit.as_secs()
            );
            record.state = DeliveryState::Failed;
            record.error = Some(format!("{why}; it is never sent again"));
            cx.recover(record, &why);
            return;
        }
        std::thread::sleep(cx.transcript_check().min(LOOK));
    }
}

/// Finds the session's transcript when the record has none yet.
fn locate_transcript(cx: &CarrierContext, record: &mut DeliveryRecord, job: &Job) {
    if record.target_transcript.is_some() {
        return;
    }
    let Some(id) = record.target_session_id.clone() else {
        return;
    };
    if let Some(path) = cx.transcript_of(record.target_agent, &id, job) {
        record.target_transcript = Some(path);
        let _ = cx.db().update_delivery(record);
    }
}
