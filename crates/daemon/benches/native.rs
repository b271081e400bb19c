//! Claude's native peer door through the daemon, printed as figures (`cargo bench -p
//! cross-agent-daemon --bench native`): real Claude Code 2.1.332 on both sides against the
//! scripted model, the real `cross-agent daemon run` (its relays run `cross-agent hook`).
//!
//! - queue → Claude's receipt for one native send (the relay already up), median and p95; the
//!   first send's, which includes the relay's start-up, on its own;
//! - send → the peer's answer paired (`delivered`), natively, beside the same messages to a
//!   dormant session resumed over the CLI (`claude -p --resume`) in the same run: the peer
//!   figure this door replaces;
//! - deliveries per minute through one relay (sequential sends, answers included);
//! - the relay's resident memory once idle.
//!
//! Needs the built binary (`CROSS_AGENT_TEST_BIN`, see `scripts/test`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_protocol::bridge::{
    Agent, BridgeStatusParams, CallerContext, DeliveryRecord, DeliveryState, SendParams,
    SendResponse, Transport,
};
use cross_agent_protocol::rpc::ClientKind;
use cross_agent_relay::CLAUDE_STREAM_JSON_ARGS;
use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, agent_binary};
use cross_agent_testkit::endpoint::{ModelEndpoint, Reply, Rule};
use cross_agent_testkit::panel::{PanelDriver, claude_user};

const NATIVE_SENDS: usize = 20;
const CLI_SENDS: usize = 5;

fn main() {
    let endpoint = ModelEndpoint::start().unwrap();
    let agents = AgentHome::new().unwrap();
    let project = agents.project("proj").unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = state.path().join("state");
    let home = Home::from_vars(|name| match name {
        "CROSS_AGENT_HOME" => Some(root.clone().into_os_string()),
        "HOME" => Some(agents.path().as_os_str().to_owned()),
        _ => None,
    })
    .unwrap();
    let claude = Claude::new(&agents, &endpoint.anthropic_base_url()).unwrap();
    endpoint.push(Rule::on_user_text("seed bench").reply(Reply::text("seeded")));
    endpoint.push(Rule::on_user_text("cli bench").reply(Reply::echo_token("cli answer")));
    for rule in Rule::peer_replies("native answer", "replied") {
        endpoint.push(rule);
    }

    let mut daemon = Daemon(
        Command::new(cross_agent_testkit::binaries::cross_agent_bin().unwrap())
            .args(["daemon", "run"])
            .env("CROSS_AGENT_HOME", &root)
            .env("HOME", agents.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let client = wait_for_daemon(&home, &ConnectOptions::new(ClientKind::Other));

    // The live target: a stream-json session kept open on stdin, registered on its first turn.
    let live_id = "6d1e0000-0000-4000-8000-00000000be01";
    let mut command = Command::new(claude.binary());
    command
        .arg("-p")
        .args(CLAUDE_STREAM_JSON_ARGS)
        .args(["--session-id", live_id])
        .current_dir(&project)
        .env_clear()
        .envs(claude.env())
        .process_group(0);
    let mut live = PanelDriver::start(command).unwrap();
    live.send(&claude_user("seed bench")).unwrap();
    live.next_of_type("result", Duration::from_secs(90))
        .unwrap();
    let registered = Instant::now();
    while !agents
        .path()
        .join(format!(".claude/sessions/{}.json", live.pid()))
        .exists()
    {
        assert!(registered.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(20));
    }
    // The dormant target: a session no process holds, reached over the CLI.
    let dormant = claude
        .turn(&project, "seed bench")
        .run()
        .unwrap()
        .expect_success()
        .unwrap()
        .session_id()
        .unwrap()
        .to_owned();

    let caller = caller(&agents, &endpoint, &project);
    let mut receipts = Vec::new();
    let mut answers = Vec::new();
    let began = Instant::now();
    for n in 0..NATIVE_SENDS {
        let (receipt, answer, record) = timed_send(&client, &caller, live_id, n, "native bench");
        assert_eq!(record.transport, Transport::ClaudeNative, "{record:?}");
        assert_eq!(record.state, DeliveryState::Delivered, "{record:?}");
        receipts.push(receipt);
        answers.push(answer);
    }
    let native_total = began.elapsed();
    println!(
        "relay start-up (queue → receipt of the first send, relay started for it): {:.2?}",
        receipts[0]
    );
    report(
        "native: queue → Claude's receipt (relay up)",
        &receipts[1..],
    );
    print_p95(
        "native: queue → Claude's receipt (relay up)",
        &receipts[1..],
    );
    report("native: send → answer paired", &answers[1..]);
    print_p95("native: send → answer paired", &answers[1..]);
    println!(
        "deliveries per minute through one relay (sequential, answers included): {:.1}",
        NATIVE_SENDS as f64 * 60.0 / native_total.as_secs_f64()
    );

    let mut cli = Vec::new();
    for n in 0..CLI_SENDS {
        let (_, answer, record) = timed_send(&client, &caller, &dormant, n, "cli bench");
        assert_eq!(record.transport, Transport::HeadlessCli, "{record:?}");
        assert_eq!(record.state, DeliveryState::Delivered, "{record:?}");
        cli.push(answer);
    }
    report(
        "peer: send → answer over the CLI (claude -p --resume, dormant)",
        &cli,
    );

    std::thread::sleep(Duration::from_secs(2));
    for pid in relay_pids(&root) {
        if let Some(kib) = rss_kib(pid) {
            println!("relay (pid {pid}) resident memory, idle: {kib} KiB");
        }
    }
    cross_agent_testkit::agents::kill_group(live.pid());
    let _ = live.wait(Duration::from_secs(10));
    let _ = daemon.0.kill();
}

/// Kills the daemon whatever happens to the bench.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Codex caller whose turns reach the scripted endpoint from the agents' HOME.
fn caller(
    agents: &AgentHome,
    endpoint: &ModelEndpoint,
    project: &std::path::Path,
) -> CallerContext {
    let home = agents.path().to_string_lossy().into_owned();
    CallerContext {
        cwd: Some(project.to_string_lossy().into_owned()),
        pid: std::process::id(),
        client_name: Some("codex-mcp-client".into()),
        codex_turn_metadata: Some(
            serde_json::json!({"thread_id": "019a0000-0000-7000-8000-00000000be02"}),
        ),
        settings: BTreeMap::from([(
            "CROSS_AGENT_CLAUDE_BIN".to_owned(),
            agent_binary(AgentKind::Claude)
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        )]),
        child_env: BTreeMap::from([
            (
                "PATH".to_owned(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
            ),
            ("HOME".to_owned(), home.clone()),
            ("TMPDIR".to_owned(), format!("{home}/tmp")),
            (
                "ANTHROPIC_BASE_URL".to_owned(),
                endpoint.anthropic_base_url(),
            ),
            ("ANTHROPIC_API_KEY".to_owned(), "test-key".to_owned()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_owned(),
                "1".to_owned(),
            ),
        ]),
        ..CallerContext::default()
    }
}

/// One send: (queue → Claude's receipt for a native one, send → answer paired, the record).
fn timed_send(
    client: &BlockingClient,
    caller: &CallerContext,
    session: &str,
    n: usize,
    text: &str,
) -> (Duration, Duration, DeliveryRecord) {
    let sent = Instant::now();
    let id = match client
        .call(SendParams {
            agent: Agent::Claude,
            message: format!("{text} {n}"),
            session_id: Some(session.to_owned()),
            new_session: false,
            scope: None,
            cwd: None,
            timeout: Some(120),
            conversation_id: None,
            raw: false,
            allow_same_agent: false,
            caller: caller.clone(),
        })
        .unwrap()
    {
        SendResponse::Accepted(receipt) => receipt.delivery_id,
        SendResponse::Refused(refusal) => panic!("refused: {refusal:?}"),
    };
    let mut receipt = None;
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let record = client
            .call(BridgeStatusParams {
                cwd: None,
                scope: None,
                delivery_id: Some(id.clone()),
                caller: caller.clone(),
            })
            .unwrap()
            .delivery
            .unwrap();
        if receipt.is_none()
            && (record
                .progress_note
                .as_deref()
                .is_some_and(|n| n.starts_with("sent natively"))
                || record.state.is_finished())
        {
            receipt = Some(sent.elapsed());
        }
        if record.state.is_finished() {
            return (receipt.unwrap_or_default(), sent.elapsed(), record);
        }
        assert!(Instant::now() < deadline, "not finished: {record:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn print_p95(label: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = ((sorted.len() - 1) as f64 * 0.95).round() as usize;
    println!("{label}: p95 {:.2?}", sorted[at]);
}

/// Processes whose working directory is a relay's.
fn relay_pids(root: &std::path::Path) -> Vec<u32> {
    let relays = root.join("relays");
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read_link(format!("/proc/{pid}/cwd"))
                        .is_ok_and(|cwd| cwd.starts_with(&relays))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn wait_for_daemon(home: &Home, options: &ConnectOptions) -> BlockingClient {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(client) = BlockingClient::connect(home, options) {
            return client;
        }
        assert!(Instant::now() < deadline, "the daemon did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn report(label: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    println!(
        "{label}: median {:.2?}, p90 {:.2?}, max {:.2?} ({} samples)",
        at(0.5),
        at(0.9),
        sorted[sorted.len() - 1],
        sorted.len()
    );
}
