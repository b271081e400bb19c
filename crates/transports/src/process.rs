//! Pid liveness and process-group signals. Every headless turn runs in a process group of its
//! own, so stopping it also stops what it started (MCP servers, shell commands): nothing is left
//! writing to a session no lock protects any more (docs/spec/cross-agent-mcp.md §6 item 4).

use rustix::process::{Pid, Signal};

/// Liveness of a pid and of a turn's process group, answered where every crate asks them.
pub use cross_agent_process::{group_alive, is_alive};

fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// SIGKILLs the whole process group led by `pgid`. A group already gone is not an error.
pub fn kill_group(pgid: u32) {
    if let Some(raw) = pid_of(pgid)
        && let Err(error) = rustix::process::kill_process_group(raw, Signal::KILL)
        && error != rustix::io::Errno::SRCH
    {
        tracing::warn!(pgid, %error, "could not kill a turn's process group");
    }
}
