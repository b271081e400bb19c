//! A variable the child environment baseline withheld, named when a real relay fails for want
//! of it (docs/spec/cross-agent-mcp.md §7, "What a spawned agent CLI inherits"). The sender is the real
//! `cross-agent send`, so what is withheld is what the thin process decides from a real
//! environment, not a list a test wrote; the peer is a real `codex exec resume`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cross_agent_protocol::bridge::{BridgeStatusResponse, DeliveryState, SendResponse};
use cross_agent_testkit::agents::{AgentKind, agent_binary, run_with_timeout};
use cross_agent_testkit::endpoint::Rule;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::bridge_support::Bridge;

/// What the sender's `ACC_KEY` holds: it must never be seen anywhere the bridge writes.
const ACC_KEY_VALUE: &str = "acc-key-value-5e1c";

/// `cross-agent <args>` from a shell in the project: the bridge's test environment plus the
/// variables of a user whose Codex provider reads its key from `ACC_KEY`, none of them named in
/// `CROSS_AGENT_CHILD_ENV`.
fn sender(bridge: &Bridge, args: &[&str]) -> Command {
    let mut command = Command::new(cross_agent_testkit::binaries::cross_agent_bin().unwrap());
    command
        .args(args)
        .current_dir(&bridge.project)
        .env_clear()
        .envs(bridge.child_env())
        .env("CROSS_AGENT_HOME", bridge.state.root())
        .env(
            "CROSS_AGENT_CODEX_BIN",
            agent_binary(AgentKind::Codex).unwrap(),
        )
        .env("ACC_KEY", ACC_KEY_VALUE)
        .env("EDITOR", "vi")
        .env("GITHUB_TOKEN", "ghp-not-needed");
    command
}

/// Makes the Codex home's provider one that reads its key from `ACC_KEY`, the way custom
/// providers are set up (`model_provider` and `[model_providers.acc]`), keeping the rest of the
/// scripted config.
fn select_a_provider_keyed_by_acc_key(bridge: &Bridge) {
    let path = bridge.agents.codex_home().join("config.toml");
    let scripted = std::fs::read_to_string(&path).unwrap();
    let selected = "model_provider = \"scripted\"\n";
    assert!(scripted.contains(selected), "{scripted}");
    let config = format!(
        "{}\n[model_providers.acc]\nname = \"acc\"\nbase_url = \"{}\"\n\
         wire_api = \"responses\"\nenv_key = \"ACC_KEY\"\nrequest_max_retries = 0\n\
         stream_max_retries = 0\n",
        scripted.replace(selected, "model_provider = \"acc\"\n"),
        bridge.endpoint.openai_base_url()
    );
    std::fs::write(&path, config).unwrap();
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(files_containing(&path, needle));
        } else if kind.is_file()
            && std::fs::read(&path)
                .unwrap_or_default()
                .windows(needle.len())
                .any(|window| window == needle)
        {
            found.push(path.display().to_string());
        }
    }
    found
}

/// A Codex provider reading its key from an ordinary name (`ACC_KEY`) the sender has but the
/// baseline withholds: the real Codex fails for want of it, and the record, the decision and
/// the status the sender reads all say that cross-agent withheld ACC_KEY and how to pass it —
/// naming neither the other withheld names nor the value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_fails_for_a_withheld_provider_key_names_it() {
    let bridge = Bridge::start().await;
    // A thread of that provider (Codex keeps a thread's provider: a resume may not change it),
    // started by the user with the key set.
    let codex = bridge.codex().with_env("ACC_KEY", ACC_KEY_VALUE);
    select_a_provider_keyed_by_acc_key(&bridge);
    bridge.endpoint.push(
        Rule::on_user_text("seed withheld w1")
            .reply_text("seeded")
            .once(),
    );
    let seeded = codex
        .turn(&bridge.project, "seed withheld w1")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let thread = seeded.thread_id().unwrap().to_owned();

    let sent = run_with_timeout(
        sender(
            &bridge,
            &[
                "send",
                "codex",
                "--session",
                &thread,
                "--json",
                "needs its key w1",
            ],
        ),
        Duration::from_secs(120),
    )
    .unwrap();
    assert!(sent.status.success(), "{sent:?}");
    let SendResponse::Accepted(receipt) = serde_json::from_str(&sent.stdout).unwrap() else {
        panic!("refused: {sent:?}");
    };
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    let error = record.error.clone().unwrap();
    let hint = "cross-agent withheld ACC_KEY from the spawned codex CLI; pass it with \
                CROSS_AGENT_CHILD_ENV=ACC_KEY in the env of the sender's cross-agent \
                registration (Codex's provider `acc` reads its key from it)";
    // Codex's own words follow: it failed for want of the key, not for anything else.
    assert!(
        error.starts_with("the codex CLI failed (exit code ")
            && error.contains(&format!(
                "): {hint}. It said: Missing environment variable: `ACC_KEY`"
            )),
        "{error}"
    );
    for other in [
        "SCRIPTED_KEY",
        "EDITOR",
        "GITHUB_TOKEN",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(!error.contains(other), "only ACC_KEY is named: {error}");
    }
    assert!(
        bridge.endpoint.model_requests().iter().all(|r| !r
            .last_user_prompt
            .as_deref()
            .unwrap_or("")
            .contains("needs its key w1")),
        "the turn never reached the model"
    );

    // The decision's one-line reason carries the hint.
    let decisions = std::fs::read_to_string(bridge.state.root().join("decisions.jsonl")).unwrap();
    let outcome: Vec<Value> = decisions
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|d| d["kind"] == "delivery_outcome" && d["delivery"] == receipt.delivery_id)
        .collect();
    assert_eq!(outcome.len(), 1, "{decisions}");
    assert!(
        outcome[0]["reason"].as_str().unwrap().contains(hint),
        "{}",
        outcome[0]
    );

    // The sender's own `cross-agent status` shows the same error.
    let status = run_with_timeout(
        sender(&bridge, &["status", &receipt.delivery_id, "--json"]),
        Duration::from_secs(60),
    )
    .unwrap();
    assert!(status.status.success(), "{status:?}");
    let status: BridgeStatusResponse = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(
        status.delivery.unwrap().error.as_deref(),
        Some(error.as_str())
    );

    // The value never left the sender: not in the record, nor in any file of the bridge.
    assert!(!format!("{record:?}").contains(ACC_KEY_VALUE));
    assert_eq!(
        files_containing(bridge.state.root(), ACC_KEY_VALUE.as_bytes()),
        Vec::<String>::new()
    );
}
