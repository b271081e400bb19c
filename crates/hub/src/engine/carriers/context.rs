//! What a carrier sees of the engine: [`CarrierContext`], the narrow interface between the
//! carriers and the rest of the engine. A carrier gets the store (`hub.db`), the dispatcher's
//! services for a delivery it carries (its lease renewed, its transcript read, its turn noted
//! started and ended, a created session recorded, the dispatcher woken), the answers part's
//! (pairing, settling, recovery, late answers, return traffic), the live panels, the decisions
//! log, the event stream and the daemon's stop. It holds handles to those parts, never the
//! engine: a carrier cannot take queued work, touch another part's state, or send.
//!
//! The doors' mechanics are the carriers' own (`panel/`, `native/`): methods over this context
//! and the carrier's own state.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_decisions::DecisionLog;
use cross_agent_protocol::bridge::DeliveryRecord;
use cross_agent_protocol::events::EngineEvent;
use cross_agent_transports::panel::registry::LivePanel;
use cross_agent_transports::run::TurnOutcome;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::Agent;
use crate::caller::StartedTurn;
use crate::db::HubDb;
use crate::engine::answers::{Answers, Returns};
use crate::engine::dispatch::Dispatch;
use crate::engine::panels::LivePanels;
use crate::engine::{EngineConfig, EngineInfo};
use crate::records::Job;
use crate::settings::UiHook;

/// The engine as a carrier sees it: cheap to clone, one per delivery carried.
#[derive(Clone)]
pub(in crate::engine) struct CarrierContext {
    db: Arc<Mutex<HubDb>>,
    dispatch: Arc<Dispatch>,
    answers: Arc<Answers>,
    panels: LivePanels,
    decisions: DecisionLog,
    events: broadcast::Sender<EngineEvent>,
    /// This daemon, as stopped deliveries' errors name it.
    pid: u32,
    generation: u64,
    /// `CROSS_AGENT_HOME`: where the relays live.
    state_root: Arc<Path>,
    /// Between the attempts of return traffic to find the sender's panel again.
    return_retry: Duration,
}

/// The parts a [`CarrierContext`] is a window on.
pub(in crate::engine) struct Parts<'a> {
    pub(in crate::engine) db: &'a Arc<Mutex<HubDb>>,
    pub(in crate::engine) dispatch: &'a Arc<Dispatch>,
    pub(in crate::engine) answers: &'a Arc<Answers>,
    pub(in crate::engine) panels: &'a LivePanels,
    pub(in crate::engine) decisions: &'a DecisionLog,
    pub(in crate::engine) events: &'a broadcast::Sender<EngineEvent>,
    pub(in crate::engine) info: &'a EngineInfo,
    pub(in crate::engine) config: &'a EngineConfig,
}

impl CarrierContext {
    pub(in crate::engine) fn new(parts: Parts<'_>) -> CarrierContext {
        CarrierContext {
            db: parts.db.clone(),
            dispatch: parts.dispatch.clone(),
            answers: parts.answers.clone(),
            panels: parts.panels.clone(),
            decisions: parts.decisions.clone(),
            events: parts.events.clone(),
            pid: parts.info.pid,
            generation: parts.info.generation,
            state_root: Arc::from(parts.info.state_root.as_path()),
            return_retry: parts.config.return_retry,
        }
    }

    /// The store. Blocking: take it off the async threads, and never hold it across another
    /// call to the context.
    pub(super) fn db(&self) -> MutexGuard<'_, HubDb> {
        self.db.lock()
    }

    // ---- The daemon ----

    /// The decisions log.
    pub(super) fn decisions(&self) -> &DecisionLog {
        &self.decisions
    }

    /// Publishes an event to the engine's subscribers.
    pub(super) fn emit(&self, event: EngineEvent) {
        // An error only says nobody listens now.
        let _ = self.events.send(event);
    }

    /// This daemon's pid and generation.
    pub(super) fn daemon(&self) -> (u32, u64) {
        (self.pid, self.generation)
    }

    /// `CROSS_AGENT_HOME`.
    pub(super) fn state_root(&self) -> &Path {
        &self.state_root
    }

    /// Between the attempts of return traffic to find the sender's panel again.
    pub(super) fn return_retry(&self) -> Duration {
        self.return_retry
    }

    /// The daemon's stop.
    pub(super) fn stop_signal(&self) -> watch::Receiver<bool> {
        self.dispatch.stop_signal()
    }

    /// The live panel shims now, under `ui_hook`.
    pub(super) fn live_panels(&self, ui_hook: UiHook) -> Vec<LivePanel> {
        self.panels.live(ui_hook)
    }

    // ---- The dispatcher's services to a delivery it handed over ----

    /// How often a running turn's transcript is read for a finished answer.
    pub(super) fn transcript_check(&self) -> Duration {
        self.dispatch.transcript_check()
    }

    /// Renews the delivery's busy lock and lease until the handle is aborted; `key` may move
    /// to a session the turn creates.
    pub(super) fn renew_lease(
        &self,
        key: Arc<Mutex<String>>,
        token: &str,
        delivery_id: &str,
    ) -> JoinHandle<()> {
        self.dispatch
            .spawn_lease_renewal(key, token.to_owned(), delivery_id.to_owned())
    }

    /// Reads the peer's transcript while the turn runs: a finished answer carrying the
    /// request id is put in `confirmed` and the turn stopped through `turn_stop` (which the
    /// daemon's own stop also trips).
    pub(super) fn watch_transcript(
        &self,
        record: &DeliveryRecord,
        turn_stop: watch::Sender<bool>,
        confirmed: Arc<Mutex<Option<String>>>,
    ) -> JoinHandle<()> {
        self.dispatch
            .spawn_transcript_check(record, turn_stop, confirmed)
    }

    /// A peer CLI started for a delivery: noted (callers are identified by it) and recorded.
    pub(super) fn turn_started(&self, turn: StartedTurn) -> JoinHandle<()> {
        self.dispatch.turn_started(turn)
    }

    /// The CLI of `pid` exited.
    pub(super) fn turn_ended(&self, pid: u32) {
        self.dispatch.turn_ended(pid);
    }

    /// Whether `pid` is the CLI of a turn this daemon runs.
    pub(super) fn runs_turn_of(&self, pid: u32) -> bool {
        self.dispatch.runs_turn_of(pid)
    }

    /// A delivery's turn ended: its answer is being read, paired and recorded.
    pub(super) fn answer_pending(&self, delivery_id: &str) {
        self.dispatch.answer_pending(delivery_id);
    }

    /// A delivery this daemon carries no more (its carrier failed outright).
    pub(super) fn carried_no_more(&self, delivery_id: &str) {
        self.dispatch.carried_no_more(delivery_id);
    }

    /// A worker slot is free again: the dispatcher looks at the queue.
    pub(super) fn wake_dispatcher(&self) {
        self.dispatch.wake();
    }

    /// A session the turn created: recorded, its lock and queue key moved to it, pinned.
    pub(super) fn created_session(
        &self,
        record: &mut DeliveryRecord,
        outcome: &TurnOutcome,
        job: &Job,
        target_key: &mut String,
        token: &str,
    ) {
        self.dispatch
            .created_session(record, outcome, job, target_key, token);
    }

    /// Where `agent` keeps session `id`'s transcript, once it is on disk. Blocking.
    pub(super) fn transcript_of(&self, agent: Agent, id: &str, job: &Job) -> Option<String> {
        self.dispatch.transcript_of(agent, id, job)
    }

    /// Records a finished delivery, sends its answer back to the sender (return traffic) and
    /// releases the session's lock. Blocking.
    pub(super) fn close_delivery(
        &self,
        record: DeliveryRecord,
        job: &Job,
        target_key: &str,
        lock_token: &str,
    ) {
        self.dispatch
            .close_delivery(record, job, target_key, lock_token, |record| {
                self.answers.returns().route_return(record, job);
            });
    }

    // ---- The answers part ----

    /// Takes `text` as the request's answer, paired by its closing line.
    pub(super) fn pair_answer(&self, record: &mut DeliveryRecord, text: &str, watch_secs: u64) {
        self.answers.pair_answer(record, text, None, watch_secs);
    }

    /// Turns a finished headless run into the record's outcome (its answer paired, or
    /// recovered from the transcript).
    pub(super) fn settle(&self, record: &mut DeliveryRecord, outcome: TurnOutcome, job: &Job) {
        self.answers.settle(record, outcome, job);
    }

    /// Reads a failed delivery's answer back from the peer's transcript (never re-sent).
    pub(super) fn recover(&self, record: &mut DeliveryRecord, why: &str) -> bool {
        self.answers.recover(record, why)
    }

    /// A closed request's answer came after all: recorded as a late answer and pushed to its
    /// sender. Blocking.
    pub(super) fn late_answer_arrived(&self, request_delivery_id: &str, text: &str) {
        self.answers.late_answer_arrived(request_delivery_id, text);
    }

    /// Return traffic: the sender's live panel, a notice queued for it.
    pub(super) fn returns(&self) -> &Returns {
        self.answers.returns()
    }
}
