//! The messaging engine the daemon serves: `send` (guards, resolution, the record, the
//! receipt), `pin`, `list_sessions`, `bridge_status`, and the worker pool that hands queued
//! deliveries to their peers over the agents' headless CLIs.
//!
//! **Order of a send** (spec 004 §5, §6, "Never starting a headless CLI"): contradicting
//! arguments are refused; then strict mode (`CROSS_AGENT_REQUIRE_EXPLICIT_TARGET`) before any
//! lookup; then the self-call guard; then the target is resolved — `session_id` → pin → the
//! active session on disk (never the caller's own) → a new session; then the no-headless switch
//! (there are no panels yet, so with it on every send is refused, naming the session); then the
//! hop budget. Only an accepted send writes anything: its record, its payload and its hop, in
//! one transaction.
//!
//! **Queue and lock.** The dispatcher takes queued deliveries oldest first, first come first
//! served per target session, up to [`MAX_WORKERS`] at once. Taking one takes the session's busy
//! lock (owner token + pid + lease) and deletes the payload in the same transaction: that is the
//! hand-over, after which a delivery is never sent again. A busy session is a reason to wait in
//! line, never to refuse. Locks of dead owners (or expired leases) are reclaimed; a lock is
//! released only with the token that took it.
//!
//! **Stopping.** [`Engine::shutdown`] signals every running turn: each kills its CLI's process
//! group and records its delivery `failed` with `is_stopped_with_carrier`. Deliveries still
//! queued keep their payload and go out after the next start. [`Engine::drain`] (a restart)
//! instead stops taking queued work and lets the running turns finish; [`Engine::carried`]
//! says what is still carried.
//!
//! **Answers** (issue 5; spec 004 §6 "Interim answers and late answers", §9 "Delivery queue
//! execution…"). An answer is paired with its request by its closing line (the last line
//! naming any request id): this request's id makes it the answer whenever it was written,
//! another request's id rejects it, no id takes it by timing — only text written after the
//! hand-over — marked `NO REQUEST ID … possibly interim`, and starts a late-answer watch that
//! reads the peer's transcript every 20 s for a finished turn carrying the id (a `LATE ANSWER`,
//! recorded as a delivery of its own). Watches live in `hub.db` and outlive the daemon. When
//! the transport fails, the answer is read back from the transcript, never re-sent, and
//! labelled `RECOVERED, NOT RECEIVED` with its `transport failure:`. While a turn runs, its
//! transcript is read every 30 s: a finished turn echoing the id settles it
//! (`is_reply_confirmed_by_transcript`).
//!
//! **Leases and orphans.** An in-flight record has a lease (`expires_at`) renewed with its busy
//! lock; one whose lease ran out or whose carrier is gone is orphaned — at start and every 30 s
//! — even if its pid lives again (pid reuse), never re-sent, and its answer read back. A
//! session mid-turn with someone else's work (another daemon's lock, an open turn on disk) is
//! waited for, up to the larger of the job timeout and `CROSS_AGENT_PANEL_PATIENCE`; past it
//! the delivery fails as not delivered (`is_undelivered`). Records are pruned
//! `CROSS_AGENT_DELIVERY_TTL` after they finished (an orphan: after its lease ran out).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use cross_agent_decisions::{DecisionLog, events};
use cross_agent_protocol::bridge::{
    AgentFilter, BridgeStatusParams, BridgeStatusResponse, CallerContext, DeliveryRecord,
    DeliveryState, ListSessionsParams, ListSessionsResponse, PeerQueue, PeerTranscript, Pin,
    PinParams, PinResponse, Refusal, RefusalReason, SendParams, SendReceipt, SendResponse,
    SessionCandidate, SessionEntry, TargetSelectedBy,
};
use cross_agent_stores::resolve::{self, Lookup};
use cross_agent_stores::scan::{self, ScanOptions, Scanner};
use cross_agent_stores::{Session, StoreError, StoreRoots, UnixMillis};
use cross_agent_transports::headless::{Target, TurnRequest};
use cross_agent_transports::run::{Ended, RunOptions, TurnOutcome, run_turn};
use cross_agent_transports::settings::TurnSettings;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use crate::Agent;
use crate::caller::{Caller, StartedTurn, identify};
use crate::db::{HubDb, now_rfc3339, rfc3339};
use crate::envelope::AnswerKind;
use crate::envelope::{self, EnvelopeFields};
use crate::error::Result;
use crate::records::{Claimed, Job, Watch};
use crate::settings::{CallSettings, UiHook, store_scope};

/// Headless turns running at once.
pub const MAX_WORKERS: usize = 4;
/// A busy lock's lease; renewed every [`LEASE_RENEW`] while its turn runs.
const LEASE_MS: i64 = 120_000;
const LEASE_RENEW: Duration = Duration::from_secs(30);
/// How often the dispatcher looks at the queue without being woken.
const POLL: Duration = Duration::from_secs(1);
/// The answer's first characters kept on the record.
pub const REPLY_PREVIEW_CHARS: usize = 2000;
/// A target idle longer than this gets a warning: resuming it starts a turn nobody watches.
const IDLE_WARNING_SECS: u64 = 24 * 60 * 60;
/// How often finished deliveries past their TTL are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// `CROSS_AGENT_DELIVERY_TTL`'s default: 7 days.
const DEFAULT_DELIVERY_TTL_SECS: i64 = 604_800;

/// How long finished records are kept. Pruning is store-wide rather than per call, so this one
/// setting is read from the daemon's own environment.
fn delivery_ttl_ms() -> i64 {
    std::env::var("CROSS_AGENT_DELIVERY_TTL")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|v| *v > 0)
        .unwrap_or(DEFAULT_DELIVERY_TTL_SECS)
        .saturating_mul(1000)
}

/// How often a late-answer watch reads the peer's transcript (spec 004 §6: every 20 s).
const LATE_ANSWER_POLL: Duration = Duration::from_secs(20);
/// A test knob, not a user setting: `CROSS_AGENT_LATE_ANSWER_POLL_MS` shortens the late-answer
/// poll so a test need not wait 20 s per look. Read from the daemon's own environment.
const LATE_ANSWER_POLL_ENV: &str = "CROSS_AGENT_LATE_ANSWER_POLL_MS";
/// While the transport waits, the peer's transcript is read this often for a finished turn
/// that echoed the request id (spec 004 §9: the wait is broken into 30-second chunks).
const TRANSCRIPT_CHECK: Duration = Duration::from_secs(30);
/// A test knob, not a user setting: `CROSS_AGENT_TRANSCRIPT_CHECK_MS` shortens
/// [`TRANSCRIPT_CHECK`]. Read from the daemon's own environment.
const TRANSCRIPT_CHECK_ENV: &str = "CROSS_AGENT_TRANSCRIPT_CHECK_MS";
/// A session whose last turn is open but whose transcript has not been written for this long
/// is not counted as mid-turn: a CLI that died mid-turn leaves an open turn behind forever.
const STALE_OPEN_TURN: Duration = Duration::from_secs(600);

fn late_answer_poll() -> Duration {
    millis_from_env(LATE_ANSWER_POLL_ENV).unwrap_or(LATE_ANSWER_POLL)
}

fn transcript_check() -> Duration {
    millis_from_env(TRANSCRIPT_CHECK_ENV).unwrap_or(TRANSCRIPT_CHECK)
}

fn millis_from_env(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|v| *v > 0)
        .map(Duration::from_millis)
}

/// What a draining daemon still carries (issue 5 item 7: a restart lets the old daemon finish
/// it before it exits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CarriedWork {
    /// Deliveries handed to a peer whose turn this daemon still watches.
    pub turns_running: usize,
    /// Turns that ended whose answer is still being read, paired and recorded.
    pub answers_pending: usize,
    /// Late-answer watches this daemon holds. They live in `hub.db`: [`Engine::drain`] hands
    /// them over (the next daemon resumes them) instead of waiting hours for them.
    pub late_answer_watches: usize,
}

impl CarriedWork {
    /// Nothing that would be lost if the daemon exited now.
    pub fn is_empty(&self) -> bool {
        self.turns_running == 0 && self.answers_pending == 0 && self.late_answer_watches == 0
    }
}

/// A transcript's (size, mtime) when last read, and whether its last turn was open.
type DiskTurn = ((u64, Option<std::time::SystemTime>), bool);

/// The delivery ids this daemon carries, by stage.
#[derive(Debug, Default)]
struct Carried {
    turns: HashSet<String>,
    answers: HashSet<String>,
    watches: HashSet<String>,
}

/// How many finished deliveries `bridge_status` lists.
const RECENT: u32 = 20;
/// Room kept for the envelope around a message that must fit in one argument.
const ENVELOPE_ALLOWANCE: usize = 4 * 1024;
/// How many late-answer watches `bridge_status` lists (the newest; a warning gives the total).
const WATCHES_SHOWN: u32 = 50;

/// Who runs the engine, for records and `bridge_status`.
#[derive(Debug, Clone)]
pub struct EngineInfo {
    pub pid: u32,
    pub generation: u64,
    pub started_at: String,
    pub version: String,
    /// `CROSS_AGENT_HOME`, where the session index cache lives.
    pub state_root: PathBuf,
}

/// A cheap cloneable handle over the engine's shared state.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("generation", &self.inner.info.generation)
            .finish_non_exhaustive()
    }
}

struct Inner {
    info: EngineInfo,
    db: Mutex<HubDb>,
    /// The session index, held in memory between listings (one listing at a time: it also
    /// saves the cache file).
    scan: Mutex<Scanner>,
    turns: Mutex<Vec<StartedTurn>>,
    wake: Notify,
    stop: watch::Sender<bool>,
    dispatcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Set while this daemon is being replaced: queued deliveries are left for the successor.
    paused: std::sync::atomic::AtomicBool,
    carried: Mutex<Carried>,
    /// When each queued delivery was first seen waiting on someone else's turn.
    waiting_since: Mutex<HashMap<String, i64>>,
    /// Transcripts last read for an open turn: their size and mtime then, and the answer.
    disk_turns: Mutex<HashMap<PathBuf, DiskTurn>>,
    watcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// `$CROSS_AGENT_HOME/decisions.jsonl`: every send, refusal, outcome, orphan and recovery.
    decisions: DecisionLog,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now_ms() -> i64 {
    resolve::now().0
}

fn non_blank(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

fn refusal(reason: RefusalReason, message: impl Into<String>, details: Value) -> Refusal {
    Refusal {
        reason,
        message: message.into(),
        candidates: Vec::new(),
        details,
    }
}

fn rfc3339_ms(ms: UnixMillis) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms.0) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    rfc3339(at)
}

fn parse_ms(text: &str) -> Option<i64> {
    let at =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// The first `limit` characters.
fn preview(text: &str, limit: usize) -> String {
    text.chars().take(limit).collect()
}

/// Where the agents' stores are for this caller: the HOME and store variables of the
/// environment its spawned CLIs get, so the bridge resolves against the stores its turns write
/// to. A caller that sent no environment falls back to the daemon's own.
fn roots_for(context: &CallerContext) -> StoreRoots {
    let env = &context.child_env;
    if env.contains_key("HOME") {
        let home = env.get("HOME").map(PathBuf::from);
        StoreRoots::from_vars(home.as_deref(), |name| {
            env.get(name)
                .or_else(|| context.settings.get(name))
                .map(OsString::from)
        })
    } else {
        StoreRoots::from_env()
    }
}

fn candidate(session: &resolve::Candidate, agent: Agent) -> SessionCandidate {
    SessionCandidate {
        agent,
        session_id: session.session_id.clone(),
        title: session.title.clone(),
        title_is_assigned: session.title_is_assigned,
        cwd: session
            .cwd
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
        last_activity: session.last_activity.map(rfc3339_ms),
    }
}

/// A store lookup's refusal, with candidates where it has them.
fn lookup_refusal(error: StoreError, agent: Agent) -> Refusal {
    let message = error.to_string();
    match error {
        StoreError::AmbiguousName { candidates, .. } => Refusal {
            reason: RefusalReason::AmbiguousName,
            message,
            candidates: candidates.iter().map(|c| candidate(c, agent)).collect(),
            details: Value::Null,
        },
        StoreError::NameUnproven { candidate: c, .. } => Refusal {
            reason: RefusalReason::ScanBoundReached,
            message,
            candidates: vec![candidate(&c, agent)],
            details: Value::Null,
        },
        StoreError::NoSuchSession { similar, .. } => Refusal {
            reason: RefusalReason::NoSuchSession,
            message,
            candidates: similar
                .iter()
                .map(|s| SessionCandidate {
                    agent,
                    session_id: s.session_id.clone(),
                    title: Some(s.title.clone()),
                    title_is_assigned: s.title_is_assigned,
                    cwd: None,
                    last_activity: s.last_activity.map(rfc3339_ms),
                })
                .collect(),
            details: Value::Null,
        },
        // Reading the store failed rather than the lookup: nothing can be shown to exist.
        StoreError::Io { .. }
        | StoreError::Zstd { .. }
        | StoreError::Sqlite { .. }
        | StoreError::Format { .. }
        | StoreError::InvalidSetting { .. }
        | StoreError::Cache { .. } => refusal(RefusalReason::NoSuchSession, message, Value::Null),
    }
}

/// The session a send goes to.
#[derive(Debug, Clone)]
struct Resolved {
    selected_by: TargetSelectedBy,
    /// `None` for a new session whose id the agent chooses (Codex).
    session_id: Option<String>,
    cwd: PathBuf,
    title: Option<String>,
    transcript: Option<PathBuf>,
    last_activity: Option<UnixMillis>,
    is_working: bool,
    /// Why a new session is created.
    new_reason: Option<String>,
}

impl Resolved {
    fn of(session: &Session, selected_by: TargetSelectedBy, fallback_cwd: &Path) -> Resolved {
        Resolved {
            selected_by,
            session_id: Some(session.session_id.clone()),
            cwd: session
                .cwd
                .clone()
                .unwrap_or_else(|| fallback_cwd.to_owned()),
            title: session.title.clone(),
            transcript: Some(session.path.clone()),
            last_activity: session.last_activity,
            is_working: session.is_working,
            new_reason: None,
        }
    }
}

/// The pin key of a directory: pins are per agent and per directory (`""`: every directory).
fn cwd_key(cwd: Option<&str>) -> String {
    cwd.map(|c| c.trim_end_matches('/').to_owned())
        .filter(|c| !c.is_empty())
        .unwrap_or_default()
}

impl Engine {
    /// Opens the engine's state in `hub_db` and closes what an earlier daemon left open. Start
    /// the worker pool with [`Engine::start`].
    pub fn open(hub_db: &Path, info: EngineInfo) -> Result<Engine> {
        let db = HubDb::open(hub_db)?;
        // Another daemon may still carry some (a restart's old daemon draining): only records
        // whose lease ran out or whose carrier is gone are orphaned.
        let orphaned = db.orphan_stale(info.generation, now_ms(), &now_rfc3339())?;
        let decisions = DecisionLog::new(&info.state_root);
        for record in &orphaned {
            decisions.record(events::orphan(record));
            tracing::warn!(
                delivery = %record.delivery_id,
                "a delivery an earlier daemon handed over but never closed was marked orphaned"
            );
            // A daemon killed outright could not stop its turns; one still running writes to a
            // session no lock protects any more. Its group is stopped now — only when the
            // process is still the agent's CLI, so a reused pid is never touched.
            if let Some(pid) = record.peer_pid
                && is_agent_process(pid, record.target_agent)
            {
                tracing::warn!(pid, "stopping the turn of an orphaned delivery");
                cross_agent_transports::process::kill_group(pid);
            }
        }
        let (stop, _) = watch::channel(false);
        let state_root = info.state_root.clone();
        let engine = Engine {
            inner: Arc::new(Inner {
                info,
                db: Mutex::new(db),
                scan: Mutex::new(Scanner::new(ScanOptions {
                    cache_file: Some(scan::cache_file(&state_root)),
                    refresh: Default::default(),
                    agents: Vec::new(),
                })),
                turns: Mutex::new(Vec::new()),
                wake: Notify::new(),
                stop,
                dispatcher: Mutex::new(None),
                paused: std::sync::atomic::AtomicBool::new(false),
                carried: Mutex::new(Carried::default()),
                waiting_since: Mutex::new(HashMap::new()),
                disk_turns: Mutex::new(HashMap::new()),
                watcher: Mutex::new(None),
                decisions,
            }),
        };
        for mut record in orphaned {
            // The answer may be on disk already: read it back now (never re-sent).
            if engine.recover(&mut record, "the daemon carrying it disappeared") {
                let _ = engine.db().update_delivery(&record);
            }
        }
        Ok(engine)
    }

    pub fn info(&self) -> &EngineInfo {
        &self.inner.info
    }

    fn db(&self) -> MutexGuard<'_, HubDb> {
        lock(&self.inner.db)
    }

    /// Starts the dispatcher (inside a tokio runtime). Queued deliveries — including those an
    /// earlier daemon accepted but never handed over — start going out.
    pub fn start(&self) {
        let engine = self.clone();
        let handle = tokio::spawn(async move { engine.dispatch_loop().await });
        *lock(&self.inner.dispatcher) = Some(handle);
        let engine = self.clone();
        let handle = tokio::spawn(async move { engine.watch_loop().await });
        *lock(&self.inner.watcher) = Some(handle);
    }

    /// What this daemon still carries.
    pub fn carried(&self) -> CarriedWork {
        let carried = lock(&self.inner.carried);
        CarriedWork {
            turns_running: carried.turns.len(),
            answers_pending: carried.answers.len(),
            late_answer_watches: carried.watches.len(),
        }
    }

    /// Whether dispatch is paused ([`Engine::pause_dispatch`], [`Engine::drain`]).
    pub fn is_draining(&self) -> bool {
        self.inner.paused.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops taking new work and resolves when everything carried is done: no queued delivery
    /// is taken any more (they stay queued in `hub.db`, with their payloads, for the daemon
    /// that shares it), the running turns are watched to their end and their answers recorded,
    /// and the late-answer watches are handed over — released in `hub.db`, where the next
    /// daemon resumes them at its next look. The busy locks of the running turns stay renewed
    /// until each ends, so no other daemon takes those sessions meanwhile. Returns what was
    /// carried when draining began. Call [`Engine::shutdown`] afterwards.
    pub async fn drain(&self) -> CarriedWork {
        let at_start = self.carried();
        self.pause_dispatch(true);
        let watcher = lock(&self.inner.watcher).take();
        if let Some(watcher) = watcher {
            watcher.abort();
            let _ = watcher.await;
        }
        if let Err(error) = self.db().release_watches(self.inner.info.pid) {
            tracing::warn!(%error, "could not hand late-answer watches over");
        }
        lock(&self.inner.carried).watches.clear();
        loop {
            let now = self.carried();
            if now.turns_running == 0 && now.answers_pending == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        at_start
    }

    /// Stops every running turn (killing its process group, recording it `failed` with
    /// `is_stopped_with_carrier`) and waits for the workers to finish. Queued deliveries stay
    /// queued with their payloads.
    pub async fn shutdown(&self) {
        self.inner.stop.send_replace(true);
        let handle = lock(&self.inner.dispatcher).take();
        if let Some(handle) = handle {
            let _ = handle.await;
        }
        let watcher = lock(&self.inner.watcher).take();
        if let Some(watcher) = watcher {
            watcher.abort();
            let _ = watcher.await;
        }
        // Watches live on in hub.db: the next daemon resumes them without waiting for a lease.
        let _ = self.db().release_watches(self.inner.info.pid);
    }

    /// Stops (or, with `false`, resumes) taking queued deliveries, leaving running turns alone:
    /// a daemon being replaced leaves its queue in `hub.db` for the successor.
    pub fn pause_dispatch(&self, paused: bool) {
        self.inner
            .paused
            .store(paused, std::sync::atomic::Ordering::SeqCst);
        self.inner.wake.notify_one();
    }

    /// The headless turns running now.
    pub fn started_turns(&self) -> Vec<StartedTurn> {
        lock(&self.inner.turns).clone()
    }

    fn list(&self, context: &CallerContext, agents: &[Agent]) -> (Vec<Session>, Vec<String>) {
        let roots = roots_for(context);
        let listing = lock(&self.inner.scan).list_agents(&roots, agents);
        (
            listing.sessions,
            listing.warnings.iter().map(ToString::to_string).collect(),
        )
    }

    /// `send_to_*`: refuses, or records the delivery and answers with a receipt at once.
    pub fn send(&self, params: SendParams) -> Result<SendResponse> {
        let agent = params.agent;
        let response = match self.try_send(params)? {
            Ok(receipt) => SendResponse::Accepted(receipt),
            Err(refusal) => SendResponse::Refused(refusal),
        };
        self.inner
            .decisions
            .record_all(events::send(agent, &response));
        Ok(response)
    }

    fn try_send(&self, params: SendParams) -> Result<Result<SendReceipt, Refusal>> {
        let agent = params.agent;
        let settings = CallSettings::from_settings(&params.caller.settings);
        let explicit = non_blank(params.session_id.as_deref()).map(str::to_owned);

        // 0. Settings: a guard spelled wrong must not quietly stop guarding.
        if !settings.invalid.is_empty() {
            return Ok(Err(refusal(
                RefusalReason::InvalidSetting,
                format!(
                    "this registration's settings cannot all be read: {}. Fix the value in the \
                     MCP registration (or the environment of `cross-agent send`). Nothing was \
                     sent and no hop was spent",
                    settings.invalid.join("; ")
                ),
                json!({"invalid": settings.invalid}),
            )));
        }

        // 1. Arguments.
        if params.message.trim().is_empty() {
            return Ok(Err(refusal(
                RefusalReason::InvalidArguments,
                "the message is empty; write the request for the peer in `message`",
                Value::Null,
            )));
        }
        // Grok takes its prompt only as an argument: refuse here what `build` would refuse after
        // queueing, leaving room for the envelope around the message.
        if agent == Agent::Grok
            && params.message.len() + ENVELOPE_ALLOWANCE
                > cross_agent_transports::headless::MAX_ARGUMENT_BYTES
        {
            return Ok(Err(refusal(
                RefusalReason::InvalidArguments,
                format!(
                    "the message is {} bytes; Grok takes its prompt only as a command-line \
                     argument, which holds at most {} bytes with the envelope. Send a shorter \
                     message (put the bulk in a file in the session's folder and name the file). \
                     Nothing was sent and no hop was spent",
                    params.message.len(),
                    cross_agent_transports::headless::MAX_ARGUMENT_BYTES - ENVELOPE_ALLOWANCE
                ),
                json!({"message_bytes": params.message.len()}),
            )));
        }
        if explicit.is_some() && params.new_session {
            return Ok(Err(refusal(
                RefusalReason::InvalidArguments,
                "session_id and new_session=true cannot be used together: one names an existing \
                 session, the other asks for a new one. Pass one of them",
                json!({"session_id": params.session_id, "new_session": true}),
            )));
        }
        // 2. Strict mode, before any lookup: nothing sent, no hop spent.
        if settings.require_explicit_target && explicit.is_none() && !params.new_session {
            return Ok(Err(refusal(
                RefusalReason::RequireExplicitTarget,
                format!(
                    "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET is set for this registration, so a send \
                     must say where it goes: pass session_id (a session id or an exact \
                     conversation name) or new_session=true to {}. A pin does not count. Nothing \
                     was sent and no hop was spent",
                    agent.send_tool()
                ),
                json!({"session_id": params.session_id, "new_session": params.new_session}),
            )));
        }
        // 2b. Panels off and headless off: no route is left, so refuse before any lookup.
        if settings.disable_headless && settings.ui_hook == UiHook::Off {
            return Ok(Err(refusal(
                RefusalReason::DisableHeadless,
                "CROSS_AGENT_UI_HOOK=off and CROSS_AGENT_DISABLE_HEADLESS are both set for this \
                 registration: the first rules out editor panels, the second a headless CLI, so \
                 every send is refused. Unset one of them. Nothing was sent, queued or spent",
                json!({"ui_hook": settings.ui_hook.as_str(), "disable_headless": true}),
            )));
        }

        // 3. Who is calling, and the self-call guard.
        let caller = identify(&params.caller, &self.started_turns());
        if caller.agent == Some(agent) {
            let allowed = match agent {
                Agent::Claude | Agent::Grok => explicit.is_some() || params.allow_same_agent,
                Agent::Codex => explicit.is_some(),
            };
            if !allowed {
                let elsewhere: Vec<&str> = Agent::ALL
                    .iter()
                    .filter(|a| **a != agent)
                    .map(|a| a.send_tool())
                    .collect();
                let how = match agent {
                    Agent::Claude | Agent::Grok => {
                        "name the session with session_id, or pass allow_same_agent=true"
                    }
                    Agent::Codex => {
                        "name the thread with session_id (send_to_codex has no allow_same_agent)"
                    }
                };
                return Ok(Err(refusal(
                    RefusalReason::SelfCall,
                    format!(
                        "this call comes from a {} session, and {} would relay into another \
                         session of the same agent. The peer tools cross from one product to \
                         another: use {} to reach another agent. To reach another {agent} \
                         session on purpose, {how}",
                        agent.product_name(),
                        agent.send_tool(),
                        elsewhere.join(" or "),
                    ),
                    json!({"caller": caller.to_json(), "target_agent": agent}),
                )));
            }
        }

        // 4. The target.
        let cwd_text = non_blank(params.cwd.as_deref())
            .or(non_blank(params.caller.cwd.as_deref()))
            .map(str::to_owned);
        let Some(cwd_text) = cwd_text else {
            return Ok(Err(refusal(
                RefusalReason::InvalidArguments,
                "no working directory: pass cwd (the caller's directory was not sent either)",
                Value::Null,
            )));
        };
        let cwd = PathBuf::from(&cwd_text);
        let scope = params.scope.unwrap_or(settings.scope);
        let own_session = caller
            .session_id
            .clone()
            .filter(|_| caller.agent == Some(agent));
        let resolved = match self.resolve(
            agent,
            &params,
            explicit.as_deref(),
            &cwd,
            scope,
            &settings,
            own_session.as_deref(),
        )? {
            Ok(resolved) => resolved,
            Err(refusal) => return Ok(Err(refusal)),
        };
        if let (Some(own), Some(target)) = (&own_session, &resolved.session_id)
            && own == target
        {
            return Ok(Err(refusal(
                RefusalReason::SelfCall,
                format!(
                    "{agent} session {own} is the calling session itself; a session cannot send \
                     to itself. Name another session with session_id"
                ),
                json!({"caller": caller.to_json()}),
            )));
        }

        // 5a. A panel required: without panel shims none is ever found, so only a send that
        // names its session (by id, name or pin) may go on, over the CLI as the spec says.
        if settings.ui_hook == UiHook::Require
            && matches!(
                resolved.selected_by,
                TargetSelectedBy::Discovery | TargetSelectedBy::NewSession
            )
        {
            let what = match (&resolved.selected_by, &resolved.session_id) {
                (TargetSelectedBy::Discovery, Some(id)) => format!(
                    "names no session (discovery picked {agent} session {id} in {})",
                    resolved.cwd.display()
                ),
                _ => format!("would open a new {agent} conversation"),
            };
            return Ok(Err(refusal(
                RefusalReason::UiHookRequire,
                format!(
                    "CROSS_AGENT_UI_HOOK=require is set for this registration, and this send \
                     {what}, which only an editor panel may take; no panel was found (panel \
                     delivery is not available in this build). Name the session with session_id \
                     or pin_agent_session to reach it over its CLI, or set CROSS_AGENT_UI_HOOK to \
                     auto. Nothing was sent, queued or spent"
                ),
                json!({
                    "ui_hook": settings.ui_hook.as_str(),
                    "target_selected_by": resolved.selected_by,
                    "target_session_id": resolved.session_id,
                }),
            )));
        }

        // 5b. No headless CLI: there are no panels yet, so nothing can be reached.
        if settings.disable_headless {
            let which = resolved.session_id.as_deref().map_or_else(
                || format!("the new {agent} session it would create"),
                |id| format!("{agent} session {id}"),
            );
            return Ok(Err(refusal(
                RefusalReason::DisableHeadless,
                format!(
                    "CROSS_AGENT_DISABLE_HEADLESS is set for this registration, so a send must \
                     reach a session an editor panel holds, and no panel holds {which} (panel \
                     delivery is not available in this build, so every send is refused while \
                     the setting is on). Nothing was sent, queued or spent"
                ),
                json!({"target_session_id": resolved.session_id}),
            )));
        }

        // 6. The hop budget.
        let conversation_given = non_blank(params.conversation_id.as_deref())
            .map(str::to_owned)
            .or(caller.conversation_id.clone());
        let conversation_id = conversation_given
            .clone()
            .unwrap_or_else(envelope::conversation_id);
        let spent = self.db().conversation_hops(&conversation_id)?;
        if spent >= settings.max_hops {
            return Ok(Err(refusal(
                RefusalReason::HopBudget,
                format!(
                    "conversation {conversation_id} has used all {} of its hops \
                     (CROSS_AGENT_MAX_HOPS); this relay would be hop {}. Keep the result in your \
                     own final message instead of relaying it",
                    settings.max_hops,
                    spent + 1
                ),
                json!({"conversation_id": conversation_id, "hops_spent": spent, "max_hops": settings.max_hops}),
            )));
        }
        let hop = spent + 1;

        // 7. Accept.
        Ok(Ok(self.accept(
            &params,
            &caller,
            resolved,
            &settings,
            conversation_id,
            conversation_given.is_none(),
            hop,
            &cwd_text,
        )?))
    }

    #[allow(clippy::too_many_arguments)]
    fn resolve(
        &self,
        agent: Agent,
        params: &SendParams,
        explicit: Option<&str>,
        cwd: &Path,
        scope: cross_agent_protocol::bridge::Scope,
        settings: &CallSettings,
        own_session: Option<&str>,
    ) -> Result<Result<Resolved, Refusal>> {
        let new_session = |reason: String, by: TargetSelectedBy| Resolved {
            selected_by: by,
            session_id: match agent {
                Agent::Claude | Agent::Grok => Some(uuid::Uuid::new_v4().to_string()),
                Agent::Codex => None,
            },
            cwd: cwd.to_owned(),
            title: None,
            transcript: None,
            last_activity: None,
            is_working: false,
            new_reason: Some(reason),
        };
        if params.new_session {
            return Ok(Ok(new_session(
                "new_session=true was passed".to_owned(),
                TargetSelectedBy::NewSession,
            )));
        }
        let (sessions, _) = self.list(&params.caller, &[agent]);
        if let Some(query) = explicit {
            return Ok(
                match resolve::lookup(
                    &sessions,
                    query,
                    Lookup {
                        agent,
                        scope: cross_agent_stores::resolve::Scope::Any,
                        cwd,
                        bound: settings.name_bound(agent, scope),
                    },
                ) {
                    Ok(found) => Ok(Resolved::of(found.session, TargetSelectedBy::Caller, cwd)),
                    // A session the bridge is creating right now is not on disk yet, but its id
                    // is on the receipt the caller holds: follow-ups may name it.
                    Err(StoreError::NoSuchSession { .. })
                        if let Some(pending) = self.session_being_created(agent, query)? =>
                    {
                        Ok(Resolved {
                            selected_by: TargetSelectedBy::Caller,
                            session_id: Some(query.to_owned()),
                            cwd: pending
                                .target_cwd
                                .as_deref()
                                .map_or_else(|| cwd.to_owned(), PathBuf::from),
                            title: None,
                            transcript: pending.target_transcript.as_deref().map(PathBuf::from),
                            last_activity: None,
                            is_working: true,
                            new_reason: None,
                        })
                    }
                    Err(error) => Err(lookup_refusal(error, agent)),
                },
            );
        }
        let now = resolve::now();
        if let Some((pin, pinned_ms)) = self.current_pin(agent, cwd)? {
            let on_disk = sessions
                .iter()
                .find(|s| s.agent == agent && s.session_id == pin.session_id);
            let recent = on_disk
                .and_then(|s| s.last_activity)
                .map_or(pinned_ms, |last| last.0.max(pinned_ms));
            if pin.sticky
                || settings
                    .active_window
                    .is_active(Some(UnixMillis(recent)), now)
            {
                return Ok(Ok(match on_disk {
                    Some(session) => Resolved::of(session, TargetSelectedBy::Pin, cwd),
                    // A session the bridge just created may not be on disk yet.
                    None => Resolved {
                        selected_by: TargetSelectedBy::Pin,
                        session_id: Some(pin.session_id.clone()),
                        cwd: pin
                            .cwd
                            .as_deref()
                            .map_or_else(|| cwd.to_owned(), PathBuf::from),
                        title: pin.title.clone(),
                        transcript: None,
                        last_activity: None,
                        is_working: false,
                        new_reason: None,
                    },
                }));
            }
        }
        if let Some(session) = resolve::best_active(
            &sessions,
            agent,
            store_scope(scope),
            cwd,
            settings.active_window,
            now,
            own_session,
        ) {
            return Ok(Ok(Resolved::of(session, TargetSelectedBy::Discovery, cwd)));
        }
        Ok(Ok(new_session(
            format!(
                "no {agent} session active in the last {} minutes was found in scope `{}` of {}",
                settings.active_window.minutes(),
                store_scope(scope),
                cwd.display()
            ),
            TargetSelectedBy::NewSession,
        )))
    }

    /// An unfinished delivery creating `agent` session `session_id`.
    fn session_being_created(
        &self,
        agent: Agent,
        session_id: &str,
    ) -> Result<Option<DeliveryRecord>> {
        Ok(self
            .db()
            .deliveries_in(
                &[
                    DeliveryState::Queued,
                    DeliveryState::Delivering,
                    DeliveryState::AwaitingPeer,
                ],
                1000,
            )?
            .into_iter()
            .find(|r| {
                r.will_create_session
                    && r.target_agent == agent
                    && r.target_session_id.as_deref() == Some(session_id)
            }))
    }

    /// The pin for `cwd`, else the pin for every directory.
    fn current_pin(&self, agent: Agent, cwd: &Path) -> Result<Option<(Pin, i64)>> {
        let db = self.db();
        let key = cwd_key(Some(&cwd.to_string_lossy()));
        if let Some(found) = db.pin(agent, &key)? {
            return Ok(Some(found));
        }
        db.pin(agent, "")
    }

    #[allow(clippy::too_many_arguments)]
    fn accept(
        &self,
        params: &SendParams,
        caller: &Caller,
        resolved: Resolved,
        settings: &CallSettings,
        conversation_id: String,
        conversation_is_new: bool,
        hop: u32,
        cwd_text: &str,
    ) -> Result<SendReceipt> {
        let agent = params.agent;
        let now_ms = now_ms();
        let now = now_rfc3339();
        let delivery_id = envelope::delivery_id();
        let request_id = envelope::request_id(now_ms);
        let timeout_secs = params
            .timeout
            .filter(|t| *t > 0)
            .unwrap_or(settings.timeout_secs);
        let will_create = resolved.new_reason.is_some();
        let target_key = match &resolved.session_id {
            Some(id) => format!("{agent}:{id}"),
            None => format!("{agent}:new:{delivery_id}"),
        };
        let body = if params.raw {
            params.message.clone()
        } else {
            envelope::body(
                &EnvelopeFields {
                    from_agent: caller.agent,
                    from_session: caller.session_id.as_deref(),
                    conversation_id: &conversation_id,
                    hop,
                    max_hops: settings.max_hops,
                    request_id: &request_id,
                },
                &params.message,
            )
        };
        // The child runs a bridge configured like the caller's: its settings (never
        // CROSS_AGENT_SELF), the conversation, and who it is.
        let mut bridge_env: BTreeMap<String, String> = params
            .caller
            .settings
            .iter()
            .filter(|(k, _)| k.starts_with("CROSS_AGENT_") && k.as_str() != "CROSS_AGENT_SELF")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        bridge_env.insert(
            "CROSS_AGENT_CONVERSATION_ID".into(),
            conversation_id.clone(),
        );
        bridge_env.remove("CROSS_AGENT_SELF_SESSION");
        if let Some(id) = &resolved.session_id {
            bridge_env.insert("CROSS_AGENT_SELF_SESSION".into(), format!("{agent}:{id}"));
        }
        let transcript = resolved.transcript.clone().or_else(|| match agent {
            Agent::Claude => {
                let roots = roots_for(&params.caller);
                let id = resolved.session_id.as_deref()?;
                Some(
                    cross_agent_stores::claude::projects_dir(roots.claude_config.as_deref()?)
                        .join(cross_agent_stores::claude::project_slug(&resolved.cwd))
                        .join(format!("{id}.jsonl")),
                )
            }
            Agent::Codex | Agent::Grok => None,
        });
        let pin_cwd_key = cwd_key(Some(cwd_text));
        let job = Job {
            body,
            raw: params.raw,
            settings: params.caller.settings.clone(),
            child_env: params.caller.child_env.clone(),
            bridge_env,
            cwd: resolved.cwd.to_string_lossy().into_owned(),
            new_session_id: resolved.session_id.clone().filter(|_| will_create),
            timeout_secs,
            withheld_env: params.caller.withheld_env.clone(),
            pin_cwd_key: pin_cwd_key.clone(),
        };
        let record = DeliveryRecord {
            delivery_id: delivery_id.clone(),
            request_id: request_id.clone(),
            state: DeliveryState::Queued,
            from_agent: caller.agent,
            from_session: caller.session_id.clone(),
            target_agent: agent,
            target_session_id: resolved.session_id.clone(),
            target_cwd: Some(resolved.cwd.to_string_lossy().into_owned()),
            target_selected_by: resolved.selected_by,
            will_create_session: will_create,
            conversation_id: conversation_id.clone(),
            hop,
            max_hops: settings.max_hops,
            transport: "headless-cli".into(),
            created_at: now.clone(),
            started_at: None,
            finished_at: None,
            expires_at: None,
            carrier_generation: Some(self.inner.info.generation),
            peer_pid: None,
            error: None,
            is_killed_by_timeout: false,
            is_stopped_with_carrier: false,
            is_reply_recovered: false,
            is_undelivered: false,
            reply_preview: None,
            late_reply_delivery_id: None,
            return_delivery_id: None,
            message_chars: u64::try_from(params.message.chars().count()).unwrap_or(u64::MAX),
            is_orphaned: false,
            // No panel route back exists yet: the answer stays on the record.
            is_return_status_only: true,
            target_transcript: transcript.map(|p| p.to_string_lossy().into_owned()),
            answer: Default::default(),
        };
        let queue = {
            let mut db = self.db();
            let queue = db.queue_info(&target_key)?;
            db.insert_delivery(&record, &target_key, now_ms, &job, true)?;
            // A created Claude or Grok session has its id now: pin it at once, so the next send
            // queues behind this one instead of creating another.
            if will_create && let Some(id) = &resolved.session_id {
                db.set_pin(
                    &Pin {
                        agent,
                        session_id: id.clone(),
                        title: None,
                        cwd: Some(resolved.cwd.to_string_lossy().into_owned()),
                        sticky: false,
                        pinned_at: now.clone(),
                    },
                    &pin_cwd_key,
                    now_ms,
                )?;
            }
            queue
        };
        self.inner.wake.notify_one();

        let idle_secs = resolved
            .last_activity
            .map(|last| u64::try_from((now_ms - last.0).max(0) / 1000).unwrap_or(0));
        let mut warnings = Vec::new();
        match resolved.selected_by {
            TargetSelectedBy::Discovery => warnings.push(format!(
                "unaddressed relay: nobody named the target, so the most recently active {agent} \
                 session in scope was chosen ({}). Check target_session_id is the conversation \
                 you meant; pass session_id every time for anything automated or continuing",
                resolved.session_id.as_deref().unwrap_or("?")
            )),
            TargetSelectedBy::Caller | TargetSelectedBy::Pin | TargetSelectedBy::NewSession => {}
        }
        if let Some(reason) = &resolved.new_reason {
            warnings.push(format!(
                "a new {agent} session is opened in {}: {reason}. It starts with no context; it \
                 is pinned, so later sends from here reach it",
                resolved.cwd.display()
            ));
        }
        if idle_secs.is_some_and(|s| s > IDLE_WARNING_SECS) {
            warnings.push(format!(
                "the target session has been idle for {} hours; resuming it starts a turn \
                 nobody is watching",
                idle_secs.unwrap_or(0) / 3600
            ));
        }
        if queue.queued + queue.running > 0 || resolved.is_working {
            warnings.push(format!(
                "the peer session is busy ({} delivery(ies) ahead); this message waits in line \
                 and goes out when the session is free",
                queue.queued + queue.running
            ));
        }
        if conversation_is_new && caller.started_turn.is_some() {
            warnings.push(
                "a new conversation was opened although this call comes from a turn the bridge \
                 started; pass conversation_id to share the hop budget"
                    .to_owned(),
            );
        }
        warnings.push(format!(
            "return_panel_available_now is false: the sender has no open panel for the answer \
             to arrive in, so it will not come back as a message here. Read it with \
             bridge_status(delivery_id=\"{delivery_id}\")"
        ));
        let note = format!(
            "Accepted; no answer yet. The peer's turn runs in the background (headless {agent} \
             CLI). Its answer stays on the delivery record: read it with \
             bridge_status(delivery_id=\"{delivery_id}\")."
        );
        Ok(SendReceipt {
            delivery_id,
            accepted: true,
            note,
            target_agent: agent,
            target_session_id: resolved.session_id.clone(),
            target_title: resolved.title.clone(),
            target_selected_by: resolved.selected_by,
            caller_supplied_session_id: params.session_id.clone(),
            will_create_session: will_create,
            target_last_activity_seconds_ago: idle_secs,
            queue_depth: queue.queued + queue.running,
            peer_queue: PeerQueue {
                queued_ahead: queue.queued,
                oldest_waiting_seconds: queue
                    .oldest_queued_ms
                    .map(|t| u64::try_from((now_ms - t).max(0) / 1000).unwrap_or(0)),
                peer_turn: Some(
                    if queue.running > 0 || resolved.is_working {
                        "running"
                    } else {
                        "idle"
                    }
                    .to_owned(),
                ),
            },
            reply_lands_in_session: caller.session_id.clone(),
            return_panel_available_now: false,
            conversation_id,
            hop,
            max_hops: settings.max_hops,
            request_id,
            idle_policy: format!(
                "inactivity timeout {timeout_secs} s, reset by CLI output or transcript writes; \
                 no wall-clock limit"
            ),
            warnings,
        })
    }

    /// `pin_agent_session`: pins a session by id or exact name (sticky, never expires), or
    /// unpins with an empty `session_id`.
    pub fn pin(&self, params: PinParams) -> Result<PinResponse> {
        let agent = params.agent;
        let response = self.answer_pin(params)?;
        self.inner.decisions.record(events::pin(agent, &response));
        Ok(response)
    }

    fn answer_pin(&self, params: PinParams) -> Result<PinResponse> {
        let cwd_text = non_blank(params.cwd.as_deref()).or(non_blank(params.caller.cwd.as_deref()));
        let key = cwd_key(cwd_text);
        let previous = self.db().pin(params.agent, &key)?.map(|(pin, _)| pin);
        let Some(query) = non_blank(params.session_id.as_deref()) else {
            self.db().remove_pin(params.agent, &key)?;
            return Ok(PinResponse::Unpinned { previous });
        };
        let (sessions, _) = self.list(&params.caller, &[params.agent]);
        let settings = CallSettings::from_settings(&params.caller.settings);
        let cwd = PathBuf::from(cwd_text.unwrap_or("/"));
        let found = match resolve::lookup(
            &sessions,
            query,
            Lookup {
                agent: params.agent,
                scope: cross_agent_stores::resolve::Scope::Any,
                cwd: &cwd,
                bound: settings.name_bound(params.agent, settings.scope),
            },
        ) {
            Ok(found) => found.session,
            Err(error) => return Ok(PinResponse::Refused(lookup_refusal(error, params.agent))),
        };
        let pin = Pin {
            agent: params.agent,
            session_id: found.session_id.clone(),
            title: found.title.clone(),
            cwd: found.cwd.as_ref().map(|p| p.to_string_lossy().into_owned()),
            sticky: true,
            pinned_at: now_rfc3339(),
        };
        self.db().set_pin(&pin, &key, now_ms())?;
        Ok(PinResponse::Pinned { pin, previous })
    }

    /// `list_agent_sessions`.
    pub fn list_sessions(&self, params: ListSessionsParams) -> Result<ListSessionsResponse> {
        let agents: Vec<Agent> = match params.agent {
            AgentFilter::Claude => vec![Agent::Claude],
            AgentFilter::Codex => vec![Agent::Codex],
            AgentFilter::Grok => vec![Agent::Grok],
            AgentFilter::Both => vec![Agent::Claude, Agent::Codex],
            AgentFilter::All => Agent::ALL.to_vec(),
        };
        let settings = CallSettings::from_settings(&params.caller.settings);
        let caller = identify(&params.caller, &self.started_turns());
        let (sessions, warnings) = self.list(&params.caller, &agents);
        let cwd = non_blank(params.cwd.as_deref())
            .or(non_blank(params.caller.cwd.as_deref()))
            .map(PathBuf::from);
        let scope = match (&cwd, params.scope) {
            (None, _) => cross_agent_protocol::bridge::Scope::Any,
            (Some(_), Some(scope)) => scope,
            (Some(_), None) => settings.scope,
        };
        let limit = params.limit.map_or(50, |l| l as usize);
        let pins: HashSet<(Agent, String)> = self
            .db()
            .pins()?
            .into_iter()
            .map(|p| (p.agent, p.session_id))
            .collect();
        let now = resolve::now();
        let root = PathBuf::from("/");
        let mut out = BTreeMap::new();
        for agent in agents {
            let ranked = resolve::ranked(
                &sessions,
                agent,
                store_scope(scope),
                cwd.as_deref().unwrap_or(&root),
            );
            let mut list: Vec<&Session> = ranked;
            list.sort_by_key(|s| std::cmp::Reverse(s.last_activity));
            let entries = list
                .into_iter()
                .take(limit)
                .map(|s| SessionEntry {
                    session_id: s.session_id.clone(),
                    title: s.title.clone(),
                    title_is_assigned: s.title_is_assigned,
                    cwd: s.cwd.as_ref().map(|p| p.to_string_lossy().into_owned()),
                    last_activity: s.last_activity.map(rfc3339_ms),
                    is_active: settings.active_window.is_active(s.last_activity, now),
                    is_working: s.is_working,
                    path: s.path.to_string_lossy().into_owned(),
                    is_caller: caller.agent == Some(agent)
                        && caller.session_id.as_deref() == Some(s.session_id.as_str()),
                    is_pinned: pins.contains(&(agent, s.session_id.clone())),
                })
                .collect();
            out.insert(agent.as_str().to_owned(), entries);
        }
        Ok(ListSessionsResponse {
            sessions: out,
            warnings,
        })
    }

    /// `bridge_status`, optionally re-reading one delivery's answer from the peer's transcript.
    pub fn bridge_status(&self, params: BridgeStatusParams) -> Result<BridgeStatusResponse> {
        let info = &self.inner.info;
        let settings = CallSettings::from_settings(&params.caller.settings);
        let caller = identify(&params.caller, &self.started_turns());
        let cwd = non_blank(params.cwd.as_deref())
            .or(non_blank(params.caller.cwd.as_deref()))
            .map(PathBuf::from);
        let mut warnings = Vec::new();

        let mut resolved_sessions = serde_json::Map::new();
        if let Some(cwd) = &cwd {
            let (sessions, store_warnings) = self.list(&params.caller, &Agent::ALL);
            warnings.extend(store_warnings);
            let scope = params.scope.unwrap_or(settings.scope);
            for agent in Agent::ALL {
                let pin = self.current_pin(agent, cwd)?;
                let own = caller
                    .session_id
                    .as_deref()
                    .filter(|_| caller.agent == Some(agent));
                let value = if let Some((pin, _)) = pin {
                    json!({"session_id": pin.session_id, "selected_by": "pin", "sticky": pin.sticky})
                } else if let Some(s) = resolve::best_active(
                    &sessions,
                    agent,
                    store_scope(scope),
                    cwd,
                    settings.active_window,
                    resolve::now(),
                    own,
                ) {
                    json!({"session_id": s.session_id, "selected_by": "discovery", "title": s.title})
                } else {
                    json!({"session_id": null, "selected_by": "new_session"})
                };
                resolved_sessions.insert(agent.as_str().to_owned(), value);
            }
        }

        let (pins, locks, pending, running, recent, watching) = {
            let db = self.db();
            let (watches, watches_total) = db.watch_summaries(WATCHES_SHOWN)?;
            let watching: Vec<Value> = watches
                .into_iter()
                .map(|watch| {
                    let until = crate::records::ms_rfc3339(watch.until_ms);
                    let mut value = serde_json::to_value(watch).unwrap_or(Value::Null);
                    if let Value::Object(map) = &mut value {
                        map.insert("until".to_owned(), json!(until));
                    }
                    value
                })
                .collect();
            if watches_total > u64::from(WATCHES_SHOWN) {
                warnings.push(format!(
                    "{watches_total} deliveries are watched for a late answer; \
                     watching_for_late_answers shows the newest {WATCHES_SHOWN}"
                ));
            }
            (
                db.pins()?,
                db.locks()?,
                db.deliveries_in(&[DeliveryState::Queued], 200)?,
                db.deliveries_in(
                    &[DeliveryState::Delivering, DeliveryState::AwaitingPeer],
                    200,
                )?,
                db.deliveries_in(&[DeliveryState::Delivered, DeliveryState::Failed], RECENT)?,
                watching,
            )
        };
        let (in_flight, elsewhere): (Vec<_>, Vec<_>) = running
            .into_iter()
            .partition(|r| r.carrier_generation == Some(info.generation));

        let (delivery, peer_transcript) = match non_blank(params.delivery_id.as_deref()) {
            Some(id) => {
                // Read before matching: the store's lock must not be held into the arms.
                let found = self.db().delivery(id)?;
                match found {
                    Some(record) => {
                        let transcript = self.peer_transcript(&params.caller, &record);
                        (Some(record), Some(transcript))
                    }
                    None => {
                        // Its record may have been in a damaged store moved aside at start.
                        warnings.push(self.db().unknown_delivery(id)?);
                        (None, None)
                    }
                }
            }
            None => (None, None),
        };

        let database =
            serde_json::to_value(self.db().store_health(info.generation)?).unwrap_or(Value::Null);
        Ok(BridgeStatusResponse {
            server_process: json!({
                "pid": info.pid,
                "generation": info.generation,
                "started_at": info.started_at,
                "version": info.version,
                "database": database,
            }),
            caller: caller.to_json(),
            settings: settings.to_json(),
            resolved_sessions: Value::Object(resolved_sessions),
            pins,
            locks: serde_json::to_value(locks).unwrap_or(Value::Null),
            deliveries: json!({
                "pending": pending,
                "in_flight": in_flight,
                "in_flight_elsewhere": elsewhere,
                "recent": recent,
                "watching_for_late_answers": watching,
            }),
            delivery,
            peer_transcript,
            warnings,
        })
    }

    /// Reads one delivery's answer fresh from the peer's transcript: the finished turn whose
    /// closing line carries the request id, else the last assistant message written after the
    /// delivery started (never text from before it).
    fn peer_transcript(&self, context: &CallerContext, record: &DeliveryRecord) -> PeerTranscript {
        let mut out = PeerTranscript::default();
        let path = match (&record.target_transcript, &record.target_session_id) {
            (Some(path), _) if Path::new(path).exists() => Some(PathBuf::from(path)),
            (_, Some(id)) => {
                let (sessions, _) = self.list(context, &[record.target_agent]);
                sessions
                    .into_iter()
                    .find(|s| s.agent == record.target_agent && &s.session_id == id)
                    .map(|s| s.path)
            }
            (_, None) => None,
        };
        let Some(path) = path else {
            out.error = Some(
                "the peer's transcript was not found (gone, or never written); the record's \
                 reply_preview holds what remains of the answer"
                    .into(),
            );
            return out;
        };
        out.path = Some(path.to_string_lossy().into_owned());
        // Never handed over (still queued, or failed before hand-over): the peer never saw it,
        // so nothing in its transcript can be this delivery's answer.
        if record.state == DeliveryState::Queued || record.started_at.is_none() {
            return out;
        }
        let mut warnings = cross_agent_stores::Warnings::default();
        match recent_turns(record.target_agent, &path, &mut warnings) {
            Ok(transcript) => {
                let started = record
                    .started_at
                    .as_deref()
                    .and_then(parse_ms)
                    .map(UnixMillis);
                out.is_working = transcript.running_turn().is_some()
                    && !record.is_killed_by_timeout
                    && !record.state.is_finished();
                if let Some(turn) = transcript.finished_turn_answering(&record.request_id, started)
                {
                    out.answer = turn.final_text().map(str::to_owned);
                    out.answer_carries_request_id = true;
                } else if let Some(started) = started
                    && let Some(message) = transcript.last_assistant_message_after(started)
                {
                    out.answer = Some(message.text.clone());
                }
            }
            Err(error) => out.error = Some(error.to_string()),
        }
        out
    }

    async fn dispatch_loop(self) {
        let mut stop = self.inner.stop.subscribe();
        let mut running = JoinSet::new();
        let mut last_prune: Option<std::time::Instant> = None;
        let mut last_sweep = std::time::Instant::now();
        loop {
            // Leases of other carriers run out while this daemon runs (a crashed peer daemon,
            // a restart's old one killed): their records are orphaned here, never re-sent.
            if last_sweep.elapsed() > LEASE_RENEW {
                last_sweep = std::time::Instant::now();
                self.sweep_orphans();
            }
            if last_prune.is_none_or(|at| at.elapsed() > PRUNE_EVERY) {
                last_prune = Some(std::time::Instant::now());
                let before = now_ms().saturating_sub(delivery_ttl_ms());
                match self.db().prune_finished(before) {
                    Ok(0) => {}
                    Ok(pruned) => {
                        tracing::info!(pruned, "pruned finished deliveries past their TTL")
                    }
                    Err(error) => tracing::warn!(%error, "could not prune old deliveries"),
                }
            }
            let free = if self.inner.paused.load(std::sync::atomic::Ordering::SeqCst) {
                0
            } else {
                MAX_WORKERS.saturating_sub(running.len())
            };
            let busy = if free > 0 {
                self.busy_elsewhere()
            } else {
                HashSet::new()
            };
            let claimed = self.db().claim_runnable_except(
                free,
                self.inner.info.pid,
                self.inner.info.generation,
                LEASE_MS,
                now_ms(),
                &now_rfc3339(),
                &busy,
            );
            match claimed {
                Ok(claimed) => {
                    for job in claimed {
                        lock(&self.inner.carried)
                            .turns
                            .insert(job.record.delivery_id.clone());
                        let engine = self.clone();
                        running.spawn(async move { engine.run_delivery(job).await });
                    }
                }
                Err(error) => tracing::error!(%error, "could not take queued deliveries"),
            }
            tokio::select! {
                () = async { let _ = stop.wait_for(|s| *s).await; } => break,
                () = self.inner.wake.notified() => {}
                Some(_) = running.join_next(), if !running.is_empty() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        }
        while running.join_next().await.is_some() {}
    }

    async fn run_delivery(self, claimed: Claimed) {
        let Claimed {
            mut record,
            job,
            created_ms,
            mut target_key,
            lock_token,
        } = claimed;
        let agent = record.target_agent;
        let confirmed: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
        let message = if job.raw {
            job.body.clone()
        } else {
            envelope::assemble(&job.body, created_ms, now_ms())
        };
        let target = match (&job.new_session_id, &record.target_session_id) {
            (Some(id), _) => Target::New {
                session_id: Some(id.clone()),
            },
            (None, Some(id)) if !record.will_create_session => Target::Resume {
                session_id: id.clone(),
            },
            (None, _) => Target::New { session_id: None },
        };
        let request = TurnRequest {
            agent,
            target,
            cwd: PathBuf::from(&job.cwd),
            message,
            settings: TurnSettings::from_settings(&job.settings),
            child_env: job.child_env.clone(),
            bridge_env: job.bridge_env.clone(),
        };
        // The one place a peer CLI is started: `build` refuses again under no-headless.
        let outcome = match cross_agent_transports::headless::build(&request) {
            Ok(spec) => {
                let renew = self.spawn_lease_renewal(
                    target_key.clone(),
                    lock_token.clone(),
                    record.delivery_id.clone(),
                );
                let (turn_stop, turn_stopped) = watch::channel(false);
                let checker = self.spawn_transcript_check(&record, turn_stop, confirmed.clone());
                let engine = self.clone();
                let delivery_id = record.delivery_id.clone();
                let conversation_id = record.conversation_id.clone();
                let session_id = record.target_session_id.clone();
                let result = run_turn(
                    agent,
                    &spec,
                    RunOptions {
                        inactivity: Duration::from_secs(job.timeout_secs),
                        transcript: record.target_transcript.as_ref().map(PathBuf::from),
                        stop: turn_stopped,
                    },
                    |pid| {
                        engine.turn_started(StartedTurn {
                            pid,
                            agent,
                            session_id,
                            conversation_id,
                            delivery_id,
                        })
                    },
                )
                .await;
                renew.abort();
                checker.abort();
                result
            }
            Err(error) => Err(error),
        };
        if let Some(pid) = outcome.as_ref().ok().map(|o| o.pid) {
            lock(&self.inner.turns).retain(|t| t.pid != pid);
        }
        {
            let mut carried = lock(&self.inner.carried);
            carried.turns.remove(&record.delivery_id);
            carried.answers.insert(record.delivery_id.clone());
        }
        record.finished_at = Some(now_rfc3339());
        let confirmed = lock(&confirmed).take();
        match outcome {
            Ok(outcome) => {
                record.peer_pid = Some(outcome.pid);
                self.created_session(&mut record, &outcome, &job, &mut target_key, &lock_token);
                match confirmed {
                    // The transcript showed the finished answer while the CLI still ran: that
                    // settles it (the CLI was stopped for it, not for the carrier).
                    Some(text) if outcome.ended == Ended::Stopped => {
                        record.answer.is_reply_confirmed_by_transcript = true;
                        self.pair_answer(&mut record, &text, None, watch_secs(&job));
                    }
                    Some(_) | None => self.settle(&mut record, outcome, &job),
                }
            }
            Err(error) => {
                record.state = DeliveryState::Failed;
                record.is_undelivered = true;
                record.error = Some(error.to_string());
            }
        }
        if record.state == DeliveryState::Failed
            && record.will_create_session
            && let Some(id) = &record.target_session_id
        {
            self.drop_auto_pin(agent, &job.pin_cwd_key, id);
        }
        self.inner
            .decisions
            .record_all(events::delivery_finished(&record));
        let db = self.db();
        if let Err(error) = db.update_delivery(&record) {
            tracing::error!(%error, delivery = %record.delivery_id, "could not record a finished delivery");
        }
        if let Err(error) = db.release_lock(&target_key, &lock_token) {
            tracing::error!(%error, target_key, "could not release a busy lock");
        }
        drop(db);
        lock(&self.inner.carried)
            .answers
            .remove(&record.delivery_id);
        tracing::info!(delivery = %record.delivery_id, state = ?record.state, "delivery finished");
        self.inner.wake.notify_one();
    }

    /// Renews the busy lock and the delivery's lease (`expires_at`) together while its turn
    /// runs: when this worker disappears both lapse, and the record is orphaned.
    fn spawn_lease_renewal(
        &self,
        target_key: String,
        token: String,
        delivery_id: String,
    ) -> tokio::task::JoinHandle<()> {
        let engine = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE_RENEW).await;
                if let Err(error) =
                    engine
                        .db()
                        .renew_lease(&target_key, &token, &delivery_id, now_ms() + LEASE_MS)
                {
                    tracing::warn!(%error, delivery = %delivery_id, "could not renew a lease");
                }
            }
        })
    }

    /// Breaks the wait for a turn into [`TRANSCRIPT_CHECK`] chunks and reads the peer's
    /// transcript in between: a finished turn whose closing line echoes the request id settles
    /// the delivery there and then (`is_reply_confirmed_by_transcript`), even if the CLI has
    /// not exited. Also forwards the carrier's stop to this turn.
    fn spawn_transcript_check(
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
            .and_then(parse_ms)
            .map(UnixMillis);
        let every = transcript_check();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = carrier_stopped(&mut stop) => {
                        turn_stop.send_replace(true);
                        return;
                    }
                    () = tokio::time::sleep(every) => {}
                }
                let Some(path) = &path else { continue };
                let mut warnings = cross_agent_stores::Warnings::default();
                let found = recent_turns(agent, path, &mut warnings).ok().and_then(|t| {
                    t.finished_turn_answering(&request_id, started)
                        .and_then(|turn| turn.final_text().map(str::to_owned))
                });
                if let Some(text) = found {
                    *lock(&confirmed) = Some(text);
                    turn_stop.send_replace(true);
                    return;
                }
            }
        })
    }

    /// Orphans the in-flight records nobody carries any more (lease run out, carrier gone),
    /// stops their turns if still running, and reads their answers back.
    fn sweep_orphans(&self) {
        let orphaned =
            match self
                .db()
                .orphan_stale(self.inner.info.generation, now_ms(), &now_rfc3339())
            {
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
            if self.recover(&mut record, "the daemon carrying it disappeared") {
                let _ = self.db().update_delivery(&record);
            }
        }
    }

    /// The sessions queued deliveries wait on because someone else's turn holds them: another
    /// daemon's live busy lock, or a turn open on disk (a person typing in a panel, a CLI run
    /// by hand). Waiting is bounded by the larger of the job timeout and
    /// `CROSS_AGENT_PANEL_PATIENCE`; past it the delivery fails as not delivered.
    fn busy_elsewhere(&self) -> HashSet<String> {
        let (heads, locks) = {
            let db = self.db();
            match (db.queue_heads(), db.locks()) {
                (Ok(heads), Ok(locks)) => (heads, locks),
                (Err(error), _) | (_, Err(error)) => {
                    tracing::warn!(%error, "could not read the queue");
                    return HashSet::new();
                }
            }
        };
        let now = now_ms();
        let mut busy = HashSet::new();
        let mut waiting = HashSet::new();
        for head in heads {
            let key = head.target_key.clone();
            let held = locks.iter().find(|l| l.target_key == key);
            let reason = match held {
                Some(l) if l.owner_pid == self.inner.info.pid => None,
                Some(l) => (l.lease_until_ms > now
                    && cross_agent_transports::process::is_alive(l.owner_pid))
                .then(|| {
                    format!(
                        "another cross-agent daemon (pid {}) runs a turn on it",
                        l.owner_pid
                    )
                }),
                None => head
                    .target_transcript
                    .as_deref()
                    .filter(|p| self.mid_turn_on_disk(head.target_agent, Path::new(p)))
                    .map(|_| {
                        "a turn is open in its transcript (someone else is working in it)"
                            .to_owned()
                    }),
            };
            let Some(reason) = reason else { continue };
            busy.insert(key.clone());
            waiting.insert(head.delivery_id.clone());
            let (since, first_seen) =
                match lock(&self.inner.waiting_since).entry(head.delivery_id.clone()) {
                    std::collections::hash_map::Entry::Occupied(at) => (*at.get(), false),
                    std::collections::hash_map::Entry::Vacant(at) => (*at.insert(now), true),
                };
            let job = self.db().job(&head.delivery_id).ok().flatten();
            let (timeout, patience) = job.as_ref().map_or(
                (
                    crate::settings::DEFAULT_TIMEOUT_SECS,
                    crate::settings::DEFAULT_PANEL_PATIENCE_SECS,
                ),
                |job| {
                    (
                        job.timeout_secs,
                        CallSettings::from_settings(&job.settings).panel_patience_secs,
                    )
                },
            );
            let bound = timeout.max(patience);
            if first_seen && let Ok(Some(record)) = self.db().delivery(&head.delivery_id) {
                self.inner
                    .decisions
                    .record(events::busy_held(&record, &reason, bound));
            }
            let waited = u64::try_from((now - since).max(0) / 1000).unwrap_or(0);
            if waited >= bound {
                let error = format!(
                    "not delivered: {} session {} stayed busy — {reason} — for {waited} s, \
                     past the wait bound ({bound} s: the larger of the timeout, {timeout} s, and \
                     CROSS_AGENT_PANEL_PATIENCE, {patience} s). The peer never received the \
                     message, so there is no answer to watch for; sending again is safe",
                    head.target_agent,
                    key.split_once(':').map_or(key.as_str(), |(_, id)| id)
                );
                // A statement of its own: the store's lock is released before the match, whose
                // arm reads the closed record back.
                let closed = self
                    .db()
                    .fail_queued(&head.delivery_id, &error, &now_rfc3339());
                match closed {
                    Ok(true) => {
                        tracing::warn!(delivery = %head.delivery_id, "not delivered: the peer stayed busy");
                        if let Ok(Some(record)) = self.db().delivery(&head.delivery_id) {
                            self.inner
                                .decisions
                                .record_all(events::delivery_finished(&record));
                        }
                    }
                    Ok(false) => {}
                    Err(error) => tracing::warn!(%error, "could not close an undelivered delivery"),
                }
            }
        }
        lock(&self.inner.waiting_since).retain(|id, _| waiting.contains(id));
        busy
    }

    /// Whether a session is mid-turn on disk: its last turn is open and its transcript was
    /// written recently (an open turn left by a CLI that died is not anyone's work). The
    /// dispatcher asks on each of its turns, so a transcript is re-read only when its size or
    /// modification time changed.
    fn mid_turn_on_disk(&self, agent: Agent, path: &Path) -> bool {
        let Ok(meta) = std::fs::metadata(path) else {
            return false;
        };
        let modified = meta.modified().ok();
        let fresh = modified
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age < STALE_OPEN_TURN);
        if !fresh {
            return false;
        }
        let stamp = (meta.len(), modified);
        let mut seen = lock(&self.inner.disk_turns);
        if let Some((known, open)) = seen.get(path)
            && *known == stamp
        {
            return *open;
        }
        let mut warnings = cross_agent_stores::Warnings::default();
        let open =
            recent_turns(agent, path, &mut warnings).is_ok_and(|t| t.running_turn().is_some());
        // Bounded: one entry per transcript a queue has waited on.
        if seen.len() > 1024 {
            seen.clear();
        }
        seen.insert(path.to_owned(), (stamp, open));
        open
    }

    /// Starts the late-answer watch on a request whose answer did not carry its id.
    fn start_watch(&self, record: &mut DeliveryRecord, watch_secs: u64) {
        if watch_secs == 0 || record.target_transcript.is_none() {
            return;
        }
        let Some(since) = record.started_at.as_deref().and_then(parse_ms) else {
            return;
        };
        let until = now_ms()
            .saturating_add(i64::try_from(watch_secs.saturating_mul(1000)).unwrap_or(i64::MAX));
        record.answer.late_answer_watch_until = Some(crate::records::ms_rfc3339(until));
        match self.db().add_watch(&record.delivery_id, since, until) {
            // A draining daemon leaves the new watch unowned in hub.db, for its successor.
            Ok(()) if self.is_draining() => {}
            Ok(()) => {
                lock(&self.inner.carried)
                    .watches
                    .insert(record.delivery_id.clone());
            }
            Err(error) => tracing::warn!(%error, "could not start a late-answer watch"),
        }
    }

    /// Reads the watched transcripts every 20 s (`CROSS_AGENT_LATE_ANSWER_POLL_MS` in tests).
    async fn watch_loop(self) {
        let poll = late_answer_poll();
        loop {
            if !self.is_draining() {
                self.watch_once(poll);
            }
            tokio::time::sleep(poll).await;
        }
    }

    fn watch_once(&self, poll: Duration) {
        let now = now_ms();
        let lease = i64::try_from(poll.as_millis())
            .unwrap_or(LEASE_MS)
            .saturating_mul(3)
            .max(LEASE_MS);
        let watches = match self
            .db()
            .claim_watches(self.inner.info.pid, now, now + lease)
        {
            Ok(watches) => watches,
            Err(error) => {
                tracing::warn!(%error, "could not read late-answer watches");
                return;
            }
        };
        let mut held = HashSet::new();
        // Many watches may follow one session: each transcript is read once per look.
        let mut transcripts: HashMap<PathBuf, Option<cross_agent_stores::turns::Transcript>> =
            HashMap::new();
        for watch in watches {
            let id = watch.record.delivery_id.clone();
            if now > watch.until_ms {
                let _ = self.db().end_watch(&id);
                continue;
            }
            let Some(path) = watch.record.target_transcript.as_deref().map(PathBuf::from) else {
                let _ = self.db().end_watch(&id);
                continue;
            };
            let transcript = transcripts.entry(path).or_insert_with_key(|path| {
                let mut warnings = cross_agent_stores::Warnings::default();
                recent_turns(watch.record.target_agent, path, &mut warnings).ok()
            });
            match transcript.as_ref().and_then(|t| late_answer(t, &watch)) {
                Some(text) => self.record_late_answer(&id, &text),
                None => {
                    held.insert(id);
                }
            }
        }
        lock(&self.inner.carried).watches = held;
    }

    /// A watched request's real answer arrived: it becomes its own delivery record (a
    /// `LATE ANSWER` naming the request), and the request's record points at it.
    fn record_late_answer(&self, request_delivery_id: &str, text: &str) {
        let mut db = self.db();
        let Ok(Some(mut request)) = db.delivery(request_delivery_id) else {
            let _ = db.end_watch(request_delivery_id);
            return;
        };
        let now = now_rfc3339();
        let mut late = request.clone();
        late.delivery_id = envelope::delivery_id();
        late.state = DeliveryState::Delivered;
        late.created_at = now.clone();
        late.started_at = None;
        late.finished_at = Some(now);
        late.expires_at = None;
        late.error = None;
        late.is_killed_by_timeout = false;
        late.is_stopped_with_carrier = false;
        late.is_reply_recovered = false;
        late.is_undelivered = false;
        late.is_orphaned = false;
        late.late_reply_delivery_id = None;
        late.reply_preview = Some(preview(text, REPLY_PREVIEW_CHARS));
        late.answer = cross_agent_protocol::bridge::AnswerMarks {
            reply_carries_request_id: true,
            reply_header: Some(envelope::reply_header(
                request.target_agent,
                request.target_session_id.as_deref(),
                &request.request_id,
                true,
                AnswerKind::Late {
                    request_delivery_id,
                },
            )),
            answers_delivery_id: Some(request_delivery_id.to_owned()),
            ..Default::default()
        };
        request.late_reply_delivery_id = Some(late.delivery_id.clone());
        let key = format!(
            "{}:{}",
            request.target_agent,
            request.target_session_id.as_deref().unwrap_or("?")
        );
        match db.insert_late_answer(&late, &key, now_ms(), &request) {
            Ok(()) => {
                self.inner
                    .decisions
                    .record(events::late_answer(&request, &late.delivery_id));
                tracing::info!(request = %request_delivery_id, late = %late.delivery_id, "a late answer arrived")
            }
            Err(error) => tracing::warn!(%error, "could not record a late answer"),
        }
    }

    fn turn_started(&self, turn: StartedTurn) {
        let pid = turn.pid;
        let delivery_id = turn.delivery_id.clone();
        lock(&self.inner.turns).push(turn);
        let db = self.db();
        match db.delivery(&delivery_id) {
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
    fn created_session(
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
            let context = CallerContext {
                child_env: job.child_env.clone(),
                settings: job.settings.clone(),
                ..CallerContext::default()
            };
            let (sessions, _) = self.list(&context, &[agent]);
            record.target_transcript = sessions
                .into_iter()
                .find(|s| s.agent == agent && s.session_id == id)
                .map(|s| s.path.to_string_lossy().into_owned());
        }
        let new_key = format!("{agent}:{id}");
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
        if let Err(error) = db.set_pin(&pin, &job.pin_cwd_key, now_ms()) {
            tracing::warn!(%error, "could not pin a created session");
        }
    }

    fn drop_auto_pin(&self, agent: Agent, cwd_key: &str, session_id: &str) {
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

    /// Turns a finished run into the record's outcome.
    fn settle(&self, record: &mut DeliveryRecord, outcome: TurnOutcome, job: &Job) {
        let agent = record.target_agent;
        let parsed = &outcome.parsed;
        let fail = |record: &mut DeliveryRecord, error: String| {
            record.state = DeliveryState::Failed;
            record.error = Some(error);
        };
        let watch = watch_secs(job);
        match outcome.ended {
            Ended::Stopped => {
                record.is_stopped_with_carrier = true;
                fail(
                    record,
                    format!(
                        "stopped with its carrier: the daemon (pid {}, generation {}) stopped \
                         while the peer's turn ran, and killed it. Send again to retry",
                        self.inner.info.pid, self.inner.info.generation
                    ),
                );
                self.recover(record, "the daemon stopped and killed the peer's turn");
            }
            Ended::KilledByTimeout => {
                record.is_killed_by_timeout = true;
                fail(
                    record,
                    format!(
                        "killed by bridge timeout: no CLI output or transcript write for {} s",
                        job.timeout_secs
                    ),
                );
                let why = format!(
                    "killed by bridge timeout after {} s without CLI output or transcript writes",
                    job.timeout_secs
                );
                self.recover(record, &why);
            }
            Ended::Exited(code) => {
                if let Some(tool) = &parsed.approval_blocked {
                    let setting = match agent {
                        Agent::Claude => {
                            "set CROSS_AGENT_CLAUDE_PERMISSION_MODE (acceptEdits, bypassPermissions) \
                             in the sender's registration"
                        }
                        Agent::Codex => {
                            "start the Codex session with a wider CROSS_AGENT_CODEX_SANDBOX, or \
                             pre-approve the tool in its config"
                        }
                        // Grok applies only `default` and `bypassPermissions` from its command
                        // line (its docs, as the public koan provider notes quote them).
                        Agent::Grok => {
                            "set CROSS_AGENT_GROK_PERMISSION_MODE=bypassPermissions in the \
                             sender's registration"
                        }
                    };
                    fail(
                        record,
                        format!(
                            "the headless {agent} turn was cancelled for want of an approval \
                             ({tool}): nobody is there to approve a tool call in a turn the \
                             bridge starts. To allow it, {setting}, or send to a session open \
                             in a panel"
                        ),
                    );
                } else if let (Some(answer), None) = (&parsed.answer, &parsed.failure) {
                    let answer = match agent {
                        Agent::Grok => grok_after_last_tool(record, answer),
                        Agent::Claude | Agent::Codex => answer.clone(),
                    };
                    self.pair_answer(record, &answer, None, watch);
                } else {
                    let detail = parsed
                        .failure
                        .clone()
                        .or_else(|| {
                            let tail = outcome.stderr_tail.trim();
                            (!tail.is_empty()).then(|| {
                                tail.lines()
                                    .rev()
                                    .take(5)
                                    .collect::<Vec<_>>()
                                    .into_iter()
                                    .rev()
                                    .collect::<Vec<_>>()
                                    .join("\n")
                            })
                        })
                        .unwrap_or_else(|| "it printed no answer".to_owned());
                    let mut error = format!(
                        "the {agent} CLI failed (exit code {}): {detail}",
                        code.map_or_else(|| "none".to_owned(), |c| c.to_string())
                    );
                    if let Some(hint) =
                        auth_hint(agent, &detail, &outcome.stderr_tail, &job.withheld_env)
                    {
                        error.push_str(&hint);
                    }
                    let why = error.clone();
                    fail(record, error);
                    // The turn may still have answered into its transcript.
                    self.recover(record, &why);
                }
            }
        }
    }

    /// Takes `text` as the request's answer, paired by its closing line (the last line that
    /// names any request id): this request's id makes it the answer whenever it was written;
    /// another request's id makes it that request's answer, and it is rejected; no id at all
    /// takes it by timing, marked `NO REQUEST ID … possibly interim`, with a late-answer watch.
    /// `recovered` names why the transport failed when the text was read back from the
    /// transcript. Returns whether the text was taken.
    fn pair_answer(
        &self,
        record: &mut DeliveryRecord,
        text: &str,
        recovered: Option<&str>,
        watch_secs: u64,
    ) -> bool {
        let ids = cross_agent_stores::turns::closing_line(text)
            .map(cross_agent_stores::turns::request_ids)
            .unwrap_or_default();
        let carries = ids.contains(&record.request_id.as_str());
        if !carries && !ids.is_empty() {
            let note = format!(
                "the peer's answer ends with another request's id ({}), so it answers that \
                 request, not {}; it was not taken",
                ids.join(", "),
                record.request_id
            );
            record.state = DeliveryState::Failed;
            record.error = Some(match (&record.error, recovered) {
                (Some(error), Some(_)) => format!("{error}; {note}"),
                (Some(_) | None, None) | (None, Some(_)) => note,
            });
            self.start_watch(record, watch_secs);
            return false;
        }
        record.reply_preview = Some(preview(text, REPLY_PREVIEW_CHARS));
        record.answer.reply_carries_request_id = carries;
        record.answer.is_reply_possibly_interim = !carries;
        let kind = match recovered {
            Some(why) => {
                // The transport failed: the state says so, the answer is labelled as read back.
                record.is_reply_recovered = true;
                record.answer.transport_failure = Some(why.to_owned());
                AnswerKind::Recovered {
                    transport_failure: why,
                }
            }
            None => {
                record.state = DeliveryState::Delivered;
                if carries {
                    AnswerKind::Confirmed
                } else {
                    AnswerKind::NoRequestId
                }
            }
        };
        record.answer.reply_header = Some(envelope::reply_header(
            record.target_agent,
            record.target_session_id.as_deref(),
            &record.request_id,
            carries,
            kind,
        ));
        if !carries {
            self.start_watch(record, watch_secs);
        }
        true
    }

    /// A delivery that ended without an answer on stdout: the peer's transcript may hold one
    /// (`is_reply_recovered`) — a finished turn carrying the request id, else the last
    /// assistant message written after the hand-over, never anything from before it. Nothing is
    /// re-sent. A delivery never handed over looks nothing up. Returns whether one was found.
    fn recover(&self, record: &mut DeliveryRecord, why: &str) -> bool {
        let found = match transcript_answer(record) {
            Some(text) => self.pair_answer(record, &text, Some(why), default_watch_secs()),
            None => false,
        };
        self.inner.decisions.record(events::recovery(record, found));
        found
    }
}

/// A Grok answer is what it said after its last tool call (spec 004 §9), but its stream
/// carries no tool events: the transcript splits its messages at each tool call. When the
/// transcript's answer for this delivery is how the streamed text ends, that tail is the
/// answer; otherwise the stream stands as it is.
fn grok_after_last_tool(record: &DeliveryRecord, streamed: &str) -> String {
    match transcript_answer(record) {
        Some(tail) if !tail.trim().is_empty() && streamed.trim_end().ends_with(tail.trim()) => {
            tail.trim().to_owned()
        }
        Some(_) | None => streamed.to_owned(),
    }
}

/// The turns at the end of a peer's transcript, where answers are looked for (the spec's 2 MB
/// window, 8 MB for Grok): a long session is not read whole on every look.
fn recent_turns(
    agent: Agent,
    path: &Path,
    warnings: &mut cross_agent_stores::Warnings,
) -> cross_agent_stores::Result<cross_agent_stores::turns::Transcript> {
    cross_agent_stores::turns::read_recent_turns(
        agent,
        path,
        cross_agent_stores::turns::answer_window(agent),
        warnings,
    )
}

/// What the peer's transcript holds as this delivery's answer: the final text of a finished turn
/// whose closing line carries the request id, else the last assistant message written after the
/// turn started. `None` without a transcript, a start time, or such a message.
fn transcript_answer(record: &DeliveryRecord) -> Option<String> {
    let started = UnixMillis(record.started_at.as_deref().and_then(parse_ms)?);
    let path = PathBuf::from(record.target_transcript.as_deref()?);
    let mut warnings = cross_agent_stores::Warnings::default();
    let transcript = recent_turns(record.target_agent, &path, &mut warnings).ok()?;
    match transcript.finished_turn_answering(&record.request_id, Some(started)) {
        Some(turn) => turn.final_text().map(str::to_owned),
        None => transcript
            .last_assistant_message_after(started)
            .map(|m| m.text.clone()),
    }
}

/// Resolves when the carrier stops; never, if nobody can stop it any more.
async fn carrier_stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|stopped| *stopped).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// `CROSS_AGENT_LATE_ANSWER_WATCH` of the caller's registration.
fn watch_secs(job: &Job) -> u64 {
    CallSettings::from_settings(&job.settings).late_answer_watch_secs
}

/// `CROSS_AGENT_LATE_ANSWER_WATCH` where no registration is at hand (an orphan): the daemon's.
fn default_watch_secs() -> u64 {
    std::env::var(crate::settings::LATE_ANSWER_WATCH)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(crate::settings::DEFAULT_LATE_ANSWER_WATCH_SECS)
}

/// The finished turn that carries a watched request's id, started after the request did.
fn late_answer(
    transcript: &cross_agent_stores::turns::Transcript,
    watch: &Watch,
) -> Option<String> {
    transcript
        .finished_turn_answering(&watch.record.request_id, Some(UnixMillis(watch.since_ms)))
        .and_then(|turn| turn.final_text().map(str::to_owned))
}

/// Whether `pid` runs `agent`'s CLI (its command line names it).
fn is_agent_process(pid: u32, agent: Agent) -> bool {
    cross_agent_transports::process::is_alive(pid)
        && std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|cmdline| String::from_utf8_lossy(&cmdline).contains(agent.as_str()))
            .unwrap_or(false)
}

/// When a failure looks like authentication and the caller's environment withheld a variable
/// the agent may authenticate with, says which — so nobody has to guess (spec 004 "What a
/// spawned agent CLI inherits").
fn auth_hint(agent: Agent, detail: &str, stderr: &str, withheld: &[String]) -> Option<String> {
    let text = format!("{detail}\n{stderr}").to_ascii_lowercase();
    let looks_like_auth = [
        "401",
        "403",
        "unauthorized",
        "authentication",
        "api key",
        "api_key",
        "invalid x-api-key",
        "not logged in",
        "login",
        "credential",
        "proxy",
    ]
    .iter()
    .any(|needle| text.contains(needle));
    if !looks_like_auth || withheld.is_empty() {
        return None;
    }
    let prefixes: &[&str] = match agent {
        Agent::Claude => &["ANTHROPIC_", "CLAUDE_", "AWS_", "GOOGLE_", "VERTEX"],
        Agent::Codex => &["OPENAI_", "CODEX_", "AZURE_"],
        Agent::Grok => &["XAI_", "GROK_"],
    };
    let likely: Vec<&str> = withheld
        .iter()
        .map(String::as_str)
        .filter(|name| {
            prefixes.iter().any(|p| name.starts_with(p))
                || name.to_ascii_lowercase().contains("proxy")
        })
        .collect();
    let names = if likely.is_empty() {
        withheld.iter().map(String::as_str).collect::<Vec<_>>()
    } else {
        likely
    };
    Some(format!(
        ". This looks like an authentication failure, and the sender's environment withheld {} \
         from the child; if the {agent} CLI authenticates with it, name it in \
         CROSS_AGENT_CHILD_ENV in the sender's registration",
        names.join(", ")
    ))
}
