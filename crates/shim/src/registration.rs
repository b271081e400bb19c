//! The shim's registration, `CROSS_AGENT_HOME/panels/<agent>-<pid>.json` (docs/spec/cross-agent-mcp.md: "The shim
//! records its own pid ancestor list"), and its socket's path beside it. Written owner-only and
//! atomically (a temporary file opened without following links, then renamed over), rewritten
//! when the sessions change, removed when the shim ends. A shim starting removes the files of
//! shims that died without cleaning up (a pid no longer alive, or reused by another process).

use std::io::Write;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use cross_agent_protocol::panel::{PANEL_PROTOCOL_VERSION, PanelRegistration, PanelSession};
use cross_agent_protocol::vocabulary::Agent;

use crate::{Error, Result};

/// How far up the process chain the ancestors go.
const MAX_ANCESTORS: usize = 64;

/// The two files of one shim in `panels/`.
#[derive(Debug, Clone)]
pub struct Paths {
    pub json: PathBuf,
    pub socket: PathBuf,
}

impl Paths {
    pub fn of(panels: &Path, agent: Agent, pid: u32) -> Paths {
        let stem = format!("{}-{pid}", agent.as_str());
        Paths {
            json: panels.join(format!("{stem}.json")),
            socket: panels.join(format!("{stem}.sock")),
        }
    }
}

/// The processes above `pid`, nearest first (the extension host, the window, …).
pub fn ancestors(pid: u32) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut current = cross_agent_process::parent_of(pid);
    while let Some(parent) = current {
        if parent == 0 || chain.len() >= MAX_ANCESTORS {
            break;
        }
        chain.push(parent);
        if parent == 1 {
            break;
        }
        current = cross_agent_process::parent_of(parent);
    }
    chain
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    u64::try_from(cross_agent_protocol::timestamp::UnixMillis::now().0).unwrap_or(0)
}

/// The registration of this process, before any session is known.
pub fn describe(agent: Agent, socket: &Path, real_binary: String) -> PanelRegistration {
    let pid = std::process::id();
    let now = now_ms();
    PanelRegistration {
        protocol: PANEL_PROTOCOL_VERSION,
        agent,
        pid,
        pid_start_ticks: cross_agent_process::start_ticks(pid),
        agent_pid: None,
        ancestors: ancestors(pid),
        socket: socket.display().to_string(),
        real_binary,
        cwd: std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string()),
        started_at_ms: now,
        updated_at_ms: now,
        intercepting: true,
        sessions: Vec::<PanelSession>::new(),
    }
}

/// Writes `registration` to `path` atomically, owner-only, never through a link.
pub fn write(path: &Path, registration: &PanelRegistration) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(registration).map_err(Error::Encode)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    // A new file of a random name (`O_EXCL`, so never a link), owner-only from the start; it is
    // removed again if anything fails before the rename.
    let mut temp = tempfile::Builder::new()
        .prefix(".registration.")
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(
            cross_agent_home::home::FILE_MODE,
        ))
        .tempfile_in(dir)
        .map_err(|e| Error::io("create a temporary file in", dir, e))?;
    temp.write_all(&bytes)
        .map_err(|e| Error::io("write", temp.path(), e))?;
    // rename() replaces a link at `path` itself; it never writes through one.
    temp.persist(path)
        .map_err(|e| Error::io("move into place", path, e.error))?;
    Ok(())
}

/// Removes both files (what is already gone is fine).
pub fn remove(paths: &Paths) {
    let _ = std::fs::remove_file(&paths.json);
    let _ = std::fs::remove_file(&paths.socket);
}

/// Whether the shim that wrote a registration still runs: its pid is alive and, where known,
/// started at the recorded tick (not a later process that reused the pid).
pub fn is_live(pid: u32, start_ticks: Option<u64>) -> bool {
    cross_agent_process::is_alive(pid)
        && match (start_ticks, cross_agent_process::start_ticks(pid)) {
            (Some(recorded), Some(now)) => recorded == now,
            _ => true,
        }
}

/// Removes the registrations and sockets of shims that are gone. Returns what was removed.
pub fn remove_stale(panels: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(panels) else {
        return removed;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((stem, extension)) = name.rsplit_once('.') else {
            continue;
        };
        let Some(pid) = stem
            .rsplit_once('-')
            .and_then(|(agent, pid)| {
                Agent::ALL
                    .iter()
                    .any(|a| a.as_str() == agent)
                    .then_some(pid)
            })
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let live = match extension {
            "json" => match std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<PanelRegistration>(&bytes).ok())
            {
                Some(registration) => is_live(registration.pid, registration.pid_start_ticks),
                // Unreadable (another version, cut short): judged by the pid in its name.
                None => cross_agent_process::is_alive(pid),
            },
            "sock" => cross_agent_process::is_alive(pid),
            _ => continue,
        };
        if !live && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn written_owner_only_and_replaced_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::of(dir.path(), Agent::Claude, 42);
        let mut registration = describe(Agent::Claude, &paths.socket, "/bin/claude".into());
        write(&paths.json, &registration).unwrap();
        registration.intercepting = false;
        write(&paths.json, &registration).unwrap();
        let mode = std::fs::metadata(&paths.json).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let back: PanelRegistration =
            serde_json::from_slice(&std::fs::read(&paths.json).unwrap()).unwrap();
        assert_eq!(back, registration);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }

    #[test]
    fn a_link_in_place_of_the_registration_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "theirs").unwrap();
        let paths = Paths::of(dir.path(), Agent::Codex, 7);
        std::os::unix::fs::symlink(&outside, &paths.json).unwrap();
        let registration = describe(Agent::Codex, &paths.socket, "codex".into());
        write(&paths.json, &registration).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "theirs");
        assert!(!std::fs::symlink_metadata(&paths.json).unwrap().is_symlink());
    }

    #[test]
    fn ancestors_start_with_the_parent() {
        let me = std::process::id();
        let chain = ancestors(me);
        assert_eq!(chain.first().copied(), cross_agent_process::parent_of(me));
    }

    #[test]
    fn stale_files_of_dead_or_reused_pids_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        // A live shim (this process), a dead one, and a live pid whose start time differs.
        let live = Paths::of(dir.path(), Agent::Claude, me);
        let mut registration = describe(Agent::Claude, &live.socket, "claude".into());
        write(&live.json, &registration).unwrap();
        std::fs::write(&live.socket, "").unwrap();

        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = child.id();
        child.wait().unwrap();
        let dead = Paths::of(dir.path(), Agent::Grok, dead_pid);
        registration.pid = dead_pid;
        write(&dead.json, &registration).unwrap();
        std::fs::write(&dead.socket, "").unwrap();

        let reused = Paths::of(dir.path(), Agent::Codex, 1);
        registration.pid = 1;
        registration.pid_start_ticks = Some(u64::MAX);
        write(&reused.json, &registration).unwrap();

        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        let mut removed = remove_stale(dir.path());
        removed.sort();
        let mut expected = vec![dead.json, dead.socket, reused.json];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(live.json.exists() && live.socket.exists());
    }
}
