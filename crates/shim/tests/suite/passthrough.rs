//! Every byte passes through unchanged both ways, and the shim exits as the agent does.

use std::time::Duration;

use anyhow::Result;
use cross_agent_testkit::binaries::stdio_recorder_bin;
use cross_agent_testkit::panel::{
    CLAUDE_SDK_ARGS, PanelDriver, claude_initialize, claude_permission, claude_user,
};
use cross_agent_testkit::{Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{Bench, TURN};

const PANEL_ARGS: &[&str] = &["--input-format", "stream-json"];

#[test]
fn a_whole_claude_session_with_a_tool_approval_passes_byte_for_byte() -> Result<()> {
    let bench = Bench::new()?;
    let marker = bench.project.join("perm-ok.txt");
    let command = format!(
        "echo perm-ok > {} && cat {}",
        marker.display(),
        marker.display()
    );
    bench.script([
        Rule::on_user_text("run the tool")
            .tool_call(ToolCall::new(
                "Bash",
                json!({"command": command, "description": "write file"}),
            ))
            .once(),
        Rule::on_tool_result("perm-ok")
            .reply_text("the tool ran")
            .once(),
        Rule::on_user_text("second")
            .reply_text("second answer")
            .once(),
    ]);
    let record = tempfile::tempdir()?;
    let claude = bench.claude()?;
    let mut args = vec![claude.binary().to_str().unwrap_or_default()];
    args.extend_from_slice(CLAUDE_SDK_ARGS);
    let mut shim = bench.shim_command(&stdio_recorder_bin()?, &args)?;
    shim.env("CROSS_AGENT_RECORD_DIR", record.path());
    let mut panel = PanelDriver::start(shim)?;

    panel.send(&claude_initialize("init-1"))?;
    panel.next_of_type("control_response", TURN)?;
    panel.send(&claude_user("please run the tool"))?;
    let ask = panel.next_line(TURN, |l| {
        l["type"] == "control_request" && l["request"]["subtype"] == "can_use_tool"
    })?;
    let request_id = ask["request_id"].as_str().unwrap_or_default().to_owned();
    panel.send(&claude_permission(
        &request_id,
        true,
        &ask["request"]["input"],
    ))?;
    panel.next_of_type("result", TURN)?;
    panel.send(&claude_user("second message"))?;
    panel.next_of_type("result", TURN)?;
    panel.close_stdin();
    let status = panel.wait(TURN)?;

    assert!(status.success(), "{status:?}");
    assert_eq!(
        std::fs::read_to_string(&marker)?,
        "perm-ok\n",
        "the approved tool ran"
    );
    let agent_got = std::fs::read(record.path().join("stdin.bin"))?;
    let agent_sent = std::fs::read(record.path().join("stdout.bin"))?;
    assert_eq!(
        String::from_utf8_lossy(&agent_got),
        String::from_utf8_lossy(panel.sent())
    );
    assert_eq!(agent_got, panel.sent());
    assert_eq!(agent_sent, panel.received());
    assert_eq!(
        super::common::results(&panel),
        vec!["the tool ran".to_owned(), "second answer".to_owned()]
    );
    Ok(())
}

#[test]
fn long_lines_and_a_partial_last_line_pass_unchanged_and_the_exit_status_is_the_agents()
-> Result<()> {
    let bench = Bench::new()?;
    let echo = bench.script_file("echo.sh", "cat; exit 7")?;
    let mut panel = PanelDriver::start(bench.shim_command(&echo, PANEL_ARGS)?)?;
    let long = format!(
        r#"{{"type":"user","image":"{}"}}"#,
        "A".repeat(6 * 1024 * 1024)
    );
    panel.send(
        r#"{"type":"control_request","request_id":"i","request":{"subtype":"initialize"}}"#,
    )?;
    panel.send(&long)?;
    panel.send("not json at all \u{00e9}")?;
    panel.send("")?;
    let mut expected = panel.sent().to_vec();
    // A last line without its newline.
    let tail = b"{\"type\":\"user\",\"partial\":true}";
    expected.extend_from_slice(tail);
    panel.send_raw(tail)?;
    panel.close_stdin();
    let status = panel.wait(Duration::from_secs(120))?;
    assert_eq!(status.code(), Some(7));
    let received = panel.received();
    assert_eq!(received.len(), expected.len());
    assert!(received == expected, "the bytes differ");
    Ok(())
}

#[test]
fn an_agent_killed_by_a_signal_ends_the_shim_with_128_plus_the_signal() -> Result<()> {
    let bench = Bench::new()?;
    let agent = bench.script_file("die.sh", "kill -TERM $$")?;
    let mut panel = PanelDriver::start(bench.shim_command(&agent, PANEL_ARGS)?)?;
    let status = panel.wait(Duration::from_secs(120))?;
    assert_eq!(status.code(), Some(128 + 15));
    Ok(())
}

#[test]
fn sigterm_to_the_shim_reaches_the_agent() -> Result<()> {
    let bench = Bench::new()?;
    let agent = bench.script_file(
        "trap.sh",
        "trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.1; done",
    )?;
    let mut panel = PanelDriver::start(bench.shim_command(&agent, PANEL_ARGS)?)?;
    // The shim installs its signal forwarding before it passes on anything the agent prints, so
    // once the agent's first line is here a SIGTERM to the shim reaches the agent.
    panel.next_line(Duration::from_secs(120), |_| true)?;
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &panel.pid().to_string()])
        .status()?;
    let status = panel.wait(Duration::from_secs(120))?;
    assert_eq!(status.code(), Some(3));
    assert!(String::from_utf8_lossy(&panel.received()).contains("got-term"));
    Ok(())
}

/// The session's four pipes — the shim's stdin and stdout (the extension's), the agent's stdin
/// and stdout — are widened to 256 KB, so each wake-up moves more than a pipe as made (64 KB).
#[cfg(target_os = "linux")]
#[test]
fn the_sessions_four_pipes_are_widened_to_256_kb() -> Result<()> {
    let bench = Bench::new()?;
    // Measured once the first line has come through (the shim widens before it forwards any),
    // from the agent: its own two pipes, and its parent's (the shim's) through /proc.
    let agent = bench.script_file(
        "sizes.sh",
        r#"exec python3 -c '
import fcntl, json, os, sys
sys.stdin.buffer.readline()
def size(path):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return fcntl.fcntl(fd, 1032)  # F_GETPIPE_SZ
    finally:
        os.close(fd)
shim = os.getppid()
paths = ["/proc/self/fd/0", "/proc/self/fd/1", "/proc/%d/fd/0" % shim, "/proc/%d/fd/1" % shim]
print(json.dumps({"type": "pipe_sizes", "sizes": [size(p) for p in paths]}), flush=True)
for line in sys.stdin.buffer:
    sys.stdout.buffer.write(line)
'"#,
    )?;
    let mut panel = PanelDriver::start(bench.shim_command(&agent, PANEL_ARGS)?)?;
    panel.send(&claude_initialize("i"))?;
    let sizes = panel.next_of_type("pipe_sizes", Duration::from_secs(60))?;
    assert_eq!(sizes["sizes"], json!([262_144, 262_144, 262_144, 262_144]));
    panel.close_stdin();
    panel.wait(Duration::from_secs(60))?;
    Ok(())
}
