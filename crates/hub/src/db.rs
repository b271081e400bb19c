//! `hub.db`: the daemon's SQLite store (WAL), and its schema history.
//!
//! The schema is a list of migrations applied in order and recorded in `schema_migrations`.
//! The list is append-only: never edit or reorder a migration once it has shipped — add a new
//! one. A test pins each shipped migration's text so an edit fails the build's tests instead of
//! silently diverging from the stores already on users' disks. A store whose recorded version
//! is higher than this build knows was written by a newer cross-agent and is refused rather
//! than guessed at.
//!
//! Migration 1 holds the daemon's own run history (`daemon_runs`), which gives each daemon start
//! its *generation*. Migration 2 adds the messaging state: deliveries, pending
//! payloads, pins, conversations and busy locks (read and written in [`crate::records`]).
//! Migration 3 adds delivery leases, finish times and late-answer watches. Migration 4
//! remembers damaged stores moved aside at start (see [`crate::integrity`]) and the deliveries
//! that could still be read from them, and each start's integrity check. Migration 5 keeps a
//! Copilot sender's return route; migration 6 the cross review's corrections sent.
//!
//! Payloads at rest: every connection deletes with `secure_delete` on (a deleted row's bytes are
//! overwritten with zeros, in its page and in freed pages), and [`HubDb::scrub_wal_when_due`]
//! checkpoints and truncates the write-ahead log within [`SCRUB_AFTER`] of a payload's deletion
//! (and when the connection closes), so the message and the child's environment of a delivery
//! handed over survive, after that second, in neither `hub.db` nor `hub.db-wal`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cross_agent_protocol::timestamp::now_rfc3339;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::error::{Error, Result};

/// One step of the schema.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Position in the history, from 1, without gaps.
    pub version: i64,
    /// A short name, recorded with it.
    pub name: &'static str,
    /// The SQL, run in one transaction.
    pub sql: &'static str,
}

/// The schema history. Append only.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "daemon_runs",
        sql: "CREATE TABLE daemon_runs (
    generation INTEGER PRIMARY KEY AUTOINCREMENT,
    pid        INTEGER NOT NULL,
    version    TEXT    NOT NULL,
    started_at TEXT    NOT NULL,
    stopped_at TEXT
);",
    },
    Migration {
        version: 2,
        name: "messaging",
        sql: MESSAGING_SQL,
    },
    Migration {
        version: 3,
        name: "answers",
        sql: ANSWERS_SQL,
    },
    Migration {
        version: 4,
        name: "quarantine",
        sql: QUARANTINE_SQL,
    },
    Migration {
        version: 5,
        name: "copilot_returns",
        sql: COPILOT_RETURNS_SQL,
    },
    Migration {
        version: 6,
        name: "review_corrections",
        sql: REVIEW_CORRECTIONS_SQL,
    },
];

/// Migration 6: the cross review's corrections sent into sessions (read in
/// [`crate::records`]' `corrections`), so the escalation guard's day limit, cool-down and
/// same-correction rule survive a restart. The correction's text is never kept: only the
/// SHA-256 of its normalized text.
const REVIEW_CORRECTIONS_SQL: &str = "CREATE TABLE review_corrections (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    target_key      TEXT    NOT NULL,
    sent_ms         INTEGER NOT NULL,
    correction_hash TEXT    NOT NULL,
    review_id       TEXT    NOT NULL,
    delivery_id     TEXT    NOT NULL,
    requested_by    TEXT    NOT NULL
);
CREATE INDEX review_corrections_by_target ON review_corrections (target_key, sent_ms);";

/// Migration 5: a Copilot sender's verified return route (`CopilotReturn` as JSON: session URI,
/// editor, SDK session, owner and MCP pids — never a token), kept with its request for as
/// long as the request's record lives, so a late answer found after the request's payload is
/// gone can still go back into the sender's chat (its route checked again first).
const COPILOT_RETURNS_SQL: &str = "CREATE TABLE copilot_returns (
    delivery_id TEXT PRIMARY KEY REFERENCES deliveries (delivery_id) ON DELETE CASCADE,
    route       TEXT NOT NULL
);";

/// Migration 4: damaged stores moved aside at start (`file` is where the damaged
/// `hub.db` went), the delivery ids (and states, where readable) that could still be read from
/// each — a status asked about one says where its record went instead of "no such delivery" —
/// and what each daemon start's integrity check found.
const QUARANTINE_SQL: &str = "CREATE TABLE quarantined_stores (
    file           TEXT    PRIMARY KEY,
    quarantined_at TEXT    NOT NULL,
    reason         TEXT    NOT NULL,
    deliveries     INTEGER NOT NULL
);
CREATE TABLE quarantined_deliveries (
    delivery_id TEXT PRIMARY KEY,
    file        TEXT NOT NULL REFERENCES quarantined_stores (file) ON DELETE CASCADE,
    state       TEXT
);
ALTER TABLE daemon_runs ADD COLUMN store_check TEXT;
ALTER TABLE daemon_runs ADD COLUMN store_check_ms INTEGER;";

/// Migration 3: the lease of an in-flight delivery (renewed with its busy lock; past
/// it the record is orphaned even if its pid lives on), when a record finished (the TTL runs
/// from there), and the late-answer watches, which outlive the daemon that started them: each
/// has an owner lease, so a daemon that stops (or drains for a restart) leaves them to the next.
const ANSWERS_SQL: &str = "ALTER TABLE deliveries ADD COLUMN carrier_pid INTEGER;
ALTER TABLE deliveries ADD COLUMN lease_until_ms INTEGER;
ALTER TABLE deliveries ADD COLUMN finished_ms INTEGER;
CREATE TABLE late_answer_watches (
    delivery_id    TEXT    PRIMARY KEY REFERENCES deliveries (delivery_id) ON DELETE CASCADE,
    since_ms       INTEGER NOT NULL,
    until_ms       INTEGER NOT NULL,
    owner_pid      INTEGER,
    lease_until_ms INTEGER NOT NULL DEFAULT 0
);";

/// Migration 2: deliveries and their hand-over payloads, pins, conversations (hop counts) and
/// per-session busy locks. A delivery's `record` is its `DeliveryRecord` as JSON —
/// never the message or the child's environment. The message waits in `pending_payloads` only
/// until its turn starts, so a queued delivery survives a restart; the row is deleted in the
/// same transaction that hands the delivery over.
const MESSAGING_SQL: &str = "CREATE TABLE deliveries (
    delivery_id  TEXT    PRIMARY KEY,
    state        TEXT    NOT NULL,
    target_agent TEXT    NOT NULL,
    target_key   TEXT    NOT NULL,
    created_ms   INTEGER NOT NULL,
    record       TEXT    NOT NULL
);
CREATE INDEX deliveries_by_state ON deliveries (state, created_ms);
CREATE INDEX deliveries_by_target ON deliveries (target_key, state);
CREATE TABLE pending_payloads (
    delivery_id TEXT PRIMARY KEY REFERENCES deliveries (delivery_id) ON DELETE CASCADE,
    job         TEXT NOT NULL
);
CREATE TABLE pins (
    agent      TEXT    NOT NULL,
    cwd_key    TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    title      TEXT,
    cwd        TEXT,
    sticky     INTEGER NOT NULL,
    pinned_at  TEXT    NOT NULL,
    pinned_ms  INTEGER NOT NULL,
    PRIMARY KEY (agent, cwd_key)
);
CREATE TABLE conversations (
    conversation_id TEXT    PRIMARY KEY,
    hops            INTEGER NOT NULL,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL
);
CREATE TABLE busy_locks (
    target_key     TEXT    PRIMARY KEY,
    owner_token    TEXT    NOT NULL,
    owner_pid      INTEGER NOT NULL,
    delivery_id    TEXT,
    acquired_at    TEXT    NOT NULL,
    lease_until_ms INTEGER NOT NULL
);";

/// How long a writer waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a deleted payload may wait in the write-ahead log before the log is truncated.
pub const SCRUB_AFTER: Duration = Duration::from_secs(1);

/// A daemon start that never recorded its stop (it crashed or was killed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncleanRun {
    /// Its generation.
    pub generation: u64,
    /// Its pid.
    pub pid: u32,
    /// When it started.
    pub started_at: String,
}

/// An open `hub.db`, migrated to the current schema.
#[derive(Debug)]
pub struct HubDb {
    pub(crate) conn: Connection,
    path: PathBuf,
    /// When a payload was first deleted since the write-ahead log was last truncated: its bytes
    /// are still in the log's frames until [`HubDb::scrub_wal_when_due`] truncates it.
    unscrubbed_since: Option<Instant>,
}

impl HubDb {
    /// Opens (creating if needed) the store at `path` in WAL mode and applies pending migrations.
    pub fn open(path: &Path) -> Result<HubDb> {
        let db_err = |action: &'static str| {
            let path = path.to_owned();
            move |source| Error::Db {
                path,
                action,
                source,
            }
        };
        // Never through a link: the store must be the file in our own home (docs/spec/cross-agent-mcp.md §7).
        let flags = OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags).map_err(db_err("open it"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(db_err("set its busy timeout"))?;
        // WAL lets readers (a future `cross-agent status` reading directly, backups) run beside
        // the daemon's writes; NORMAL sync is durable across a process crash, which is the
        // failure that matters here.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err("switch it to WAL"))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err("set synchronous"))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(db_err("enable foreign keys"))?;
        // A delivered payload's bytes must not stay behind in a freed page.
        conn.pragma_update(None, "secure_delete", "ON")
            .map_err(db_err("turn on secure delete"))?;
        let mut db = HubDb {
            conn,
            path: path.to_owned(),
            unscrubbed_since: None,
        };
        db.migrate()?;
        // A process that died within a second of a hand-over left that payload's frames in the
        // write-ahead log: they go before anything else is done with the store.
        db.scrub_wal();
        Ok(db)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version recorded in the store.
    pub fn schema_version(&self) -> Result<i64> {
        self.conn
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                [],
                |row| row.get(0),
            )
            .map_err(|source| self.err("read its schema version", source))
    }

    /// Notes that a payload was deleted: its bytes stay in the write-ahead log's frames until the
    /// log is truncated, at most [`SCRUB_AFTER`] later.
    pub(crate) fn payload_deleted(&mut self) {
        self.unscrubbed_since.get_or_insert_with(Instant::now);
    }

    /// Truncates the write-ahead log once a deleted payload has waited [`SCRUB_AFTER`] in it (the
    /// dispatcher asks on each of its turns, at least once a second). Truncating after every
    /// hand-over cost ~8 ms a send on a busy disk (`cargo bench -p cross-agent-daemon --bench
    /// bridge`: 10.7 ms per send end to end against 2.0 ms); once a second, a burst pays it once.
    pub fn scrub_wal_when_due(&mut self) {
        if self
            .unscrubbed_since
            .is_some_and(|since| since.elapsed() >= SCRUB_AFTER)
            && self.scrub_wal()
        {
            self.unscrubbed_since = None;
        }
    }

    /// Checkpoints the write-ahead log into `hub.db` and truncates it to nothing, so the frames
    /// that held a deleted payload (the log is otherwise reused from its start, never shortened)
    /// are gone from the disk's files. False when another connection held the checkpoint up (it
    /// is tried again on the next call); the payload's row is zeroed either way.
    pub fn scrub_wal(&self) -> bool {
        let done = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                row.get::<_, i64>(0)
            });
        match done {
            Ok(0) => true,
            Ok(_) => {
                tracing::debug!(
                    db = %self.path.display(),
                    "the write-ahead log is in use; it is truncated on the next try"
                );
                false
            }
            Err(error) => {
                tracing::warn!(
                    db = %self.path.display(),
                    %error,
                    "could not truncate the write-ahead log after a hand-over"
                );
                false
            }
        }
    }

    pub(crate) fn err(&self, action: &'static str, source: rusqlite::Error) -> Error {
        Error::Db {
            path: self.path.clone(),
            action,
            source,
        }
    }

    /// Every row `sql` selects, each mapped by `map` (often [`columns`]); an error names `action`.
    pub(crate) fn rows<T>(
        &self,
        action: &'static str,
        sql: &str,
        params: impl rusqlite::Params,
        map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        select(
            &self.conn,
            &|source| self.err(action, source),
            sql,
            params,
            map,
        )
    }

    /// Opens a transaction; the second value turns a SQLite error inside it into one naming
    /// `action` and this store.
    pub(crate) fn begin(
        &mut self,
        action: &'static str,
    ) -> Result<(
        rusqlite::Transaction<'_>,
        impl Fn(rusqlite::Error) -> Error + use<>,
    )> {
        let path = self.path.clone();
        let fail = move |source| Error::Db {
            path: path.clone(),
            action,
            source,
        };
        let tx = self.conn.transaction().map_err(&fail)?;
        Ok((tx, fail))
    }

    fn migrate(&mut self) -> Result<()> {
        self.conn
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS schema_migrations (
                    version    INTEGER PRIMARY KEY,
                    name       TEXT    NOT NULL,
                    applied_at TEXT    NOT NULL
                );",
            )
            .map_err(|source| self.err("create schema_migrations", source))?;
        let current = self.schema_version()?;
        let known = MIGRATIONS.last().map_or(0, |m| m.version);
        if current > known {
            return Err(Error::SchemaTooNew {
                path: self.path.clone(),
                found: current,
                known,
            });
        }
        for migration in MIGRATIONS.iter().filter(|m| m.version > current) {
            let path = self.path.clone();
            let fail = |source| Error::Migration {
                path: path.clone(),
                version: migration.version,
                name: migration.name,
                source,
            };
            let tx = self.conn.transaction().map_err(fail)?;
            tx.execute_batch(migration.sql).map_err(fail)?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
                params![migration.version, migration.name, now_rfc3339()],
            )
            .map_err(fail)?;
            tx.commit().map_err(fail)?;
            tracing::info!(
                db = %self.path.display(),
                version = migration.version,
                name = migration.name,
                "applied a store migration"
            );
        }
        Ok(())
    }

    /// Records a daemon start and returns its generation: one more than any before it on this
    /// store (AUTOINCREMENT never reuses a number, even if old rows are pruned).
    pub fn begin_run(&mut self, pid: u32, version: &str, started_at: &str) -> Result<u64> {
        self.conn
            .execute(
                "INSERT INTO daemon_runs (pid, version, started_at) VALUES (?1, ?2, ?3)",
                params![pid, version, started_at],
            )
            .map_err(|source| self.err("record the daemon's start", source))?;
        let generation = self.conn.last_insert_rowid();
        Ok(u64::try_from(generation).unwrap_or(0))
    }

    /// Earlier runs that never recorded a stop: they crashed or were killed.
    pub fn unclean_runs_before(&self, generation: u64) -> Result<Vec<UncleanRun>> {
        let generation = i64::try_from(generation).unwrap_or(i64::MAX);
        self.rows(
            "read earlier daemon runs",
            "SELECT generation, pid, started_at FROM daemon_runs
             WHERE stopped_at IS NULL AND generation < ?1 ORDER BY generation",
            params![generation],
            |row| {
                Ok(UncleanRun {
                    generation: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                    pid: row.get(1)?,
                    started_at: row.get(2)?,
                })
            },
        )
    }

    /// Records a daemon's clean stop.
    pub fn end_run(&mut self, generation: u64, stopped_at: &str) -> Result<()> {
        let generation = i64::try_from(generation).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "UPDATE daemon_runs SET stopped_at = ?1 WHERE generation = ?2",
                params![stopped_at, generation],
            )
            .map_err(|source| self.err("record the daemon's stop", source))?;
        Ok(())
    }

    /// The stop time recorded for a generation, if any (tests and diagnostics).
    pub fn stopped_at(&self, generation: u64) -> Result<Option<String>> {
        let generation = i64::try_from(generation).unwrap_or(i64::MAX);
        self.conn
            .query_row(
                "SELECT stopped_at FROM daemon_runs WHERE generation = ?1",
                params![generation],
                |row| row.get::<_, Option<String>>(0),
            )
            .optional()
            .map(Option::flatten)
            .map_err(|source| self.err("read a daemon run", source))
    }
}

/// Every row `sql` selects on `on` (the store's connection or an open transaction on it), each
/// mapped by `map`; `fail` words an error. The prepare / query / collect steps every listing
/// shares.
pub(crate) fn select<T>(
    on: &Connection,
    fail: &dyn Fn(rusqlite::Error) -> Error,
    sql: &str,
    params: impl rusqlite::Params,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut statement = on.prepare_cached(sql).map_err(fail)?;
    let rows = statement.query_map(params, map).map_err(fail)?;
    rows.collect::<rusqlite::Result<Vec<T>>>().map_err(fail)
}

/// A row read as a tuple of its columns, in select order: `db.select(…, columns)`.
pub(crate) fn columns<T: Columns>(row: &rusqlite::Row<'_>) -> rusqlite::Result<T> {
    T::read(row)
}

/// Tuples whose fields are read from a row's columns in order.
pub(crate) trait Columns: Sized {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self>;
}

macro_rules! columns_for_tuple {
    ($($field:ident $index:tt),+) => {
        impl<$($field: rusqlite::types::FromSql),+> Columns for ($($field,)+) {
            fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
                Ok(($(row.get($index)?,)+))
            }
        }
    };
}

columns_for_tuple!(A 0);
columns_for_tuple!(A 0, B 1);
columns_for_tuple!(A 0, B 1, C 2);
columns_for_tuple!(A 0, B 1, C 2, D 3);
columns_for_tuple!(A 0, B 1, C 2, D 3, E 4);
columns_for_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);

impl Drop for HubDb {
    /// A payload deleted since the last truncation does not outlive the connection in the log.
    fn drop(&mut self) {
        if self.unscrubbed_since.is_some() {
            self.scrub_wal();
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    /// FNV-1a, enough to notice an edited migration.
    fn fingerprint(text: &str) -> u64 {
        text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    #[test]
    fn shipped_migrations_are_never_edited() {
        // Append a line here when you append a migration; never change an existing one.
        let shipped: &[(i64, &str, u64)] = &[
            (1, "daemon_runs", 0xd122_fae6_3b7c_2239),
            (2, "messaging", 0x302d_f266_e9ae_a66a),
            (3, "answers", 0xfbef_bf82_1ec5_669a),
            (4, "quarantine", 0x7f6c_2cb1_87c1_fb76),
            (5, "copilot_returns", 0xd37f_955a_2729_0446),
            (6, "review_corrections", 0x45ec_209a_339b_8a04),
        ];
        let actual: Vec<(i64, &str, u64)> = MIGRATIONS
            .iter()
            .map(|m| (m.version, m.name, fingerprint(m.sql)))
            .collect();
        assert_eq!(actual, shipped.to_vec());
    }

    #[test]
    fn versions_run_from_one_without_gaps() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1);
        }
    }

    #[test]
    fn open_migrates_once_and_uses_wal() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        let db = HubDb::open(&path).unwrap();
        assert_eq!(db.schema_version().unwrap(), 6);
        let mode: String = db
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        drop(db);
        let db = HubDb::open(&path).unwrap();
        let applied: i64 = db
            .conn
            .query_row("SELECT COUNT(*) FROM schema_migrations", [], |r| r.get(0))
            .unwrap();
        assert_eq!(applied, 6);
    }

    #[test]
    fn generations_increase_and_unclean_runs_are_found() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        let mut db = HubDb::open(&path).unwrap();
        let first = db.begin_run(10, "0.1.0", "2026-01-01T00:00:00Z").unwrap();
        db.end_run(first, "2026-01-01T01:00:00Z").unwrap();
        let second = db.begin_run(11, "0.1.0", "2026-01-01T02:00:00Z").unwrap();
        drop(db);
        let mut db = HubDb::open(&path).unwrap();
        let third = db.begin_run(12, "0.1.0", "2026-01-01T03:00:00Z").unwrap();
        assert_eq!((first, second, third), (1, 2, 3));
        assert_eq!(
            db.unclean_runs_before(third).unwrap(),
            vec![UncleanRun {
                generation: 2,
                pid: 11,
                started_at: "2026-01-01T02:00:00Z".into()
            }]
        );
        assert_eq!(
            db.stopped_at(first).unwrap().as_deref(),
            Some("2026-01-01T01:00:00Z")
        );
    }

    #[test]
    fn a_store_from_a_newer_build_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        let db = HubDb::open(&path).unwrap();
        db.conn
            .execute(
                "INSERT INTO schema_migrations VALUES (99, 'future', 'x')",
                [],
            )
            .unwrap();
        drop(db);
        match HubDb::open(&path) {
            Err(Error::SchemaTooNew { found, known, .. }) => assert_eq!((found, known), (99, 6)),
            other => panic!("expected SchemaTooNew, got {other:?}"),
        }
    }
}
