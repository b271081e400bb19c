//! The editor's own CLI as the portable way to raise a window: `code --reuse-window <folder>`
//! brings the window that has the folder open to the front on every system, Wayland included.
//! It cannot say which window came up, and when no window has the folder it opens the folder
//! in the last active window instead (replacing what that window showed), so [`crate::focus`]
//! uses it only where no window list can be read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_protocol::settings;

use crate::error::{ControlError, Result};

/// How long the CLI may take: it hands the request to the running editor and exits.
const WAIT: Duration = Duration::from_secs(15);

/// The editor CLI: `CROSS_AGENT_EDITOR_CLI`, else `code` on `PATH`.
pub fn find() -> Result<PathBuf> {
    if let Some(cli) = std::env::var_os(settings::EDITOR_CLI).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(cli));
    }
    which::which("code").map_err(|_| ControlError::EditorCli {
        program: "code".to_owned(),
        problem: format!(
            "is not on PATH; install VS Code's shell command or set {} to the editor's CLI",
            settings::EDITOR_CLI
        ),
    })
}

/// Runs `<cli> --reuse-window <folder>` and waits for it.
pub fn reuse_window(cli: &Path, folder: &Path) -> Result<()> {
    let program = cli.display().to_string();
    let fail = |problem: String| ControlError::EditorCli {
        program: program.clone(),
        problem,
    };
    let mut child = Command::new(cli)
        .arg("--reuse-window")
        .arg(folder)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| fail(format!("could not be started: {e}")))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(fail(format!("ended with {status}"))),
            Ok(None) if started.elapsed() > WAIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!("did not end within {} s", WAIT.as_secs())));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(fail(format!("could not be waited for: {e}"))),
        }
    }
}
