//! The store's integrity check at start, in-process: an ordinary start moves a damaged
//! `hub.db` aside and records what it found with the run; a handover's successor, whose
//! predecessor still has the store open, refuses instead of pulling it from under it.

use super::{Running, TempHome, connect};

/// `bridge_status`'s `server_process.database`.
async fn database_health(home: &TempHome) -> serde_json::Value {
    let conn = connect(&home.home).await;
    let status = conn
        .client
        .call(BridgeStatusParams {
            cwd: None,
            scope: None,
            delivery_id: None,
            caller: CallerContext::default(),
        })
        .await
        .unwrap();
    serde_json::to_value(status.server_process.database).unwrap()
}
use cross_agent_daemon::Daemon;
use cross_agent_protocol::bridge::{BridgeStatusParams, CallerContext};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successor_refuses_a_damaged_store_and_an_ordinary_start_moves_it_aside() {
    let home = TempHome::new();
    let running = Running::start(&home.home);
    running.stop().await;
    let store = home.home.hub_db();
    std::fs::write(&store, b"not a database, just some text ".repeat(200)).unwrap();

    let refused = Daemon::bind_replacing(home.home.clone()).unwrap_err();
    let said = refused.to_string();
    assert!(
        said.contains(&store.display().to_string()) && said.contains("cross-agent daemon stop"),
        "{said}"
    );
    assert!(store.exists());

    let running = Running::start(&home.home);
    let database = database_health(&home).await;
    assert_eq!(database["check"], "quarantined", "{database:#}");
    let moved = database["quarantined"][0]["file"].as_str().unwrap();
    assert!(std::path::Path::new(moved).exists(), "{moved}");
    assert!(
        moved.starts_with(&format!("{}.damaged-", store.display())),
        "{moved}"
    );
    running.stop().await;

    // The next start finds the fresh store healthy, and still lists the one moved aside.
    let running = Running::start(&home.home);
    let database = database_health(&home).await;
    assert_eq!(database["check"], "ok", "{database:#}");
    assert_eq!(database["quarantined"][0]["file"], moved);
    running.stop().await;
}
