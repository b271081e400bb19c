//! Claude's native peer door through the daemon, with real Claude Code on both sides (scripted
//! model): a live stream-json Claude session registers itself (`~/.claude/sessions/<pid>.json`)
//! on its first turn; the listing shows its registry name and busy/idle status; killed with
//! `-9` it leaves a stale entry and socket behind, and a send then resumes it over the CLI.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::{
    Agent, DeliveryRecord, DeliveryState, SendReceipt, SessionEntry, Transport,
};
use cross_agent_relay::CLAUDE_STREAM_JSON_ARGS;
use cross_agent_testkit::agents::{AgentKind, McpServer, agent_binary};
use cross_agent_testkit::endpoint::{Api, Reply, Rule, ToolCall};
use cross_agent_testkit::panel::{PanelDriver, claude_user};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::bridge_support::{Bridge, DaemonProcess};

/// A long-lived Claude Code session in stream-json mode, kept alive on its stdin (as an SDK
/// host or a terminal keeps one), in the bridge's temporary HOME.
pub struct LiveClaude {
    pub driver: PanelDriver,
    pub pid: u32,
    /// Its registry entry, `<HOME>/.claude/sessions/<pid>.json`.
    pub entry_path: PathBuf,
}

impl LiveClaude {
    /// Starts it with `--session-id`, runs one first turn (`seed`, which the endpoint must
    /// answer), and waits until it has registered itself.
    pub fn start(bridge: &Bridge, session_id: &str, seed: &str) -> LiveClaude {
        LiveClaude::start_with(bridge, session_id, seed, &[], &[])
    }

    /// As [`LiveClaude::start`], with more arguments and environment.
    pub fn start_with(
        bridge: &Bridge,
        session_id: &str,
        seed: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> LiveClaude {
        let claude = bridge.claude();
        let mut command = Command::new(claude.binary());
        command
            .arg("-p")
            .args(CLAUDE_STREAM_JSON_ARGS)
            .args(["--session-id", session_id])
            .args(args)
            .current_dir(&bridge.project)
            .env_clear()
            .envs(claude.env())
            .envs(env.iter().copied())
            // Its own group: a kill -9 of the group leaves nothing of it running.
            .process_group(0);
        let mut driver = PanelDriver::start(command).unwrap();
        driver.send(&claude_user(seed)).unwrap();
        let result = driver
            .next_of_type("result", Duration::from_secs(90))
            .unwrap();
        assert_eq!(result["is_error"], Value::Bool(false), "{result}");
        let pid = driver.pid();
        let entry_path = bridge
            .agents
            .path()
            .join(format!(".claude/sessions/{pid}.json"));
        let live = LiveClaude {
            driver,
            pid,
            entry_path,
        };
        live.wait_entry(|e| e["status"] == "idle");
        live
    }

    /// Its registry entry once `ready` holds for it.
    pub fn wait_entry(&self, ready: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let entry = std::fs::read(&self.entry_path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
            if let Some(entry) = entry.filter(|e| ready(e)) {
                return entry;
            }
            assert!(
                Instant::now() < deadline,
                "{} never showed the awaited registry entry",
                self.entry_path.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills its whole process group with SIGKILL: no chance to remove its entry or socket.
    pub fn kill_9(&mut self) {
        cross_agent_testkit::agents::kill_group(self.pid);
        let _ = self.driver.wait(Duration::from_secs(10));
    }
}

impl Drop for LiveClaude {
    fn drop(&mut self) {
        cross_agent_testkit::agents::kill_group(self.pid);
    }
}

/// The parts of a send's receipt the tests read.
struct Receipt {
    delivery_id: String,
    request_id: String,
}

/// The listing's entry for the Claude session `session_id`, as a Codex caller sees it.
async fn listed_claude(bridge: &Bridge, session_id: &str) -> SessionEntry {
    bridge
        .listed_session(
            Agent::Claude,
            session_id,
            bridge.codex_caller("019a0000-0000-7000-8000-00000000beef"),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_session_is_listed_with_its_registry_name_and_a_killed_one_resumes_over_the_cli() {
    let bridge = Bridge::start().await;
    script_seed(&bridge, "n1");
    let session_id = "6d1e0000-0000-4000-8000-0000000000a1".to_owned();
    let mut live = LiveClaude::start(&bridge, &session_id, &seed_prompt("n1"));
    let entry = live.wait_entry(|e| e["status"] == "idle");
    let name = entry["name"].as_str().unwrap().to_owned();
    let socket = PathBuf::from(entry["messagingSocketPath"].as_str().unwrap());
    assert!(socket.exists(), "{entry}");

    let listed = listed_claude(&bridge, &session_id).await;
    assert_eq!(listed.registry_name.as_deref(), Some(name.as_str()));
    assert_eq!(listed.registry_status.as_deref(), Some("idle"));
    // `cross-agent sessions` shows the same, as JSON and in the table.
    let sessions = |json: bool| {
        let mut command = Command::new(cross_agent_testkit::binaries::cross_agent_bin().unwrap());
        command
            .args(["sessions", "--agent", "claude"])
            .args(json.then_some("--json"))
            .env("CROSS_AGENT_HOME", bridge.state.root())
            .env("HOME", bridge.agents.path());
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let printed: Value = serde_json::from_str(&sessions(true)).unwrap();
    let row = printed["claude"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == session_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(row["registry_name"], name.as_str(), "{row}");
    assert_eq!(row["registry_status"], "idle", "{row}");
    let table = sessions(false);
    assert!(table.contains(&format!("live:{name}(idle)")), "{table}");

    // Killed outright: the entry and the socket stay behind, the session is dormant.
    live.kill_9();
    assert!(live.entry_path.exists(), "a SIGKILL leaves the entry");
    assert!(socket.exists(), "a SIGKILL leaves the socket");
    let listed = listed_claude(&bridge, &session_id).await;
    assert_eq!(listed.registry_name, None, "{listed:#?}");
    assert_eq!(listed.registry_status, None);
    assert!(!sessions(false).contains("live:"));

    bridge
        .endpoint
        .push(Rule::on_user_text("after the crash n1").reply(Reply::echo_token("resumed n1")));
    let receipt = send_to_session(
        &bridge,
        &session_id,
        "after the crash n1",
        "019a0000-0000-7000-8000-00000000beef",
        None,
    )
    .await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.transport, Transport::HeadlessCli, "{record:#?}");
    assert_delivered(&record, "resumed n1");
}

/// A bridge whose daemon is the real `cross-agent daemon run` process: relays run
/// `cross-agent hook …`, which must be the daemon's own program (an in-process daemon is the
/// test binary and hosts no relays).
pub async fn native_bridge() -> (Bridge, DaemonProcess) {
    let endpoint = cross_agent_testkit::endpoint::ModelEndpoint::start().unwrap();
    let agents = cross_agent_testkit::agents::AgentHome::new().unwrap();
    let project = agents.project("proj").unwrap();
    let state = super::TempHome::new();
    let user = state.dir.path().join("user");
    std::fs::create_dir_all(&user).unwrap();
    let (process, conn) =
        super::bridge_support::spawn_daemon_process(state.root(), &user, &[]).await;
    cross_agent_testkit::agents::Codex::new(&agents, &endpoint.openai_base_url()).unwrap();
    (
        Bridge {
            endpoint,
            agents,
            project,
            state,
            daemon: None,
            conn,
        },
        process,
    )
}

/// The decisions the daemon logged, one JSON value per line.
fn decisions(bridge: &Bridge) -> Vec<Value> {
    let text =
        std::fs::read_to_string(bridge.state.root().join("decisions.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn decision_of<'a>(all: &'a [Value], kind: &str, delivery: &str) -> Vec<&'a Value> {
    all.iter()
        .filter(|d| d["kind"] == kind && d["delivery"] == delivery)
        .collect()
}

/// The model prompts of the target's turns (requests to the scripted endpoint) that carry
/// `needle` anywhere in their messages.
fn target_requests_with(bridge: &Bridge, needle: &str) -> usize {
    bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|r| {
            Value::Array(r.messages.clone())
                .to_string()
                .contains(needle)
        })
        .count()
}

/// Processes whose working directory is a relay's (`<CROSS_AGENT_HOME>/relays/xa-…`).
fn relay_pids(bridge: &Bridge) -> Vec<u32> {
    let relays = bridge.state.root().join("relays");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&relays))
        })
        .collect()
}

/// The seed turn the live session of test `tag` takes first (a session registers itself on its
/// first turn); [`script_seed`] scripts its answer.
fn seed_prompt(tag: &str) -> String {
    format!("seed the live session {tag}")
}

/// Scripts the model's answer to the seed turn of test `tag`. Each test pushes it as its first
/// rule, before the rules of the turns it exercises.
fn script_seed(bridge: &Bridge, tag: &str) {
    bridge
        .endpoint
        .push(Rule::on_user_text(seed_prompt(tag)).reply(Reply::text(format!("ready {tag}"))));
}

/// [`native_bridge`] with the seed turn of test `tag` already scripted.
async fn native_bridge_seeded(tag: &str) -> (Bridge, DaemonProcess) {
    let (bridge, daemon) = native_bridge().await;
    script_seed(&bridge, tag);
    (bridge, daemon)
}

/// Scripts the live target's answer to a peer message: `answer` followed by the request's token,
/// sent back with SendMessage, then `replied <tag>` to end its turn.
fn script_peer_answer(bridge: &Bridge, answer: &str, tag: &str) {
    bridge
        .endpoint
        .script(Rule::peer_replies(answer, format!("replied {tag}")));
}

/// Sends `message` to the Claude session `session_id` for the Codex thread `caller_thread`;
/// the daemon must accept it. `timeout` is the send's own wait in seconds (`None`: the default).
async fn send_to_session(
    bridge: &Bridge,
    session_id: &str,
    message: &str,
    caller_thread: &str,
    timeout: Option<u64>,
) -> SendReceipt {
    let mut params = bridge.send_params(Agent::Claude, message, bridge.codex_caller(caller_thread));
    params.session_id = Some(session_id.to_owned());
    params.timeout = timeout;
    bridge.accepted(params).await
}

/// Asserts `record` was delivered and its answer begins with `answer`.
fn assert_delivered(record: &DeliveryRecord, answer: &str) {
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(
        record
            .reply_preview
            .as_deref()
            .is_some_and(|preview| preview.starts_with(answer)),
        "{record:#?}"
    );
}

/// Asserts `record` went through Claude's native door and was delivered with an answer that
/// begins with `answer`.
fn assert_delivered_natively(record: &DeliveryRecord, answer: &str) {
    assert_eq!(record.transport, Transport::ClaudeNative, "{record:#?}");
    assert_delivered(record, answer);
}

/// Asserts `record` went through Claude's native door and failed for good: its error names each
/// of `causes` and says the message was never re-sent (a native send is at most once).
fn assert_failed_natively(record: &DeliveryRecord, causes: &[&str]) {
    assert_eq!(record.transport, Transport::ClaudeNative, "{record:#?}");
    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    let error = record.error.as_deref().unwrap_or_default();
    for cause in causes.iter().chain(&["never re-sent"]) {
        assert!(error.contains(cause), "{record:#?}");
    }
}

/// The user prompts of the scripted model's requests that carry `needle`, oldest first.
fn user_prompts_with(bridge: &Bridge, needle: &str) -> Vec<String> {
    bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter_map(|r| r.last_user_prompt)
        .filter(|p| p.contains(needle))
        .collect()
}

/// The envelope in which the live session's model first saw `message`.
fn envelope_of(bridge: &Bridge, message: &str) -> String {
    user_prompts_with(bridge, message)
        .into_iter()
        .next()
        .expect("the live session's model saw the message")
}

/// The one `kind` decision the daemon logged for `delivery`, asserted to have `outcome`.
fn sole_decision(bridge: &Bridge, kind: &str, delivery: &str, outcome: &str) -> Value {
    let logged = decisions(bridge);
    let found = decision_of(&logged, kind, delivery);
    assert_eq!(found.len(), 1, "{logged:#?}");
    assert_eq!(found[0]["outcome"], outcome, "{}", found[0]);
    found[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_callers_message_reaches_a_live_claude_natively_and_its_answer_is_paired() {
    let (bridge, _daemon) = native_bridge_seeded("n2").await;
    script_peer_answer(&bridge, "native answer n2", "n2");
    let session_id = "6d1e0000-0000-4000-8000-0000000000a2";
    let live = LiveClaude::start(&bridge, session_id, &seed_prompt("n2"));
    // The caller is a real `codex exec` whose model calls `send_to_claude` through the
    // cross-agent MCP server, which reaches this daemon.
    bridge.endpoint.push(
        Rule::on_user_text("ask the live claude n2")
            .tool_call(ToolCall::mcp(
                "cross-agent",
                "send_to_claude",
                json!({"message": "please look at the flaky test n2", "session_id": session_id}),
            ))
            .for_api(Api::Responses),
    );
    bridge.endpoint.push(
        Rule::on_tool_result("delivery_id")
            .reply_text("sent to claude n2")
            .for_api(Api::Responses),
    );
    let claude_bin = agent_binary(AgentKind::Claude).unwrap();
    let server = McpServer::new(
        "cross-agent",
        cross_agent_testkit::binaries::cross_agent_bin().unwrap(),
    )
    .arg("mcp")
    .env("CROSS_AGENT_HOME", bridge.state.root().to_string_lossy())
    .env("HOME", bridge.agents.path().to_string_lossy())
    .env("PATH", std::env::var("PATH").unwrap_or_default())
    .env("CROSS_AGENT_CLAUDE_BIN", claude_bin.to_string_lossy());
    let codex = bridge.codex().with_mcp_server(server).unwrap();
    let run = codex
        .turn(&bridge.project, "ask the live claude n2")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    assert_eq!(run.final_message(), Some("sent to claude n2"));
    let thread = run.thread_id().unwrap().to_owned();
    let tool_result = bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter_map(|r| r.last_tool_result)
        .find(|t| t.contains("delivery_id"))
        .unwrap();
    let receipt: Value = serde_json::from_str(
        &tool_result[tool_result.find('{').unwrap()..=tool_result.rfind('}').unwrap()],
    )
    .unwrap();
    assert_eq!(receipt["accepted"], json!(true), "{receipt}");
    let receipt = Receipt {
        delivery_id: receipt["delivery_id"].as_str().unwrap().to_owned(),
        request_id: receipt["request_id"].as_str().unwrap().to_owned(),
    };
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_delivered_natively(&record, "native answer n2");
    // The person's process is never named as one the bridge may stop.
    assert_eq!(record.peer_pid, None);
    assert!(cross_agent_process::is_alive(live.pid));
    let answer = record.reply_preview.clone().unwrap();
    assert!(answer.ends_with(&receipt.request_id), "{answer}");
    assert!(record.answer.reply_carries_request_id, "{record:#?}");

    // The live session's model got the message as Claude's own peer envelope, from a relay.
    let envelope = envelope_of(&bridge, "please look at the flaky test n2");
    assert!(
        envelope.contains("<cross-session-message from=\"uds:"),
        "{envelope}"
    );
    let short: String = thread.chars().filter(|c| *c != '-').take(8).collect();
    assert!(
        envelope.contains(&format!("from-name=\"xa-codex-{short}-on-")),
        "{envelope}"
    );
    assert_eq!(record.from_session.as_deref(), Some(thread.as_str()));
    assert!(envelope.contains(&receipt.request_id), "{envelope}");
    // The answer came back through the relay's hook: no model request anywhere carries it as
    // a prompt (the relay's own endpoint runs no model, and the scripted model never saw it).
    assert_eq!(
        user_prompts_with(&bridge, "native answer n2"),
        Vec::<String>::new()
    );
    sole_decision(&bridge, "native_receipt", &receipt.delivery_id, "sent");
    sole_decision(&bridge, "native_inbound", &receipt.delivery_id, "message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_send_goes_through_the_cli_relay() {
    let (bridge, _daemon) = native_bridge_seeded("n3").await;
    script_peer_answer(&bridge, "shell answer n3", "n3");
    let session_id = "6d1e0000-0000-4000-8000-0000000000a3";
    let _live = LiveClaude::start(&bridge, session_id, &seed_prompt("n3"));

    // `cross-agent send` from a shell: no session of its own.
    let exe = cross_agent_testkit::binaries::cross_agent_bin().unwrap();
    let mut command = Command::new(exe);
    command
        .args([
            "send",
            "claude",
            "--session",
            session_id,
            "--json",
            "hello from a shell n3",
        ])
        .current_dir(&bridge.project)
        .env_clear()
        .env("CROSS_AGENT_HOME", bridge.state.root())
        .env(
            "CROSS_AGENT_CLAUDE_BIN",
            cross_agent_testkit::agents::agent_binary(
                cross_agent_testkit::agents::AgentKind::Claude,
            )
            .unwrap(),
        );
    for (key, value) in bridge.child_env() {
        command.env(key, value);
    }
    let output =
        cross_agent_testkit::agents::run_with_timeout(command, Duration::from_secs(240)).unwrap();
    assert!(output.status.success(), "{output:?}");
    let response: cross_agent_protocol::bridge::SendResponse =
        serde_json::from_str(&output.stdout).unwrap();
    let cross_agent_protocol::bridge::SendResponse::Accepted(receipt) = response else {
        panic!("refused: {response:?}");
    };
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_delivered_natively(&record, "shell answer n3");
    assert_eq!(record.from_session, None);
    let envelope = envelope_of(&bridge, "hello from a shell n3");
    assert!(envelope.contains("from-name=\"xa-cli-on-"), "{envelope}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_dying_mid_send_fails_with_claudes_dead_receipt() {
    let (bridge, _daemon) = native_bridge_seeded("n4").await;
    let session_id = "6d1e0000-0000-4000-8000-0000000000a4";
    let mut live = LiveClaude::start(&bridge, session_id, &seed_prompt("n4"));
    let receipt = send_to_session(
        &bridge,
        session_id,
        "this one will not arrive n4",
        "019a0000-0000-7000-8000-0000000000b4",
        None,
    )
    .await;
    // Handed to the native door (the relay is starting): the target dies now.
    bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(60), |r| {
            r.state == DeliveryState::AwaitingPeer
        })
        .await;
    live.kill_9();
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_failed_natively(&record, &["Claude's receipt: dead"]);
    assert!(record.is_undelivered, "{record:#?}");
    sole_decision(&bridge, "native_receipt", &receipt.delivery_id, "dead");
    assert_eq!(
        target_requests_with(&bridge, "this one will not arrive n4"),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_killed_mid_send_leaves_the_delivery_failed_and_never_resent() {
    let (bridge, _daemon) = native_bridge_seeded("n5").await;
    script_peer_answer(&bridge, "should not happen n5", "n5");
    let session_id = "6d1e0000-0000-4000-8000-0000000000a5";
    let _live = LiveClaude::start(&bridge, session_id, &seed_prompt("n5"));
    let receipt = send_to_session(
        &bridge,
        session_id,
        "the relay dies before this n5",
        "019a0000-0000-7000-8000-0000000000b5",
        None,
    )
    .await;
    // The relay's Claude Code is killed as soon as it runs, before it can send.
    let deadline = Instant::now() + Duration::from_secs(60);
    let killed = loop {
        let pids = relay_pids(&bridge);
        if !pids.is_empty() {
            for pid in &pids {
                cross_agent_testkit::agents::kill_group(*pid);
            }
            break pids;
        }
        assert!(Instant::now() < deadline, "no relay process appeared");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(!killed.is_empty());
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_failed_natively(&record, &[]);
    // Nothing goes out later: after a while the target has still not seen it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        target_requests_with(&bridge, "the relay dies before this n5"),
        0
    );
    let again = bridge
        .status(Some(&receipt.delivery_id))
        .await
        .delivery
        .unwrap();
    assert_eq!(again.state, DeliveryState::Failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_in_another_permission_mode_gets_a_relay_in_its_mode_and_takes_the_message() {
    let (bridge, _daemon) = native_bridge_seeded("n6").await;
    script_peer_answer(&bridge, "bypass answer n6", "n6");
    let session_id = "6d1e0000-0000-4000-8000-0000000000a6";
    // Claude refuses bypass mode as root unless told it runs in a sandbox (this child only).
    let _live = LiveClaude::start_with(
        &bridge,
        session_id,
        &seed_prompt("n6"),
        &["--permission-mode", "bypassPermissions"],
        &[("IS_SANDBOX", "1")],
    );
    let receipt = send_to_session(
        &bridge,
        session_id,
        "a message across permission modes n6",
        "019a0000-0000-7000-8000-0000000000b6",
        Some(120),
    )
    .await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    // A relay in the default class would have been held ("held, not delivered"); this one ran
    // in the target's own mode, read from its transcript, and the message went straight in.
    assert_delivered_natively(&record, "bypass answer n6");
    assert!(
        !record
            .progress_note
            .as_deref()
            .unwrap_or_default()
            .contains("held"),
        "{record:#?}"
    );
    let envelope = envelope_of(&bridge, "a message across permission modes n6");
    assert!(
        envelope.contains("-bypass--"),
        "the bypass-class relay sent it: {envelope}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_switched_to_bypass_holds_the_message_until_its_host_releases_it() {
    let (bridge, _daemon) = native_bridge_seeded("n8").await;
    script_peer_answer(&bridge, "held answer n8", "n8");
    let session_id = "6d1e0000-0000-4000-8000-0000000000a8";
    // Its first turn runs in the default mode, so its transcript says `default`. Claude allows
    // the later switch to bypass only when launched with the bypass option
    // (`bypass_not_launched` otherwise), and as root only when told it runs in a sandbox
    // (this child only).
    let mut live = LiveClaude::start_with(
        &bridge,
        session_id,
        &seed_prompt("n8"),
        &["--allow-dangerously-skip-permissions"],
        &[("IS_SANDBOX", "1")],
    );
    // The host switches it to bypass over stream-json; no user turn follows, so the transcript
    // still says `default` and the hub starts a relay in the prompting class: a real mismatch.
    live.driver
        .send(
            &json!({"type": "control_request", "request_id": "mode-n8", "request":
                {"subtype": "set_permission_mode", "mode": "bypassPermissions"}})
            .to_string(),
        )
        .unwrap();
    let switched = live
        .driver
        .next_line(Duration::from_secs(30), |l| {
            l["type"] == "control_response" && l["response"]["request_id"] == "mode-n8"
        })
        .unwrap();
    assert_eq!(switched["response"]["subtype"], "success", "{switched}");

    let receipt = send_to_session(
        &bridge,
        session_id,
        "a message the target holds n8",
        "019a0000-0000-7000-8000-0000000000b8",
        Some(150),
    )
    .await;
    // The target holds it: its host sees the hold on its stdout, its Claude has not seen it.
    let hold = live
        .driver
        .next_line(Duration::from_secs(90), |l| {
            l["type"] == "system" && l["subtype"] == "peer_message_hold" && l["state"] == "held"
        })
        .unwrap();
    assert_eq!(hold["cause"], "mode-mismatch", "{hold}");
    let hold_id = hold["hold_id"].as_str().unwrap().to_owned();
    let held = bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(60), |r| {
            r.progress_note
                .as_deref()
                .is_some_and(|n| n.starts_with("held, not delivered"))
        })
        .await;
    assert_eq!(held.transport, Transport::ClaudeNative, "{held:#?}");
    assert_eq!(held.state, DeliveryState::AwaitingPeer, "{held:#?}");
    assert_eq!(held.reply_preview, None, "{held:#?}");
    assert_eq!(
        target_requests_with(&bridge, "a message the target holds n8"),
        0
    );
    let notice = sole_decision(
        &bridge,
        "native_inbound",
        &receipt.delivery_id,
        "delivery_notice",
    );
    assert_eq!(notice["details"]["status"], "held", "{notice}");

    // Its host releases it: the turn runs and the answer is paired with the delivery.
    live.driver
        .send(
            &json!({"type": "control_request", "request_id": "hold-n8", "request":
                {"subtype": "decide_held_peer_message", "hold_id": hold_id, "decision": "deliver"}})
            .to_string(),
        )
        .unwrap();
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_delivered_natively(&record, "held answer n8");
    // Released, the target's model saw it (its answer turn calls SendMessage, so more than one
    // request carries it).
    assert!(target_requests_with(&bridge, "a message the target holds n8") > 0);
    // The answer came back through the relay's hook and was paired with this delivery.
    let logged = decisions(&bridge);
    let outcomes: Vec<&Value> = decision_of(&logged, "native_inbound", &receipt.delivery_id)
        .into_iter()
        .map(|d| &d["outcome"])
        .collect();
    assert!(outcomes.contains(&&json!("message")), "{logged:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_live_session_takes_the_message_into_its_inbox_without_waiting() {
    let (bridge, _daemon) = native_bridge_seeded("n7").await;
    // The person's own turn is slow: the session is busy when the message comes.
    bridge.endpoint.push(
        Rule::on_user_text("a long task n7")
            .reply(Reply::text("long task done n7").delay(Duration::from_secs(6))),
    );
    script_peer_answer(&bridge, "busy answer n7", "n7");
    let session_id = "6d1e0000-0000-4000-8000-0000000000a7";
    let mut live = LiveClaude::start(&bridge, session_id, &seed_prompt("n7"));
    live.driver.send(&claude_user("a long task n7")).unwrap();
    live.wait_entry(|e| e["status"] == "busy");

    let receipt = send_to_session(
        &bridge,
        session_id,
        "while you work n7",
        "019a0000-0000-7000-8000-0000000000b7",
        Some(120),
    )
    .await;
    // Sent natively while the session is still busy: Claude's inbox holds it for the next turn.
    let sent = bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(60), |r| {
            r.progress_note
                .as_deref()
                .is_some_and(|n| n.starts_with("sent natively"))
                || r.state.is_finished()
        })
        .await;
    assert_eq!(sent.transport, Transport::ClaudeNative, "{sent:#?}");
    assert!(
        !live
            .driver
            .lines()
            .iter()
            .any(|l| l["result"] == "long task done n7"),
        "sent only after the busy turn ended: {sent:#?}"
    );
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_delivered_natively(&record, "busy answer n7");
    // The person's own turn finished undisturbed.
    let done = live
        .driver
        .next_line(Duration::from_secs(60), |line| {
            line["type"] == "result" && line["result"] == "long task done n7"
        })
        .unwrap();
    assert_eq!(done["is_error"], Value::Bool(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_the_timeout_is_recorded_as_a_late_answer() {
    let (bridge, _daemon) = native_bridge_seeded("n8").await;
    // The target takes longer to answer than the sender waits.
    bridge.endpoint.push(
        Rule::on_peer_message()
            .reply(Reply::peer_reply("late answer n8").delay(Duration::from_secs(8))),
    );
    bridge
        .endpoint
        .push(Rule::on_tool_result("\"success\"").reply_text("replied n8"));
    let session_id = "6d1e0000-0000-4000-8000-0000000000a8";
    let _live = LiveClaude::start(&bridge, session_id, &seed_prompt("n8"));
    let receipt = send_to_session(
        &bridge,
        session_id,
        "answer when you can n8",
        "019a0000-0000-7000-8000-0000000000b8",
        Some(3),
    )
    .await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_failed_natively(&record, &["no answer came back within 3s"]);
    // The answer still comes back through the relay, and is filed as the request's late answer.
    let record = bridge
        .wait_record(&receipt.delivery_id, Duration::from_secs(60), |r| {
            r.late_reply_delivery_id.is_some()
        })
        .await;
    let late_id = record.late_reply_delivery_id.clone().unwrap();
    let late = bridge.status(Some(&late_id)).await.delivery.unwrap();
    assert_delivered(&late, "late answer n8");
    assert_eq!(
        late.answer.answers_delivery_id.as_deref(),
        Some(receipt.delivery_id.as_str())
    );
}
