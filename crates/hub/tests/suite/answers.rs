//! Leases, orphans, the TTL, late-answer watches and the reply header, at the store level.

use cross_agent_hub::db::HubDb;
use cross_agent_hub::envelope::{self, AnswerKind};
use cross_agent_protocol::bridge::{Agent, DeliveryState};
use pretty_assertions::assert_eq;

use super::records::{carrier, job, record};

const DAY_MS: i64 = 86_400_000;
const TTL_MS: i64 = 7 * DAY_MS;

fn finished(db: &mut HubDb, id: &str, finished_at: &str) {
    db.insert_delivery(&record(id), &format!("claude:{id}"), 0, &job(), false)
        .unwrap();
    let mut r = db.delivery(id).unwrap().unwrap();
    r.state = DeliveryState::Delivered;
    r.finished_at = Some(finished_at.into());
    db.update_delivery(&r).unwrap();
}

#[test]
fn records_are_pruned_only_once_the_ttl_has_passed_since_they_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    // Both were created long ago (created_ms 0); only the finish time decides.
    finished(&mut db, "old", "2026-11-01T00:00:00Z");
    finished(&mut db, "young", "2026-11-29T00:00:00Z");
    db.insert_delivery(&record("in-flight"), "claude:f", 0, &job(), false)
        .unwrap();
    let now = time::OffsetDateTime::parse(
        "2026-11-30T00:00:00Z",
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let now_ms = i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap();

    assert_eq!(db.prune_finished(now_ms - TTL_MS).unwrap(), 1);
    assert!(
        db.delivery("old").unwrap().is_none(),
        "finished 29 days ago"
    );
    assert!(
        db.delivery("young").unwrap().is_some(),
        "finished a day ago"
    );
    assert!(
        db.delivery("in-flight").unwrap().is_some(),
        "unfinished: never pruned"
    );
}

#[test]
fn a_record_past_its_lease_is_orphaned_even_if_its_pid_is_alive() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    db.insert_delivery(&record("lapsed"), "claude:a", 1, &job(), true)
        .unwrap();
    db.insert_delivery(&record("carried"), "claude:b", 2, &job(), true)
        .unwrap();
    let me = std::process::id();
    // Both taken by this (live) process, generation 1, at t=1000 with a 60 s lease.
    let claimed = db
        .claim_runnable(4, &carrier(me, 1, 60_000), 1_000, "t0")
        .unwrap();
    assert_eq!(claimed.len(), 2);
    assert_eq!(
        claimed[0].record.expires_at.as_deref(),
        Some("1970-01-01T00:01:01.000Z")
    );
    // The worker of "carried" renews its lease with its lock; "lapsed"'s worker is gone.
    assert!(
        db.renew_lease("claude:b", &claimed[1].lock_token, "carried", 500_000)
            .unwrap()
    );
    assert_eq!(
        db.delivery("carried")
            .unwrap()
            .unwrap()
            .expires_at
            .as_deref(),
        Some("1970-01-01T00:08:20.000Z")
    );

    // Another daemon (generation 2) looks at t=100 s: past one lease, within the other.
    let orphaned = db.orphan_stale(2, 100_000, "t1").unwrap();
    let ids: Vec<_> = orphaned.iter().map(|r| r.delivery_id.as_str()).collect();
    assert_eq!(ids, ["lapsed"]);
    let lapsed = db.delivery("lapsed").unwrap().unwrap();
    assert_eq!(lapsed.state, DeliveryState::Failed);
    assert!(lapsed.is_orphaned);
    assert_eq!(
        lapsed.finished_at.as_deref(),
        Some("1970-01-01T00:01:01.000Z"),
        "the TTL runs from the expiry"
    );
    assert!(
        lapsed
            .error
            .unwrap()
            .starts_with("orphaned: its lease ran out")
    );
    assert_eq!(
        db.delivery("carried").unwrap().unwrap().state,
        DeliveryState::Delivering,
        "a live carrier within its lease keeps its delivery"
    );
    // Never re-sent: nothing is left to hand over.
    assert!(
        db.claim_runnable(4, &carrier(me, 2, 60_000), 100_001, "t2")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn late_answer_watches_are_held_by_one_daemon_and_handed_over() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    db.insert_delivery(&record("w1"), "claude:s", 1, &job(), true)
        .unwrap();
    db.add_watch("w1", 1_000, 10_000_000_000_000).unwrap();
    let me = std::process::id();
    let other = me + 1;
    let now = 5_000;
    assert_eq!(db.claim_watches(me, now, now + 60_000).unwrap().len(), 1);
    // While this live process holds it, another daemon does not take it…
    assert!(
        db.claim_watches(other, now, now + 60_000)
            .unwrap()
            .is_empty()
    );
    // …until it is handed over (drain, shutdown).
    db.release_watches(me).unwrap();
    let taken = db.claim_watches(other, now, now + 60_000).unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].since_ms, 1_000);
    assert_eq!(db.watch_summaries(10).unwrap().0[0].owner_pid, Some(other));
    db.end_watch("w1").unwrap();
    assert_eq!(db.watch_summaries(10).unwrap(), (Vec::new(), 0));
}

#[test]
fn status_shows_the_newest_watches_with_what_they_wait_for_and_counts_all() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    for n in 0..5_i64 {
        let id = format!("w{n}");
        db.insert_delivery(&record(&id), "claude:s", n, &job(), false)
            .unwrap();
        db.add_watch(&id, 1_000 + n, 9_000_000).unwrap();
    }
    let (shown, total) = db.watch_summaries(2).unwrap();
    assert_eq!(total, 5);
    let ids: Vec<&str> = shown.iter().map(|w| w.delivery_id.as_str()).collect();
    assert_eq!(
        ids,
        vec!["w3", "w4"],
        "the newest two, oldest of them first"
    );
    assert_eq!(
        shown[1].request_id.as_deref(),
        Some(record("w4").request_id.as_str())
    );
    assert_eq!(shown[1].target_agent.as_deref(), Some("claude"));
    assert_eq!(shown[1].target_session_id.as_deref(), Some("s"));
    assert_eq!(shown[1].until_ms, 9_000_000);
}

#[test]
fn a_queued_delivery_that_never_got_in_fails_as_not_delivered() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    db.insert_delivery(&record("u1"), "claude:s", 1, &job(), true)
        .unwrap();
    assert!(db.job("u1").unwrap().is_some());
    assert!(
        db.fail_queued("u1", "not delivered: busy", "2026-11-30T00:00:00Z")
            .unwrap()
    );
    let r = db.delivery("u1").unwrap().unwrap();
    assert_eq!(r.state, DeliveryState::Failed);
    assert!(r.is_undelivered);
    assert_eq!(db.job("u1").unwrap(), None, "its payload is gone with it");
    assert!(
        !db.fail_queued("u1", "again", "later").unwrap(),
        "only a queued delivery"
    );
}

#[test]
fn the_reply_header_says_how_the_answer_came_back() {
    let id = "req_1795992430029_a1b2c3";
    let header =
        |carries, kind| envelope::reply_header(Agent::Codex, Some("t-1"), id, carries, kind);
    assert_eq!(
        header(true, AnswerKind::Confirmed),
        "=== BRIDGE REPLY === from: codex session t-1 | request: req_1795992430029_a1b2c3"
    );
    assert_eq!(
        header(false, AnswerKind::NoRequestId),
        format!(
            "=== BRIDGE REPLY === from: codex session t-1 | request: {id}\n{}",
            envelope::no_request_id_line(id)
        )
    );
    assert!(envelope::no_request_id_line(id).starts_with(&format!(
        "NO REQUEST ID: the answer did not end with {id}, so it was taken by timing alone and \
         is possibly interim"
    )));
    let recovered = header(
        true,
        AnswerKind::Recovered {
            transport_failure: "the daemon carrying it disappeared",
        },
    );
    let lines: Vec<&str> = recovered.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "=== BRIDGE REPLY === from: codex session t-1 | request: {id} | recovered from transcript"
        )
    );
    assert!(lines[1].starts_with("WARNING: RECOVERED, NOT RECEIVED — "));
    assert_eq!(
        lines[2],
        "transport failure: the daemon carrying it disappeared"
    );
    assert_eq!(lines.len(), 3);
    let late = header(
        true,
        AnswerKind::Late {
            request_delivery_id: "dlv_1",
        },
    );
    assert!(late.ends_with(&format!(
        "\nLATE ANSWER to request {id} (delivery dlv_1): the earlier reply did not carry the \
         request id; this later turn does"
    )));
}

#[test]
fn a_record_from_a_build_without_leases_stays_with_its_live_carrier() {
    let tmp = tempfile::tempdir().unwrap();
    let mut db = HubDb::open(&tmp.path().join("hub.db")).unwrap();
    // An older daemon (no lease columns written) is still running and carries it.
    let old = db
        .begin_run(std::process::id(), "0.0.9", "2026-11-30T00:00:00Z")
        .unwrap();
    let new = db
        .begin_run(std::process::id(), "0.1.0", "2026-11-30T00:01:00Z")
        .unwrap();
    db.insert_delivery(&record("legacy"), "claude:s", 1, &job(), false)
        .unwrap();
    let mut r = db.delivery("legacy").unwrap().unwrap();
    r.state = DeliveryState::AwaitingPeer;
    r.carrier_generation = Some(old);
    db.update_delivery(&r).unwrap();

    assert!(db.orphan_stale(new, 0, "t1").unwrap().is_empty());
    // Once that daemon's run is over, the record is nobody's.
    db.end_run(old, "2026-11-30T00:02:00Z").unwrap();
    let orphaned = db.orphan_stale(new, 0, "t2").unwrap();
    assert_eq!(orphaned.len(), 1);
    assert!(orphaned[0].is_orphaned);
}
