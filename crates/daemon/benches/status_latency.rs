//! `bridge_status` while the engine reads big transcripts (`cargo bench -p cross-agent-daemon
//! --bench status_latency`): a slow disk read must not stall every client.
//!
//! The daemon runs in a child process (this bench re-executed with `CROSS_AGENT_BENCH_DAEMON=1`,
//! the same `entry::run_process` as `cross-agent daemon run`, with its 2 async worker threads).
//! Two Claude sessions have 200 MB transcripts each. Printed side by side, measured in the same
//! run:
//!
//! - **baseline**: `bridge_status` answered while nothing runs;
//! - **loaded**: the same call while a turn runs in each of the two sessions (a stand-in
//!   `claude` that only waits) and the engine reads each one's transcript for its answer over
//!   and over (`CROSS_AGENT_TRANSCRIPT_CHECK_MS=1`: the check docs/spec/cross-agent-mcp.md §9 makes every 30 s, run
//!   back to back so that reading is going on all the time).
//!
//! With the reads on the async threads, the loaded median grows by the length of a read; with
//! them on the blocking pool it stays near the baseline.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_daemon::entry::{Mode, run_process};
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_protocol::bridge::{
    Agent, BridgeStatusParams, CallerContext, DeliveryState, SendParams, SendResponse,
};
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

use common::{CHILD_VAR, Place, report, spawn, stand_in, wait_for_daemon};

const TRANSCRIPT_BYTES: u64 = 200 << 20;
const SESSIONS: usize = 2;
const CALLS: usize = 300;

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
    let written = Instant::now();
    let sessions: Vec<String> = (0..SESSIONS)
        .map(|n| {
            let id = format!("00000000-0000-4000-8000-{n:012}");
            big_transcript(&user, &cwd, &id);
            id
        })
        .collect();
    println!(
        "{SESSIONS} Claude transcripts of {} MB each written in {:.2?}",
        TRANSCRIPT_BYTES >> 20,
        written.elapsed()
    );
    let peer = stand_in(tmp.path(), 600);

    let options = ConnectOptions::new(ClientKind::Other);
    let mut child = spawn(&home, &[("CROSS_AGENT_TRANSCRIPT_CHECK_MS", "1")]);
    let client = wait_for_daemon(&home, &options);
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
    let status = |delivery_id: Option<&str>| {
        client
            .call(BridgeStatusParams {
                cwd: None,
                scope: None,
                delivery_id: delivery_id.map(str::to_owned),
                caller: caller.clone(),
            })
            .unwrap()
    };
    let measure = || {
        (0..CALLS)
            .map(|_| {
                let asked = Instant::now();
                status(None);
                asked.elapsed()
            })
            .collect::<Vec<_>>()
    };

    // Warm up: the first calls open the database and the connection's buffers.
    for _ in 0..20 {
        status(None);
    }
    let baseline = measure();

    let deliveries: Vec<String> = sessions
        .iter()
        .map(|id| {
            let params = SendParams {
                agent: Agent::Claude,
                message: "wait".into(),
                session_id: Some(id.clone()),
                new_session: false,
                scope: None,
                cwd: None,
                timeout: Some(3600),
                conversation_id: None,
                raw: false,
                allow_same_agent: false,
                caller: caller.clone(),
            };
            match client.call(params).unwrap() {
                SendResponse::Accepted(receipt) => receipt.delivery_id,
                SendResponse::Refused(refusal) => panic!("refused: {refusal:?}"),
            }
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    for id in &deliveries {
        while status(Some(id)).delivery.unwrap().state != DeliveryState::AwaitingPeer {
            assert!(Instant::now() < deadline, "the turns did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let loaded = measure();
    for id in &deliveries {
        let record = status(Some(id)).delivery.unwrap();
        assert_eq!(record.state, DeliveryState::AwaitingPeer, "{record:?}");
    }

    report("bridge_status, nothing running (baseline)", &baseline);
    report(
        &format!(
            "bridge_status while {SESSIONS} turns run and their {} MB transcripts are read",
            TRANSCRIPT_BYTES >> 20
        ),
        &loaded,
    );
    let _ = client.call(ShutdownParams {
        reason: Some("bench done".into()),
    });
    let _ = child.wait();
}

/// A Claude transcript of [`TRANSCRIPT_BYTES`]: a session's first exchange, then long
/// assistant messages, as a long session with big tool outputs grows.
fn big_transcript(home: &Path, cwd: &str, id: &str) {
    let now = now_millis();
    let mut transcript = ClaudeTranscript::new(home, cwd, id);
    transcript
        .user("hello", now - 120_000)
        .assistant_text("hi", now - 119_000);
    let path = transcript.write().unwrap();
    let filler = "x".repeat(16 << 10);
    let mut line = ClaudeTranscript::new(home, cwd, id);
    line.assistant_text(&filler, now - 60_000);
    let line = format!("{}\n", line.lines()[0]);
    let mut file = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap(),
    );
    let mut size = std::fs::metadata(&path).unwrap().len();
    while size < TRANSCRIPT_BYTES {
        file.write_all(line.as_bytes()).unwrap();
        size += line.len() as u64;
    }
    file.flush().unwrap();
}
