//! Small process helpers the CLI needs to stop a daemon that does not answer its socket.

use rustix::process::{Pid, Signal};

use crate::error::{Error, Result};

fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// True while a process with this pid runs (a process of another user counts: the kernel
/// refusing to signal it still proves it exists). A zombie — exited, not yet reaped by its
/// parent — does not count: it holds nothing and will never answer.
pub fn is_alive(pid: u32) -> bool {
    let Some(raw) = pid_of(pid) else { return false };
    let exists = match rustix::process::test_kill_process(raw) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    };
    exists && !is_zombie(pid)
}

#[cfg(target_os = "linux")]
fn is_zombie(pid: u32) -> bool {
    // `/proc/<pid>/stat` is `pid (comm) state ...`; comm may hold spaces and parentheses, so the
    // state is the first field after the last `)`.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = &stat[stat.rfind(')')? + 1..];
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(false)
}

#[cfg(not(target_os = "linux"))]
fn is_zombie(_pid: u32) -> bool {
    false
}

/// Sends SIGTERM. A process that is already gone is not an error.
pub fn terminate(pid: u32) -> Result<()> {
    let Some(raw) = pid_of(pid) else {
        return Err(Error::Signal {
            pid,
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        });
    };
    match rustix::process::kill_process(raw, Signal::TERM) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::SRCH => Ok(()),
        Err(e) => Err(Error::Signal {
            pid,
            source: e.into(),
        }),
    }
}

/// Detaches the calling process from its terminal's session, so closing the terminal or a
/// Ctrl-C meant for the client that started it never reaches it. Fails harmlessly (and is
/// ignored) when the process already leads a process group.
pub fn detach_session() {
    let _ = rustix::process::setsid();
}
