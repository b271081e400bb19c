//! Resolution with editor panels (docs/spec/cross-agent-mcp.md "Which conversation tab it goes to", "Conversations
//! in another VS Code window", "Never starting a headless CLI"), on an in-process `Engine`
//! whose `panels/` folder holds registrations these tests write. Each registered shim is a live
//! process (a `sleep` child) so it is not dropped as dead; its ancestry is made up, and so is the
//! caller's, so two windows can be told apart. No socket is touched: resolution reads the
//! registrations only.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command};

use cross_agent_protocol::bridge::{
    Agent, AncestorProcess, BridgeStatusParams, CallerContext, RefusalReason, TargetSelectedBy,
    Transport,
};
use cross_agent_protocol::panel::{
    PANEL_PROTOCOL_VERSION, PanelRegistration, PanelSession, PanelSessionState,
};
use pretty_assertions::assert_eq;

use super::guards::{Bench, CLAUDE_A, CLAUDE_B, bench};

// Made-up extension hosts of two windows, above both the editor's main process.
const HOST_A: u32 = 4_100_001;
const HOST_B: u32 = 4_100_002;
const MAIN: u32 = 4_100_100;

/// A live process standing for a shim's pid; killed when dropped.
struct Shim(Child);

impl Drop for Shim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn session(id: Option<&str>, human_ms: Option<u64>) -> PanelSession {
    PanelSession {
        session_id: id.map(str::to_owned),
        cwd: None,
        state: PanelSessionState::Idle,
        opened_at_ms: 1,
        last_human_input_ms: human_ms,
        last_activity_ms: None,
        has_history: true,
        unanswered_human_prompts: 0,
        pending_approvals: Vec::new(),
        bridged_delivery_id: None,
        title: None,
    }
}

/// Registers a shim of `agent` whose parent is `host`, holding `sessions`.
fn register(bench: &Bench, agent: Agent, host: u32, sessions: Vec<PanelSession>) -> Shim {
    let child = Command::new("sleep").arg("300").spawn().unwrap();
    let pid = child.id();
    let dir = bench.engine.info().state_root.join("panels");
    std::fs::create_dir_all(&dir).unwrap();
    let registration = PanelRegistration {
        protocol: PANEL_PROTOCOL_VERSION,
        agent,
        pid,
        pid_start_ticks: None,
        agent_pid: None,
        ancestors: vec![host, MAIN, 1],
        socket: dir
            .join(format!("{agent}-{pid}.sock"))
            .to_string_lossy()
            .into_owned(),
        real_binary: "/bin/true".into(),
        cwd: Some(bench.project.to_string_lossy().into_owned()),
        started_at_ms: 1,
        updated_at_ms: 1,
        intercepting: true,
        sessions,
    };
    write_registration(&dir, &registration);
    Shim(child)
}

fn write_registration(dir: &Path, registration: &PanelRegistration) {
    let file = dir.join(format!("{}-{}.json", registration.agent, registration.pid));
    std::fs::write(&file, serde_json::to_vec(registration).unwrap()).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A Codex caller running in the window of extension host `host`.
fn caller_in(bench: &Bench, host: u32, settings: &[(&str, &str)]) -> CallerContext {
    let mut caller = bench.caller("codex", settings);
    caller.ancestry = [host, MAIN, 1]
        .into_iter()
        .map(|pid| AncestorProcess {
            pid,
            name: "x".into(),
            cmdline: String::new(),
        })
        .collect();
    caller
}

fn transport_of(bench: &Bench, delivery_id: &str) -> Transport {
    let db = cross_agent_hub::db::HubDb::open(&bench.hub_db()).unwrap();
    db.delivery(delivery_id).unwrap().unwrap().transport
}

#[test]
fn an_unaddressed_send_goes_to_the_tab_a_human_typed_into_last_in_the_callers_window() {
    let bench = bench();
    // On disk A is the most recently active; in the panel a human typed into B last.
    let _shim_a = register(
        &bench,
        Agent::Claude,
        HOST_A,
        vec![session(Some(CLAUDE_A), Some(10))],
    );
    let _shim_b = register(
        &bench,
        Agent::Claude,
        HOST_A,
        vec![session(Some(CLAUDE_B), Some(20))],
    );
    let receipt = bench.accepted(bench.params(Agent::Claude, caller_in(&bench, HOST_A, &[])));
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::PanelFocus);
    assert_eq!(receipt.target_session_id.as_deref(), Some(CLAUDE_B));
    assert_eq!(transport_of(&bench, &receipt.delivery_id), Transport::Panel);
    assert!(
        receipt.warnings.iter().any(|w| w.contains("human-input")),
        "{:?}",
        receipt.warnings
    );
    // The wire name is the spec's.
    assert_eq!(
        serde_json::to_value(receipt.target_selected_by).unwrap(),
        "panel-focus"
    );
}

#[test]
fn another_windows_tab_is_never_auto_selected_but_is_reached_by_its_id() {
    let bench = bench();
    let _other = register(
        &bench,
        Agent::Claude,
        HOST_B,
        vec![session(Some(CLAUDE_A), Some(99))],
    );
    let caller = caller_in(&bench, HOST_A, &[]);
    // Unaddressed: no tab in this window, and discovery skips what the other window holds.
    let receipt = bench.accepted(bench.params(Agent::Claude, caller.clone()));
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Discovery);
    assert_eq!(receipt.target_session_id.as_deref(), Some(CLAUDE_B));
    assert_eq!(
        transport_of(&bench, &receipt.delivery_id),
        Transport::HeadlessCli
    );
    // Named: delivered to that window's shim.
    let mut named = bench.params(Agent::Claude, caller.clone());
    named.session_id = Some(CLAUDE_A.into());
    let receipt = bench.accepted(named);
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Caller);
    assert_eq!(transport_of(&bench, &receipt.delivery_id), Transport::Panel);
    assert!(
        receipt
            .warnings
            .iter()
            .any(|w| w.contains("another VS Code window")),
        "{:?}",
        receipt.warnings
    );
    // bridge_status lists it as another window's.
    let status = bench
        .engine
        .bridge_status(BridgeStatusParams {
            cwd: None,
            scope: None,
            delivery_id: None,
            caller,
        })
        .unwrap();
    let claude = &status.ide_panels[&Agent::Claude];
    assert!(claude.tabs.is_empty(), "{claude:?}");
    assert_eq!(
        claude.other_window_sessions[0].session_id.as_deref(),
        Some(CLAUDE_A)
    );
    assert_eq!(claude.selected_session_id, None);
}

#[test]
fn ide_panels_shows_this_windows_tabs_and_the_selection() {
    let bench = bench();
    let _here = register(
        &bench,
        Agent::Claude,
        HOST_A,
        vec![session(Some(CLAUDE_B), None)],
    );
    let status = bench
        .engine
        .bridge_status(BridgeStatusParams {
            cwd: None,
            scope: None,
            delivery_id: None,
            caller: caller_in(&bench, HOST_A, &[]),
        })
        .unwrap();
    let claude = &status.ide_panels[&Agent::Claude];
    assert_eq!(claude.tabs.len(), 1);
    assert_eq!(claude.selected_session_id.as_deref(), Some(CLAUDE_B));
    // Nobody typed: the transcript's activity decided.
    assert_eq!(claude.selected_by.as_deref(), Some("transcript-activity"));
    assert!(status.settings.panels_available);
}

#[test]
fn a_new_conversation_opens_in_a_panel_only_when_nothing_else_exists() {
    let bench = bench();
    let caller = caller_in(&bench, HOST_A, &[]);
    // No Codex session anywhere and no Codex panel: a new thread over the CLI.
    let receipt = bench.accepted(bench.params(Agent::Codex, bench.caller("claude", &[])));
    assert!(receipt.will_create_session);
    assert_eq!(
        transport_of(&bench, &receipt.delivery_id),
        Transport::HeadlessCli
    );
    // A Codex app-server in this window: the new thread opens in its panel.
    let _codex = register(&bench, Agent::Codex, HOST_A, Vec::new());
    let mut from_claude = caller.clone();
    from_claude.self_agent = Some("claude".into());
    let mut params = bench.params(Agent::Codex, from_claude);
    params.new_session = true;
    let receipt = bench.accepted(params);
    assert!(receipt.will_create_session);
    assert_eq!(receipt.target_session_id, None);
    assert_eq!(transport_of(&bench, &receipt.delivery_id), Transport::Panel);
    assert!(
        receipt
            .warnings
            .iter()
            .any(|w| w.contains("opens in the codex panel")),
        "{:?}",
        receipt.warnings
    );
    // A Claude panel whose process holds a conversation cannot open one: sessions on disk win.
    let _claude = register(
        &bench,
        Agent::Claude,
        HOST_B,
        vec![session(Some(CLAUDE_A), None)],
    );
    let receipt = bench.accepted(bench.params(Agent::Claude, caller));
    assert!(!receipt.will_create_session);
}

#[test]
fn ui_hook_require_takes_a_panel_and_refuses_without_one() {
    let bench = bench();
    let require = caller_in(&bench, HOST_A, &[("CROSS_AGENT_UI_HOOK", "require")]);
    let refusal = bench.refused(bench.params(Agent::Claude, require.clone()));
    assert_eq!(refusal.reason, RefusalReason::UiHookRequire);
    assert!(
        refusal.message.contains("requires a panel"),
        "{}",
        refusal.message
    );
    // Another window's panel does not count for an unaddressed send.
    let _other = register(
        &bench,
        Agent::Claude,
        HOST_B,
        vec![session(Some(CLAUDE_B), None)],
    );
    let refusal = bench.refused(bench.params(Agent::Claude, require.clone()));
    assert_eq!(refusal.reason, RefusalReason::UiHookRequire);
    assert_eq!(bench.recorded(), 0);
    // A tab in this window takes it.
    let _here = register(
        &bench,
        Agent::Claude,
        HOST_A,
        vec![session(Some(CLAUDE_A), None)],
    );
    let receipt = bench.accepted(bench.params(Agent::Claude, require));
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::PanelFocus);
    assert_eq!(transport_of(&bench, &receipt.delivery_id), Transport::Panel);
}

#[test]
fn ui_hook_off_never_uses_a_panel() {
    let bench = bench();
    let _here = register(
        &bench,
        Agent::Claude,
        HOST_A,
        vec![session(Some(CLAUDE_B), Some(5))],
    );
    let off = caller_in(&bench, HOST_A, &[("CROSS_AGENT_UI_HOOK", "off")]);
    let receipt = bench.accepted(bench.params(Agent::Claude, off.clone()));
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Discovery);
    assert_eq!(receipt.target_session_id.as_deref(), Some(CLAUDE_A));
    assert_eq!(
        transport_of(&bench, &receipt.delivery_id),
        Transport::HeadlessCli
    );
    let mut named = bench.params(Agent::Claude, off);
    named.session_id = Some(CLAUDE_B.into());
    let receipt = bench.accepted(named);
    assert_eq!(
        transport_of(&bench, &receipt.delivery_id),
        Transport::HeadlessCli
    );
}

#[test]
fn no_headless_lets_panel_deliveries_through_and_refuses_the_rest() {
    let bench = bench();
    let _other = register(
        &bench,
        Agent::Claude,
        HOST_B,
        vec![session(Some(CLAUDE_B), None)],
    );
    let caller = caller_in(&bench, HOST_A, &[("CROSS_AGENT_DISABLE_HEADLESS", "1")]);
    let mut held = bench.params(Agent::Claude, caller.clone());
    held.session_id = Some(CLAUDE_B.into());
    let receipt = bench.accepted(held);
    assert_eq!(transport_of(&bench, &receipt.delivery_id), Transport::Panel);
    let mut not_held = bench.params(Agent::Claude, caller);
    not_held.session_id = Some(CLAUDE_A.into());
    let refusal = bench.refused(not_held);
    assert_eq!(refusal.reason, RefusalReason::DisableHeadless);
    assert!(refusal.message.contains(CLAUDE_A), "{}", refusal.message);
}

#[test]
fn a_dead_shims_registration_is_removed_with_a_decision_line() {
    let bench = bench();
    let shim = register(
        &bench,
        Agent::Claude,
        HOST_A,
        vec![session(Some(CLAUDE_B), Some(5))],
    );
    let pid = shim.0.id();
    drop(shim);
    let receipt = bench.accepted(bench.params(Agent::Claude, caller_in(&bench, HOST_A, &[])));
    // The dead panel is not a target: discovery decided.
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Discovery);
    let file = bench
        .engine
        .info()
        .state_root
        .join("panels")
        .join(format!("claude-{pid}.json"));
    assert!(!file.exists());
    let log =
        std::fs::read_to_string(bench.engine.info().state_root.join("decisions.jsonl")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("panel_removed") && l.contains(&pid.to_string())),
        "{log}"
    );
}
