//! The messaging engine the daemon serves: `send` (guards, resolution, the record, the
//! receipt), `pin`, `list_sessions`, `bridge_status`, and the worker pool that hands queued
//! deliveries to their peers over the agents' headless CLIs.
//!
//! Three parts, each with its own state (docs/architecture.md, "Inside the engine"); [`Engine`] is
//! the façade the daemon calls over them. **Admission** — the `Admission` type over its own handles
//! (store, session index, decisions, events): `send` (the guards), `target` (resolution, as named
//! steps), `receipt` (the accepted record and its receipt), `pins`; it asks the other parts only
//! through `Neighbours`. **Dispatch** — the `Dispatch` type over its own handles (store, session
//! index, decisions, events, the daemon's stop): its loop (the queue's wake-up, the pause), the
//! turns running and what is carried, leases, orphans, the per-delivery services (lease renewal,
//! transcript check, turns started, created sessions, closing a delivery), and its `BusyWatch`
//! (`busy`: waiting on someone else's turn); it asks the other parts only through
//! `DispatchNeighbours` (the carriers, the answers' recovery). `carriers` holds the `Carrier`
//! trait the panel, Claude's native door and the headless CLI implement, in one registry, each
//! with its door's mechanics. **Answers** — the `Answers` type over its own handles (store,
//! decisions, events) and `LateWatches`: pairing, recovery, a run's outcome, the late-answer
//! watches and their loop, and the return traffic (`answers/returns.rs`, asking only through
//! `ReturnNeighbours`: the live panels, the dispatcher's wake-up); `withheld` (naming a withheld
//! variable when a relay fails). The engine implements the three traits over its parts. Beside
//! them: `panels` (`LivePanels`, the sender's-panel probe, `ide_panels`, `peer_panel`), `native`
//! (the relay settings, Claude's registry), `status` (listing, `bridge_status`), `event_stream`
//! (the [`EngineEvent`] stream subscribers get from [`Engine::subscribe`]) and [`EngineConfig`]
//! (the daemon-wide knobs the daemon reads once). Blocking file work runs on tokio's blocking
//! pool, never on the async threads that answer clients.
//!
//! A carrier never gets the [`Engine`]: it gets a `CarrierContext` — handles to the store,
//! to dispatch's services for the delivery it carries and to the answers part, the live panels,
//! the decisions log, the event stream and the daemon's stop. Adding a carrier (Copilot's Agent
//! Host, a remote host) is one new file in `carriers/` and one registration line in the
//! `carriers!` list (`carriers/mod.rs` says how).
//!
//! [`EngineEvent`]: cross_agent_protocol::events::EngineEvent
//!
//! **Order of a send** (docs/spec/cross-agent-mcp.md §5, §6, "Never starting a headless CLI"): contradicting
//! arguments are refused; then strict mode (`CROSS_AGENT_REQUIRE_EXPLICIT_TARGET`) before any
//! lookup; then the self-call guard; then the target is resolved — `session_id` → pin → the
//! conversation in front in the caller's window's panel (`panel-focus`) → the active session on
//! disk (never the caller's own, never one another window's panel holds) → a new session, in a
//! panel of this window when one can open it; a session any panel holds goes through that
//! panel (`transport: "panel"`). Then `CROSS_AGENT_UI_HOOK=require` (an unaddressed send must
//! reach a panel) and the no-headless switch (a send must reach a panel); then the hop budget.
//! Only an accepted send writes anything: its record, its payload and its hop, in one
//! transaction.
//!
//! **Panels** (`panels` and the panel carrier, `carriers/panel/`; the registry, window rule and
//! socket client live in the transports crate). `panels/` is read on every resolution and route back; dead shims are removed there.
//! A panel delivery goes through the same queue and busy lock; its worker writes `inject` to the
//! shim and follows the events, reading the transcript between them. When any request settles,
//! its answer (`BRIDGE REPLY`, or `DELIVERY FAILED`) is queued as a delivery of its own into the
//! sender's live panel — found again at that moment by the sender's session id — or, with no
//! panel, stays on the record (`is_return_status_only`). Return traffic spends no hop and never
//! starts a CLI; a panel gone when it goes out is looked for again, then it fails undelivered.
//!
//! **Replies to busy senders never hold a worker.** A sender's shim takes return traffic at
//! once and writes it when the sender's running turn ends (`accepted` with `queued: true`). At
//! that `accepted` the dispatcher gives the worker slot back: the delivery keeps its busy lock
//! and lease, and the wait for the shim's `written` goes on as a parked blocking thread that
//! settles the record (delivered, or failed undelivered when the shim goes first). So the four
//! workers stay free for requests however many senders are busy, and the next reply to the same
//! sender still waits its turn behind the lock. A new Grok conversation the panel has no empty
//! session for (`no empty grok session in this panel`) is handed back by the panel worker as a
//! new CLI session.
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
//! **Answers** (docs/spec/cross-agent-mcp.md §6 "Interim answers and late answers", §9 "Delivery queue
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
//! session mid-turn with someone else's work (another live daemon's lock; else — even under a
//! dead daemon's lock — an open turn on disk that is not one the bridge itself started and
//! stopped) is waited for, up to the larger of the job timeout and
//! `CROSS_AGENT_PANEL_PATIENCE`; past it the delivery fails as not delivered
//! (`is_undelivered`). Records are pruned `CROSS_AGENT_DELIVERY_TTL` after they finished (an
//! orphan: after its lease ran out).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cross_agent_decisions::{DecisionLog, events};
use cross_agent_protocol::bridge::{CallerContext, Refusal, RefusalReason};
use cross_agent_stores::held::SessionRef;
use cross_agent_stores::live::{LiveScanner, Snapshot};
use cross_agent_stores::scan::{self, ScanOptions};
use cross_agent_stores::{Session, StoreRoots, UnixMillis};
use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;
use tokio::sync::watch;

use crate::Agent;
use crate::caller::StartedTurn;
use crate::db::HubDb;
use crate::error::Result;
use cross_agent_protocol::timestamp::now_rfc3339;

mod activity;
mod admission;
mod answers;
mod busy;
mod carriers;
mod config;
mod copilot_caller;
mod copilot_target;
mod delivery_answer;
mod dispatch;
mod event_stream;
mod native;
mod panels;
mod pins;
mod receipt;
mod remote;
mod send;
mod status;
mod target;
mod usage;
mod withheld;

pub use activity::SessionActivity;
use answers::{recent_turns, watch_secs};
pub use config::EngineConfig;
use dispatch::is_agent_process;
pub use native::NativeSettings;
use target::{Resolved, cwd_key, lookup_refusal};

/// Headless turns running at once.
pub const MAX_WORKERS: usize = 4;
/// A busy lock's lease; renewed every `LEASE_RENEW` (`dispatch.rs`) while its turn runs.
const LEASE_MS: i64 = 120_000;

/// What a listing's costs are kept by when the price table cannot be read (every cost
/// `null`): one table for every such listing, so their fields are made once.
static UNPRICED: std::sync::LazyLock<cross_agent_stores::live::SpentTable> =
    std::sync::LazyLock::new(|| Arc::new(()));

/// How often the daemon brings the session index up to date between listings.
const INDEX_CATCH_UP: Duration = Duration::from_secs(1);
/// The answer's first characters kept on the record.
pub const REPLY_PREVIEW_CHARS: usize = 2000;

/// What a draining daemon still carries: a restart lets the old daemon finish it before it
/// exits (docs/spec/cross-agent-mcp.md "Applying code changes without restarting the editor").
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

/// The engine's state, each part's its own: what admission, dispatch and answers share is the
/// store (`hub.db`), the session index, the decisions log, the stop signal and the event
/// stream — nothing else.
struct Inner {
    info: EngineInfo,
    /// Admission: the pins and the deliveries creating a session, over its own handles.
    admission: admission::Admission,
    config: EngineConfig,
    /// `hub.db`, one connection the parts share (answers holds a handle of its own).
    db: Arc<Mutex<HubDb>>,
    /// The session index, held in memory and kept current by file-system notifications; its
    /// walks run beside the requests, which borrow its current generations.
    scan: Arc<LiveScanner>,
    stop: watch::Sender<bool>,
    /// Dispatch: the worker pool, its wake-ups, the turns running and what is carried, and the
    /// busy judgement (who else works in a session) admission and `bridge_status` ask too.
    dispatch: Arc<dispatch::Dispatch>,
    /// Answers: pairing, recovery, the late-answer watches this daemon holds and their loop,
    /// the return traffic.
    answers: Arc<answers::Answers>,
    /// The panel registry, read for resolution, listings and return traffic.
    panels: panels::LivePanels,
    /// `$CROSS_AGENT_HOME/decisions.jsonl`: every send, refusal, outcome, orphan and recovery.
    decisions: DecisionLog,
    /// The ways a delivery reaches its peer: panel, Claude's native door, headless CLI.
    carriers: carriers::Carriers,
    /// What happens to deliveries, for in-process subscribers ([`Engine::subscribe`]).
    events: tokio::sync::broadcast::Sender<cross_agent_protocol::events::EngineEvent>,
    /// The usage index beside the session index: `usage_report`, costs on listings and cards.
    usage: usage::LiveUsage,
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
impl Engine {
    /// Opens the engine's state in `hub_db` and closes what an earlier daemon left open. Start
    /// the worker pool with [`Engine::start`].
    pub fn open(hub_db: &Path, info: EngineInfo, config: EngineConfig) -> Result<Engine> {
        let db = HubDb::open(hub_db)?;
        // Another daemon may still carry some (a restart's old daemon draining): only records
        // whose lease ran out or whose carrier is gone are orphaned.
        let orphaned = db.orphan_stale(info.generation, UnixMillis::now().0, &now_rfc3339())?;
        // The daemon's: a home deleted under it is not re-created by a decision.
        let decisions = DecisionLog::in_existing_home(&info.state_root);
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
        let db = Arc::new(Mutex::new(db));
        let events = tokio::sync::broadcast::channel(event_stream::EVENTS_KEPT).0;
        let state_root = info.state_root.clone();
        let scan = Arc::new(LiveScanner::new(
            ScanOptions {
                cache_file: Some(scan::cache_file(&state_root)),
                refresh: Default::default(),
                agents: Vec::new(),
            },
            config.index,
        ));
        let dispatch = Arc::new(dispatch::Dispatch::new(
            db.clone(),
            scan.clone(),
            decisions.clone(),
            events.clone(),
            stop.subscribe(),
            &info,
            &config,
        ));
        let panels = panels::LivePanels::new(info.state_root.clone(), decisions.clone());
        let answers = Arc::new(answers::Answers::new(
            db.clone(),
            decisions.clone(),
            events.clone(),
            &info,
            &config,
            Box::new(ReturnWay {
                panels: panels.clone(),
                dispatch: dispatch.clone(),
            }),
        ));
        let admission = admission::Admission::new(
            db.clone(),
            scan.clone(),
            decisions.clone(),
            events.clone(),
            info.generation,
        );
        // Beside the session cache: the usage index's call records, in unnamed files.
        let cache_file = scan::cache_file(&state_root);
        let records = cache_file.parent().unwrap_or(&state_root);
        let usage = usage::LiveUsage::new(&scan, records);
        let engine = Engine {
            inner: Arc::new(Inner {
                info,
                config,
                db,
                admission,
                scan,
                stop,
                dispatch,
                answers,
                panels,
                decisions,
                carriers: carriers::Carriers::new(),
                events,
                usage,
            }),
        };
        for mut record in orphaned {
            // The answer may be on disk already: read it back now (never re-sent).
            if engine
                .inner
                .answers
                .recover(&mut record, "the daemon carrying it disappeared")
            {
                let _ = engine.db().update_delivery(&record);
            }
        }
        Ok(engine)
    }

    pub fn info(&self) -> &EngineInfo {
        &self.inner.info
    }

    /// What a carrier sees of the engine: handles to the parts, never the engine itself.
    fn carrier_context(&self) -> carriers::CarrierContext {
        let inner = &*self.inner;
        carriers::CarrierContext::new(carriers::Parts {
            db: &inner.db,
            dispatch: &inner.dispatch,
            answers: &inner.answers,
            panels: &inner.panels,
            decisions: &inner.decisions,
            events: &inner.events,
            info: &inner.info,
            config: &inner.config,
        })
    }

    fn db(&self) -> MutexGuard<'_, HubDb> {
        self.inner.db.lock()
    }

    /// Starts the dispatcher (inside a tokio runtime). Queued deliveries — including those an
    /// earlier daemon accepted but never handed over — start going out.
    pub fn start(&self) {
        let dispatcher = self.inner.dispatch.clone();
        let handle = tokio::spawn(dispatcher.run(Arc::new(self.clone())));
        self.inner.dispatch.set_loop(handle);
        let handle = tokio::spawn(self.inner.answers.clone().watch_loop());
        self.inner.answers.watches().set_loop(handle);
        let engine = self.clone();
        tokio::spawn(async move { engine.index_loop().await });
    }

    /// Keeps the session index current between listings: each second, the stores that sent a
    /// notification (or whose re-walk is due) are refreshed, so a listing rarely waits on a
    /// walk; the usage index after it, once something asked for usage. Ends when the engine
    /// stops.
    async fn index_loop(self) {
        let mut stop = self.inner.stop.subscribe();
        loop {
            tokio::select! {
                _ = stop.wait_for(|stopped| *stopped) => return,
                () = tokio::time::sleep(INDEX_CATCH_UP) => {}
            }
            let engine = self.clone();
            dispatch::off_async(move || {
                engine.inner.scan.catch_up();
                engine.inner.usage.catch_up(&engine.inner.scan);
                engine.recost_listing();
            })
            .await;
        }
    }

    /// Lays the live Copilot hosts' own listings (the daemon's host watcher keeps them) over
    /// the index's Copilot walks.
    pub fn attach_copilot_hosts(&self, hosts: cross_agent_stores::copilot::LiveHosts) {
        self.inner.scan.attach_copilot_hosts(hosts);
    }

    /// A live Copilot host's listing changed: the next Copilot listing walks again (the
    /// catalog files that did not change come from the walk's cache).
    pub fn copilot_hosts_changed(&self) {
        self.inner
            .scan
            .mark_stale(cross_agent_stores::model::Agent::Copilot);
    }

    /// What this daemon still carries.
    pub fn carried(&self) -> CarriedWork {
        let (turns_running, answers_pending) = self.inner.dispatch.carried_counts();
        CarriedWork {
            turns_running,
            answers_pending,
            late_answer_watches: self.inner.answers.watches().held(),
        }
    }

    /// Whether dispatch is paused ([`Engine::pause_dispatch`], [`Engine::drain`]).
    pub fn is_draining(&self) -> bool {
        self.inner.dispatch.is_paused()
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
        self.inner.answers.watches().stop_loop().await;
        if let Some(Err(error)) = self.release_watches().await {
            tracing::warn!(%error, "could not hand late-answer watches over");
        }
        self.inner.answers.watches().let_go();
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
        let handle = self.inner.dispatch.take_loop();
        if let Some(handle) = handle {
            let _ = handle.await;
        }
        self.inner.answers.watches().stop_loop().await;
        // Watches live on in hub.db: the next daemon resumes them without waiting for a lease.
        let _ = self.release_watches().await;
        self.stop_relays().await;
    }

    /// Releases this daemon's late-answer watches in `hub.db`, off the async threads.
    async fn release_watches(&self) -> Option<Result<()>> {
        let engine = self.clone();
        dispatch::off_async(move || engine.db().release_watches(engine.inner.info.pid)).await
    }

    /// Stops (or, with `false`, resumes) taking queued deliveries, leaving running turns alone:
    /// a daemon being replaced leaves its queue in `hub.db` for the successor.
    pub fn pause_dispatch(&self, paused: bool) {
        self.inner.answers.set_handing_over(paused);
        self.inner.dispatch.set_paused(paused);
    }

    /// The headless turns running now.
    pub fn started_turns(&self) -> Vec<StartedTurn> {
        self.inner.dispatch.started_turns()
    }

    /// The `sessions --json` listing from the live index's renderings.
    fn render_listing(
        &self,
        context: &CallerContext,
        agents: &[Agent],
        admit: impl Fn(SessionRef<'_>) -> bool,
        limit: Option<usize>,
        clock: (cross_agent_stores::resolve::ActiveWindow, UnixMillis),
    ) -> cross_agent_stores::live::RenderedListing {
        let roots = roots_for(context);
        self.with_listing_spent(&roots, |spent| {
            self.inner.scan.render_listing(
                &roots,
                agents,
                admit,
                limit,
                (clock.0, clock.1, Some(spent)),
            )
        })
    }

    /// Calls `f` with what a listing of `roots` shows of each session's cost now.
    fn with_listing_spent<R>(
        &self,
        roots: &StoreRoots,
        f: impl FnOnce(cross_agent_stores::live::ListingSpent<'_>) -> R,
    ) -> R {
        let spent = self.spent(roots);
        let spent_of = |s: SessionRef<'_>| match &spent {
            Some((table, _)) => usage::spent_of(table, s),
            None => Default::default(),
        };
        // The table is the key the live index keeps each session's cost fields by: they are
        // made again only when the accounting changed (a new table), and then only for the
        // agents with a session whose cost may have moved.
        let table: cross_agent_stores::live::SpentTable = match &spent {
            Some((table, _)) => table.clone(),
            None => UNPRICED.clone(),
        };
        let since = spent.as_ref().and_then(|(_, since)| since.as_ref());
        let moved = |id: &str| since.is_none_or(|since| since.moved.contains(id));
        f(cross_agent_stores::live::ListingSpent {
            table: &table,
            of: &spent_of,
            unmoved: since.map(|since| cross_agent_stores::live::Unmoved {
                since: &since.table,
                moved: &moved,
            }),
        })
    }

    /// Splices the current costs into the listing's kept texts once the accounting moved (or a
    /// walk carried a text over), for the index loop: the next listing finds them made rather
    /// than making them itself. Nothing when no listing was made.
    fn recost_listing(&self) {
        let Some(roots) = self.inner.usage.roots() else {
            return;
        };
        if self.inner.scan.has_renderings(&roots) {
            self.with_listing_spent(&roots, |spent| self.inner.scan.recost(&roots, spent));
        }
    }

    /// Some agents' held sessions, lent: read with no lock held.
    fn snapshot(&self, context: &CallerContext, agents: &[Agent]) -> Snapshot {
        self.inner.scan.snapshot(&roots_for(context), agents)
    }

    fn list(&self, context: &CallerContext, agents: &[Agent]) -> (Vec<Session>, Vec<String>) {
        let roots = roots_for(context);
        let listing = self.inner.scan.list_agents(&roots, agents);
        (
            listing.sessions,
            listing.warnings.iter().map(ToString::to_string).collect(),
        )
    }
}

/// What dispatch asks of the other parts: the carriers' registry and the answers' recovery.
impl dispatch::DispatchNeighbours for Engine {
    fn carry(&self, claimed: crate::records::Claimed) -> dispatch::Carrying {
        Box::pin(
            self.inner
                .carriers
                .clone()
                .carry(self.carrier_context(), claimed),
        )
    }

    fn waits_for_open_turn(&self, transport: cross_agent_protocol::bridge::Transport) -> bool {
        self.inner.carriers.waits_for_open_turn(transport)
    }

    fn recover(
        &self,
        record: &mut cross_agent_protocol::bridge::DeliveryRecord,
        why: &str,
    ) -> bool {
        self.inner.answers.recover(record, why)
    }
}

/// What return traffic asks of the other parts: the live panels and the dispatcher's wake-up.
struct ReturnWay {
    panels: panels::LivePanels,
    dispatch: Arc<dispatch::Dispatch>,
}

impl answers::ReturnNeighbours for ReturnWay {
    fn live_panels(
        &self,
        ui_hook: crate::settings::UiHook,
    ) -> Vec<cross_agent_transports::panel::registry::LivePanel> {
        self.panels.live(ui_hook)
    }

    fn queued(&self) {
        self.dispatch.wake();
    }
}
