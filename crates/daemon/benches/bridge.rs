//! The messaging engine under load, printed as figures (`cargo bench -p cross-agent-daemon
//! --bench bridge`). No assertions beyond "nothing lost, nothing overlapped": targets are read
//! off the output.
//!
//! The daemon runs in a child process (this bench re-executed with `CROSS_AGENT_BENCH_DAEMON=1`,
//! the same `entry::run_process` as `cross-agent daemon run`). The peer is a fast stand-in
//! `claude` (a shell script that prints a `result` object), so what is measured is the bridge:
//!
//! - the `send` receipt on a warm connection (the peer's turn not counted), 500 times;
//! - 500 sends to 20 sessions delivered: none lost, no two turns overlapping on one session
//!   (from each record's hand-over and finish times), total time and overhead per send beside
//!   the stand-in run directly, one after another, as a baseline;
//! - the daemon's resident memory idle, and after the load.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_daemon::entry::{Mode, run_process};
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_protocol::bridge::{
    Agent, BridgeStatusParams, CallerContext, DeliveryRecord, SendParams, SendResponse,
};
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

use common::{CHILD_VAR, Place, report, spawn, stand_in, wait_for_daemon};

const SENDS: usize = 500;
const SESSIONS: usize = 20;

fn main() {
    if std::env::var_os(CHILD_VAR).is_some() {
        run_process(Home::from_env().unwrap(), Mode::Detached).unwrap();
        return;
    }
    let Place {
        tmp,
        user,
        home,
        cwd,
    } = Place::new();
    let now = now_millis();
    let sessions: Vec<String> = (0..SESSIONS)
        .map(|n| {
            let id = format!("00000000-0000-4000-8000-{n:012}");
            let mut transcript = ClaudeTranscript::new(&user, &cwd, &id);
            transcript
                .user("hello", now - 60_000)
                .assistant_text("hi", now - 59_000);
            transcript.write().unwrap();
            id
        })
        .collect();
    let peer = stand_in(tmp.path(), 0);

    let options = ConnectOptions::new(ClientKind::Other);
    let mut child = spawn(&home, &[]);
    let client = wait_for_daemon(&home, &options);
    std::thread::sleep(Duration::from_secs(2));
    let idle = rss_kib(child.id());

    let caller = CallerContext {
        cwd: Some(cwd.clone()),
        pid: std::process::id(),
        client_name: Some("codex-mcp-client".into()),
        codex_turn_metadata: Some(serde_json::json!({"thread_id": "bench-thread"})),
        settings: BTreeMap::from([(
            "CROSS_AGENT_CLAUDE_BIN".to_owned(),
            peer.to_string_lossy().into_owned(),
        )]),
        child_env: BTreeMap::from([
            ("HOME".to_owned(), user.to_string_lossy().into_owned()),
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ]),
        ..CallerContext::default()
    };

    let began = Instant::now();
    let began_wall = time::OffsetDateTime::now_utc();
    let mut receipts = Vec::with_capacity(SENDS);
    let mut latencies = Vec::with_capacity(SENDS);
    for n in 0..SENDS {
        let params = SendParams {
            agent: Agent::Claude,
            message: format!("message {n}"),
            session_id: Some(sessions[n % SESSIONS].clone()),
            new_session: false,
            scope: None,
            cwd: None,
            timeout: None,
            conversation_id: None,
            raw: false,
            allow_same_agent: false,
            caller: caller.clone(),
        };
        let sent = Instant::now();
        match client.call(params).unwrap() {
            SendResponse::Accepted(receipt) => receipts.push(receipt.delivery_id),
            SendResponse::Refused(refusal) => panic!("refused: {refusal:?}"),
        }
        latencies.push(sent.elapsed());
    }
    report("send receipt (warm connection, 20 sessions)", &latencies);

    let mut records: Vec<DeliveryRecord> = Vec::with_capacity(SENDS);
    let mut status_times = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    for id in &receipts {
        loop {
            let asked = Instant::now();
            let status = client
                .call(BridgeStatusParams {
                    cwd: None,
                    scope: None,
                    delivery_id: Some(id.clone()),
                    caller: caller.clone(),
                })
                .unwrap();
            status_times.push(asked.elapsed());
            let record = status.delivery.unwrap();
            if record.state.is_finished() {
                records.push(record);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "deliveries did not finish: {record:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let polled = began.elapsed();
    report(
        "bridge_status(delivery_id) while the load runs",
        &status_times,
    );
    let loaded = rss_kib(child.id());

    let lost: Vec<_> = records
        .iter()
        .filter(|r| r.reply_preview.as_deref() != Some("stand-in answer"))
        .collect();
    assert!(lost.is_empty(), "lost or failed: {lost:#?}");
    let overlaps = overlaps(&records);
    assert_eq!(overlaps, 0, "turns overlapped on a session");

    let baseline_began = Instant::now();
    for _ in 0..SENDS {
        let status = Command::new(&peer)
            .current_dir(&cwd)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let baseline = baseline_began.elapsed();

    // From the first send to the last turn's finish, as the records say: the polling above
    // only notices it later.
    let last_finish = records
        .iter()
        .map(|r| timestamp(&r.finished_at))
        .max()
        .unwrap();
    let total = Duration::try_from(last_finish - began_wall).unwrap_or(polled);
    let turns: Vec<Duration> = records
        .iter()
        .map(|r| {
            Duration::try_from(timestamp(&r.finished_at) - timestamp(&r.started_at))
                .unwrap_or_default()
        })
        .collect();
    println!(
        "{SENDS} sends to {SESSIONS} sessions: all delivered, 0 overlaps; {:.2?} from the first \
         send to the last finish ({:.2?} per send end to end; {:.2?} until the polling saw it)",
        total,
        total / SENDS as u32,
        polled
    );
    report("turn, hand-over to finish (stand-in peer)", &turns);
    println!(
        "stand-in peer run directly {SENDS} times one after another: {:.2?} ({:.2?} each); the \
         bridge runs up to 4 turns at once",
        baseline,
        baseline / SENDS as u32
    );
    if let (Some((idle, _)), Some((rss, hwm))) = (idle, loaded) {
        println!(
            "daemon resident memory: idle {:.1} MiB, after the load {:.1} MiB (peak {:.1} MiB)",
            idle as f64 / 1024.0,
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
    }
    let _ = client.call(ShutdownParams {
        reason: Some("bench done".into()),
    });
    let _ = child.wait();
}

fn timestamp(t: &Option<String>) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(
        t.as_deref().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap()
}

/// Pairs of turns on one session whose [hand-over, finish] intervals intersect.
fn overlaps(records: &[DeliveryRecord]) -> usize {
    let parse = timestamp;
    let mut by_session: HashMap<&str, Vec<(time::OffsetDateTime, time::OffsetDateTime)>> =
        HashMap::new();
    for r in records {
        by_session
            .entry(r.target_session_id.as_deref().unwrap())
            .or_default()
            .push((parse(&r.started_at), parse(&r.finished_at)));
    }
    by_session
        .values_mut()
        .map(|spans| {
            spans.sort();
            spans.windows(2).filter(|w| w[1].0 < w[0].1).count()
        })
        .sum()
}

fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find(|l| l.starts_with(name))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}
