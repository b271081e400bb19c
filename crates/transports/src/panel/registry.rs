//! Reading `CROSS_AGENT_HOME/panels/`: which shims are registered and alive. A registration is
//! taken only when it is a regular file of this user's, owner-only, no link, of this protocol
//! version, naming itself (`<agent>-<pid>.json` with that agent and pid) and a socket in the same
//! folder. A shim whose pid is gone, or whose pid now runs another process (its start time
//! differs), is dead: its file and socket are removed.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use cross_agent_protocol::panel::{PANEL_PROTOCOL_VERSION, PANELS_DIR, PanelRegistration};

/// At most this many registrations are read in one look: a folder filled by something else is
/// not walked without end.
const MAX_REGISTRATIONS: usize = 256;
/// A registration is a few kilobytes; a larger file is not one.
const MAX_REGISTRATION_BYTES: u64 = 1024 * 1024;

/// One registered, live shim.
#[derive(Debug, Clone, PartialEq)]
pub struct LivePanel {
    pub registration: PanelRegistration,
    /// The registration file.
    pub file: PathBuf,
}

/// A registration that was not taken, and why (for `bridge_status` and the decisions log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPanel {
    pub file: PathBuf,
    pub reason: String,
}

/// A dead shim's registration, removed with its socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedPanel {
    pub file: PathBuf,
    pub pid: u32,
    pub reason: String,
}

/// One look at `panels/`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PanelScan {
    pub live: Vec<LivePanel>,
    pub skipped: Vec<SkippedPanel>,
    pub removed: Vec<RemovedPanel>,
}

/// The folder the shims register in.
pub fn panels_dir(state_root: &Path) -> PathBuf {
    state_root.join(PANELS_DIR)
}

/// Reads every registration in `state_root/panels/`, removing the dead shims' files. A missing
/// folder is no panel at all.
pub fn scan(state_root: &Path) -> PanelScan {
    let dir = panels_dir(state_root);
    let mut found = PanelScan::default();
    let Ok(entries) = fs::read_dir(&dir) else {
        return found;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files.into_iter().take(MAX_REGISTRATIONS) {
        match read_one(&dir, &file) {
            Ok(Reading::Live(registration)) => found.live.push(LivePanel { registration, file }),
            Ok(Reading::Dead { pid, reason }) => {
                remove_dead(&dir, &file, pid);
                found.removed.push(RemovedPanel { file, pid, reason });
            }
            Err(reason) => found.skipped.push(SkippedPanel { file, reason }),
        }
    }
    found
}

enum Reading {
    Live(PanelRegistration),
    Dead { pid: u32, reason: String },
}

fn read_one(dir: &Path, file: &Path) -> Result<Reading, String> {
    let meta = fs::symlink_metadata(file).map_err(|e| format!("cannot be read ({e})"))?;
    if meta.file_type().is_symlink() {
        return Err("is a symbolic link; a registration is a file the shim writes itself".into());
    }
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "is owned by uid {}, not by you (uid {me}); a shim of another user is never used",
            meta.uid()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "has mode {:o}; a registration must be owner-only (0600)",
            meta.mode() & 0o777
        ));
    }
    if meta.len() > MAX_REGISTRATION_BYTES {
        return Err(format!(
            "is {} bytes, too large for a registration",
            meta.len()
        ));
    }
    let bytes = fs::read(file).map_err(|e| format!("cannot be read ({e})"))?;
    let registration: PanelRegistration =
        serde_json::from_slice(&bytes).map_err(|e| format!("is not a registration ({e})"))?;
    let expected = format!("{}-{}.json", registration.agent, registration.pid);
    if file.file_name().is_none_or(|n| n != expected.as_str()) {
        return Err(format!(
            "names {} pid {}, which is not its file name (expected {expected})",
            registration.agent, registration.pid
        ));
    }
    // A dead shim's file goes whatever its version: nobody else would remove it.
    if let Some(reason) = dead_reason(&registration) {
        return Ok(Reading::Dead {
            pid: registration.pid,
            reason,
        });
    }
    if registration.protocol != PANEL_PROTOCOL_VERSION {
        return Err(format!(
            "speaks panel protocol {}, this daemon {PANEL_PROTOCOL_VERSION}; update the shim or \
             the daemon so both are the same build",
            registration.protocol
        ));
    }
    let socket = Path::new(&registration.socket);
    if socket.parent() != Some(dir) {
        return Err(format!(
            "names socket {}, which is not in {}",
            registration.socket,
            dir.display()
        ));
    }
    Ok(Reading::Live(registration))
}

/// Why a registered shim is gone, if it is.
fn dead_reason(registration: &PanelRegistration) -> Option<String> {
    let pid = registration.pid;
    if !cross_agent_process::is_alive(pid) {
        return Some(format!("shim pid {pid} is gone"));
    }
    match (
        registration.pid_start_ticks,
        cross_agent_process::start_ticks(pid),
    ) {
        (Some(recorded), Some(now)) if recorded != now => Some(format!(
            "pid {pid} now runs another process (started at tick {now}, the shim at {recorded})"
        )),
        _ => None,
    }
}

/// Removes a dead shim's registration and its socket, only where each is this user's own and
/// not a link (the folder is the user's; a file of someone else's is left alone).
fn remove_dead(dir: &Path, file: &Path, pid: u32) {
    let _ = remove_own(file, false);
    if let Some(stem) = file.file_stem() {
        let socket = dir.join(stem).with_extension("sock");
        let _ = remove_own(&socket, true);
    }
    tracing::info!(pid, file = %file.display(), "removed a dead panel shim's registration");
}

fn remove_own(path: &Path, socket: bool) -> std::io::Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    let right_kind = if socket {
        meta.file_type().is_socket()
    } else {
        meta.is_file()
    };
    if right_kind && meta.uid() == rustix::process::geteuid().as_raw() {
        fs::remove_file(path)?;
    }
    Ok(())
}

/// The processes that may own a session's editor window, for telling two windows of one folder
/// apart (`control::matching::window_for_cwd` keeps a window whose `_NET_WM_PID` is among
/// them): the ancestry of the shim that hosts `session_id`, else of the shims started in `cwd`
/// (another panel of the same workspace is in the same window). VS Code's window is its main
/// process, an ancestor of every shim; pid 1 is left out. Empty when no shim says.
pub fn editor_pids(panels: &[LivePanel], session_id: Option<&str>, cwd: &Path) -> Vec<u32> {
    let hosting: Vec<&LivePanel> = panels
        .iter()
        .filter(|p| {
            session_id.is_some_and(|id| {
                p.registration
                    .sessions
                    .iter()
                    .any(|s| s.session_id.as_deref() == Some(id))
            })
        })
        .collect();
    let chosen = if hosting.is_empty() {
        panels
            .iter()
            .filter(|p| {
                let reg = &p.registration;
                reg.cwd.as_deref().map(Path::new) == Some(cwd)
                    || reg
                        .sessions
                        .iter()
                        .any(|s| s.cwd.as_deref().map(Path::new) == Some(cwd))
            })
            .collect()
    } else {
        hosting
    };
    let mut pids: Vec<u32> = chosen
        .iter()
        .flat_map(|p| {
            std::iter::once(p.registration.pid).chain(p.registration.ancestors.iter().copied())
        })
        .filter(|&pid| pid > 1)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}
