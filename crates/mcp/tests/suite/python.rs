//! The official Python MCP SDK as a client of `cross-agent mcp` (crates/mcp/tests/python).
//! The SDK is installed by `.ci/run` and `scripts/test` into `.tools/mcp-venv`; without it this
//! test fails and says how to install it, rather than skipping.

use std::process::Command;

use super::support::{FakeDaemon, Scratch, cross_agent_bin};

pub fn python() -> std::path::PathBuf {
    if let Some(python) = std::env::var_os("CROSS_AGENT_TEST_PYTHON") {
        return python.into();
    }
    cross_agent_testkit::agents::workspace_root().join(".tools/mcp-venv/bin/python")
}

#[test]
fn the_python_sdk_client_sees_the_schemas_annotations_and_results() -> anyhow::Result<()> {
    let python = python();
    assert!(
        python.exists(),
        "{} is missing: run `python3 -m venv .tools/mcp-venv && .tools/mcp-venv/bin/pip install \
         'mcp==2.3.0'` (scripts/test does)",
        python.display()
    );
    let scratch = Scratch::new()?;
    let _daemon = FakeDaemon::start(&scratch.cross_agent_home())?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/client_test.py");
    let output = Command::new(&python)
        .arg(script)
        .arg(cross_agent_bin())
        .env("CROSS_AGENT_HOME", scratch.cross_agent_home())
        .env("HOME", scratch.dir.path())
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("ALL CHECKS PASSED"), "{stdout}");
    Ok(())
}
