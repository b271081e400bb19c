//! The dispatch part, [`Dispatch`]: the queue's loop (taking queued deliveries oldest first,
//! first come first served per session, up to [`MAX_WORKERS`] at once), the pause, the turns
//! running and what is carried, and its services to a delivery a carrier carries — the lease
//! renewed with the busy lock, the transcript read while the turn runs, the turn noted started,
//! a created session recorded and pinned, the delivery closed and its lock released; leases
//! run out and orphans; and the wait on a session someone else works in ([`BusyWatch`]). It
//! holds its own handles (the store, the session index, the decisions log, the event stream,
//! the daemon's stop) and reaches the other parts only through [`DispatchNeighbours`] — the
//! carriers (carry a delivery, whether a transport waits on an open turn) and the answers
//! (read an orphan's answer back) — which the engine implements and a test stands in for.

use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin as Boxed;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use cross_agent_decisions::{DecisionLog, events};
use cross_agent_protocol::bridge::{
    CallerContext, DeliveryRecord, DeliveryState, Pin, TargetKey, Transport,
};
use cross_agent_protocol::events::EngineEvent;
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::UnixMillis;
use cross_agent_stores::live::LiveScanner;
use cross_agent_transports::run::TurnOutcome;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::{Notify, broadcast, watch};
use tokio::task::JoinSet;

use super::busy::BusyWatch;
use super::event_stream::emit_settled;
use super::{EngineConfig, EngineInfo, LEASE_MS, MAX_WORKERS, recent_turns, roots_for};
use crate::Agent;
use crate::caller::StartedTurn;
use crate::db::HubDb;
use crate::records::{Carrier, Claimed, Job};

/// How often the dispatcher looks at the queue without being woken.
const POLL: Duration = Duration::from_secs(1);
/// How often finished deliveries past their TTL are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
const LEASE_RENEW: Duration = Duration::from_secs(30);

/// A delivery's carrying, as the carriers' registry runs it (re-routes included).
pub(super) type Carrying = Boxed<Box<dyn Future<Output = ()> + Send>>;

/// What dispatch asks of the other parts, and nothing else: the carriers (to carry a delivery
/// taken off the queue; whether a transport's deliveries wait on someone else's open turn) and
/// the answers (an orphan's answer read back from its transcript). The engine implements it
/// over its parts; a test can stand in for them.
pub(super) trait DispatchNeighbours: Send + Sync + 'static {
    /// Carries a delivery taken off the queue to its end (its busy lock and lease are held).
    fn carry(&self, claimed: Claimed) -> Carrying;
    /// Whether a queued delivery of `transport` waits while a turn is open in its transcript.
    fn waits_for_open_turn(&self, transport: Transport) -> bool;
    /// Reads an orphaned delivery's answer back from the peer's transcript (never re-sent).
    fn recover(&self, record: &mut DeliveryRecord, why: &str) -> bool;
}

/// The dispatcher: its own state and its handles. The rest of the engine reaches it through
/// its methods only.
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
    /// Who else works in a session: the wait on a busy one.
    busy: BusyWatch,
    /// `hub.db`, one connection the parts share.
    db: Arc<Mutex<HubDb>>,
    /// The session index: a turn's transcript is found in it, and marked stale after a turn.
    scan: Arc<LiveScanner>,
    decisions: DecisionLog,
    events: broadcast::Sender<EngineEvent>,
    /// The daemon's stop: the loop ends, running turns are stopped.
    stop: watch::Receiver<bool>,
    /// This daemon, as its locks and leases name it.
    pid: u32,
    generation: u64,
    /// How long finished records are kept ([`EngineConfig::delivery_ttl`]).
    delivery_ttl_ms: i64,
    /// How often a running turn's transcript is read ([`EngineConfig::transcript_check`]).
    transcript_check: Duration,
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
    pub(super) fn new(
        db: Arc<Mutex<HubDb>>,
        scan: Arc<LiveScanner>,
        decisions: DecisionLog,
        events: broadcast::Sender<EngineEvent>,
        stop: watch::Receiver<bool>,
        info: &EngineInfo,
        config: &EngineConfig,
    ) -> Dispatch {
        Dispatch {
            wake: Notify::new(),
            paused: AtomicBool::new(false),
            turns: Mutex::default(),
            carried: Mutex::default(),
            handle: Mutex::default(),
            busy: BusyWatch::new(db.clone(), info.pid, decisions.clone(), events.clone()),
            db,
            scan,
            decisions,
            events,
            stop,
            pid: info.pid,
            generation: info.generation,
            delivery_ttl_ms: config.delivery_ttl_ms(),
            transcript_check: config.transcript_check,
        }
    }

    fn db(&self) -> MutexGuard<'_, HubDb> {
        self.db.lock()
    }

    /// The busy judgement: who else works in a session.
    pub(super) fn busy(&self) -> &BusyWatch {
        &self.busy
    }

    /// The daemon's stop, for a carrier's own waits.
    pub(super) fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.clone()
    }

    /// How often a running turn's transcript is read.
    pub(super) fn transcript_check(&self) -> Duration {
        self.transcript_check
    }

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

    /// The dispatcher's loop (inside a tokio runtime): looks at the queue when woken, when a
    /// worker finishes and every second, hands what it takes to `others`' carriers, and ends
    /// when the daemon stops — after the running deliveries end.
    pub(super) async fn run<N: DispatchNeighbours>(self: Arc<Self>, others: Arc<N>) {
        let mut stop = self.stop.clone();
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
            let free = if self.is_paused() {
                0
            } else {
                MAX_WORKERS.saturating_sub(running.len())
            };
            // The busy check and the orphans' recovery read transcripts: off the async threads.
            let (dispatch, neighbours) = (self.clone(), others.clone());
            let claimed =
                off_async(move || dispatch.take_runnable(free, sweep, prune, &*neighbours))
                    .await
                    .unwrap_or_default();
            for job in claimed {
                self.handed_over(&job.record.delivery_id);
                running.spawn(others.carry(job));
            }
            tokio::select! {
                () = async { let _ = stop.wait_for(|s| *s).await; } => break,
                () = self.wake.notified() => {}
                Some(_) = running.join_next(), if !running.is_empty() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        }
        while running.join_next().await.is_some() {}
    }

    /// One look at the queue (blocking: it reads `hub.db` and transcripts): orphans and
    /// prunes when due, then takes up to `free` queued deliveries whose sessions nobody else
    /// is working in.
    pub(super) fn take_runnable(
        &self,
        free: usize,
        sweep: bool,
        prune: bool,
        others: &dyn DispatchNeighbours,
    ) -> Vec<Claimed> {
        if sweep {
            self.sweep_orphans(others);
        }
        if prune {
            let before = UnixMillis::now().0.saturating_sub(self.delivery_ttl_ms);
            match self.db().prune_finished(before) {
                Ok(0) => {}
                Ok(pruned) => {
                    tracing::info!(pruned, "pruned finished deliveries past their TTL")
                }
                Err(error) => tracing::warn!(%error, "could not prune old deliveries"),
            }
        }
        let busy = if free > 0 {
            self.busy
                .busy_elsewhere(&|transport| others.waits_for_open_turn(transport))
        } else {
            HashSet::new()
        };
        let carrier = Carrier {
            owner_pid: self.pid,
            generation: self.generation,
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

    /// Records a finished delivery and releases its session's lock. `returns` puts the answer
    /// on its way back to the sender (the answers part's return traffic) once the record is
    /// final but before it is written, so the record names its return delivery. Blocking.
    pub(super) fn close_delivery(
        &self,
        mut record: DeliveryRecord,
        job: &Job,
        target_key: &str,
        lock_token: &str,
        returns: impl FnOnce(&mut DeliveryRecord),
    ) {
        let agent = record.target_agent;
        // The turn wrote the peer's transcript: the next listing reads it, whether or not the
        // file-system notification has arrived yet.
        self.scan.mark_stale(agent);
        record.finished_at = Some(now_rfc3339());
        if record.state == DeliveryState::Failed
            && record.will_create_session
            && let Some(id) = &record.target_session_id
        {
            self.drop_auto_pin(agent, &job.pin_cwd_key, id);
        }
        if record.state.is_finished() {
            returns(&mut record);
        }
        self.decisions
            .record_all(events::delivery_finished(&record));
        let db = self.db();
        if let Err(error) = db.update_delivery(&record) {
            tracing::error!(%error, delivery = %record.delivery_id, "could not record a finished delivery");
        }
        if let Err(error) = db.release_lock(target_key, lock_token) {
            tracing::error!(%error, target_key, "could not release a busy lock");
        }
        drop(db);
        emit_settled(&self.events, &record);
        self.answered(&record.delivery_id);
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
        let db = self.db.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE_RENEW).await;
                // `hub.db` behind its lock: off the async threads.
                let (db, target_key, token, id) = (
                    db.clone(),
                    target_key.lock().clone(),
                    token.clone(),
                    delivery_id.clone(),
                );
                let renewed = off_async(move || {
                    db.lock()
                        .renew_lease(&target_key, &token, &id, UnixMillis::now().0 + LEASE_MS)
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
        let mut stop = self.stop.clone();
        let agent = record.target_agent;
        let request_id = record.request_id.clone();
        let path = record.target_transcript.as_ref().map(PathBuf::from);
        let started = record
            .started_at
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339);
        let every = self.transcript_check;
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
    fn sweep_orphans(&self, others: &dyn DispatchNeighbours) {
        let orphaned =
            match self
                .db()
                .orphan_stale(self.generation, UnixMillis::now().0, &now_rfc3339())
            {
                Ok(orphaned) => orphaned,
                Err(error) => {
                    tracing::warn!(%error, "could not look for orphaned deliveries");
                    return;
                }
            };
        for mut record in orphaned {
            tracing::warn!(delivery = %record.delivery_id, "a delivery nobody carries any more was marked orphaned");
            self.decisions.record(events::orphan(&record));
            if let Some(pid) = record.peer_pid
                && is_agent_process(pid, record.target_agent)
            {
                cross_agent_transports::process::kill_group(pid);
            }
            if others.recover(&mut record, "the daemon carrying it disappeared") {
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
        self.turns.lock().push(turn);
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || record_turn_started(&db.lock(), &delivery_id, pid))
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
        let roots = roots_for(&context);
        let find = || {
            self.scan
                .list_agents(&roots, &[agent])
                .sessions
                .into_iter()
                .find(|s| s.agent == agent && s.session_id == id)
                .map(|s| s.path.to_string_lossy().into_owned())
        };
        find().or_else(|| {
            // Written a moment ago by the turn that made the session: the index's notification
            // of it may be late (a loaded machine), so it is walked for.
            self.scan.mark_stale(agent);
            find()
        })
    }

    fn drop_auto_pin(&self, agent: Agent, cwd_key: &str, session_id: &str) {
        let db = self.db();
        if let Ok(Some((pin, _))) = db.pin(agent, cwd_key)
            && !pin.sticky
            && pin.session_id == session_id
            && db.remove_pin(agent, cwd_key).is_ok()
        {
            self.decisions.record(events::pin_dropped(
                agent,
                session_id,
                "automatic pin dropped: the session it was made for failed to start",
            ));
        }
    }
}

/// Records a started turn on its delivery: `awaiting-peer`, with its CLI's pid.
fn record_turn_started(db: &HubDb, delivery_id: &str, pid: u32) {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use cross_agent_stores::scan::ScanOptions;

    use super::*;

    /// The other parts as dispatch sees them: carriers that only note what they are handed
    /// (the delivery stays carried), every transport waiting on open turns, nothing recovered.
    #[derive(Default)]
    struct Noting {
        carried: Mutex<Vec<String>>,
    }

    impl DispatchNeighbours for Noting {
        fn carry(&self, claimed: Claimed) -> Carrying {
            self.carried.lock().push(claimed.record.delivery_id);
            Box::pin(async {})
        }
        fn waits_for_open_turn(&self, _transport: Transport) -> bool {
            true
        }
        fn recover(&self, _record: &mut DeliveryRecord, _why: &str) -> bool {
            false
        }
    }

    /// A dispatcher over a fresh `hub.db` in `dir`, its daemon's stop, and its events.
    fn dispatch(
        dir: &std::path::Path,
    ) -> (
        Arc<Dispatch>,
        watch::Sender<bool>,
        broadcast::Receiver<EngineEvent>,
    ) {
        let db = HubDb::open(&dir.join("hub.db")).unwrap();
        let scan = LiveScanner::new(
            ScanOptions {
                cache_file: None,
                refresh: Default::default(),
                agents: Vec::new(),
            },
            Default::default(),
        );
        let (stop, stopped) = watch::channel(false);
        let (events, heard) = broadcast::channel(16);
        let info = EngineInfo {
            pid: std::process::id(),
            generation: 1,
            started_at: now_rfc3339(),
            version: "test".to_owned(),
            state_root: dir.to_owned(),
        };
        let dispatch = Dispatch::new(
            Arc::new(Mutex::new(db)),
            Arc::new(scan),
            DecisionLog::in_existing_home(dir),
            events,
            stopped,
            &info,
            &EngineConfig::default(),
        );
        (Arc::new(dispatch), stop, heard)
    }

    /// Queues delivery `id` to Claude session `session`, created at `created_ms`, with a job
    /// that waits on a busy session up to `bound_secs`.
    fn queue(dispatch: &Dispatch, id: &str, session: &str, created_ms: i64, bound_secs: u64) {
        let record = DeliveryRecord {
            target_session_id: Some(session.into()),
            ..cross_agent_testkit::deliveries::queued_delivery(id)
        };
        let job = Job {
            body: "hello".into(),
            raw: false,
            settings: BTreeMap::from([(
                cross_agent_protocol::settings::PANEL_PATIENCE.to_owned(),
                bound_secs.to_string(),
            )]),
            child_env: BTreeMap::new(),
            bridge_env: BTreeMap::new(),
            cwd: "/".into(),
            new_session_id: None,
            timeout_secs: bound_secs,
            withheld_env: Vec::new(),
            pin_cwd_key: String::new(),
            panel: None,
            native: None,
            agent_host: None,
            copilot_return: None,
        };
        let key = TargetKey::new(Agent::Claude, session).to_string();
        dispatch
            .db()
            .insert_delivery(&record, &key, created_ms, &job, false)
            .unwrap();
    }

    fn state(dispatch: &Dispatch, id: &str) -> DeliveryRecord {
        dispatch.db().delivery(id).unwrap().unwrap()
    }

    #[tokio::test]
    async fn the_loop_hands_queued_deliveries_to_the_carriers_oldest_first_one_per_session() {
        let dir = tempfile::tempdir().unwrap();
        let (dispatch, stop, _events) = dispatch(dir.path());
        queue(&dispatch, "a1", "s", 1, 600);
        queue(&dispatch, "b1", "t", 2, 600);
        queue(&dispatch, "a2", "s", 3, 600);
        let others = Arc::new(Noting::default());
        let running = tokio::spawn(dispatch.clone().run(others.clone()));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while others.carried.lock().len() < 2 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // One more look at the queue: a2 still waits behind a1's lock, however often it looks.
        dispatch.wake();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(*others.carried.lock(), ["a1", "b1"]);
        assert_eq!(dispatch.carried_counts(), (2, 0));
        assert_eq!(state(&dispatch, "a1").state, DeliveryState::Delivering);
        assert_eq!(state(&dispatch, "a2").state, DeliveryState::Queued);
        stop.send_replace(true);
        tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .expect("the loop ends when the daemon stops")
            .unwrap();
    }

    #[test]
    fn a_session_another_live_daemon_works_in_is_waited_for_then_failed_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let dispatch = dispatch_with_busy_session(dir.path());
        let mut heard = dispatch.events.subscribe();
        let others = Noting::default();
        // Ours waits in line, within its bound: not taken, still queued; another session's goes.
        queue(&dispatch, "patient", "s", 2, 600);
        queue(&dispatch, "elsewhere", "t", 3, 600);
        let claimed = dispatch.take_runnable(4, false, false, &others);
        let ids: Vec<_> = claimed
            .iter()
            .map(|c| c.record.delivery_id.as_str())
            .collect();
        assert_eq!(ids, ["elsewhere"]);
        assert_eq!(state(&dispatch, "patient").state, DeliveryState::Queued);
        assert!(heard.try_recv().is_err(), "nothing settled yet");

        // One whose bound is zero is failed as not delivered at the next look, never handed
        // over, and its subscribers hear of it.
        let dir = tempfile::tempdir().unwrap();
        let dispatch = dispatch_with_busy_session(dir.path());
        let mut heard = dispatch.events.subscribe();
        queue(&dispatch, "impatient", "s", 2, 0);
        assert!(dispatch.take_runnable(4, false, false, &others).is_empty());
        let record = state(&dispatch, "impatient");
        assert_eq!(record.state, DeliveryState::Failed);
        assert!(record.is_undelivered);
        assert!(
            record
                .error
                .as_deref()
                .is_some_and(|e| e.contains("another cross-agent daemon")),
            "{:?}",
            record.error
        );
        match heard.try_recv() {
            Ok(EngineEvent::DeliveryFailed(failed)) => {
                assert_eq!(failed.delivery_id, "impatient");
            }
            other => panic!("expected the failure to be published, got {other:?}"),
        }
        assert!(others.carried.lock().is_empty());
    }

    /// A dispatcher whose session `s` another daemon — a live process that is not this one —
    /// runs a turn on.
    fn dispatch_with_busy_session(dir: &std::path::Path) -> Arc<Dispatch> {
        let other_daemon = Carrier {
            owner_pid: std::os::unix::process::parent_id(),
            generation: 9,
            lease_ms: 600_000,
        };
        let (dispatch, _stop, _events) = dispatch(dir);
        queue(&dispatch, "theirs", "s", 1, 600);
        let taken = dispatch
            .db()
            .claim_runnable(1, &other_daemon, UnixMillis::now().0, &now_rfc3339())
            .unwrap();
        assert_eq!(taken.len(), 1);
        dispatch
    }
}
