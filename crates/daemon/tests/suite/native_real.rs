//! Claude's native peer door through the daemon, with real Claude Code on both sides (scripted
//! model): a live stream-json Claude session registers itself (`~/.claude/sessions/<pid>.json`)
//! on its first turn; the listing shows its registry name and busy/idle status; killed with
//! `-9` it leaves a stale entry and socket behind, and a send then resumes it over the CLI.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::{
    Agent, AgentFilter, DeliveryState, ListSessionsParams, ListSessionsResponse, SessionEntry,
    Transport,
};
use cross_agent_testkit::endpoint::{Reply, Rule};
use cross_agent_testkit::panel::{PanelDriver, claude_user};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::bridge_support::Bridge;

/// A long-lived Claude Code session in stream-json mode, kept alive on its stdin (as an SDK
/// host or a terminal keeps one), in the bridge's temporary HOME.
pub struct LiveClaude {
    pub driver: PanelDriver,
    pub session_id: String,
    pub pid: u32,
    /// Its registry entry, `<HOME>/.claude/sessions/<pid>.json`.
    pub entry_path: PathBuf,
}

impl LiveClaude {
    /// Starts it with `--session-id`, runs one first turn (`seed`, which the endpoint must
    /// answer), and waits until it has registered itself.
    pub fn start(bridge: &Bridge, session_id: &str, seed: &str) -> LiveClaude {
        let claude = bridge.claude();
        let mut command = Command::new(claude.binary());
        command
            .args([
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--session-id",
                session_id,
            ])
            .current_dir(&bridge.project)
            .env_clear()
            .envs(claude.env())
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
            session_id: session_id.to_owned(),
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

async fn listed_claude(bridge: &Bridge, session_id: &str) -> SessionEntry {
    let listed: ListSessionsResponse = bridge
        .conn
        .client
        .call(ListSessionsParams {
            agent: AgentFilter::Claude,
            scope: None,
            cwd: None,
            limit: None,
            caller: bridge.codex_caller("019a0000-0000-7000-8000-00000000beef"),
        })
        .await
        .unwrap();
    listed.sessions["claude"]
        .iter()
        .find(|s| s.session_id == session_id)
        .unwrap_or_else(|| panic!("{session_id} is listed: {listed:#?}"))
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_session_is_listed_with_its_registry_name_and_a_killed_one_resumes_over_the_cli()
{
    let bridge = Bridge::start().await;
    bridge
        .endpoint
        .push(Rule::on_user_text("seed the live session n1").reply(Reply::text("ready n1")));
    let session_id = "6d1e0000-0000-4000-8000-0000000000a1".to_owned();
    let mut live = LiveClaude::start(&bridge, &session_id, "seed the live session n1");
    let entry = live.wait_entry(|e| e["status"] == "idle");
    let name = entry["name"].as_str().unwrap().to_owned();
    let socket = PathBuf::from(entry["messagingSocketPath"].as_str().unwrap());
    assert!(socket.exists(), "{entry}");

    let listed = listed_claude(&bridge, &session_id).await;
    assert_eq!(listed.registry_name.as_deref(), Some(name.as_str()));
    assert_eq!(listed.registry_status.as_deref(), Some("idle"));

    // Killed outright: the entry and the socket stay behind, the session is dormant.
    live.kill_9();
    assert!(live.entry_path.exists(), "a SIGKILL leaves the entry");
    assert!(socket.exists(), "a SIGKILL leaves the socket");
    let listed = listed_claude(&bridge, &session_id).await;
    assert_eq!(listed.registry_name, None, "{listed:#?}");
    assert_eq!(listed.registry_status, None);

    bridge
        .endpoint
        .push(Rule::on_user_text("after the crash n1").reply(Reply::echo_token("resumed n1")));
    let mut params = bridge.send_params(
        Agent::Claude,
        "after the crash n1",
        bridge.codex_caller("019a0000-0000-7000-8000-00000000beef"),
    );
    params.session_id = Some(session_id.clone());
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.transport, Transport::HeadlessCli, "{record:#?}");
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert!(
        record.reply_preview.as_deref().unwrap().starts_with("resumed n1"),
        "{record:#?}"
    );
}
