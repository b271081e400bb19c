//! The headless carrier: a delivery resumes (or creates) the peer's session in a headless run
//! of its CLI (`claude -p`, `codex exec`, `grok`), the one place a peer CLI is started. While
//! the turn runs its lease is renewed and its transcript read for a finished answer; when it
//! ends the answer is paired, or recovered from the transcript, and the delivery closed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState, Transport};
use cross_agent_transports::headless::{CommandSpec, Target, TurnRequest};
use cross_agent_transports::run::{Ended, RunOptions, TurnOutcome, run_turn};
use cross_agent_transports::settings::TurnSettings;
use parking_lot::Mutex;
use tokio::sync::watch;

use super::{Carried, Carrier, CarrierContext, Carrying, RouteQuery, message_text};
use crate::caller::StartedTurn;
use crate::engine::dispatch::off_async;
use crate::engine::watch_secs;
use crate::records::{Claimed, Job};

/// Takes every send the other carriers leave.
#[derive(Default)]
pub(in crate::engine) struct HeadlessCarrier;

impl Carrier for HeadlessCarrier {
    fn transport(&self) -> Transport {
        Transport::HeadlessCli
    }

    fn route(&self, _cx: &CarrierContext, _send: &RouteQuery<'_>, _job: &mut Job) -> bool {
        true
    }

    fn carry(&self, cx: CarrierContext, claimed: Claimed) -> Carrying {
        Box::pin(async move {
            run_headless(cx, claimed).await;
            Carried::Closed
        })
    }
}

/// Runs one headless turn to its end and closes its delivery.
async fn run_headless(cx: CarrierContext, claimed: Claimed) {
    let Claimed {
        record,
        job,
        created_ms,
        target_key,
        lock_token,
    } = claimed;
    let confirmed: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let request = turn_request(&record, &job, message_text(&job, created_ms));
    // The one place a peer CLI is started: `build` refuses again under no-headless.
    let outcome = match cross_agent_transports::headless::build(&request) {
        Ok(spec) => {
            run_watched_turn(
                &cx,
                &spec,
                &record,
                &job,
                &target_key,
                &lock_token,
                &confirmed,
            )
            .await
        }
        Err(error) => Err(error),
    };
    if let Some(pid) = outcome.as_ref().ok().map(|o| o.pid) {
        cx.turn_ended(pid);
    }
    cx.answer_pending(&record.delivery_id);
    let confirmed = confirmed.lock().take();
    // Settling reads the peer's transcript and may walk its store: off the async threads.
    let finisher = cx.clone();
    let finished = off_async(move || {
        finish_delivery(
            &finisher, record, outcome, job, target_key, lock_token, confirmed,
        )
    })
    .await;
    if finished.is_none() {
        tracing::error!("a delivery's outcome could not be recorded");
    }
    cx.wake_dispatcher();
}

/// Runs the CLI's turn with its lease renewed and its transcript read for a finished
/// answer meanwhile (put in `confirmed`), and records it started once its pid is known.
async fn run_watched_turn(
    cx: &CarrierContext,
    spec: &CommandSpec,
    record: &DeliveryRecord,
    job: &Job,
    target_key: &str,
    lock_token: &str,
    confirmed: &Arc<Mutex<Option<String>>>,
) -> cross_agent_transports::Result<TurnOutcome> {
    let agent = record.target_agent;
    let renew = cx.renew_lease(
        Arc::new(Mutex::new(target_key.to_owned())),
        lock_token,
        &record.delivery_id,
    );
    let (turn_stop, turn_stopped) = watch::channel(false);
    let checker = cx.watch_transcript(record, turn_stop, confirmed.clone());
    let starter = cx.clone();
    let delivery_id = record.delivery_id.clone();
    let conversation_id = record.conversation_id.clone();
    let session_id = record.target_session_id.clone();
    let mut recording_start = None;
    let result = run_turn(
        agent,
        spec,
        RunOptions {
            inactivity: Duration::from_secs(job.timeout_secs),
            transcript: record.target_transcript.as_ref().map(PathBuf::from),
            stop: turn_stopped,
        },
        |pid| {
            recording_start = Some(starter.turn_started(StartedTurn {
                pid,
                agent,
                session_id,
                conversation_id,
                delivery_id,
            }))
        },
    )
    .await;
    renew.abort();
    checker.abort();
    // The start is on the record before the outcome is: never overwritten by it.
    if let Some(recording) = recording_start {
        let _ = recording.await;
    }
    result
}

/// Records a run's outcome: pairs or recovers the answer, records the delivery finished and
/// releases its session's busy lock.
fn finish_delivery(
    cx: &CarrierContext,
    mut record: DeliveryRecord,
    outcome: cross_agent_transports::Result<TurnOutcome>,
    job: Job,
    mut target_key: String,
    lock_token: String,
    confirmed: Option<String>,
) {
    match outcome {
        Ok(outcome) => {
            record.peer_pid = Some(outcome.pid);
            cx.created_session(&mut record, &outcome, &job, &mut target_key, &lock_token);
            match confirmed {
                // The transcript showed the finished answer while the CLI still ran: that
                // settles it (the CLI was stopped for it, not for the carrier).
                Some(text) if outcome.ended == Ended::Stopped => {
                    record.answer.is_reply_confirmed_by_transcript = true;
                    cx.pair_answer(&mut record, &text, watch_secs(&job));
                }
                Some(_) | None => cx.settle(&mut record, outcome, &job),
            }
        }
        Err(error) => {
            record.state = DeliveryState::Failed;
            record.is_undelivered = true;
            record.error = Some(error.to_string());
        }
    }
    cx.close_delivery(record, &job, &target_key, &lock_token);
}

/// The headless run of the peer's CLI a delivery asks for: its session resumed, or a new one
/// (with the id chosen for it, when the agent takes one).
fn turn_request(record: &DeliveryRecord, job: &Job, message: String) -> TurnRequest {
    let target = match (&job.new_session_id, &record.target_session_id) {
        (Some(id), _) => Target::New {
            session_id: Some(id.clone()),
        },
        (None, Some(id)) if !record.will_create_session => Target::Resume {
            session_id: id.clone(),
        },
        (None, _) => Target::New { session_id: None },
    };
    TurnRequest {
        agent: record.target_agent,
        target,
        cwd: PathBuf::from(&job.cwd),
        message,
        settings: TurnSettings::from_settings(&job.settings),
        child_env: job.child_env.clone(),
        bridge_env: job.bridge_env.clone(),
    }
}
