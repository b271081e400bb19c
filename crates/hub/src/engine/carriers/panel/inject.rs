//! One injection into a panel shim and the following of its events (docs/spec/cross-agent-mcp.md
//! "IDE panel integration"): `inject` written, then the shim's events read in one-second waits,
//! with the bookkeeping between them — a request's transcript found and read for a confirmed
//! answer, its sender's one `PROGRESS (INFO)` notice, return traffic's patience — until the
//! injection ends one of the ways [`Ended`] names.

use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::DeliveryRecord;
use cross_agent_protocol::bridge::DeliveryState;
use cross_agent_protocol::events::EngineEvent;
use cross_agent_protocol::panel::{Injection, InjectionKind, ShimEvent, ShimRequest};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_transports::panel::client::{self, Next};

use super::request::confirmed_in_transcript;
use super::{Door, FreeWorker, HeldLock};
use crate::records::Job;
use crate::settings::CallSettings;

/// How often a waiting worker wakes to look at the carrier's stop and the transcript clock.
pub(super) const WAKE: Duration = Duration::from_secs(1);

/// How an injection's events are followed.
pub(super) struct Following<'a> {
    /// When the sender of a request gets its `PROGRESS (INFO)` notice (requests only).
    pub(super) patience: Option<Duration>,
    /// The request's busy lock, moved to a conversation the panel opens for it.
    pub(super) held: Option<&'a HeldLock>,
    /// Told when return traffic is queued behind the sender's turn.
    pub(super) freed: Option<FreeWorker>,
}

/// How a waited panel injection ended.
pub(super) enum Ended {
    /// `turn_ended` (request) or `written` (return traffic).
    Done(Option<String>),
    /// The transcript showed a finished turn carrying the request id first.
    Confirmed(String),
    /// Not delivered: the agent never got the message.
    Undelivered(String),
    /// Delivered, but the turn could not be followed to its end.
    Broken(String),
    /// The daemon is stopping.
    Stopped,
}

impl Door<'_> {
    /// Writes one injection and follows its events. `patience` (requests only) is when the
    /// sender gets a `PROGRESS (INFO)` notice.
    pub(super) fn wait_injection(
        &self,
        record: &mut DeliveryRecord,
        socket: &str,
        injection: Injection,
        job: &Job,
        how: &mut Following<'_>,
    ) -> Ended {
        let is_request = injection.kind == InjectionKind::Request;
        let mut connection = match client::open(Path::new(socket), &ShimRequest::Inject(injection))
        {
            Ok(connection) => connection,
            Err(error) => return Ended::Undelivered(error.to_string()),
        };
        let stop = self.cx.stop_signal();
        let mut follow = FollowState::new(is_request);
        loop {
            if *stop.borrow() {
                return follow.stopped();
            }
            let next = match connection.next(WAKE) {
                Ok(next) => next,
                Err(error) => return follow.lost(error.to_string()),
            };
            if let Some(ended) = self.on_shim_news(record, job, how, &mut follow, next) {
                return ended;
            }
            if let Some(ended) = self.between_events(record, job, how.patience, &mut follow) {
                return ended;
            }
        }
    }

    /// What one read from the shim says: `Some` when the injection ended with it.
    fn on_shim_news(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        how: &mut Following<'_>,
        follow: &mut FollowState,
        next: Next,
    ) -> Option<Ended> {
        let held = how.held;
        let is_request = follow.is_request;
        match next {
            Next::Event(ShimEvent::Accepted { session_id, queued }) => {
                follow.accepted = true;
                if let Some(id) = session_id {
                    self.panel_session_known(record, id, job, held);
                }
                if is_request {
                    record.state = DeliveryState::AwaitingPeer;
                    record.started_at.get_or_insert_with(now_rfc3339);
                    let _ = self.cx.db().update_delivery(record);
                }
                tracing::info!(delivery = %record.delivery_id, queued, "the panel took the message");
                // Return traffic queued behind the sender's running turn: the wait for its
                // `written` goes on, but no longer in one of the workers.
                if queued
                    && !is_request
                    && let Some(free) = how.freed.take()
                {
                    record.state = DeliveryState::AwaitingPeer;
                    let _ = self.cx.db().update_delivery(record);
                    let _ = free.send(());
                }
                None
            }
            Next::Event(ShimEvent::SessionStarted { session_id }) => {
                self.panel_session_known(record, session_id, job, held);
                None
            }
            Next::Event(ShimEvent::ApprovalPending { approval }) => {
                self.approvals.set(&record.delivery_id, Some(approval.clone()));
                self.cx.emit(EngineEvent::ApprovalWaiting {
                    delivery_id: record.delivery_id.clone(),
                    approval,
                });
                None
            }
            Next::Event(ShimEvent::ApprovalResolved { .. }) => {
                self.approvals.set(&record.delivery_id, None);
                None
            }
            Next::Event(ShimEvent::Written { session_id }) => {
                if let Some(id) = session_id {
                    self.panel_session_known(record, id, job, held);
                }
                follow.accepted = true;
                (!is_request).then_some(Ended::Done(None))
            }
            Next::Event(ShimEvent::TurnEnded {
                answer,
                stop,
                is_error,
                ..
            }) => {
                if is_error && answer.is_none() {
                    return Some(Ended::Broken(format!(
                        "the panel's turn ended with an error ({stop})"
                    )));
                }
                Some(Ended::Done(answer))
            }
            Next::Event(ShimEvent::Failed { reason, delivered }) => Some(if delivered {
                Ended::Broken(format!("the panel shim failed: {reason}"))
            } else {
                Ended::Undelivered(format!("the panel shim refused it: {reason}"))
            }),
            Next::Event(ShimEvent::Status { .. } | ShimEvent::ApprovalAnswered { .. }) => None,
            Next::Closed if follow.accepted => Some(Ended::Broken(
                "the panel shim went away before the turn ended (the panel closed, or its \
                 process died)"
                    .into(),
            )),
            Next::Closed => Some(Ended::Undelivered(
                "the panel shim closed the connection before taking the message".into(),
            )),
            Next::Quiet => None,
        }
    }

    /// The bookkeeping between two reads from the shim: return traffic's patience; a request's
    /// transcript found, read for a confirmed answer, and its sender's one progress notice.
    fn between_events(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        patience: Option<Duration>,
        follow: &mut FollowState,
    ) -> Option<Ended> {
        if !follow.is_request {
            // Return traffic waits for the sender's turn to end, bounded like a busy peer.
            let patience = patience_or_default(job);
            return (follow.started.elapsed() > patience).then(|| {
                Ended::Undelivered(format!(
                    "the sender's panel did not take it within {} s",
                    patience.as_secs()
                ))
            });
        }
        if !follow.accepted {
            return None;
        }
        // A conversation the panel opened is written to disk a moment after its id arrives.
        if record.target_transcript.is_none() && follow.last_locate.elapsed() >= WAKE {
            follow.last_locate = Instant::now();
            self.locate_transcript(record, job);
        }
        if follow.last_check.elapsed() >= self.cx.transcript_check() {
            follow.last_check = Instant::now();
            if let Some(text) = confirmed_in_transcript(record) {
                return Some(Ended::Confirmed(text));
            }
        }
        if let Some(patience) = patience
            && !follow.progress_sent
            && follow.started.elapsed() >= patience
        {
            follow.progress_sent = true;
            self.send_progress(record, job, follow.started.elapsed());
        }
        None
    }
}

/// Where an injection's wait stands between two reads from the shim.
struct FollowState {
    is_request: bool,
    started: Instant,
    last_check: Instant,
    last_locate: Instant,
    /// The shim took the message: from here on the peer has it, and it is never sent again.
    accepted: bool,
    progress_sent: bool,
}

impl FollowState {
    fn new(is_request: bool) -> FollowState {
        let now = Instant::now();
        FollowState {
            is_request,
            started: now,
            last_check: now,
            last_locate: now,
            accepted: false,
            progress_sent: false,
        }
    }

    /// How the wait ends when the daemon stops.
    fn stopped(&self) -> Ended {
        if self.accepted {
            Ended::Stopped
        } else {
            Ended::Undelivered("the daemon stopped first".into())
        }
    }

    /// How the wait ends when the connection to the shim breaks.
    fn lost(&self, error: String) -> Ended {
        if self.accepted {
            Ended::Broken(error)
        } else {
            Ended::Undelivered(error)
        }
    }
}

fn patience_or_default(job: &Job) -> Duration {
    let settings = CallSettings::from_settings(&job.settings);
    Duration::from_secs(job.timeout_secs.max(settings.panel_patience_secs))
}
