//! The messaging state in `hub.db`: deliveries (their records and, until hand-over, their
//! payloads), pins, conversations with their hop counts, and per-session busy locks.
//!
//! Every state change of a delivery is one transaction, so a crash leaves each delivery either
//! queued with its payload (it goes out after a restart) or handed over without it (it is never
//! re-sent). Busy locks carry an owner token, the owner's pid and a lease: a lock is released
//! only by the token that took it, and a lock whose owner is dead or whose lease ran out (pid
//! reuse) is reclaimed by the next taker. The cross review's corrections sent (`corrections`)
//! live here too.

mod corrections;
pub use corrections::SentCorrection;
mod pins;
mod watches;

use std::collections::{BTreeMap, HashSet};

use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState};
use cross_agent_protocol::timestamp::UnixMillis;
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::Agent;
use crate::db::{HubDb, columns, select};
use crate::error::{Error, Result};

/// A late-answer watch as `bridge_status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatchSummary {
    pub delivery_id: String,
    #[serde(skip)]
    pub until_ms: i64,
    pub owner_pid: Option<u32>,
    pub request_id: Option<String>,
    pub target_agent: Option<String>,
    pub target_session_id: Option<String>,
}

/// What a queued delivery needs to be handed over: the only place the message and the child's
/// environment are kept, deleted in the transaction that hands the delivery over (with
/// `secure_delete` on, and the write-ahead log truncated soon after: see
/// [`HubDb::scrub_wal_when_due`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// The envelope after its first line, or the raw message.
    pub body: String,
    pub raw: bool,
    /// The caller's registration settings (binaries, models, permission modes, no-headless).
    pub settings: BTreeMap<String, String>,
    pub child_env: BTreeMap<String, String>,
    pub bridge_env: BTreeMap<String, String>,
    /// The target session's directory (or where a new one is created).
    pub cwd: String,
    /// The id chosen for a new Claude or Grok session.
    pub new_session_id: Option<String>,
    pub timeout_secs: u64,
    pub withheld_env: Vec<String>,
    /// Where the automatic pin of a created session goes.
    pub pin_cwd_key: String,
    /// Set when the delivery goes into an editor panel instead of a headless CLI.
    #[serde(default)]
    pub panel: Option<PanelJob>,
    /// Set when the delivery goes through Claude's native peer door (a relay's `SendMessage`)
    /// because a live Claude Code process holds the session and no shim does.
    #[serde(default)]
    pub native: Option<NativeJob>,
    /// Set when the delivery goes to a Copilot session through its editor's Agent Host.
    #[serde(default)]
    pub agent_host: Option<AgentHostJob>,
    /// A Copilot sender's verified return route, found at acceptance: where its answer goes
    /// back, once checked again.
    #[serde(default)]
    pub copilot_return: Option<CopilotReturn>,
}

/// A Copilot caller's own session on the live host that runs its MCP process: the route its
/// answer takes back (docs/spec/cross-agent-mcp.md, "Copilot (VS Code Agent Host)"). Checked
/// again right before the answer is dispatched: the SDK session still backs that session's
/// unarchived default chat, and the host's owner is still an ancestor of the MCP process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopilotReturn {
    /// The caller's session on its host.
    pub route: AgentHostJob,
    /// The SDK session its MCP process was started for (`COPILOT_AGENT_SESSION_ID`).
    pub sdk_session_id: String,
    /// The caller session's `session.db`, where the mapping is read again.
    pub session_db: String,
    /// The pid that owns the host's endpoint entry (the editor's host process).
    pub owner_pid: u32,
    /// The MCP process that made the call.
    pub mcp_pid: u32,
}

/// An Agent Host delivery's route as resolved at acceptance: the session as the host names it
/// and the editor whose host runs it. The endpoint (socket and token) is read again from that
/// editor's registry when the delivery goes out, never stored: the token stays out of
/// `hub.db`, and a host restarted since acceptance is found at its new socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentHostJob {
    /// The session URI exactly as the host lists it (`copilotcli:/<uuid>`).
    pub session_uri: String,
    /// The editor's user-data folder, whose endpoint registry names the live host.
    pub user_data_dir: String,
    /// `<userData>/agent-host/local-endpoint/entries`.
    pub endpoint_dir: String,
    /// A notice that never waits for a busy chat (`PROGRESS (INFO)`): the chat running a turn
    /// when it goes out, it is not sent, and not retried.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_busy_skipped: bool,
}

/// A native delivery's route as resolved at acceptance: the live process the registry named.
/// Looked at again when the delivery goes out: a process gone by then is dormant, and the
/// delivery resumes the session over the CLI instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeJob {
    /// Claude Code's pid and its start time (`procStart`), as its registry entry gave them.
    pub pid: u32,
    pub proc_start: u64,
    /// `uds:<its messaging socket>`: what the relay's `SendMessage` addresses.
    pub address: String,
    /// Its registry name, for the record and the decisions.
    #[serde(default)]
    pub registry_name: Option<String>,
    /// Who the relay speaks for: the sender's session title or short id, or `cli`.
    pub represented: String,
    /// The permission mode the target last ran in (its transcript says): the relay starts in
    /// the same one, so Claude delivers the message instead of holding it.
    #[serde(default)]
    pub permission_mode: Option<String>,
}

/// A panel delivery's route as resolved at acceptance: which conversation, and what kind of
/// injection. The shim holding it is looked up again when the delivery goes out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanelJob {
    pub kind: cross_agent_protocol::panel::InjectionKind,
    /// The shim chosen at acceptance (the one to open a new conversation in).
    pub shim_pid: u32,
    /// The conversation; `None` with `new_session` for one the panel opens.
    pub session_id: Option<String>,
    #[serde(default)]
    pub new_session: bool,
    /// A new Codex thread's name: "sender: head of the message".
    #[serde(default)]
    pub title: Option<String>,
    /// Who sent it, as the panel shows it.
    #[serde(default)]
    pub sender_label: Option<String>,
}

/// Who takes queued deliveries over: the daemon's pid and generation, and how long the busy
/// locks it takes last before they must be renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Carrier {
    pub owner_pid: u32,
    pub generation: u64,
    pub lease_ms: i64,
}

/// A delivery taken off the queue, with its lock.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub record: DeliveryRecord,
    pub job: Job,
    pub created_ms: i64,
    pub target_key: String,
    pub lock_token: String,
}

/// A busy lock as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BusyLock {
    pub target_key: String,
    pub owner_pid: u32,
    pub delivery_id: Option<String>,
    pub acquired_at: String,
    pub lease_until_ms: i64,
}

/// The first queued delivery of one session: the one that goes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueHead {
    pub delivery_id: String,
    pub target_key: String,
    pub target_agent: Agent,
    pub target_transcript: Option<String>,
    /// How it goes out (`None`: a record that does not say).
    pub transport: Option<cross_agent_protocol::bridge::Transport>,
}

/// A late-answer watch this daemon holds.
#[derive(Debug, Clone)]
pub struct Watch {
    /// The request's record.
    pub record: DeliveryRecord,
    pub since_ms: i64,
    pub until_ms: i64,
}

/// The queue in front of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueInfo {
    /// Queued (not yet handed over), ahead of a new one.
    pub queued: u32,
    /// Handed over and still running.
    pub running: u32,
    pub oldest_queued_ms: Option<i64>,
}

pub(crate) fn state_str(state: DeliveryState) -> &'static str {
    match state {
        DeliveryState::Queued => "queued",
        DeliveryState::Delivering => "delivering",
        DeliveryState::AwaitingPeer => "awaiting-peer",
        DeliveryState::Delivered => "delivered",
        DeliveryState::Failed => "failed",
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(Error::Encode)
}

fn from_json<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(Error::Encode)
}

/// Whether a lock's owner still holds it.
fn lock_is_live(owner_pid: u32, lease_until_ms: i64, now_ms: i64) -> bool {
    lease_until_ms > now_ms && cross_agent_transports::process::is_alive(owner_pid)
}

impl HubDb {
    /// Records an accepted delivery, its payload and the hop it spends, in one transaction.
    pub fn insert_delivery(
        &mut self,
        record: &DeliveryRecord,
        target_key: &str,
        created_ms: i64,
        job: &Job,
        spend_hop: bool,
    ) -> Result<()> {
        let record_json = to_json(record)?;
        let job_json = to_json(job)?;
        let (tx, fail) = self.begin("record a new delivery")?;
        let fail = &fail;
        tx.execute(
            "INSERT INTO deliveries (delivery_id, state, target_agent, target_key, created_ms, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                record.delivery_id,
                state_str(record.state),
                record.target_agent.as_str(),
                target_key,
                created_ms,
                record_json
            ],
        )
        .map_err(fail)?;
        tx.execute(
            "INSERT INTO pending_payloads (delivery_id, job) VALUES (?1, ?2)",
            params![record.delivery_id, job_json],
        )
        .map_err(fail)?;
        // A Copilot sender's request keeps its return route for a late answer (its payload
        // goes when the turn starts).
        if let Some(back) = job
            .copilot_return
            .as_ref()
            .filter(|_| record.answer.answers_delivery_id.is_none())
        {
            tx.execute(
                "INSERT INTO copilot_returns (delivery_id, route) VALUES (?1, ?2)",
                params![record.delivery_id, to_json(back)?],
            )
            .map_err(fail)?;
        }
        if spend_hop {
            tx.execute(
                "INSERT INTO conversations (conversation_id, hops, created_at, updated_at)
                 VALUES (?1, 1, ?2, ?2)
                 ON CONFLICT (conversation_id) DO UPDATE SET hops = hops + 1, updated_at = ?2",
                params![record.conversation_id, record.created_at],
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    }

    /// Records a send forwarded to another machine: no payload (it went over the link at
    /// once) and no hop spent here (the remote counts it).
    pub fn insert_remote_delivery(
        &mut self,
        record: &DeliveryRecord,
        target_key: &str,
        created_ms: i64,
    ) -> Result<()> {
        let record_json = to_json(record)?;
        self.conn
            .execute(
                "INSERT INTO deliveries (delivery_id, state, target_agent, target_key, created_ms, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    record.delivery_id,
                    state_str(record.state),
                    record.target_agent.as_str(),
                    target_key,
                    created_ms,
                    record_json
                ],
            )
            .map_err(|source| self.err("record a forwarded delivery", source))?;
        Ok(())
    }

    /// Hops already spent in a conversation (0 for one never seen).
    pub fn conversation_hops(&self, conversation_id: &str) -> Result<u32> {
        self.conn
            .query_row(
                "SELECT hops FROM conversations WHERE conversation_id = ?1",
                params![conversation_id],
                |row| row.get::<_, u32>(0),
            )
            .optional()
            .map(Option::unwrap_or_default)
            .map_err(|source| self.err("read a conversation's hops", source))
    }

    /// Writes a delivery's record (and its state column).
    pub fn update_delivery(&self, record: &DeliveryRecord) -> Result<()> {
        let json = to_json(record)?;
        // The TTL runs from the finish (an orphan's: its lease's expiry).
        let finished_ms = record
            .state
            .is_finished()
            .then(|| {
                record
                    .finished_at
                    .as_deref()
                    .and_then(UnixMillis::parse_rfc3339)
            })
            .flatten()
            .map(|at| at.0);
        self.conn
            .execute(
                "UPDATE deliveries SET state = ?2, record = ?3,
                 finished_ms = COALESCE(?4, finished_ms) WHERE delivery_id = ?1",
                params![
                    record.delivery_id,
                    state_str(record.state),
                    json,
                    finished_ms
                ],
            )
            .map_err(|source| self.err("update a delivery", source))?;
        Ok(())
    }

    /// Points a delivery at the session it created (a new Codex thread's id comes late).
    pub fn retarget_delivery(&self, delivery_id: &str, target_key: &str) -> Result<()> {
        self.conn
            .execute(
                "UPDATE deliveries SET target_key = ?2 WHERE delivery_id = ?1",
                params![delivery_id, target_key],
            )
            .map_err(|source| self.err("update a delivery's target", source))?;
        Ok(())
    }

    /// The delivery whose request id is `request_id` (the newest, should two share it).
    pub fn delivery_by_request(&self, request_id: &str) -> Result<Option<DeliveryRecord>> {
        self.json_of(
            "read a delivery by its request id",
            "SELECT record FROM deliveries WHERE json_extract(record, '$.request_id') = ?1
             ORDER BY created_ms DESC LIMIT 1",
            request_id,
        )
    }

    pub fn delivery(&self, delivery_id: &str) -> Result<Option<DeliveryRecord>> {
        self.json_of(
            "read a delivery",
            "SELECT record FROM deliveries WHERE delivery_id = ?1",
            delivery_id,
        )
    }

    /// The JSON column `sql` selects for `delivery_id`, decoded; `None` when there is no row.
    fn json_of<T: serde::de::DeserializeOwned>(
        &self,
        action: &'static str,
        sql: &str,
        delivery_id: &str,
    ) -> Result<Option<T>> {
        let text: Option<String> = self
            .conn
            .query_row(sql, params![delivery_id], |row| row.get(0))
            .optional()
            .map_err(|source| self.err(action, source))?;
        text.as_deref().map(from_json).transpose()
    }

    /// Deliveries in the given states, oldest first, at most `limit`.
    pub fn deliveries_in(
        &self,
        states: &[DeliveryState],
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>> {
        let names: Vec<&str> = states.iter().map(|s| state_str(*s)).collect();
        let placeholders = vec!["?"; names.len()].join(",");
        // The newest rows are picked from the (state, created_ms) index alone, then their records
        // read: sorting whole records would copy every one of the state's rows (hundreds after a
        // busy hour) for the `limit` kept. Ties on created_ms fall back to insertion order.
        let sql = format!(
            "SELECT record FROM deliveries WHERE rowid IN (
                 SELECT rowid FROM deliveries WHERE state IN ({placeholders})
                 ORDER BY created_ms DESC, rowid DESC LIMIT {limit})
             ORDER BY created_ms DESC, rowid DESC"
        );
        let rows: Vec<String> = self.rows(
            "list deliveries",
            &sql,
            rusqlite::params_from_iter(names.iter()),
            |row| row.get(0),
        )?;
        rows.iter().rev().map(|json| from_json(json)).collect()
    }

    /// The newest finished deliveries to `target_key` (delivered or failed), newest first, at
    /// most `limit`: the turns the bridge started there and that have ended.
    pub fn finished_for_target(&self, target_key: &str, limit: u32) -> Result<Vec<DeliveryRecord>> {
        let rows: Vec<String> = self.rows(
            "list a session's finished deliveries",
            "SELECT record FROM deliveries WHERE target_key = ?1 AND state IN ('delivered', 'failed')
             ORDER BY created_ms DESC, rowid DESC LIMIT ?2",
            params![target_key, limit],
            |row| row.get(0),
        )?;
        rows.iter().map(|json| from_json(json)).collect()
    }

    /// The queue in front of `target_key` now.
    pub fn queue_info(&self, target_key: &str) -> Result<QueueInfo> {
        self.conn
            .query_row(
                "SELECT
                    COALESCE(SUM(state = 'queued'), 0),
                    COALESCE(SUM(state IN ('delivering', 'awaiting-peer')), 0),
                    MIN(CASE WHEN state = 'queued' THEN created_ms END)
                 FROM deliveries WHERE target_key = ?1",
                params![target_key],
                |row| {
                    Ok(QueueInfo {
                        queued: row.get(0)?,
                        running: row.get(1)?,
                        oldest_queued_ms: row.get(2)?,
                    })
                },
            )
            .map_err(|source| self.err("read a session's queue", source))
    }

    /// Takes up to `max` queued deliveries whose session is free, oldest first and first come
    /// first served per session: takes each one's busy lock (reclaiming a dead owner's), marks it
    /// `delivering` and removes its payload — the hand-over — in one transaction.
    pub fn claim_runnable(
        &mut self,
        max: usize,
        carrier: &Carrier,
        now_ms: i64,
        now: &str,
    ) -> Result<Vec<Claimed>> {
        self.claim_runnable_except(max, carrier, now_ms, now, &HashSet::new())
    }

    /// [`HubDb::claim_runnable`], leaving alone the sessions in `busy`: those mid-turn with
    /// someone else's work (a person typing in a panel), which a delivery waits out in line.
    pub fn claim_runnable_except(
        &mut self,
        max: usize,
        carrier: &Carrier,
        now_ms: i64,
        now: &str,
        busy: &HashSet<String>,
    ) -> Result<Vec<Claimed>> {
        let Carrier {
            owner_pid,
            generation,
            lease_ms,
        } = *carrier;
        if max == 0 {
            return Ok(Vec::new());
        }
        let (tx, fail) = self.begin("hand queued deliveries over")?;
        let fail = &fail;
        // The queue's order from the index; a record and its payload are read only for the
        // deliveries handed over, not for the whole backlog on every dispatcher turn.
        let queued: Vec<(String, String, i64)> = select(
            &tx,
            fail,
            "SELECT delivery_id, target_key, created_ms FROM deliveries
             WHERE state = 'queued' ORDER BY created_ms, delivery_id",
            [],
            columns,
        )?;
        let mut seen_keys = HashSet::new();
        let mut claimed = Vec::new();
        for (delivery_id, target_key, created_ms) in queued {
            if claimed.len() >= max {
                break;
            }
            // First come, first served: a later delivery never overtakes an earlier one to the
            // same session, even when the earlier one cannot go yet.
            if !seen_keys.insert(target_key.clone()) || busy.contains(&target_key) {
                continue;
            }
            let lock: Option<(u32, i64)> = tx
                .query_row(
                    "SELECT owner_pid, lease_until_ms FROM busy_locks WHERE target_key = ?1",
                    params![target_key],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(fail)?;
            if let Some((pid, lease)) = lock {
                if lock_is_live(pid, lease, now_ms) {
                    continue;
                }
                tracing::info!(
                    target_key,
                    owner_pid = pid,
                    "reclaimed the busy lock of a dead owner"
                );
                tx.execute(
                    "DELETE FROM busy_locks WHERE target_key = ?1",
                    params![target_key],
                )
                .map_err(fail)?;
            }
            let (record_json, job_json): (String, Option<String>) = tx
                .query_row(
                    "SELECT d.record, p.job
                     FROM deliveries d LEFT JOIN pending_payloads p USING (delivery_id)
                     WHERE d.delivery_id = ?1",
                    params![delivery_id],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .map_err(fail)?;
            let mut record: DeliveryRecord = from_json(&record_json)?;
            let Some(job_json) = job_json else {
                // Queued without a payload cannot happen through this code; close it rather
                // than leave it blocking its session forever.
                record.state = DeliveryState::Failed;
                record.error = Some("its payload is missing; it was never handed over".into());
                record.is_undelivered = true;
                record.finished_at = Some(now.to_owned());
                tx.execute(
                    "UPDATE deliveries SET state = 'failed', record = ?2 WHERE delivery_id = ?1",
                    params![delivery_id, to_json(&record)?],
                )
                .map_err(fail)?;
                continue;
            };
            let job: Job = from_json(&job_json)?;
            let token = uuid::Uuid::new_v4().simple().to_string();
            tx.execute(
                "INSERT INTO busy_locks (target_key, owner_token, owner_pid, delivery_id, acquired_at, lease_until_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![target_key, token, owner_pid, delivery_id, now, now_ms + lease_ms],
            )
            .map_err(fail)?;
            record.state = DeliveryState::Delivering;
            record.started_at = Some(now.to_owned());
            record.carrier_generation = Some(generation);
            record.expires_at = Some(UnixMillis(now_ms + lease_ms).to_rfc3339());
            tx.execute(
                "UPDATE deliveries SET state = 'delivering', record = ?2, carrier_pid = ?3,
                 lease_until_ms = ?4 WHERE delivery_id = ?1",
                params![delivery_id, to_json(&record)?, owner_pid, now_ms + lease_ms],
            )
            .map_err(fail)?;
            tx.execute(
                "DELETE FROM pending_payloads WHERE delivery_id = ?1",
                params![delivery_id],
            )
            .map_err(fail)?;
            claimed.push(Claimed {
                record,
                job,
                created_ms,
                target_key,
                lock_token: token,
            });
        }
        tx.commit().map_err(fail)?;
        if !claimed.is_empty() {
            // The payloads just deleted are still in the write-ahead log's frames.
            self.payload_deleted();
        }
        Ok(claimed)
    }

    /// The delivery next in line for each session with a queue — read without decoding every
    /// queued record, since the dispatcher asks on each of its turns.
    pub fn queue_heads(&self) -> Result<Vec<QueueHead>> {
        // delivery id, target key, agent, transcript, transport.
        type Row = (String, String, String, Option<String>, Option<String>);
        let rows: Vec<Row> = self.rows(
            "read the heads of the queues",
            // Each queue's head is found from the columns first and only its record's JSON
            // read; decoding every queued record on each dispatcher turn cost milliseconds
            // under a backlog of hundreds.
            "SELECT d.delivery_id, d.target_key, d.target_agent,
                    json_extract(d.record, '$.target_transcript'),
                    json_extract(d.record, '$.transport')
             FROM deliveries d
             WHERE d.rowid IN (
                 SELECT (SELECT q.rowid FROM deliveries q
                         WHERE q.state = 'queued' AND q.target_key = k.target_key
                         ORDER BY q.created_ms, q.rowid LIMIT 1)
                 FROM (SELECT DISTINCT target_key FROM deliveries
                       WHERE state = 'queued') k)",
            [],
            columns,
        )?;
        Ok(rows
            .into_iter()
            .filter_map(
                |(delivery_id, target_key, agent, target_transcript, transport)| {
                    Some(QueueHead {
                        delivery_id,
                        target_key,
                        target_agent: Agent::parse(&agent)?,
                        target_transcript,
                        transport: transport.and_then(|t| {
                            serde_json::from_value(serde_json::Value::String(t)).ok()
                        }),
                    })
                },
            )
            .collect())
    }

    /// The return route a Copilot sender's request was accepted with, if it had one.
    pub fn copilot_return(&self, delivery_id: &str) -> Result<Option<CopilotReturn>> {
        self.json_of(
            "read a Copilot sender's return route",
            "SELECT route FROM copilot_returns WHERE delivery_id = ?1",
            delivery_id,
        )
    }

    /// A queued delivery's payload.
    pub fn job(&self, delivery_id: &str) -> Result<Option<Job>> {
        self.json_of(
            "read a queued payload",
            "SELECT job FROM pending_payloads WHERE delivery_id = ?1",
            delivery_id,
        )
    }

    /// Closes a delivery that is still queued as **not delivered** (`is_undelivered`): the
    /// peer never received it. Its payload goes with it. False when it was no longer queued.
    pub fn fail_queued(&mut self, delivery_id: &str, error: &str, now: &str) -> Result<bool> {
        let (tx, fail) = self.begin("close an undelivered delivery")?;
        let fail = &fail;
        let json: Option<String> = tx
            .query_row(
                "SELECT record FROM deliveries WHERE delivery_id = ?1 AND state = 'queued'",
                params![delivery_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(fail)?;
        let Some(json) = json else {
            return Ok(false);
        };
        let mut record: DeliveryRecord = from_json(&json)?;
        record.state = DeliveryState::Failed;
        record.is_undelivered = true;
        record.error = Some(error.to_owned());
        record.finished_at = Some(now.to_owned());
        tx.execute(
            "UPDATE deliveries SET state = 'failed', record = ?2, finished_ms = ?3
             WHERE delivery_id = ?1",
            params![
                delivery_id,
                to_json(&record)?,
                UnixMillis::parse_rfc3339(now).map(|at| at.0)
            ],
        )
        .map_err(fail)?;
        tx.execute(
            "DELETE FROM pending_payloads WHERE delivery_id = ?1",
            params![delivery_id],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        self.payload_deleted();
        Ok(true)
    }

    /// Extends a lock's lease and its delivery's (`expires_at`) together, if `token` still owns
    /// the lock: one worker keeps both alive, so both lapse together when it disappears.
    pub fn renew_lease(
        &mut self,
        target_key: &str,
        token: &str,
        delivery_id: &str,
        until_ms: i64,
    ) -> Result<bool> {
        let (tx, fail) = self.begin("renew a delivery's lease")?;
        let fail = &fail;
        let owned = tx
            .execute(
                "UPDATE busy_locks SET lease_until_ms = ?3 WHERE target_key = ?1 AND owner_token = ?2",
                params![target_key, token, until_ms],
            )
            .map_err(fail)?
            > 0;
        if owned {
            tx.execute(
                "UPDATE deliveries SET lease_until_ms = ?2,
                 record = json_set(record, '$.expires_at', ?3)
                 WHERE delivery_id = ?1 AND state IN ('delivering', 'awaiting-peer')",
                params![delivery_id, until_ms, UnixMillis(until_ms).to_rfc3339()],
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)?;
        Ok(owned)
    }

    /// Extends a lock's lease, if `token` still owns it.
    pub fn renew_lock(&self, target_key: &str, token: &str, until_ms: i64) -> Result<bool> {
        self.conn
            .execute(
                "UPDATE busy_locks SET lease_until_ms = ?3 WHERE target_key = ?1 AND owner_token = ?2",
                params![target_key, token, until_ms],
            )
            .map(|n| n > 0)
            .map_err(|source| self.err("renew a busy lock", source))
    }

    /// Moves a lock to another key (a new session's id became known), if `token` owns it.
    pub fn rekey_lock(&self, from: &str, to: &str, token: &str) -> Result<()> {
        self.conn
            .execute(
                "UPDATE OR IGNORE busy_locks SET target_key = ?2 WHERE target_key = ?1 AND owner_token = ?3",
                params![from, to, token],
            )
            .map_err(|source| self.err("move a busy lock", source))?;
        Ok(())
    }

    /// Releases a lock, only if `token` still owns it.
    pub fn release_lock(&self, target_key: &str, token: &str) -> Result<bool> {
        self.conn
            .execute(
                "DELETE FROM busy_locks WHERE target_key = ?1 AND owner_token = ?2",
                params![target_key, token],
            )
            .map(|n| n > 0)
            .map_err(|source| self.err("release a busy lock", source))
    }

    pub fn locks(&self) -> Result<Vec<BusyLock>> {
        self.rows(
            "list busy locks",
            "SELECT target_key, owner_pid, delivery_id, acquired_at, lease_until_ms
             FROM busy_locks ORDER BY acquired_at",
            [],
            |row| {
                Ok(BusyLock {
                    target_key: row.get(0)?,
                    owner_pid: row.get(1)?,
                    delivery_id: row.get(2)?,
                    acquired_at: row.get(3)?,
                    lease_until_ms: row.get(4)?,
                })
            },
        )
    }

    /// Closes deliveries an earlier daemon handed over but never finished (it crashed or was
    /// killed): `failed` and orphaned, never re-sent. Returns them. See
    /// [`HubDb::orphan_stale`]; this one judges leases against the clock now.
    pub fn orphan_unfinished(&self, generation: u64, now: &str) -> Result<Vec<DeliveryRecord>> {
        let now_ms = UnixMillis::now().0;
        self.orphan_stale(generation, now_ms, now)
    }

    /// Closes in-flight deliveries nobody carries any more: their lease (`expires_at`, renewed
    /// by the worker with its busy lock) ran out, or the daemon that took them is gone — the
    /// lease alone decides even when that pid is alive again, since a pid may be reused. A
    /// delivery another live daemon still carries (a restart's old daemon draining) is left
    /// alone, and so is one forwarded to another machine (its outcome is that machine's record's
    /// to say, taken when the link is up). Records from before leases existed fall back to "another generation took it".
    /// Each is `failed` and `is_orphaned`, never re-sent.
    pub fn orphan_stale(
        &self,
        generation: u64,
        now_ms: i64,
        now: &str,
    ) -> Result<Vec<DeliveryRecord>> {
        let rows: Vec<(String, Option<u32>, Option<i64>)> = self.rows(
            "list in-flight deliveries",
            "SELECT record, carrier_pid, lease_until_ms FROM deliveries
             WHERE state IN ('delivering', 'awaiting-peer')
               AND json_extract(record, '$.host') IS NULL",
            [],
            columns,
        )?;
        let mut orphaned = Vec::new();
        for (json, carrier_pid, lease) in rows {
            let mut record: DeliveryRecord = from_json(&json)?;
            let why = match (carrier_pid, lease) {
                (Some(pid), Some(lease)) => {
                    if lease <= now_ms {
                        format!("its lease ran out at {}", UnixMillis(lease).to_rfc3339())
                    } else if !cross_agent_transports::process::is_alive(pid) {
                        format!("the daemon carrying it (pid {pid}) is gone")
                    } else {
                        continue;
                    }
                }
                (None, _) | (_, None) => {
                    // Taken by a build without leases (an upgrade's old daemon may still be
                    // draining it): its carrier's run, if still open and alive, carries it.
                    if record.carrier_generation == Some(generation)
                        || self.run_alive(record.carrier_generation)?
                    {
                        continue;
                    }
                    "the daemon carrying it stopped without closing it".to_owned()
                }
            };
            record.state = DeliveryState::Failed;
            record.is_orphaned = true;
            // The TTL runs from the expiry.
            record.finished_at = Some(
                lease
                    .filter(|l| *l <= now_ms)
                    .map_or_else(|| now.to_owned(), |at| UnixMillis(at).to_rfc3339()),
            );
            record.error = Some(format!(
                "orphaned: {why} (generation {}); it is never re-sent — bridge_status(delivery_id) \
                 reads any answer from the peer's transcript",
                record
                    .carrier_generation
                    .map_or_else(|| "unknown".to_owned(), |g| g.to_string())
            ));
            self.update_delivery(&record)?;
            orphaned.push(record);
        }
        Ok(orphaned)
    }

    /// Whether the daemon run of `generation` never recorded its stop and its pid is alive.
    fn run_alive(&self, generation: Option<u64>) -> Result<bool> {
        let Some(generation) = generation.and_then(|g| i64::try_from(g).ok()) else {
            return Ok(false);
        };
        let pid: Option<u32> = self
            .conn
            .query_row(
                "SELECT pid FROM daemon_runs WHERE generation = ?1 AND stopped_at IS NULL",
                params![generation],
                |row| row.get(0),
            )
            .optional()
            .map_err(|source| self.err("read a daemon run", source))?;
        Ok(pid.is_some_and(cross_agent_transports::process::is_alive))
    }

    /// Deletes finished deliveries whose TTL (`CROSS_AGENT_DELIVERY_TTL`) ran out: finished
    /// (or, for an orphan, expired) before `before_ms`. Unfinished ones are never pruned: their
    /// answer may still come.
    pub fn prune_finished(&self, before_ms: i64) -> Result<usize> {
        self.conn
            .execute(
                "DELETE FROM deliveries WHERE state IN ('delivered', 'failed')
                 AND COALESCE(finished_ms, created_ms) < ?1",
                params![before_ms],
            )
            .map_err(|source| self.err("prune old deliveries", source))
    }
}

#[cfg(test)]
mod tests {
    use cross_agent_protocol::bridge::DeliveryRecord;

    use super::*;

    #[test]
    fn a_record_that_does_not_read_back_keeps_the_json_error_as_its_source() {
        let err = from_json::<DeliveryRecord>("{\"delivery_id\": 7}").unwrap_err();
        let source = std::error::Error::source(&err).expect("the JSON error as its source");
        assert!(source.is::<serde_json::Error>(), "{source}");
    }
}
