//! A `cross-agent mcp` an editor holds keeps working across `cross-agent daemon restart`: the
//! real daemon is replaced under it, its next call reaches the new one (and says so in
//! `server_process`), and a new tools version is announced with
//! `notifications/tools/list_changed` — only when the version changed; under the 2026 protocol
//! on the client's `subscriptions/listen` stream, without waiting for a call.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{McpProcess, Scratch, cross_agent_bin, modern_meta};

/// Runs `cross-agent daemon <args>` on the scratch home with the daemon's tools version set.
fn daemon(scratch: &Scratch, args: &[&str], tools_version: &str) -> Result<std::process::Output> {
    Command::new(cross_agent_bin())
        .arg("daemon")
        .args(args)
        .env_clear()
        .envs(scratch.env())
        .env("CROSS_AGENT_TOOLS_VERSION", tools_version)
        .output()
        .context("running cross-agent daemon")
}

/// `bridge_status` through the server: its `server_process`, and the
/// `notifications/tools/list_changed` that came before the answer, if any.
fn bridge_status_with(
    server: &mut McpProcess,
    id: u64,
    meta: Option<Value>,
) -> Result<(Value, Option<Value>)> {
    let mut params = json!({"name": "bridge_status", "arguments": {}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    server.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params,
    }))?;
    let mut announced = None;
    loop {
        let message = server.recv()?;
        if message["method"] == "notifications/tools/list_changed" {
            announced = Some(message);
        } else if message["id"] == json!(id) {
            ensure!(
                message["result"]["isError"] == json!(false),
                "bridge_status failed: {message}"
            );
            return Ok((
                message["result"]["structuredContent"]["server_process"].clone(),
                announced,
            ));
        }
    }
}

/// [`bridge_status_with`] in the `initialize` era: whether the change was announced.
fn bridge_status(server: &mut McpProcess, id: u64) -> Result<(Value, bool)> {
    let (process, announced) = bridge_status_with(server, id, None)?;
    Ok((process, announced.is_some()))
}

fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    while cross_agent_ipc::process::is_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

#[test]
fn an_mcp_server_keeps_answering_across_a_restart_and_announces_a_new_tool_list() -> Result<()> {
    let scratch = Scratch::new()?;
    std::fs::create_dir_all(scratch.home())?;
    let started = daemon(&scratch, &["start"], "tools-1")?;
    ensure!(started.status.success(), "{started:?}");
    let mut server = McpProcess::spawn(&scratch, &scratch.env(), scratch.dir.path())?;
    let init = server.initialize("test-client")?;
    assert_eq!(
        init["result"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );

    let (first, announced) = bridge_status(&mut server, 100)?;
    assert_eq!(first["generation"], json!(1));
    assert!(!announced, "nothing changed yet");
    let old_pid = u32::try_from(first["pid"].as_u64().context("pid")?)?;

    // A restart from a build with another tool surface.
    let restart = daemon(&scratch, &["restart"], "tools-2")?;
    let stdout = String::from_utf8_lossy(&restart.stdout);
    ensure!(restart.status.success(), "{restart:?}");
    assert!(
        stdout.contains(&format!("ok      daemon {old_pid} -> "))
            && stdout.contains("(generation 2)"),
        "{stdout}"
    );
    let (second, announced) = bridge_status(&mut server, 101)?;
    assert_eq!(second["generation"], json!(2));
    assert_ne!(second["pid"], first["pid"]);
    assert!(announced, "the new tools version is announced");
    assert!(wait_gone(old_pid), "the old daemon exits once drained");

    // The same tools version again: the server follows, and announces nothing.
    let restart = daemon(&scratch, &["restart"], "tools-2")?;
    ensure!(restart.status.success(), "{restart:?}");
    let (third, announced) = bridge_status(&mut server, 102)?;
    assert_eq!(third["generation"], json!(3));
    assert!(!announced, "same tools version, nothing to announce");
    Ok(())
}

#[test]
fn under_the_2026_protocol_the_change_is_announced_on_the_subscription_stream() -> Result<()> {
    let scratch = Scratch::new()?;
    std::fs::create_dir_all(scratch.home())?;
    let started = daemon(&scratch, &["start"], "tools-1")?;
    ensure!(started.status.success(), "{started:?}");
    let mut server = McpProcess::spawn(&scratch, &scratch.env(), scratch.dir.path())?;
    server.request(
        "server/discover",
        json!({"_meta": modern_meta("modern-client")}),
    )?;
    server.send(&json!({
        "jsonrpc": "2.0", "id": 900, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta("modern-client"), "notifications": {"toolsListChanged": true}},
    }))?;
    let ack = server.recv()?;
    assert_eq!(
        ack["method"],
        json!("notifications/subscriptions/acknowledged")
    );

    let (first, announced) =
        bridge_status_with(&mut server, 1, Some(modern_meta("modern-client")))?;
    assert_eq!(first["generation"], json!(1));
    assert_eq!(announced, None);

    // No call is needed: the open stream is told on its own once the daemon was replaced.
    let restart = daemon(&scratch, &["restart"], "tools-2")?;
    ensure!(restart.status.success(), "{restart:?}");
    let announced = server.recv()?;
    assert_eq!(
        announced["method"],
        json!("notifications/tools/list_changed"),
        "{announced}"
    );
    assert!(
        announced["params"]["_meta"].to_string().contains("900"),
        "sent on the listen stream (id 900): {announced}"
    );
    let (second, announced) =
        bridge_status_with(&mut server, 2, Some(modern_meta("modern-client")))?;
    assert_eq!(second["generation"], json!(2));
    assert_eq!(announced, None, "announced once");
    Ok(())
}
