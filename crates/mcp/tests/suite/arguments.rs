//! Bad arguments, refused with words that name them (docs/spec/cross-agent-mcp.md §4): through the official Python
//! MCP SDK against the real daemon, and through `cross-agent send`.

use std::io::Write;
use std::process::{Command, Stdio};

use super::python::python;
use super::support::{Scratch, cross_agent_bin};

#[test]
fn the_python_sdk_client_is_told_what_is_wrong_with_its_arguments() -> anyhow::Result<()> {
    let python = python();
    assert!(
        python.exists(),
        "{} is missing: see python.rs",
        python.display()
    );
    let scratch = Scratch::new()?;
    std::fs::create_dir_all(scratch.home())?;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/arguments_test.py"
    );
    let output = Command::new(&python)
        .arg(script)
        .arg(cross_agent_bin())
        .arg(scratch.dir.path())
        .env("CROSS_AGENT_HOME", scratch.cross_agent_home())
        .env("HOME", scratch.home())
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("ALL CHECKS PASSED"),
        "python client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    Ok(())
}

fn send(scratch: &Scratch, args: &[&str], stdin: &[u8]) -> anyhow::Result<std::process::Output> {
    let mut child = Command::new(cross_agent_bin())
        .arg("send")
        .args(args)
        .env_clear()
        .envs(scratch.env())
        .current_dir(scratch.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin)?;
    }
    Ok(child.wait_with_output()?)
}

#[test]
fn cross_agent_send_refuses_a_message_over_8_mib_before_reaching_the_daemon() -> anyhow::Result<()>
{
    let scratch = Scratch::new()?;
    std::fs::create_dir_all(scratch.home())?;
    let message = vec![b'x'; 8 * 1024 * 1024 + 1];
    let output = send(&scratch, &["claude", "-"], &message)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("8388609 bytes") && stderr.contains("the limit is 8388608 bytes"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("lost its daemon"),
        "refused as a message, not a lost connection: {stderr}"
    );
    assert!(
        !scratch.cross_agent_home().join("daemon.pid").exists(),
        "no daemon was started for a message that cannot be sent"
    );
    Ok(())
}

#[test]
fn cross_agent_send_refuses_a_cwd_that_does_not_exist() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    std::fs::create_dir_all(scratch.home())?;
    let missing = scratch.dir.path().join("no-such-dir");
    let missing_text = missing.to_string_lossy().into_owned();
    let output = send(&scratch, &["claude", "--cwd", &missing_text, "hello"], b"")?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("`cwd` {missing_text} does not exist")),
        "{stderr}"
    );
    Ok(())
}
