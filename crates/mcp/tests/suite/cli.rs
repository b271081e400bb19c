//! The messaging subcommands (`send`, `status`, `pin`, `check`) against the fake daemon: what
//! they forward (the same caller context as `cross-agent mcp`), what they print, and their exit
//! codes.

use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{FakeDaemon, Scratch, cross_agent_bin};

fn run(scratch: &Scratch, args: &[&str], extra: &[(&str, &str)]) -> anyhow::Result<Output> {
    let mut command = Command::new(cross_agent_bin());
    command
        .args(args)
        .env_clear()
        .envs(scratch.env())
        .current_dir(scratch.dir.path());
    for (key, value) in extra {
        command.env(key, value);
    }
    Ok(command.output()?)
}

#[test]
fn send_prints_the_receipt_and_forwards_the_caller() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let daemon = FakeDaemon::start(&scratch.cross_agent_home())?;

    let output = run(
        &scratch,
        &[
            "send",
            "codex",
            "--session",
            "billing-api",
            "--timeout",
            "90",
            "hello codex",
        ],
        &[("CLAUDE_CODE_SESSION_ID", "c-1"), ("GITHUB_TOKEN", "ghp")],
    )?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("accepted: delivery dlv_fake to codex session target-1"),
        "{stdout}"
    );
    assert!(stdout.contains("hop 1/4"), "{stdout}");

    let sends = daemon.calls_of("send");
    assert_eq!(sends.len(), 1);
    let params = &sends[0].params;
    assert_eq!(params["session_id"], json!("billing-api"));
    assert_eq!(params["timeout"], json!(90));
    assert_eq!(params["caller"]["client_name"], json!("cross-agent-cli"));
    assert_eq!(params["caller"]["claude_code_session_id"], json!("c-1"));
    assert_eq!(params["caller"]["withheld_env"], json!(["GITHUB_TOKEN"]));
    assert!(params["caller"]["child_env"].get("GITHUB_TOKEN").is_none());

    let json_out = run(&scratch, &["send", "claude", "--new", "--json", "hi"], &[])?;
    let receipt: Value = serde_json::from_slice(&json_out.stdout)?;
    assert_eq!(receipt["outcome"], json!("accepted"));
    assert_eq!(
        daemon.calls_of("send")[1].params["new_session"],
        json!(true)
    );
    Ok(())
}

#[test]
fn a_refused_send_exits_non_zero_with_the_message() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let _daemon = FakeDaemon::start(&scratch.cross_agent_home())?;

    let output = run(&scratch, &["send", "claude", "please refuse-me"], &[])?;
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refused: name the target"), "{stderr}");

    let flag = run(
        &scratch,
        &["send", "codex", "--allow-same-agent", "hi"],
        &[],
    )?;
    assert!(!flag.status.success());
    assert!(String::from_utf8_lossy(&flag.stderr).contains("--session"));
    Ok(())
}

#[test]
fn status_pin_and_check_talk_to_the_daemon() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let daemon = FakeDaemon::start(&scratch.cross_agent_home())?;

    let status = run(&scratch, &["status", "dlv_1", "--json"], &[])?;
    assert!(status.status.success());
    let status: Value = serde_json::from_slice(&status.stdout)?;
    assert_eq!(status["server_process"]["version"], json!("fake"));
    assert_eq!(
        daemon.calls_of("bridge_status")[0].params["delivery_id"],
        json!("dlv_1")
    );

    let readable = run(&scratch, &["status"], &[])?;
    let text = String::from_utf8_lossy(&readable.stdout);
    assert!(
        text.contains("server:") && text.contains("deliveries:"),
        "{text}"
    );

    let pin = run(&scratch, &["pin", "claude"], &[])?;
    assert!(pin.status.success());
    assert!(String::from_utf8_lossy(&pin.stdout).contains("no claude session was pinned"));
    assert_eq!(daemon.calls_of("pin")[0].params["session_id"], Value::Null);

    let check = run(
        &scratch,
        &["check", "--json"],
        &[
            ("CROSS_AGENT_CODEX_BIN", "/bin/sh"),
            ("CROSS_AGENT_MAX_HOPS", "2"),
        ],
    )?;
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let report: Value = serde_json::from_slice(&check.stdout)?;
    assert_eq!(
        report["local"]["cli_paths"]["codex"]["path"],
        json!("/bin/sh")
    );
    assert_eq!(
        report["local"]["cli_paths"]["codex"]["from"],
        json!("CROSS_AGENT_CODEX_BIN")
    );
    assert_eq!(
        report["local"]["settings"]["CROSS_AGENT_MAX_HOPS"],
        json!("2")
    );
    assert_eq!(report["daemon"]["server_process"]["version"], json!("fake"));
    Ok(())
}
