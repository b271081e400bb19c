//! Waiting on a session someone else is working in (docs/spec/cross-agent-mcp.md §9 "Delivery queue execution"):
//! another daemon's live busy lock, or a turn open in its transcript — unless that turn is one
//! the bridge itself started and stopped. [`BusyWatch`] is dispatch's: it judges which queued
//! deliveries wait, notes when each began waiting, and fails one that waited past its bound;
//! admission and `bridge_status` ask it whether someone else works in a session.
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cross_agent_decisions::{DecisionLog, events};
use cross_agent_protocol::bridge::{DeliveryRecord, TargetKey, Transport};
use cross_agent_protocol::events::EngineEvent;
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::UnixMillis;
use cross_agent_stores::turns::{Role, Turn, TurnItem, request_ids};
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::broadcast;

use super::event_stream::emit_settled;
use super::recent_turns;
use crate::Agent;
use crate::db::HubDb;
use crate::records::{BusyLock, Job, QueueHead};
use crate::settings::CallSettings;

/// A session whose last turn is open but whose transcript has not been written for this long
/// is not counted as mid-turn: a CLI that died mid-turn leaves an open turn behind forever.
const STALE_OPEN_TURN: Duration = Duration::from_secs(600);
/// How many of a session's newest finished deliveries an open turn is matched against.
const STOPPED_TURNS_LOOKED_AT: u32 = 50;
/// The agent's clock and ours are the same machine's, but a turn's first record may be stamped
/// a moment after the kill was decided.
const CLOCK_SLACK_MS: i64 = 5_000;

/// A transcript's (size, mtime) when last read, and the turn then open in it.
type DiskTurn = ((u64, Option<std::time::SystemTime>), Option<OpenTurn>);

/// The busy judgement: its handles (the store, the decisions log, the event stream) and what it
/// remembers between looks (only `busy` reads or writes it).
pub(super) struct BusyWatch {
    /// `hub.db`, shared: the queue, the locks, the finished deliveries an open turn is matched
    /// against.
    db: Arc<Mutex<HubDb>>,
    /// This daemon: its own locks are no one else's work.
    pid: u32,
    decisions: DecisionLog,
    events: broadcast::Sender<EngineEvent>,
    /// When each queued delivery was first seen waiting on someone else's turn.
    waiting_since: Mutex<HashMap<String, i64>>,
    /// Transcripts last read for an open turn: their size and mtime then, and the answer.
    disk_turns: Mutex<HashMap<PathBuf, DiskTurn>>,
}

impl BusyWatch {
    pub(super) fn new(
        db: Arc<Mutex<HubDb>>,
        pid: u32,
        decisions: DecisionLog,
        events: broadcast::Sender<EngineEvent>,
    ) -> BusyWatch {
        BusyWatch {
            db,
            pid,
            decisions,
            events,
            waiting_since: Mutex::default(),
            disk_turns: Mutex::default(),
        }
    }

    fn db(&self) -> MutexGuard<'_, HubDb> {
        self.db.lock()
    }
}

/// A queued delivery's job timeout and panel patience (the defaults when its job is gone):
/// it waits on a busy session up to the larger of them.
fn wait_bounds(job: Option<&Job>) -> (u64, u64) {
    job.map_or(
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
    )
}

impl BusyWatch {
    /// The sessions queued deliveries wait on because someone else's turn holds them: another
    /// daemon's live busy lock, or a turn open on disk (a person typing in a panel, a CLI run
    /// by hand) — for the deliveries whose transport `waits_for_open_turn` says waits on one.
    /// Waiting is bounded by the larger of the job timeout and `CROSS_AGENT_PANEL_PATIENCE`;
    /// past it the delivery fails as not delivered. Blocking.
    pub(super) fn busy_elsewhere(
        &self,
        waits_for_open_turn: &dyn Fn(Transport) -> bool,
    ) -> HashSet<String> {
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
        let now = UnixMillis::now().0;
        let mut busy = HashSet::new();
        let mut waiting = HashSet::new();
        for head in heads {
            let Some(reason) = self.why_busy(&head, &locks, now, waits_for_open_turn) else {
                continue;
            };
            busy.insert(head.target_key.clone());
            waiting.insert(head.delivery_id.clone());
            self.keep_waiting(&head, &reason, now);
        }
        self.waiting_since
            .lock()
            .retain(|id, _| waiting.contains(id));
        busy
    }

    /// Why a queued delivery's session is someone else's now, or `None` when it may go out.
    fn why_busy(
        &self,
        head: &QueueHead,
        locks: &[BusyLock],
        now: i64,
        waits_for_open_turn: &dyn Fn(Transport) -> bool,
    ) -> Option<String> {
        let key = &head.target_key;
        let held = locks.iter().find(|l| &l.target_key == key);
        match held {
            Some(l) if l.owner_pid == self.pid => None,
            Some(l)
                if l.lease_until_ms > now
                    && cross_agent_transports::process::is_alive(l.owner_pid) =>
            {
                Some(format!(
                    "another cross-agent daemon (pid {}) runs a turn on it",
                    l.owner_pid
                ))
            }
            // No lock, or a dead daemon's (killed outright, it could not release it): the
            // lock says nothing about who works in the session now, so its transcript
            // decides — a person may have opened it since, or the dead daemon's own
            // orphaned turn may be left open there.
            //
            // A native delivery never waits on the transcript: Claude's own inbox takes the
            // message while the session works and hands it over at its next tool round or
            // turn (observed §3.5), so a busy live session is no reason to hold it.
            Some(_) | None if !head.transport.is_none_or(waits_for_open_turn) => None,
            Some(_) | None => head
                .target_transcript
                .as_deref()
                .filter(|p| self.is_someone_else_working(head.target_agent, key, Path::new(p)))
                .map(|_| {
                    "a turn is open in its transcript (someone else is working in it)".to_owned()
                }),
        }
    }

    /// A queued delivery waits on a busy session: noted when first seen (with a decision
    /// line), and failed as not delivered once it has waited past its bound.
    fn keep_waiting(&self, head: &QueueHead, reason: &str, now: i64) {
        let (since, first_seen) = match self.waiting_since.lock().entry(head.delivery_id.clone()) {
            std::collections::hash_map::Entry::Occupied(at) => (*at.get(), false),
            std::collections::hash_map::Entry::Vacant(at) => (*at.insert(now), true),
        };
        let job = self.db().job(&head.delivery_id).ok().flatten();
        let (timeout, patience) = wait_bounds(job.as_ref());
        let bound = timeout.max(patience);
        if first_seen && let Ok(Some(record)) = self.db().delivery(&head.delivery_id) {
            self.decisions
                .record(events::busy_held(&record, reason, bound));
        }
        let waited = u64::try_from((now - since).max(0) / 1000).unwrap_or(0);
        if waited >= bound {
            let key = &head.target_key;
            let error = format!(
                "not delivered: {} session {} stayed busy — {reason} — for {waited} s, \
                 past the wait bound ({bound} s: the larger of the timeout, {timeout} s, and \
                 CROSS_AGENT_PANEL_PATIENCE, {patience} s). The peer never received the \
                 message, so there is no answer to watch for; sending again is safe",
                head.target_agent,
                key.parse::<TargetKey>()
                    .map_or_else(|_| key.clone(), |target| target.session_id)
            );
            self.fail_waited_out(&head.delivery_id, &error);
        }
    }

    /// Closes a queued delivery that waited past its bound: failed, never sent.
    fn fail_waited_out(&self, delivery_id: &str, error: &str) {
        // A statement of its own: the store's lock is released before the match, whose
        // arm reads the closed record back.
        let closed = self.db().fail_queued(delivery_id, error, &now_rfc3339());
        match closed {
            Ok(true) => {
                tracing::warn!(delivery = %delivery_id, "not delivered: the peer stayed busy");
                let closed = self.db().delivery(delivery_id);
                if let Ok(Some(record)) = closed {
                    self.decisions
                        .record_all(events::delivery_finished(&record));
                    emit_settled(&self.events, &record);
                }
            }
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "could not close an undelivered delivery"),
        }
    }

    /// Whether someone other than the bridge is working in a session now: a turn is open in its
    /// transcript (written recently) that is not one the bridge itself started and that has
    /// ended. The one rule behind the dispatcher's wait, a receipt's busy warning and
    /// `peer_turn`, and a listing's `is_working` (docs/spec/cross-agent-mcp.md §9). Blocking: it reads the
    /// transcript and `hub.db` (take no `db()` guard around it).
    pub(super) fn is_someone_else_working(
        &self,
        agent: Agent,
        target_key: &str,
        transcript: &Path,
    ) -> bool {
        self.open_turn_on_disk(agent, transcript)
            .is_some_and(|turn| !self.is_stopped_bridge_turn(target_key, &turn))
    }

    /// The turn open in a session's transcript, if its last turn is open and the transcript
    /// was written recently (an open turn left by a CLI that died long ago is not anyone's
    /// work). The dispatcher asks on each of its turns, so a transcript is re-read only when its
    /// size or modification time changed.
    fn open_turn_on_disk(&self, agent: Agent, path: &Path) -> Option<OpenTurn> {
        let meta = std::fs::metadata(path).ok()?;
        let modified = meta.modified().ok();
        let fresh = modified
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age < STALE_OPEN_TURN);
        if !fresh {
            return None;
        }
        let stamp = (meta.len(), modified);
        let mut seen = self.disk_turns.lock();
        if let Some((known, open)) = seen.get(path)
            && *known == stamp
        {
            return open.clone();
        }
        let mut warnings = cross_agent_stores::Warnings::default();
        let open = recent_turns(agent, path, &mut warnings)
            .ok()
            .and_then(|t| t.running_turn().map(OpenTurn::of));
        // Bounded: one entry per transcript a queue has waited on.
        if seen.len() > 1024 {
            seen.clear();
        }
        seen.insert(path.to_owned(), (stamp, open.clone()));
        open
    }

    /// Whether an open turn is one the bridge itself started and that has ended (docs/spec/cross-agent-mcp.md §9):
    /// it belongs to a finished delivery to this session — killed for inactivity, stopped with
    /// its carrier, orphaned by a daemon that died, or ended otherwise — it started before that
    /// delivery finished, and the delivery's process group is gone. Such a turn stays open in
    /// the transcript forever, but nobody works in it. A turn belongs to a delivery when its
    /// prompt carries the delivery's request id; a prompt with none (a `raw` send) belongs to
    /// the delivery whose run it started in.
    fn is_stopped_bridge_turn(&self, target_key: &str, turn: &OpenTurn) -> bool {
        if turn.request_ids.is_empty() && turn.started_at.is_none() {
            return false;
        }
        let finished = match self
            .db()
            .finished_for_target(target_key, STOPPED_TURNS_LOOKED_AT)
        {
            Ok(finished) => finished,
            Err(error) => {
                tracing::warn!(%error, "could not read a session's finished deliveries");
                return false;
            }
        };
        finished.iter().any(|record| {
            belongs_to(turn, record)
                && record
                    .peer_pid
                    .is_none_or(|pid| !cross_agent_transports::process::group_alive(pid))
                && match (
                    turn.started_at,
                    record
                        .finished_at
                        .as_deref()
                        .and_then(UnixMillis::parse_rfc3339),
                ) {
                    (Some(started), Some(finished)) => started.0 <= finished.0 + CLOCK_SLACK_MS,
                    (None, _) | (_, None) => true,
                }
        })
    }
}

/// A turn open in a transcript, as the busy check judges it.
#[derive(Debug, Clone)]
pub(super) struct OpenTurn {
    started_at: Option<UnixMillis>,
    /// The request ids its prompt names: a turn the bridge started carries its envelope's.
    request_ids: Vec<String>,
}

impl OpenTurn {
    fn of(turn: &Turn) -> OpenTurn {
        let request_ids = turn
            .items
            .iter()
            .filter_map(|item| match item {
                TurnItem::Message(m) if m.role == Role::User => Some(m.text.as_str()),
                TurnItem::Message(_) | TurnItem::ToolCall(_) | TurnItem::ToolResult(_) => None,
            })
            .flat_map(request_ids)
            .map(str::to_owned)
            .collect();
        OpenTurn {
            started_at: turn.started_at,
            request_ids,
        }
    }
}

/// Whether `turn` is the one `record`'s delivery started: its prompt names the request id, or,
/// for a prompt naming none, it started while that delivery ran.
fn belongs_to(turn: &OpenTurn, record: &DeliveryRecord) -> bool {
    if !turn.request_ids.is_empty() {
        return turn.request_ids.contains(&record.request_id);
    }
    let ran_from = record
        .started_at
        .as_deref()
        .and_then(UnixMillis::parse_rfc3339);
    match (turn.started_at, ran_from) {
        (Some(turn_started), Some(ran_from)) => turn_started.0 + CLOCK_SLACK_MS >= ran_from.0,
        (None, _) | (_, None) => false,
    }
}
