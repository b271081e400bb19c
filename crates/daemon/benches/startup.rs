//! What the store's integrity check costs the daemon's start (`cargo bench -p
//! cross-agent-daemon --bench startup`): [`Daemon::bind`] — pidfile lock, integrity check,
//! store open, generation, engine, socket — on a 100 MB `hub.db`, beside the same start without
//! the check, alternating in one run; then the check alone, and both starts on a small store.
//! The file was just written, so it is in the page cache: a cold disk adds its read time to the
//! check (it reads every page once).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_daemon::Daemon;
use cross_agent_home::Home;
use cross_agent_hub::db::HubDb;
use cross_agent_hub::integrity::{self, OnDamage};

/// Rounds of each start, alternating.
const ROUNDS: usize = 7;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (label, bytes) in [("100 MB", 100 * 1024 * 1024), ("1 MB", 1024 * 1024)] {
        let tmp = tempfile::tempdir().unwrap();
        let home = home_in(tmp.path());
        let deliveries = fill(&home.hub_db(), bytes);
        let size = std::fs::metadata(home.hub_db()).unwrap().len();
        let mut with = Vec::new();
        let mut without = Vec::new();
        // One of each first, unmeasured: the first start creates the home's files.
        for round in 0..=ROUNDS {
            let checked = start(&runtime, &home, true);
            let unchecked = start(&runtime, &home, false);
            if round > 0 {
                with.push(checked);
                without.push(unchecked);
            }
        }
        let mut alone = Vec::new();
        for _ in 0..ROUNDS {
            match integrity::check(&home.hub_db(), OnDamage::Refuse).unwrap() {
                integrity::StoreCheck::Healthy { took } => alone.push(took),
                other => panic!("the store is not healthy: {other:?}"),
            }
        }
        println!(
            "daemon start-up on a {label} hub.db ({:.1} MiB, {deliveries} deliveries), median of \
             {ROUNDS}: {:.1?} with the integrity check, {:.1?} without it; the check alone \
             {:.1?}",
            size as f64 / (1024.0 * 1024.0),
            median(&with),
            median(&without),
            median(&alone),
        );
    }
}

fn home_in(dir: &Path) -> Home {
    let (state, user) = (dir.join("state"), dir.join("user"));
    std::fs::create_dir_all(&user).unwrap();
    Home::from_vars(move |name| match name {
        "CROSS_AGENT_HOME" => Some(state.clone().into_os_string()),
        "HOME" => Some(user.clone().into_os_string()),
        _ => None,
    })
    .unwrap()
}

/// A store of about `bytes` bytes of finished deliveries (records the size real ones have).
fn fill(path: &Path, bytes: u64) -> usize {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    drop(HubDb::open(path).unwrap());
    let conn = rusqlite::Connection::open(path).unwrap();
    let record = format!("{{\"reply_preview\":\"{}\"}}", "an answer ".repeat(180));
    let mut count = 0;
    while std::fs::metadata(path).unwrap().len() < bytes {
        let tx = conn.unchecked_transaction().unwrap();
        for _ in 0..1000 {
            tx.execute(
                "INSERT INTO deliveries (delivery_id, state, target_agent, target_key,
                 created_ms, record, finished_ms) VALUES (?1, 'delivered', 'claude', ?2, ?3, ?4, ?3)",
                rusqlite::params![
                    format!("dlv_{count:032x}"),
                    format!("claude:/work/proj/{}", count % 50),
                    1_700_000_000_000_i64 + count as i64,
                    record
                ],
            )
            .unwrap();
            count += 1;
        }
        tx.commit().unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    count
}

/// How long [`Daemon::bind`] takes, with or without the check; the daemon is dropped unrun.
fn start(runtime: &tokio::runtime::Runtime, home: &Home, checked: bool) -> Duration {
    runtime.block_on(async {
        let began = Instant::now();
        let daemon = if checked {
            Daemon::bind(home.clone())
        } else {
            Daemon::bind_without_integrity_check(home.clone())
        }
        .unwrap();
        let took = began.elapsed();
        drop(daemon);
        took
    })
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}
