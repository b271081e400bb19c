//! The dispatcher: taking queued deliveries, running their turns, leases, orphans, and
//! waiting on sessions someone else is working in.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{CallerContext, DeliveryRecord, DeliveryState, Pin, TargetKey};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::UnixMillis;
use cross_agent_transports::run::TurnOutcome;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::{Engine, LEASE_MS, MAX_WORKERS, recent_turns};
use crate::Agent;
use crate::caller::StartedTurn;
use crate::records::{Carrier, Claimed, Job};

/// How often the dispatcher looks at the queue without being woken.
const POLL: Duration = Duration::from_secs(1);
/// How often finished deliveries past their TTL are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
const LEASE_RENEW: Duration = Duration::from_secs(30);

/// The dispatcher's own state; the rest of the engine reaches it through these methods only.
#[derive(Default)]
pub(super) struct Dispatch {
    /// Wakes the dispatcher: a delivery was queued, or a worker finished.
    wake: Notify,
    /// Set while this daemon is being replaced: queued deliveries are left for the successor.
    paused: AtomicBool,
    /// The headless turns running now (callers are identified by them).
    turns: Mutex<Vec<StartedTurn>>,
    /// The delivery ids this daemon carries, by stage.
    carried: Mutex<Carried>,
    /// The dispatcher's loop, while it runs.
    handle: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// The delivery ids this daemon carries, by stage.
#[derive(Debug, Default)]
struct Carried {
    /// Handed to a peer whose turn runs.
    turns: HashSet<String>,
    /// Turned ended: the answer is being read, paired and recorded.
    answers: HashSet<String>,
}

impl Dispatch {
    /// Wakes the dispatcher: a delivery was queued, or a worker slot is free again.
    pub(super) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Whether queued deliveries are left alone (a daemon being replaced).
    pub(super) fn is_paused(&self) -> bool {
        self.paused.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops (or resumes) taking queued deliveries.
    pub(super) fn set_paused(&self, paused: bool) {
        self.paused
            .store(paused, std::sync::atomic::Ordering::SeqCst);
        self.wake();
    }

    /// The headless turns running now.
    pub(super) fn started_turns(&self) -> Vec<StartedTurn> {
        self.turns.lock().clone()
    }

    /// Whether `pid` is the CLI of a turn this daemon runs.
    pub(super) fn runs_turn_of(&self, pid: u32) -> bool {
        self.turns.lock().iter().any(|t| t.pid == pid)
    }

    /// The CLI of `pid` exited.
    pub(super) fn turn_ended(&self, pid: u32) {
        self.turns.lock().retain(|t| t.pid != pid);
    }

    /// How many deliveries this daemon carries: turns running, answers being recorded.
    pub(super) fn carried_counts(&self) -> (usize, usize) {
        let carried = self.carried.lock();
        (carried.turns.len(), carried.answers.len())
    }

    /// A delivery's turn ended: its answer is being read, paired and recorded.
    pub(super) fn answer_pending(&self, delivery_id: &str) {
        let mut carried = self.carried.lock();
        carried.turns.remove(delivery_id);
        carried.answers.insert(delivery_id.to_owned());
    }

    /// A delivery this daemon carries no more, at any stage.
    pub(super) fn carried_no_more(&self, delivery_id: &str) {
        let mut carried = self.carried.lock();
        carried.turns.remove(delivery_id);
        carried.answers.remove(delivery_id);
    }

    /// A delivery taken off the queue: its turn is about to run.
    fn handed_over(&self, delivery_id: &str) {
        self.carried.lock().turns.insert(delivery_id.to_owned());
    }

    /// A delivery's answer is recorded: it is carried no more.
    fn answered(&self, delivery_id: &str) {
        self.carried.lock().answers.remove(delivery_id);
    }

    /// Keeps the dispatcher's loop, to wait for at shutdown.
    pub(super) fn set_loop(&self, handle: tokio::task::JoinHandle<()>) {
        *self.handle.lock() = Some(handle);
    }

    /// The dispatcher's loop, taken to be waited for.
    pub(super) fn take_loop(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.handle.lock().take()
    }
}

impl Engine {
    pub(super) async fn dispatch_loop(self) {
        let mut stop = self.inner.stop.subscribe();
        let mut running = JoinSet::new();
        let mut last_prune: Option<std::time::Instant> = None;
        let mut last_sweep = std::time::Instant::now();
        loop {
            // Leases of other carriers run out while this daemon runs (a crashed peer daemon,
            // a restart's old one killed): their records are orphaned here, never re-sent.
            let sweep = last_sweep.elapsed() > LEASE_RENEW;
            if sweep {
                last_sweep = std::time::Instant::now();
            }
            let prune = last_prune.is_none_or(|at| at.elapsed() > PRUNE_EVERY);
            if prune {
                last_prune = Some(std::time::Instant::now());
            }
            let free = if self.inner.dispatch.is_paused() {
                0
            } else {
                MAX_WORKERS.saturating_sub(running.len())
            };
            // The busy check and the orphans' recovery read transcripts: off the async threads.
            let engine = self.clone();
            let claimed = off_async(move || engine.take_runnable(free, sweep, prune))
                .await
                .unwrap_or_default();
            for job in claimed {
                self.inner.dispatch.handed_over(&job.record.delivery_id);
                let engine = self.clone();
                running.spawn(async move { engine.carry(job).await });
            }
            tokio::select! {
                () = async { let _ = stop.wait_for(|s| *s).await; } => break,
                () = self.inner.dispatch.wake.notified() => {}
                Some(_) = running.join_next(), if !running.is_empty() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        }
        while running.join_next().await.is_some() {}
    }

    /// One look at the queue (blocking: it reads `hub.db` and transcripts): orphans and
    /// prunes when due, then takes up to `free` queued deliveries whose sessions nobody else
    /// is working in.
    fn take_runnable(&self, free: usize, sweep: bool, prune: bool) -> Vec<Claimed> {
        if sweep {
            self.sweep_orphans();
        }
        if prune {
            let before = UnixMillis::now()
                .0
                .saturating_sub(self.inner.config.delivery_ttl_ms());
            match self.db().prune_finished(before) {
                Ok(0) => {}
                Ok(pruned) => {
                    tracing::info!(pruned, "pruned finished deliveries past their TTL")
                }
                Err(error) => tracing::warn!(%error, "could not prune old deliveries"),
            }
        }
        let busy = if free > 0 {
            self.busy_elsewhere()
        } else {
            HashSet::new()
        };
        let carrier = Carrier {
            owner_pid: self.inner.info.pid,
            generation: self.inner.info.generation,
            lease_ms: LEASE_MS,
        };
        let mut db = self.db();
        // Payloads handed over a second ago or more leave the write-ahead log now.
        db.scrub_wal_when_due();
        let claimed =
            db.claim_runnable_except(free, &carrier, UnixMillis::now().0, &now_rfc3339(), &busy);
        claimed.unwrap_or_else(|error| {
            tracing::error!(%error, "could not take queued deliveries");
            Vec::new()
        })
    }

    /// A delivery's turn ended: its answer is being read, paired and recorded.
    pub(super) fn answer_pending(&self, delivery_id: &str) {
        self.inner.dispatch.answer_pending(delivery_id);
    }

    /// A delivery this daemon carries no more, at any stage.
    pub(super) fn carried_no_more(&self, delivery_id: &str) {
        self.inner.dispatch.carried_no_more(delivery_id);
    }

    /// Records a finished delivery, sends its answer back to the sender's panel when it has
    /// one (or notes that the answer stays on the record), and releases the session's lock.
    pub(super) fn close_delivery(
        &self,
        mut record: DeliveryRecord,
        job: &Job,
        target_key: &str,
        lock_token: &str,
    ) {
        let agent = record.target_agent;
        // The turn wrote the peer's transcript: the next listing reads it, whether or not the
        // file-system notification has arrived yet.
        self.inner.scan.mark_stale(agent);
        record.finished_at = Some(now_rfc3339());
        if record.state == DeliveryState::Failed
            && record.will_create_session
            && let Some(id) = &record.target_session_id
        {
            self.drop_auto_pin(agent, &job.pin_cwd_key, id);
        }
        if record.state.is_finished() {
            self.route_return(&mut record, job);
        }
        self.inner
            .decisions
            .record_all(events::delivery_finished(&record));
        let db = self.db();
        if let Err(error) = db.update_delivery(&record) {
            tracing::error!(%error, delivery = %record.delivery_id, "could not record a finished delivery");
        }
        if let Err(error) = db.release_lock(target_key, lock_token) {
            tracing::error!(%error, target_key, "could not release a busy lock");
        }
        drop(db);
        self.emit_settled(&record);
        self.inner.dispatch.answered(&record.delivery_id);
        tracing::info!(delivery = %record.delivery_id, state = ?record.state, "delivery finished");
    }

    /// Renews the busy lock and the delivery's lease (`expires_at`) together while its turn
    /// runs: when this worker disappears both lapse, and the record is orphaned.
    /// The key is shared: a conversation a panel opens moves its lock while the turn runs.
    pub(super) fn spawn_lease_renewal(
        &self,
        target_key: Arc<Mutex<String>>,
        token: String,
        delivery_id: String,
    ) -> tokio::task::JoinHandle<()> {
        let engine = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE_RENEW).await;
                // `hub.db` behind the engine's lock: off the async threads.
                let (engine, target_key, token, id) = (
                    engine.clone(),
                    target_key.lock().clone(),
                    token.clone(),
                    delivery_id.clone(),
                );
                let renewed = off_async(move || {
                    engine.db().renew_lease(
                        &target_key,
                        &token,
                        &id,
                        UnixMillis::now().0 + LEASE_MS,
                    )
                })
                .await;
                if let Some(Err(error)) = renewed {
                    tracing::warn!(%error, delivery = %delivery_id, "could not renew a lease");
                }
            }
        })
    }

    /// Breaks the wait for a turn into [`EngineConfig::transcript_check`] chunks and reads the peer's
    /// transcript in between: a finished turn whose closing line echoes the request id settles
    /// the delivery there and then (`is_reply_confirmed_by_transcript`), even if the CLI has
    /// not exited. Also forwards the carrier's stop to this turn.
    pub(super) fn spawn_transcript_check(
        &self,
        record: &DeliveryRecord,
        turn_stop: watch::Sender<bool>,
        confirmed: Arc<Mutex<Option<String>>>,
    ) -> tokio::task::JoinHandle<()> {
        let mut stop = self.inner.stop.subscribe();
        let agent = record.target_agent;
        let request_id = record.request_id.clone();
        let path = record.target_transcript.as_ref().map(PathBuf::from);
        let started = record
            .started_at
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339);
        let every = self.inner.config.transcript_check;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = carrier_stopped(&mut stop) => {
                        turn_stop.send_replace(true);
                        return;
                    }
                    () = tokio::time::sleep(every) => {}
                }
                let Some(path) = path.clone() else { continue };
                let request_id = request_id.clone();
                let found = off_async(move || {
                    let mut warnings = cross_agent_stores::Warnings::default();
                    recent_turns(agent, &path, &mut warnings)
                        .ok()
                        .and_then(|t| {
                            t.finished_turn_answering(&request_id, started)
                                .and_then(|turn| turn.final_text().map(str::to_owned))
                        })
                })
                .await
                .flatten();
                if let Some(text) = found {
                    *confirmed.lock() = Some(text);
                    turn_stop.send_replace(true);
                    return;
                }
            }
        })
    }

    /// Orphans the in-flight records nobody carries any more (lease run out, carrier gone),
    /// stops their turns if still running, and reads their answers back.
    pub(super) fn sweep_orphans(&self) {
        let orphaned = match self.db().orphan_stale(
            self.inner.info.generation,
            UnixMillis::now().0,
            &now_rfc3339(),
        ) {
            Ok(orphaned) => orphaned,
            Err(error) => {
                tracing::warn!(%error, "could not look for orphaned deliveries");
                return;
            }
        };
        for mut record in orphaned {
            tracing::warn!(delivery = %record.delivery_id, "a delivery nobody carries any more was marked orphaned");
            self.inner.decisions.record(events::orphan(&record));
            if let Some(pid) = record.peer_pid
                && is_agent_process(pid, record.target_agent)
            {
                cross_agent_transports::process::kill_group(pid);
            }
            if self
                .inner
                .answers
                .recover(&mut record, "the daemon carrying it disappeared")
            {
                let _ = self.db().update_delivery(&record);
            }
        }
    }

    /// Notes a turn's CLI as started and records it on its delivery (`awaiting-peer`, its pid)
    /// on the blocking pool: called from the async thread that spawned the CLI. Await the
    /// handle before recording the outcome.
    pub(super) fn turn_started(&self, turn: StartedTurn) -> tokio::task::JoinHandle<()> {
        let pid = turn.pid;
        let delivery_id = turn.delivery_id.clone();
        self.inner.dispatch.turns.lock().push(turn);
        let engine = self.clone();
        tokio::task::spawn_blocking(move || engine.record_turn_started(&delivery_id, pid))
    }

    fn record_turn_started(&self, delivery_id: &str, pid: u32) {
        let db = self.db();
        match db.delivery(delivery_id) {
            Ok(Some(mut record)) => {
                record.state = DeliveryState::AwaitingPeer;
                record.peer_pid = Some(pid);
                if let Err(error) = db.update_delivery(&record) {
                    tracing::warn!(%error, "could not record a started turn");
                }
            }
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "could not read a started delivery"),
        }
    }

    /// A new Codex thread's id arrives with `thread.started`: record it, move the lock and the
    /// queue key to it, and pin it (automatic: valid within the active window).
    pub(super) fn created_session(
        &self,
        record: &mut DeliveryRecord,
        outcome: &TurnOutcome,
        job: &Job,
        target_key: &mut String,
        token: &str,
    ) {
        if !record.will_create_session || record.target_session_id.is_some() {
            return;
        }
        let Some(id) = outcome.parsed.session_id.clone() else {
            return;
        };
        let agent = record.target_agent;
        record.target_session_id = Some(id.clone());
        // The new thread's transcript: where its answer is re-read, recovered and watched for.
        if record.target_transcript.is_none() {
            record.target_transcript = self.transcript_of(agent, &id, job);
        }
        let new_key = TargetKey::new(agent, id.as_str()).to_string();
        let db = self.db();
        let _ = db.rekey_lock(target_key, &new_key, token);
        let _ = db.retarget_delivery(&record.delivery_id, &new_key);
        *target_key = new_key;
        let pin = Pin {
            agent,
            session_id: id,
            title: None,
            cwd: Some(job.cwd.clone()),
            sticky: false,
            pinned_at: now_rfc3339(),
        };
        if let Err(error) = db.set_pin(&pin, &job.pin_cwd_key, UnixMillis::now().0) {
            tracing::warn!(%error, "could not pin a created session");
        }
    }

    /// Where `agent` keeps session `id`'s transcript, found on disk with the caller's
    /// environment (its stores' homes); `None` while it has not been written yet.
    pub(super) fn transcript_of(&self, agent: Agent, id: &str, job: &Job) -> Option<String> {
        let context = CallerContext {
            child_env: job.child_env.clone(),
            settings: job.settings.clone(),
            ..CallerContext::default()
        };
        let find = |sessions: Vec<cross_agent_stores::Session>| {
            sessions
                .into_iter()
                .find(|s| s.agent == agent && s.session_id == id)
                .map(|s| s.path.to_string_lossy().into_owned())
        };
        find(self.list(&context, &[agent]).0).or_else(|| {
            // Written a moment ago by the turn that made the session: the index's notification
            // of it may be late (a loaded machine), so it is walked for.
            self.inner.scan.mark_stale(agent);
            find(self.list(&context, &[agent]).0)
        })
    }

    pub(super) fn drop_auto_pin(&self, agent: Agent, cwd_key: &str, session_id: &str) {
        let db = self.db();
        if let Ok(Some((pin, _))) = db.pin(agent, cwd_key)
            && !pin.sticky
            && pin.session_id == session_id
            && db.remove_pin(agent, cwd_key).is_ok()
        {
            self.inner.decisions.record(events::pin_dropped(
                agent,
                session_id,
                "automatic pin dropped: the session it was made for failed to start",
            ));
        }
    }
}

/// Resolves when the carrier stops; never, if nobody can stop it any more.
pub(super) async fn carrier_stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Whether `pid` runs `agent`'s CLI (its command line names it).
pub(super) fn is_agent_process(pid: u32, agent: Agent) -> bool {
    cross_agent_process::runs_program(pid, agent.as_str())
}

/// Runs blocking work (reading transcripts, walking stores, `hub.db`) on tokio's blocking pool
/// so the async threads stay free to answer clients. `None` when the work panicked.
pub(super) async fn off_async<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => Some(value),
        Err(error) => {
            tracing::error!(%error, "blocking engine work failed");
            None
        }
    }
}
