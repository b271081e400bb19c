//! Sending to Copilot through the daemon, printed as figures beside issue 25's goals (`cargo
//! bench -p cross-agent-daemon --bench copilot`; `cargo test -p cross-agent-daemon --bench
//! copilot` runs it with small counts). No timed assertions: the goals are read off the output.
//!
//! The daemon runs in a child process (this bench re-executed with `CROSS_AGENT_BENCH_DAEMON=1`,
//! the same `entry::run_process` as `cross-agent daemon run`). The Copilot session is in VS
//! Code's catalog under the bench's HOME, served by the testkit's fake Agent Host (AHP over its
//! Unix socket, registry entry and all) answering through the scripted model endpoint; the
//! headless-CLI floor is a Claude session answered by a fast stand-in `claude`. Measured:
//!
//! - the `send_to_copilot` receipt (send on a warm connection → receipt, the host up), 200
//!   times, interleaved with the same receipt for a headless-CLI send in the same run (the
//!   bridge bench's figure), beside the goal of 20 ms;
//! - `chat/turnComplete` → the record settled with the answer, 100 turns one after another,
//!   beside the goal of 5 ms. The near end is the instant the fake host queued the
//!   `chat/turnComplete` for its connections (wall clock, the fake's `CompletedTurn::at`); the far end
//!   is the record's `finished_at`, stamped when the daemon closes the delivery with the
//!   answer paired, just before it writes the record and publishes `Delivered`. The record's
//!   stamp has whole milliseconds (truncated), so each sample reads up to 1 ms short; the
//!   figures add that millisecond back, to err on the slow side;
//! - for a Copilot sender, whose answer goes back into its own chat through its host (the
//!   answer leaving the daemon in the literal sense): `chat/turnComplete` of the answering
//!   chat → the host reading the return's `chat/turnStarted` for the sender's chat, both on
//!   the fake host's clock, 100 times; and of that, the part before the return's first request
//!   to the host (its `dispatchAction` on the connection the carrier keeps for the host, with
//!   the sender's session and chat kept subscribed; `subscribe` the first time, `initialize`
//!   when it had to connect): the rest is the AHP exchange.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant, UNIX_EPOCH};

use cross_agent_daemon::entry::{Mode, run_process};
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_protocol::bridge::{
    Agent, AncestorProcess, BridgeStatusParams, CallerContext, DeliveryRecord, DeliveryState,
    SendParams, SendResponse, Transport,
};
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams};
use cross_agent_protocol::timestamp::UnixMillis;
use cross_agent_testkit::agent_host::{FakeAgentHost, FakeSession, TurnScript};
use cross_agent_testkit::endpoint::{ModelEndpoint, Reply, Rule};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, CopilotEditor, now_millis};

use common::{CHILD_VAR, Place, report, spawn, stand_in, wait_for_daemon};

/// Issue 25's goals.
const RECEIPT_GOAL: Duration = Duration::from_millis(20);
const SETTLE_GOAL: Duration = Duration::from_millis(5);

const CLAUDE_SESSION: &str = "00000000-0000-4000-8000-00000000c0de";
const COPILOT_TITLE: &str = "copilot-bench";
const ASKER_TITLE: &str = "copilot-bench-asker";

fn main() {
    if std::env::var_os(CHILD_VAR).is_some() {
        run_process(Home::from_env().unwrap(), Mode::Detached).unwrap();
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --bench copilot` does not.
    let full = std::env::args().any(|arg| arg == "--bench");
    let (sends, turns) = if full { (200, 100) } else { (10, 5) };
    let Place {
        tmp,
        user,
        home,
        cwd,
    } = Place::new();
    let now = now_millis();
    let mut transcript = ClaudeTranscript::new(&user, &cwd, CLAUDE_SESSION);
    transcript
        .user("hello", now - 60_000)
        .assistant_text("hi", now - 59_000);
    transcript.write().unwrap();
    let peer = stand_in(tmp.path(), 0);

    // The Copilot session in VS Code's catalog (the default Linux place under HOME), and its
    // editor's Agent Host, running.
    let editor = CopilotEditor::new(&user.join(".config/Code"));
    let copilot_id = uuid::Uuid::new_v4().to_string();
    editor
        .register(&format!("copilotcli:/{copilot_id}"), now - 60_000, now)
        .unwrap();
    editor
        .session(&copilot_id)
        .unwrap()
        .title(COPILOT_TITLE)
        .unwrap()
        .default_chat(&uuid::Uuid::new_v4().to_string(), "gpt-5")
        .unwrap()
        .working_directory(&cwd)
        .unwrap();
    // The sender of the third figure: another chat of the same editor, whose answers go back
    // into it through the same host.
    let asker_id = uuid::Uuid::new_v4().to_string();
    let asker_sdk = uuid::Uuid::new_v4().to_string();
    editor
        .register(&format!("copilotcli:/{asker_id}"), now - 60_000, now)
        .unwrap();
    editor
        .session(&asker_id)
        .unwrap()
        .title(ASKER_TITLE)
        .unwrap()
        .default_chat(&asker_sdk, "gpt-5")
        .unwrap()
        .working_directory(&cwd)
        .unwrap();
    let asker_chat = FakeSession::new(ASKER_TITLE).id(&asker_id).chat_uri();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("BRIDGE REPLY").reply_text("noted"));
    endpoint.push(Rule::on_user_text("copilot bench").reply(Reply::echo_token("bench answer")));
    let host = FakeAgentHost::builder(&editor.user_data)
        .model_endpoint(&endpoint)
        .session(
            FakeSession::new(COPILOT_TITLE)
                .id(&copilot_id)
                .cwd(&cwd)
                .script(TurnScript::Answer),
        )
        .session(FakeSession::new(ASKER_TITLE).id(&asker_id).cwd(&cwd))
        .start()
        .unwrap();

    let user_var = user.to_string_lossy().into_owned();
    let mut child = spawn(&home, &[("HOME", &user_var)]);
    let client = wait_for_daemon(&home, &ConnectOptions::new(ClientKind::Other));
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
            ("HOME".to_owned(), user_var.clone()),
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ]),
        ..CallerContext::default()
    };
    let to_copilot = |n: usize| SendParams {
        session_id: Some(copilot_id.clone()),
        ..send(Agent::Copilot, format!("copilot bench {n}"), &caller)
    };
    let to_claude = |n: usize| SendParams {
        session_id: Some(CLAUDE_SESSION.to_owned()),
        ..send(Agent::Claude, format!("cli bench {n}"), &caller)
    };

    // Warm: the catalogs read, the host's registry seen, one turn of each carried.
    for params in [to_copilot(0), to_claude(0)] {
        let (id, _) = receipt(&client, params);
        let record = wait_finished(&client, &caller, &id);
        assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    }

    let mut copilot_receipts = Vec::with_capacity(sends);
    let mut cli_receipts = Vec::with_capacity(sends);
    let mut ids = Vec::with_capacity(2 * sends);
    for n in 1..=sends {
        let (id, took) = receipt(&client, to_copilot(n));
        copilot_receipts.push(took);
        ids.push(id);
        let (id, took) = receipt(&client, to_claude(n));
        cli_receipts.push(took);
        ids.push(id);
    }
    report(
        "send_to_copilot receipt (warm connection, host up)",
        &copilot_receipts,
    );
    report(
        "headless-CLI send receipt, same run (the floor)",
        &cli_receipts,
    );
    println!("  goal: the send_to_copilot receipt ≤ {RECEIPT_GOAL:.0?}");
    // The load drains before the next figure: nothing lost.
    for id in &ids {
        let record = wait_finished(&client, &caller, id);
        assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    }

    let mut settled = Vec::with_capacity(turns);
    for n in 0..turns {
        let before = host.completed_turns().len();
        let (id, _) = receipt(&client, to_copilot(sends + 1 + n));
        let record = wait_finished(&client, &caller, &id);
        assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
        assert_eq!(record.transport, Transport::AgentHost);
        assert!(
            record
                .reply_preview
                .as_deref()
                .unwrap_or_default()
                .starts_with("bench answer"),
            "{record:#?}"
        );
        let completed = host.completed_turns();
        assert_eq!(completed.len(), before + 1, "one turn per send");
        let sent_us = completed[before]
            .at
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros();
        let finished = UnixMillis::parse_rfc3339(record.finished_at.as_deref().unwrap()).unwrap();
        // The stamp's millisecond is truncated: its end is the latest the record could be.
        let finished_us = u128::try_from(finished.0 + 1).unwrap() * 1000;
        settled.push(Duration::from_micros(
            u64::try_from(finished_us.saturating_sub(sent_us)).unwrap(),
        ));
    }
    report(
        "chat/turnComplete → record settled with the answer (≤, 1 ms stamp)",
        &settled,
    );
    println!("  goal: the answer leaves the daemon ≤ {SETTLE_GOAL:.0?} after chat/turnComplete");

    // A Copilot sender: its MCP process (a stand-in child) below the host's owner, this process.
    let mut mcp = Command::new("sleep").arg("600").spawn().unwrap();
    let from_copilot = CallerContext {
        client_name: None,
        codex_turn_metadata: None,
        copilot_agent_session_id: Some(asker_sdk.clone()),
        pid: mcp.id(),
        ancestry: vec![AncestorProcess {
            pid: std::process::id(),
            name: "code".into(),
            cmdline: "code --agent-host".into(),
        }],
        ..caller.clone()
    };
    let mut returned = Vec::with_capacity(turns);
    let mut before_connecting = Vec::with_capacity(turns);
    for n in 0..turns {
        let before = host.completed_turns().len();
        let params = SendParams {
            session_id: Some(copilot_id.clone()),
            ..send(
                Agent::Copilot,
                format!("copilot bench back {n}"),
                &from_copilot,
            )
        };
        let (id, _) = receipt(&client, params);
        let record = wait_finished(&client, &caller, &id);
        assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
        let back = record
            .return_delivery_id
            .clone()
            .expect("a return delivery");
        let back = wait_finished(&client, &caller, &back);
        assert_eq!(back.state, DeliveryState::Delivered, "{back:#?}");
        // The sender's chat reads the answer in a turn of its own: over before the next send,
        // so the next answer never finds that chat busy.
        let deadline = Instant::now() + Duration::from_secs(60);
        while host.completed_turns().len() < before + 2 {
            assert!(Instant::now() < deadline, "the sender's turn did not end");
            std::thread::sleep(Duration::from_millis(2));
        }
        let answered = host.completed_turns()[before].clone();
        assert_eq!(
            answered.chat,
            FakeSession::new(COPILOT_TITLE).id(&copilot_id).chat_uri()
        );
        let (_, arrived) = host
            .dispatched_at()
            .into_iter()
            .filter(|(d, _)| {
                d["channel"] == asker_chat && d["action"]["type"] == "chat/turnStarted"
            })
            .nth(n)
            .expect("the answer put into the sender's chat");
        returned.push(arrived.duration_since(answered.at).unwrap_or_default());
        // Where that time goes: the return's first request to the host (its
        // `dispatchAction` once the kept connection holds the sender's chat subscribed;
        // `subscribe` the first time; `initialize` on a fresh connection); before it: the
        // record closed, the return queued and claimed, its route checked (and, without a
        // kept connection, the socket connected and upgraded).
        let first = host
            .received_at()
            .into_iter()
            .find(|(m, at)| {
                *at > answered.at
                    && ["initialize", "subscribe", "dispatchAction"]
                        .contains(&m["method"].as_str().unwrap_or_default())
            })
            .map(|(_, at)| at)
            .unwrap();
        before_connecting.push(first.duration_since(answered.at).unwrap_or_default());
        if n < 2 {
            let methods: Vec<String> = host
                .received_at()
                .into_iter()
                .filter(|(_, at)| *at > answered.at && *at <= arrived)
                .map(|(m, _)| m["method"].as_str().unwrap_or("?").to_owned())
                .collect();
            println!(
                "  return {}'s messages to the host: {}",
                n + 1,
                methods.join(", ")
            );
        }
    }
    report(
        "chat/turnComplete → the answer's turn received by the sender's host",
        &returned,
    );
    report(
        "  of which: chat/turnComplete → the return's first request (the rest: the AHP exchange)",
        &before_connecting,
    );
    println!("  goal: the answer leaves the daemon ≤ {SETTLE_GOAL:.0?} after chat/turnComplete");
    let _ = mcp.kill();
    let _ = mcp.wait();

    let _ = client.call(ShutdownParams {
        reason: Some("bench done".into()),
    });
    let _ = child.wait();
}

fn send(agent: Agent, message: String, caller: &CallerContext) -> SendParams {
    SendParams {
        agent,
        message,
        session_id: None,
        new_session: false,
        scope: None,
        cwd: None,
        timeout: None,
        conversation_id: None,
        raw: false,
        allow_same_agent: false,
        caller: caller.clone(),
    }
}

/// The delivery id and how long the receipt took.
fn receipt(client: &BlockingClient, params: SendParams) -> (String, Duration) {
    let sent = Instant::now();
    match client.call(params).unwrap() {
        SendResponse::Accepted(receipt) => (receipt.delivery_id, sent.elapsed()),
        SendResponse::Refused(refusal) => panic!("refused: {refusal:?}"),
    }
}

fn wait_finished(client: &BlockingClient, caller: &CallerContext, id: &str) -> DeliveryRecord {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status = client
            .call(BridgeStatusParams {
                cwd: None,
                scope: None,
                delivery_id: Some(id.to_owned()),
                caller: caller.clone(),
            })
            .unwrap();
        let record = status.delivery.unwrap();
        if record.state.is_finished() {
            return record;
        }
        assert!(Instant::now() < deadline, "not finished: {record:#?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
