//! `hub.db`'s health at daemon start: a damaged store is moved aside, never repaired in place.
//!
//! Before the store is opened, `PRAGMA quick_check` reads every page of it (on a read-only
//! connection, so a damaged file is not written to). A store that fails it — or is not a
//! database at all, or was cut short — is moved aside with its `-wal` and `-shm` to
//! `hub.db.damaged-<UTC time>` (the log keeps its name, `…-wal`, so SQLite still finds it there)
//! and a fresh store is created in its place. The delivery ids that can still be read from the
//! damaged file are kept in the fresh one, so a status asked about one of them says where its
//! record went; none of its deliveries is ever re-sent, a queued one included — its outcome is
//! unknown. What is not damage (a file the daemon may not read, a full disk, a store from a
//! newer build) still refuses the start, since moving a healthy store aside would lose it.
//!
//! The check costs one read of the file: about 0.1 s for 100 MB on a warm cache
//! (`cargo bench -p cross-agent-daemon --bench startup`); a store of ordinary size takes
//! milliseconds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cross_agent_decisions::{DecisionLog, events};
pub use cross_agent_protocol::bridge::{QuarantinedStore, StoreHealth};
use cross_agent_protocol::timestamp::now_rfc3339;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};

use crate::db::HubDb;
use crate::error::{Error, Result};

/// The most delivery ids read back from a damaged store.
const SALVAGE_LIMIT: usize = 100_000;

/// The longest delivery id kept from a damaged store: anything longer is garbage read as text.
const MAX_ID_CHARS: usize = 128;

/// How many of `quick_check`'s complaints go into the reason.
const REASONS_KEPT: usize = 3;

/// What to do with a damaged store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDamage {
    /// Move it aside and start a fresh one (an ordinary start: nothing else has it open).
    Quarantine,
    /// Refuse: another daemon still serves from it (a handover's successor).
    Refuse,
}

/// What the check at start found.
#[derive(Debug, Clone)]
pub enum StoreCheck {
    /// There was no store: a fresh one was created.
    New,
    /// `quick_check` said ok.
    Healthy {
        /// How long the check took.
        took: Duration,
    },
    /// The store was damaged and moved aside.
    Quarantined(Quarantine),
    /// Not checked (the start-up bench's comparison).
    Unchecked,
}

impl StoreCheck {
    /// `new`, `ok` or `quarantined`, as recorded with the daemon's run.
    pub fn label(&self) -> &'static str {
        match self {
            StoreCheck::New => "new",
            StoreCheck::Healthy { .. } => "ok",
            StoreCheck::Quarantined(_) => "quarantined",
            StoreCheck::Unchecked => "unchecked",
        }
    }

    /// How long the check took.
    pub fn took(&self) -> Duration {
        match self {
            StoreCheck::New | StoreCheck::Unchecked => Duration::ZERO,
            StoreCheck::Healthy { took } => *took,
            StoreCheck::Quarantined(quarantine) => quarantine.took,
        }
    }

    /// The sentence a person is told when the store was moved aside.
    pub fn notice(&self) -> Option<String> {
        match self {
            StoreCheck::Quarantined(quarantine) => Some(quarantine.sentence()),
            StoreCheck::New | StoreCheck::Healthy { .. } | StoreCheck::Unchecked => None,
        }
    }
}

/// A damaged store moved aside.
#[derive(Debug, Clone)]
pub struct Quarantine {
    /// Where the store was (`hub.db`).
    pub store: PathBuf,
    /// Where it went: `hub.db.damaged-<time>`.
    pub file: PathBuf,
    /// Every file moved (the store, and its `-wal` and `-shm` when there were any).
    pub moved: Vec<PathBuf>,
    /// When, RFC 3339 UTC.
    pub at: String,
    /// What SQLite found.
    pub reason: String,
    /// The deliveries whose ids could still be read from it.
    pub deliveries: Vec<SalvagedDelivery>,
    /// The stores moved aside before, as it remembered them (kept on in the fresh store).
    pub earlier: Vec<QuarantinedStore>,
    /// How long the check took.
    pub took: Duration,
}

impl Quarantine {
    /// One sentence for stderr and the daemon's log.
    pub fn sentence(&self) -> String {
        format!(
            "the cross-agent store {} failed its integrity check ({}); it was moved aside to {} \
             and a fresh store was created. {} delivery id(s) could still be read from it: their \
             outcome is unknown and none is re-sent. Keep the file to look into it, or delete it",
            self.store.display(),
            self.reason,
            self.file.display(),
            self.deliveries.len()
        )
    }
}

/// A delivery id read back from a damaged store, with its state when that was readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalvagedDelivery {
    pub delivery_id: String,
    pub state: Option<String>,
}

/// Checks the store at `path` and opens it; a damaged one is handled as `on_damage` says. When
/// it is moved aside, the move is logged, written to the decisions log in `decisions_dir`, and
/// remembered in the fresh store (with the ids read back from the old one).
pub fn open_checked(
    path: &Path,
    decisions_dir: &Path,
    on_damage: OnDamage,
) -> Result<(HubDb, StoreCheck)> {
    let mut check = check(path, on_damage)?;
    let db = match HubDb::open(path) {
        Ok(db) => db,
        // quick_check does not read everything opening does (the schema's SQL, say).
        Err(error) if !matches!(check, StoreCheck::Quarantined(_)) => {
            let Some(why) = damage_in(&error) else {
                return Err(error);
            };
            if on_damage == OnDamage::Refuse {
                return Err(Error::Damaged {
                    path: path.to_owned(),
                    why,
                });
            }
            check = StoreCheck::Quarantined(quarantine(path, why, check.took())?);
            HubDb::open(path)?
        }
        Err(error) => return Err(error),
    };
    if let StoreCheck::Quarantined(quarantine) = &check {
        tracing::warn!(
            store = %path.display(),
            moved_to = %quarantine.file.display(),
            deliveries_known = quarantine.deliveries.len(),
            "{}",
            quarantine.sentence()
        );
        DecisionLog::new(decisions_dir).record(events::store_quarantined(
            &quarantine.file,
            &quarantine.reason,
            quarantine.deliveries.len(),
            millis(quarantine.took),
        ));
        db.remember_quarantine(quarantine)?;
    }
    Ok((db, check))
}

/// Runs the integrity check on the store at `path` and, when it is damaged and `on_damage`
/// allows, moves it aside. Does not open a fresh store.
pub fn check(path: &Path, on_damage: OnDamage) -> Result<StoreCheck> {
    let present = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if !present(path) {
        if present(&sidecar(path, "-wal")) && on_damage == OnDamage::Quarantine {
            // A log without its store (a move aside cut short): a fresh store must not replay
            // it, so it goes aside too.
            let why = "a write-ahead log was left without its store".to_owned();
            return quarantine(path, why, Duration::ZERO).map(StoreCheck::Quarantined);
        }
        return Ok(StoreCheck::New);
    }
    let began = Instant::now();
    let verdict = quick_check(path);
    let took = began.elapsed();
    let why = match verdict {
        Ok(None) => return Ok(StoreCheck::Healthy { took }),
        Ok(Some(why)) => why,
        Err(source) => match damage(&source) {
            Some(why) => why,
            None => {
                return Err(Error::Db {
                    path: path.to_owned(),
                    action: "check its integrity",
                    source,
                });
            }
        },
    };
    match on_damage {
        OnDamage::Quarantine => quarantine(path, why, took).map(StoreCheck::Quarantined),
        OnDamage::Refuse => Err(Error::Damaged {
            path: path.to_owned(),
            why,
        }),
    }
}

/// `quick_check`'s complaints, `None` when it found nothing.
fn quick_check(path: &Path) -> rusqlite::Result<Option<String>> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )?;
    let mut statement = conn.prepare("PRAGMA quick_check")?;
    let found = statement
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    if found.len() == 1 && found[0] == "ok" {
        return Ok(None);
    }
    let mut why: Vec<String> = found.iter().take(REASONS_KEPT).cloned().collect();
    if found.len() > REASONS_KEPT {
        why.push(format!("and {} more", found.len() - REASONS_KEPT));
    }
    Ok(Some(format!("quick_check: {}", why.join("; "))))
}

/// SQLite's words when `error` says the file is damaged or not a database; `None` for any
/// other failure (permissions, a full disk, a busy store), which is not the file's fault.
fn damage(error: &rusqlite::Error) -> Option<String> {
    match error {
        rusqlite::Error::SqliteFailure(failure, message)
            if matches!(
                failure.code,
                ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase
            ) =>
        {
            Some(message.clone().unwrap_or_else(|| failure.to_string()))
        }
        _ => None,
    }
}

/// [`damage`] for an error of opening the store.
fn damage_in(error: &Error) -> Option<String> {
    match error {
        Error::Db { source, .. } | Error::Migration { source, .. } => damage(source),
        _ => None,
    }
}

/// `hub.db-wal`, `hub.db-shm`.
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Moves the store, its log and its shared-memory file aside to a name no earlier quarantine
/// used, then reads back what it can of the store's delivery ids.
fn quarantine(path: &Path, why: String, took: Duration) -> Result<Quarantine> {
    let now = time::OffsetDateTime::now_utc();
    let stamp = now
        .format(time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .unwrap_or_else(|_| now.unix_timestamp().to_string());
    let base = format!("{}.damaged-{stamp}", path.display());
    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    let mut file = PathBuf::from(&base);
    let mut n = 1;
    while exists(&file) || exists(&sidecar(&file, "-wal")) || exists(&sidecar(&file, "-shm")) {
        n += 1;
        file = PathBuf::from(format!("{base}-{n}"));
    }
    let mut moved = Vec::new();
    // The log first: a fresh store must never find the damaged one's log beside it and replay
    // it, even if this is cut short.
    for suffix in ["-wal", "-shm", ""] {
        let from = sidecar(path, suffix);
        if !exists(&from) {
            continue;
        }
        let to = sidecar(&file, suffix);
        std::fs::rename(&from, &to).map_err(|source| Error::Quarantine {
            path: from.clone(),
            to: to.clone(),
            why: why.clone(),
            source,
        })?;
        moved.push(to);
    }
    let (deliveries, earlier) = if exists(&file) {
        salvage(&file)
    } else {
        Default::default()
    };
    Ok(Quarantine {
        store: path.to_owned(),
        file,
        moved,
        at: now_rfc3339(),
        reason: why,
        deliveries,
        earlier,
        took,
    })
}

/// The delivery ids (and states) that can still be read from a damaged store — the table read
/// from both ends and its primary-key index from both ends, each until the first damaged page —
/// and the stores it remembered moving aside before.
fn salvage(file: &Path) -> (Vec<SalvagedDelivery>, Vec<QuarantinedStore>) {
    let Ok(conn) = Connection::open_with_flags(
        file,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    ) else {
        return Default::default();
    };
    let earlier = conn
        .prepare("SELECT file, quarantined_at, reason, deliveries FROM quarantined_stores")
        .and_then(|mut statement| {
            statement
                .query_map([], quarantined_store)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap_or_default();
    let mut found: BTreeMap<String, Option<String>> = BTreeMap::new();
    for sql in [
        "SELECT delivery_id, state FROM deliveries ORDER BY rowid",
        "SELECT delivery_id, state FROM deliveries ORDER BY rowid DESC",
        "SELECT delivery_id, NULL FROM deliveries INDEXED BY sqlite_autoindex_deliveries_1
         ORDER BY delivery_id",
        "SELECT delivery_id, NULL FROM deliveries INDEXED BY sqlite_autoindex_deliveries_1
         ORDER BY delivery_id DESC",
    ] {
        let Ok(mut statement) = conn.prepare(sql) else {
            continue;
        };
        let Ok(mut rows) = statement.query([]) else {
            continue;
        };
        while found.len() < SALVAGE_LIMIT {
            let row = match rows.next() {
                Ok(Some(row)) => row,
                // The end, or the first damaged page this way.
                Ok(None) | Err(_) => break,
            };
            let (Ok(id), Ok(state)) = (row.get::<_, String>(0), row.get::<_, Option<String>>(1))
            else {
                continue;
            };
            if id.is_empty() || id.chars().count() > MAX_ID_CHARS {
                continue;
            }
            let known = found.entry(id).or_default();
            if known.is_none() {
                *known = state;
            }
        }
    }
    let deliveries = found
        .into_iter()
        .map(|(delivery_id, state)| SalvagedDelivery { delivery_id, state })
        .collect();
    (deliveries, earlier)
}

/// A `quarantined_stores` row (`file, quarantined_at, reason, deliveries`).
fn quarantined_store(row: &rusqlite::Row<'_>) -> rusqlite::Result<QuarantinedStore> {
    Ok(QuarantinedStore {
        file: row.get(0)?,
        at: row.get(1)?,
        reason: row.get(2)?,
        deliveries: row
            .get::<_, Option<i64>>(3)?
            .and_then(|n| u64::try_from(n).ok()),
    })
}

/// The `hub.db.damaged-…` stores beside `store` (not their `-wal` and `-shm`), in no order.
/// `cross-agent check` lists them this way when no daemon answers.
pub fn damaged_files_beside(store: &Path) -> Vec<String> {
    let (Some(dir), Some(name)) = (store.parent(), store.file_name()) else {
        return Vec::new();
    };
    let prefix = format!("{}.damaged-", name.to_string_lossy());
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            (file.starts_with(&prefix) && !file.ends_with("-wal") && !file.ends_with("-shm"))
                .then(|| entry.path().to_string_lossy().into_owned())
        })
        .collect()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl HubDb {
    /// Remembers a damaged store moved aside, with the ids read back from it.
    fn remember_quarantine(&self, quarantine: &Quarantine) -> Result<()> {
        let file = quarantine.file.to_string_lossy().into_owned();
        let fail = |source| self.err("remember a damaged store moved aside", source);
        let tx = self.conn.unchecked_transaction().map_err(fail)?;
        tx.execute(
            "INSERT OR REPLACE INTO quarantined_stores (file, quarantined_at, reason, deliveries)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                file,
                quarantine.at,
                quarantine.reason,
                i64::try_from(quarantine.deliveries.len()).unwrap_or(i64::MAX)
            ],
        )
        .map_err(fail)?;
        for store in &quarantine.earlier {
            tx.execute(
                "INSERT OR IGNORE INTO quarantined_stores (file, quarantined_at, reason, deliveries)
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    store.file,
                    store.at.as_deref().unwrap_or_default(),
                    store.reason.as_deref().unwrap_or_default(),
                    store.deliveries.and_then(|n| i64::try_from(n).ok())
                ],
            )
            .map_err(fail)?;
        }
        {
            let mut insert = tx
                .prepare(
                    "INSERT OR IGNORE INTO quarantined_deliveries (delivery_id, file, state)
                     VALUES (?1, ?2, ?3)",
                )
                .map_err(fail)?;
            for delivery in &quarantine.deliveries {
                insert
                    .execute(params![delivery.delivery_id, file, delivery.state])
                    .map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)
    }

    /// Records what the integrity check found at the start of `generation`.
    pub fn record_check(&self, generation: u64, check: &StoreCheck) -> Result<()> {
        let generation = i64::try_from(generation).unwrap_or(i64::MAX);
        let took = i64::try_from(check.took().as_millis()).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "UPDATE daemon_runs SET store_check = ?2, store_check_ms = ?3
                 WHERE generation = ?1",
                params![generation, check.label(), took],
            )
            .map_err(|source| self.err("record the integrity check", source))?;
        Ok(())
    }

    /// The store's health as the start of `generation` found it, and every damaged store
    /// moved aside.
    pub fn store_health(&self, generation: u64) -> Result<StoreHealth> {
        let run: Option<(Option<String>, Option<i64>)> = self
            .conn
            .query_row(
                "SELECT store_check, store_check_ms FROM daemon_runs WHERE generation = ?1",
                params![i64::try_from(generation).unwrap_or(i64::MAX)],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(|source| self.err("read the integrity check", source))?;
        let (check, check_ms) = run.unwrap_or_default();
        Ok(StoreHealth {
            path: self.path().to_string_lossy().into_owned(),
            size_bytes: std::fs::metadata(self.path()).ok().map(|m| m.len()),
            check,
            check_ms: check_ms.and_then(|ms| u64::try_from(ms).ok()),
            quarantined: self.quarantined_stores()?,
        })
    }

    /// Damaged stores moved aside, newest first: those this store remembers, and any other
    /// `hub.db.damaged-…` file beside it.
    pub fn quarantined_stores(&self) -> Result<Vec<QuarantinedStore>> {
        let mut stores = self.rows(
            "list damaged stores moved aside",
            "SELECT file, quarantined_at, reason, deliveries FROM quarantined_stores",
            [],
            quarantined_store,
        )?;
        for file in damaged_files_beside(self.path()) {
            if !stores.iter().any(|s| s.file == file) {
                stores.push(QuarantinedStore {
                    file,
                    at: None,
                    reason: None,
                    deliveries: None,
                });
            }
        }
        // The names carry the time they were moved aside.
        stores.sort_by(|a, b| b.file.cmp(&a.file));
        Ok(stores)
    }

    /// What a status says of a delivery id this store has no record of: where its record went
    /// if it was read back from a damaged store, a hint if any store was moved aside at all.
    pub fn unknown_delivery(&self, delivery_id: &str) -> Result<String> {
        let known: Option<(String, Option<String>, String)> = self
            .conn
            .query_row(
                "SELECT d.file, d.state, s.quarantined_at FROM quarantined_deliveries d
                 JOIN quarantined_stores s USING (file) WHERE d.delivery_id = ?1",
                params![delivery_id],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .optional()
            .map_err(|source| self.err("look a delivery up among damaged stores", source))?;
        if let Some((file, state, at)) = known {
            let state = state
                .map(|s| format!(" (it was {s} then)"))
                .unwrap_or_default();
            return Ok(format!(
                "delivery {delivery_id}: its record was in a damaged database, moved aside to \
                 {file} at {at}{state}; its outcome is unknown, and it is never re-sent"
            ));
        }
        let stores = self.quarantined_stores()?;
        let Some(latest) = stores.first() else {
            return Ok(format!("no delivery has the id {delivery_id}"));
        };
        let at = latest
            .at
            .as_deref()
            .map(|at| format!(" at {at}"))
            .unwrap_or_default();
        Ok(format!(
            "no delivery has the id {delivery_id} in this database; a damaged database was moved \
             aside to {}{at} and not every record in it could be read: if {delivery_id} was sent \
             before then, its record was there — its outcome is unknown, and it is never re-sent",
            latest.file
        ))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn store_with_deliveries(path: &Path, count: usize) {
        let db = HubDb::open(path).unwrap();
        for n in 0..count {
            db.conn
                .execute(
                    "INSERT INTO deliveries (delivery_id, state, target_agent, target_key,
                     created_ms, record) VALUES (?1, 'delivered', 'claude', 'k', ?2, ?3)",
                    params![format!("dlv_{n:04}"), n as i64, "r".repeat(1500)],
                )
                .unwrap();
        }
    }

    #[test]
    fn a_healthy_store_is_left_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        assert!(matches!(
            check(&path, OnDamage::Quarantine).unwrap(),
            StoreCheck::New
        ));
        store_with_deliveries(&path, 3);
        let (db, found) = open_checked(&path, tmp.path(), OnDamage::Quarantine).unwrap();
        assert_eq!(found.label(), "ok");
        assert_eq!(db.quarantined_stores().unwrap(), vec![]);
        assert_eq!(
            db.unknown_delivery("dlv_x").unwrap(),
            "no delivery has the id dlv_x"
        );
    }

    #[test]
    fn a_damaged_store_is_moved_aside_and_what_is_readable_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        store_with_deliveries(&path, 60);
        let len = std::fs::metadata(&path).unwrap().len();
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = (len / 2) as usize;
        bytes[middle..middle + 8192].fill(0xA5);
        std::fs::write(&path, bytes).unwrap();

        let (db, found) = open_checked(&path, tmp.path(), OnDamage::Quarantine).unwrap();
        let StoreCheck::Quarantined(quarantine) = found else {
            panic!("not quarantined: {found:?}");
        };
        let name = quarantine.file.file_name().unwrap().to_string_lossy();
        assert!(name.starts_with("hub.db.damaged-"), "{name}");
        assert!(quarantine.file.exists());
        // Read from both ends of the table and its index: most ids survive 8 KiB of garbage.
        let known = quarantine.deliveries.len();
        assert!((30..=60).contains(&known), "{known} ids read back");
        // The fresh store is empty and knows where the old records went.
        let left: i64 = db
            .conn
            .query_row("SELECT COUNT(*) FROM deliveries", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
        let first = &quarantine.deliveries[0].delivery_id;
        let said = db.unknown_delivery(first).unwrap();
        assert!(
            said.contains(&quarantine.file.display().to_string()),
            "{said}"
        );
        assert!(said.contains("it was delivered then") || said.contains("outcome is unknown"));
        let health = db.store_health(1).unwrap();
        assert_eq!(health.quarantined.len(), 1);
        assert_eq!(health.quarantined[0].deliveries, Some(known as u64));
        let log = std::fs::read_to_string(tmp.path().join("decisions.jsonl")).unwrap();
        assert!(log.contains("\"kind\":\"store_quarantined\""), "{log}");
    }

    #[test]
    fn a_store_that_is_not_a_database_or_cut_short_is_moved_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        store_with_deliveries(&path, 20);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
        let (_, found) = open_checked(&path, tmp.path(), OnDamage::Quarantine).unwrap();
        assert_eq!(found.label(), "quarantined");

        std::fs::write(&path, b"not a database at all, just some text ".repeat(40)).unwrap();
        let (db, found) = open_checked(&path, tmp.path(), OnDamage::Quarantine).unwrap();
        assert_eq!(found.label(), "quarantined");
        assert_eq!(db.schema_version().unwrap(), 6);
        // Two moved aside within a second get different names; the first is remembered,
        // though the store that remembered it was the second one moved aside.
        let stores = db.quarantined_stores().unwrap();
        assert_eq!(stores.len(), 2, "{stores:?}");
        assert_ne!(stores[0].file, stores[1].file);
    }

    #[test]
    fn a_successor_refuses_a_damaged_store_instead_of_moving_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        std::fs::write(&path, b"garbage ".repeat(600)).unwrap();
        match open_checked(&path, tmp.path(), OnDamage::Refuse) {
            Err(Error::Damaged { why, .. }) => assert!(why.contains("not a database"), "{why}"),
            other => panic!("expected Damaged, got {other:?}"),
        }
        assert!(path.exists());
    }

    #[test]
    fn a_store_that_cannot_be_opened_is_not_moved() {
        // Not the file's fault (here: a directory in its place): the start is refused and
        // nothing is moved, as for a file the daemon may not read.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hub.db");
        std::fs::create_dir(&path).unwrap();
        let result = check(&path, OnDamage::Quarantine);
        assert!(matches!(result, Err(Error::Db { .. })), "{result:?}");
        assert!(path.is_dir());
    }
}
