//! Calls that are not panel sessions, and panel sessions the shim cannot serve, run the real
//! binary as-is: exec'ed (the same pid), nothing registered.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use anyhow::Result;
use cross_agent_testkit::agents::{AgentKind, agent_version};
use cross_agent_testkit::panel::PanelDriver;
use pretty_assertions::assert_eq;

use super::common::Bench;

const PANEL_ARGS: &[&str] = &[
    "--output-format",
    "stream-json",
    "--input-format",
    "stream-json",
];

/// A stand-in agent that says which pid it runs as.
fn pid_printer(bench: &Bench) -> Result<std::path::PathBuf> {
    bench.script_file("agent.sh", r#"echo "pid $$""#)
}

/// Runs the shim in front of `program` and returns (the shim's pid, what the program printed).
fn run(bench: &Bench, program: &std::path::Path, args: &[&str]) -> Result<(u32, String)> {
    let mut panel = PanelDriver::start(bench.shim_command(program, args)?)?;
    panel.close_stdin();
    let status = panel.wait(Duration::from_secs(120))?;
    assert!(status.success(), "{status:?}");
    Ok((panel.pid(), String::from_utf8(panel.received())?))
}

#[test]
fn calls_that_are_not_panel_sessions_are_execed_to_the_real_binary() -> Result<()> {
    let bench = Bench::new()?;
    let agent = pid_printer(&bench)?;
    for args in [&["--version"][..], &["-p", "hello"], &["login"]] {
        let (pid, printed) = run(&bench, &agent, args)?;
        assert_eq!(printed, format!("pid {pid}\n"), "{args:?}");
    }
    assert!(!bench.panels().exists(), "nothing registered");
    // A panel session is not exec'ed: the agent is the shim's child.
    let (pid, printed) = run(&bench, &agent, PANEL_ARGS)?;
    assert_ne!(printed, format!("pid {pid}\n"));
    Ok(())
}

#[test]
fn the_real_claude_version_call_prints_what_claude_prints() -> Result<()> {
    let bench = Bench::new()?;
    let claude = bench.claude()?;
    let (_, printed) = run(&bench, claude.binary(), &["--version"])?;
    assert_eq!(
        printed.trim(),
        agent_version(AgentKind::Claude, &bench.home)?
    );
    Ok(())
}

#[test]
fn a_home_others_can_write_to_runs_the_real_binary_as_is() -> Result<()> {
    let bench = Bench::new()?;
    std::fs::create_dir_all(&bench.state)?;
    std::fs::set_permissions(&bench.state, std::fs::Permissions::from_mode(0o770))?;
    let agent = pid_printer(&bench)?;
    let (pid, printed) = run(&bench, &agent, PANEL_ARGS)?;
    assert_eq!(printed, format!("pid {pid}\n"), "exec'ed, same pid");
    assert!(
        !bench.panels().exists(),
        "nothing created in the refused home"
    );
    Ok(())
}

#[test]
fn a_socket_path_that_cannot_be_bound_runs_the_real_binary_as_is() -> Result<()> {
    let mut bench = Bench::new()?;
    // Past the 107 bytes a Unix socket path may have.
    bench.state = bench.home.path().join("s".repeat(100));
    let agent = pid_printer(&bench)?;
    let (pid, printed) = run(&bench, &agent, PANEL_ARGS)?;
    assert_eq!(printed, format!("pid {pid}\n"), "exec'ed, same pid");
    let left: Vec<_> = std::fs::read_dir(bench.panels())?.collect();
    assert!(left.is_empty(), "no registration or socket left: {left:?}");
    Ok(())
}
