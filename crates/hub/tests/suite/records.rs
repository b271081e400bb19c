//! The queue: hand-over takes the lock and the payload in one step, first come first served per
//! session; locks are released only by their owner, and a dead owner's is reclaimed.

use std::collections::BTreeMap;

use cross_agent_hub::db::HubDb;
use cross_agent_hub::records::{Carrier, Job};
use cross_agent_protocol::bridge::DeliveryState;
use pretty_assertions::assert_eq;

pub(super) use cross_agent_testkit::deliveries::queued_delivery as record;

pub(super) fn job() -> Job {
    Job {
        body: "secret payload".into(),
        raw: false,
        settings: BTreeMap::new(),
        child_env: BTreeMap::from([("API_KEY".into(), "k".into())]),
        bridge_env: BTreeMap::new(),
        cwd: "/".into(),
        new_session_id: None,
        timeout_secs: 600,
        withheld_env: Vec::new(),
        pin_cwd_key: String::new(),
        panel: None,
        native: None,
        agent_host: None,
        copilot_return: None,
    }
}

#[test]
fn hand_over_is_first_come_first_served_and_locks_are_owned() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    let me = std::process::id();
    for (n, id) in ["a1", "a2", "b1"].iter().enumerate() {
        let mut r = record(id);
        if id.starts_with('b') {
            r.target_session_id = Some("t".into());
        }
        let key = if id.starts_with('a') {
            "claude:s"
        } else {
            "claude:t"
        };
        db.insert_delivery(&r, key, 1000 + n as i64, &job(), true)
            .unwrap();
    }
    assert_eq!(db.conversation_hops("conv_000000000001").unwrap(), 3);

    let claimed = db
        .claim_runnable(4, &carrier(me, 1, 60_000), 10_000, "now")
        .unwrap();
    let ids: Vec<_> = claimed
        .iter()
        .map(|c| c.record.delivery_id.as_str())
        .collect();
    assert_eq!(ids, ["a1", "b1"], "a2 waits behind a1 on the same session");
    assert_eq!(claimed[0].job, job());
    // Handed over: a second look finds nothing more to send.
    assert_eq!(
        db.claim_runnable(4, &carrier(me, 1, 60_000), 10_001, "now")
            .unwrap()
            .len(),
        0
    );

    // Only the owner's token releases a lock.
    assert!(!db.release_lock("claude:s", "not-the-token").unwrap());
    assert!(db.release_lock("claude:s", &claimed[0].lock_token).unwrap());
    let next = db
        .claim_runnable(4, &carrier(me, 1, 60_000), 10_002, "now")
        .unwrap();
    assert_eq!(next[0].record.delivery_id, "a2");
    assert_eq!(next[0].record.state, DeliveryState::Delivering);
}

#[test]
fn a_dead_owners_lock_and_an_expired_lease_are_reclaimed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    db.insert_delivery(&record("x1"), "claude:s", 1, &job(), true)
        .unwrap();
    db.insert_delivery(&record("x2"), "claude:s", 2, &job(), true)
        .unwrap();
    // Taken by a process that no longer exists.
    let dead_pid = 0x3fff_fff0;
    let first = db
        .claim_runnable(1, &carrier(dead_pid, 1, 60_000), 100, "then")
        .unwrap();
    assert_eq!(first.len(), 1);
    let second = db
        .claim_runnable(1, &carrier(std::process::id(), 2, 60_000), 200, "now")
        .unwrap();
    assert_eq!(
        second[0].record.delivery_id, "x2",
        "the dead owner's lock was reclaimed"
    );

    db.insert_delivery(&record("x3"), "claude:s", 3, &job(), true)
        .unwrap();
    // A live owner whose lease ran out (pid reuse guard).
    let later = 200 + 60_001;
    let third = db
        .claim_runnable(1, &carrier(std::process::id(), 2, 60_000), later, "later")
        .unwrap();
    assert_eq!(third[0].record.delivery_id, "x3");
}

#[test]
fn deliveries_an_earlier_daemon_never_closed_are_orphaned_not_resent() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    db.insert_delivery(&record("o1"), "claude:s", 1, &job(), true)
        .unwrap();
    db.insert_delivery(&record("q1"), "claude:t", 2, &job(), true)
        .unwrap();
    db.claim_runnable(1, &carrier(std::process::id(), 1, 60_000), 10, "now")
        .unwrap();
    assert_eq!(db.orphan_unfinished(2, "later").unwrap().len(), 1);
    let orphan = db.delivery("o1").unwrap().unwrap();
    assert_eq!(orphan.state, DeliveryState::Failed);
    assert!(orphan.is_orphaned);
    let queued = db.delivery("q1").unwrap().unwrap();
    assert_eq!(
        queued.state,
        DeliveryState::Queued,
        "never handed over: it still goes out"
    );
}

#[test]
fn finished_deliveries_past_their_ttl_are_pruned_unfinished_ones_never() {
    let tmp = tempfile::tempdir().unwrap();
    let db = &mut HubDb::open(&tmp.path().join("hub.db")).unwrap();
    let mut done = record("old");
    done.state = DeliveryState::Delivered;
    db.insert_delivery(&done, "claude:s", 10, &job(), false)
        .unwrap();
    db.insert_delivery(&record("waiting"), "claude:t", 10, &job(), false)
        .unwrap();
    assert_eq!(db.prune_finished(11).unwrap(), 1);
    assert!(db.delivery("old").unwrap().is_none());
    assert!(db.delivery("waiting").unwrap().is_some());
}

#[test]
fn each_queue_has_one_head_its_oldest_queued_delivery() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    // Session a: q1 (created 20), q2 (created 10), q3 (created 10, inserted later); session b:
    // q4 only; session c: nothing queued (its one delivery is finished).
    for (id, key, created) in [
        ("q1", "claude:a", 20),
        ("q2", "claude:a", 10),
        ("q3", "claude:a", 10),
        ("q4", "claude:b", 30),
        ("done", "claude:c", 1),
    ] {
        db.insert_delivery(&record(id), key, created, &job(), false)
            .unwrap();
    }
    let mut done = db.delivery("done").unwrap().unwrap();
    done.state = DeliveryState::Delivered;
    db.update_delivery(&done).unwrap();

    let mut heads: Vec<(String, String)> = db
        .queue_heads()
        .unwrap()
        .into_iter()
        .map(|h| (h.target_key, h.delivery_id))
        .collect();
    heads.sort();
    assert_eq!(
        heads,
        vec![
            ("claude:a".to_owned(), "q2".to_owned()),
            ("claude:b".to_owned(), "q4".to_owned()),
        ],
        "the oldest per session; a tie goes to the one queued first"
    );
}

#[test]
fn a_listing_by_state_keeps_the_newest_rows_oldest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    for n in 0..6_i64 {
        db.insert_delivery(
            &record(&format!("d{n}")),
            "claude:s",
            100 - n,
            &job(),
            false,
        )
        .unwrap();
    }
    let listed: Vec<String> = db
        .deliveries_in(&[DeliveryState::Queued], 3)
        .unwrap()
        .into_iter()
        .map(|r| r.delivery_id)
        .collect();
    // Created at 100, 99, … 95: the three newest are d0, d1, d2.
    assert_eq!(listed, vec!["d2", "d1", "d0"]);
}

/// The daemon `owner_pid` of `generation`, taking locks of `lease_ms`.
pub fn carrier(owner_pid: u32, generation: u64, lease_ms: i64) -> Carrier {
    Carrier {
        owner_pid,
        generation,
        lease_ms,
    }
}

/// A link standing where `hub.db` goes is refused, and the file it points at is left as it was:
/// the store is never opened through a link (docs/spec/cross-agent-mcp.md §7, a state directory of the bridge's own).
#[test]
fn a_store_behind_a_link_is_refused_and_its_target_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("someone-elses.db");
    std::fs::write(&target, b"").unwrap();
    let link = dir.path().join("hub.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();

    let error = HubDb::open(&link).unwrap_err().to_string();
    assert!(error.contains(&link.display().to_string()), "{error}");
    assert_eq!(std::fs::read(&target).unwrap(), b"");
}

/// A payload handed over by a process that died before it truncated the write-ahead log (a
/// daemon killed within a second of the hand-over) leaves the log when the store is next opened.
#[test]
fn a_payload_left_in_the_log_by_a_dead_process_is_gone_at_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("hub.db");
    let wal = tmp.path().join("hub.db-wal");
    let holds_payload = || {
        let bytes = std::fs::read(&wal).unwrap_or_default();
        bytes.windows(14).any(|w| w == b"secret payload")
    };
    let mut db = HubDb::open(&path).unwrap();
    db.insert_delivery(&record("c1"), "claude:s", 1, &job(), true)
        .unwrap();
    let claimed = db
        .claim_runnable(1, &carrier(std::process::id(), 1, 60_000), 10, "now")
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(
        holds_payload(),
        "the log still holds the handed-over payload"
    );
    // Killed outright: no truncation on the way out, no close.
    std::mem::forget(db);

    let _reopened = HubDb::open(&path).unwrap();
    assert!(!holds_payload());
}
