//! The GUI door (docs/desktop.md "Focus and GUI fallback", "The GUI door"): a send to a Claude
//! session no shim or native door holds, from a caller with `CROSS_AGENT_DISABLE_HEADLESS`, is
//! pasted into the session's editor window by a daemon process running on a real desktop (Xvfb
//! with openbox, a stand-in editor window that records what it receives), and its answer is
//! read from the session's transcript. With the fallback off the send is refused naming the
//! setting, and nothing is typed.

use std::path::Path;
use std::time::Duration;

use cross_agent_control::Control as _;
use cross_agent_control::x11::X11;
use cross_agent_ipc::Connection;
use cross_agent_protocol::bridge::{
    Agent, BridgeStatusParams, BridgeStatusResponse, DeliveryRecord, DeliveryState, RefusalReason,
    SendParams, SendResponse, Transport,
};
use cross_agent_testkit::desktop::{Desktop, wait_for};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::bridge_support::{Bridge, spawn_daemon_process};

const CLAUDE_A: &str = "aaaaaaaa-0000-4000-8000-00000000000a";

fn decisions(root: &Path) -> Vec<Value> {
    std::fs::read_to_string(root.join(cross_agent_decisions::CURRENT_FILE))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A Claude session in the bridge's project, with one finished turn; its folder and transcript.
fn claude_session(bridge: &Bridge) -> (String, ClaudeTranscript) {
    let cwd = bridge.project.to_string_lossy().into_owned();
    let mut transcript = ClaudeTranscript::new(bridge.agents.path(), &cwd, CLAUDE_A);
    let now = now_millis();
    transcript
        .user("hello", now - 60_000)
        .assistant_text("hi", now - 59_000);
    transcript.write().unwrap();
    (cwd, transcript)
}

/// Turns the GUI fallback on in `root`'s `config.toml`, with no idle time asked for.
fn gui_fallback_on(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(
        root.join("config.toml"),
        "[control]\ngui_fallback = true\nidle_seconds = 0\n",
    )
    .unwrap();
}

const CODEX_CALLER: &str = "019a0000-0000-7000-8000-0000000000a1";

/// A send of `text` to the Claude session from a caller without headless doors, so the GUI is
/// its only one.
fn gui_only_send(bridge: &Bridge, text: &str) -> SendParams {
    let mut params = bridge.send_params(Agent::Claude, text, bridge.codex_caller(CODEX_CALLER));
    params.session_id = Some(CLAUDE_A.into());
    params
        .caller
        .settings
        .insert("CROSS_AGENT_DISABLE_HEADLESS".into(), "1".into());
    params
}

/// The delivery's record once it is finished, asked of the daemon every 200 ms for `within`.
async fn finished(
    conn: &Connection,
    bridge: &Bridge,
    cwd: &str,
    delivery_id: &str,
    within: Duration,
) -> DeliveryRecord {
    let deadline = std::time::Instant::now() + within;
    loop {
        let status: BridgeStatusResponse = conn
            .client
            .call(BridgeStatusParams {
                cwd: Some(cwd.to_owned()),
                scope: None,
                delivery_id: Some(delivery_id.into()),
                caller: bridge.codex_caller(CODEX_CALLER),
            })
            .await
            .unwrap();
        let record = status.delivery.unwrap();
        if record.state.is_finished() {
            return record;
        }
        assert!(std::time::Instant::now() < deadline, "{record:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_whose_only_door_is_the_gui_is_pasted_into_its_window_and_answered_from_the_transcript()
 {
    let bridge = Bridge::start().await;
    let (cwd, mut transcript) = claude_session(&bridge);

    let desktop = Desktop::start().unwrap();
    let records = tempfile::tempdir().unwrap();
    // The project's folder is "proj": this window is its, the other one is not.
    let other = desktop
        .open_window(
            "main.rs — elsewhere — Visual Studio Code",
            &records.path().join("elsewhere.jsonl"),
        )
        .unwrap();
    let window = desktop
        .open_window(
            "main.rs — proj — Visual Studio Code",
            &records.path().join("proj.jsonl"),
        )
        .unwrap();

    let root = bridge.state.dir.path().join("gui-state");
    // idle_seconds = 0: the test's own window mapping is input-free, but Xvfb's idle clock
    // starts with the server.
    gui_fallback_on(&root);
    let (_daemon, conn) = spawn_daemon_process(
        &root,
        &bridge.state.dir.path().join("user"),
        &[("DISPLAY", desktop.display())],
    )
    .await;
    let x11 = X11::connect(desktop.display()).unwrap();
    wait_for("the windows to be managed", Duration::from_secs(10), || {
        Ok(x11.windows()?.len() == 2)
    })
    .unwrap();

    let params = gui_only_send(&bridge, "please look at the build");
    let receipt = match conn.client.call(params).await.unwrap() {
        SendResponse::Accepted(receipt) => receipt,
        SendResponse::Refused(refusal) => panic!("refused: {refusal:?}"),
    };
    assert_eq!(receipt.transport, Transport::Gui);
    assert!(receipt.note.contains("GUI fallback"), "{}", receipt.note);

    wait_for("the paste", Duration::from_secs(30), || {
        Ok(!window.pastes().is_empty())
    })
    .unwrap();
    let pasted = window.pastes().remove(0);
    assert!(pasted.contains("please look at the build"), "{pasted}");
    assert!(pasted.contains(&receipt.request_id), "{pasted}");
    assert_eq!(other.pastes(), Vec::<String>::new());

    let decided: Vec<Value> = decisions(&root)
        .into_iter()
        .filter(|d| d["kind"] == "gui_fallback")
        .collect();
    assert_eq!(decided.len(), 1, "{decided:#?}");
    assert_eq!(decided[0]["outcome"], "submitted");
    assert_eq!(decided[0]["delivery"], receipt.delivery_id.as_str());
    assert_eq!(
        decided[0]["details"]["window_title"], "main.rs — proj — Visual Studio Code",
        "{decided:#?}"
    );

    // The agent in the editor takes the pasted prompt and answers, ending with the request id
    // the envelope asks it to echo.
    let written = 2;
    let answer = format!("the build is green\n{}", receipt.request_id);
    let now = now_millis();
    transcript
        .user(&pasted, now)
        .assistant_text(&answer, now + 1_000);
    transcript.append_since(written).unwrap();

    let record = finished(
        &conn,
        &bridge,
        &cwd,
        &receipt.delivery_id,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.transport, Transport::Gui);
    assert!(
        record.answer.is_reply_confirmed_by_transcript,
        "{record:#?}"
    );
    drop(desktop);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_fallback_off_the_send_is_refused_naming_the_setting_and_nothing_is_typed() {
    let bridge = Bridge::start().await;
    let (_, _transcript) = claude_session(&bridge);
    let desktop = Desktop::start().unwrap();
    let records = tempfile::tempdir().unwrap();
    let window = desktop
        .open_window(
            "main.rs — proj — Visual Studio Code",
            &records.path().join("proj.jsonl"),
        )
        .unwrap();
    let root = bridge.state.dir.path().join("gui-state");
    let (_daemon, conn) = spawn_daemon_process(
        &root,
        &bridge.state.dir.path().join("user"),
        &[("DISPLAY", desktop.display())],
    )
    .await;

    let params = gui_only_send(&bridge, "m");
    let refusal = match conn.client.call(params).await.unwrap() {
        SendResponse::Refused(refusal) => refusal,
        SendResponse::Accepted(receipt) => panic!("accepted: {receipt:?}"),
    };
    assert_eq!(refusal.reason, RefusalReason::DisableHeadless);
    assert!(
        refusal.message.contains("CROSS_AGENT_GUI_FALLBACK=1")
            && refusal
                .message
                .contains("gui_fallback = true under [control]"),
        "{}",
        refusal.message
    );
    std::thread::sleep(Duration::from_millis(500));
    // (openbox gives a new window the focus: that is recorded, keys and pastes are not.)
    assert_eq!(window.keys(), Vec::<u32>::new());
    assert_eq!(window.pastes(), Vec::<String>::new());
    assert!(
        decisions(&root).iter().all(|d| d["kind"] != "gui_fallback"),
        "nothing was tried"
    );
}

/// A daemon with the fallback on but no desktop (neither `DISPLAY` nor `WAYLAND_DISPLAY`): the
/// send is taken by the GUI door and fails undelivered, saying "no desktop" once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_desktop_the_gui_door_fails_saying_no_desktop_once() {
    let bridge = Bridge::start().await;
    let (cwd, _transcript) = claude_session(&bridge);
    let root = bridge.state.dir.path().join("gui-state");
    gui_fallback_on(&root);
    // Empty counts as unset, whatever the test's own environment has.
    let (_daemon, conn) = spawn_daemon_process(
        &root,
        &bridge.state.dir.path().join("user"),
        &[("DISPLAY", ""), ("WAYLAND_DISPLAY", "")],
    )
    .await;

    let params = gui_only_send(&bridge, "m");
    let receipt = match conn.client.call(params).await.unwrap() {
        SendResponse::Accepted(receipt) => receipt,
        SendResponse::Refused(refusal) => panic!("refused: {refusal:?}"),
    };
    assert_eq!(receipt.transport, Transport::Gui);
    let record = finished(
        &conn,
        &bridge,
        &cwd,
        &receipt.delivery_id,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(record.state, DeliveryState::Failed, "{record:#?}");
    assert!(record.is_undelivered, "{record:#?}");
    assert_eq!(
        record.error.as_deref(),
        Some(
            "not delivered: the GUI fallback refused: no desktop to control: neither DISPLAY \
             nor WAYLAND_DISPLAY is set (no graphical session here). Nothing was typed; \
             sending again is safe"
        )
    );
}
