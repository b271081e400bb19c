//! Small process helpers the CLI needs to stop a daemon that does not answer its socket.

use rustix::process::{Pid, Signal};

use crate::error::{Error, Result};

/// Liveness is answered where every crate asks it (zombies do not count).
pub use cross_agent_process::is_alive;

fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
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
