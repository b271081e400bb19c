//! What a carrier sees of the engine: [`CarrierContext`], the narrow interface between the
//! carriers and the rest of the engine. A carrier gets the store (`hub.db`), the dispatcher's
//! services for a delivery it carries (its lease renewed, its transcript read, its turn noted
//! started and ended, the dispatcher woken) and the answers part's (pairing, settling,
//! closing the delivery with its return traffic). The engine's state itself stays out of
//! reach: a carrier cannot take queued work, touch another part's state, or send.
//!
//! The panel and native doors' mechanics still live beside the engine (`panels`, `native`);
//! the context names each entry point they use, so the surface is this file and nothing else.

use std::sync::Arc;

use cross_agent_protocol::bridge::{CallerContext, DeliveryRecord};
use cross_agent_transports::run::TurnOutcome;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Agent;
use crate::caller::{Caller, StartedTurn};
use crate::db::HubDb;
use crate::engine::Engine;
use crate::engine::panels::{FreeWorker, HeldLock, RequestEnd};
use crate::engine::target::Resolved;
use crate::records::{Claimed, Job, NativeJob};

/// The engine as a carrier sees it: cheap to clone, one per delivery carried.
#[derive(Clone)]
pub(in crate::engine) struct CarrierContext {
    engine: Engine,
}

impl CarrierContext {
    pub(in crate::engine) fn new(engine: Engine) -> CarrierContext {
        CarrierContext { engine }
    }

    /// The store. Blocking: take it off the async threads, and never hold it across another
    /// call to the context.
    pub(super) fn db(&self) -> MutexGuard<'_, HubDb> {
        self.engine.db()
    }

    // ---- The dispatcher's services to a delivery it handed over ----

    /// Renews the delivery's busy lock and lease until the handle is aborted; `key` may move
    /// to a session the turn creates.
    pub(super) fn renew_lease(
        &self,
        key: Arc<Mutex<String>>,
        token: &str,
        delivery_id: &str,
    ) -> JoinHandle<()> {
        self.engine.inner.dispatch.spawn_lease_renewal(
            key,
            token.to_owned(),
            delivery_id.to_owned(),
        )
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
        self.engine
            .inner
            .dispatch
            .spawn_transcript_check(record, turn_stop, confirmed)
    }

    /// A peer CLI started for a delivery: noted (callers are identified by it) and recorded.
    pub(super) fn turn_started(&self, turn: StartedTurn) -> JoinHandle<()> {
        self.engine.inner.dispatch.turn_started(turn)
    }

    /// The CLI of `pid` exited.
    pub(super) fn turn_ended(&self, pid: u32) {
        self.engine.inner.dispatch.turn_ended(pid);
    }

    /// A delivery's turn ended: its answer is being read, paired and recorded.
    pub(super) fn answer_pending(&self, delivery_id: &str) {
        self.engine.inner.dispatch.answer_pending(delivery_id);
    }

    /// A delivery this daemon carries no more (its carrier failed outright).
    pub(super) fn carried_no_more(&self, delivery_id: &str) {
        self.engine.inner.dispatch.carried_no_more(delivery_id);
    }

    /// A worker slot is free again: the dispatcher looks at the queue.
    pub(super) fn wake_dispatcher(&self) {
        self.engine.inner.dispatch.wake();
    }

    // ---- The answers part ----

    /// Takes `text` as the request's answer, paired by its closing line.
    pub(super) fn pair_answer(&self, record: &mut DeliveryRecord, text: &str, watch_secs: u64) {
        self.engine
            .inner
            .answers
            .pair_answer(record, text, None, watch_secs);
    }

    /// Turns a finished headless run into the record's outcome (its answer paired, or
    /// recovered from the transcript).
    pub(super) fn settle(&self, record: &mut DeliveryRecord, outcome: TurnOutcome, job: &Job) {
        self.engine.inner.answers.settle(record, outcome, job);
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
        self.engine
            .inner
            .dispatch
            .created_session(record, outcome, job, target_key, token);
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
        self.engine
            .close_delivery(record, job, target_key, lock_token);
    }

    // ---- The panel door's mechanics (`panels`) ----

    /// Carries a request into its panel and waits for its turn to end. Blocking.
    pub(super) fn carry_panel_request(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        text: String,
        held: &HeldLock,
    ) -> RequestEnd {
        self.engine.carry_panel_request(record, job, text, held)
    }

    /// Puts return traffic into the sender's live panel. Blocking.
    pub(super) fn carry_return(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        freed: &mut Option<FreeWorker>,
    ) {
        self.engine.carry_return(record, job, freed);
    }

    // ---- The native door's mechanics (`native`) ----

    /// The native route of a send, when a live Claude process holds its session. Blocking.
    pub(super) fn native_route(
        &self,
        agent: Agent,
        params_caller: &CallerContext,
        caller: &Caller,
        resolved: &Resolved,
    ) -> Option<NativeJob> {
        self.engine
            .native_route(agent, params_caller, caller, resolved)
    }

    /// Whether a native route still holds (its Claude process alive, the door up); else the
    /// job and record are turned to the CLI. Blocking.
    pub(super) fn native_still_live(&self, record: &mut DeliveryRecord, job: &mut Job) -> bool {
        self.engine.native_still_live(record, job)
    }

    /// Sends a delivery through the native door and closes it.
    pub(super) async fn run_native_delivery(&self, claimed: Claimed) {
        self.engine.clone().run_native_delivery(claimed).await;
    }
}
