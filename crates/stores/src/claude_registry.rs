//! Claude Code's registry of running sessions: `<config>/sessions/<pid>.json`, one file per
//! Claude Code process, written by the process itself on its first turn and rewritten as its
//! status flips between `busy` and `idle` (observed with 2.1.332; `docs/observed/claude.md` §3.2).
//!
//! An entry says which session a process holds, its registry name (what other sessions address
//! it by), its status and its messaging socket. It is **not** proof the process still runs: a
//! process killed with `-9` leaves its entry and its socket behind. An entry is live only while
//! its pid runs *and* that pid's start time equals the entry's `procStart` (clock ticks since
//! boot, `/proc/<pid>/stat` field 22: checked against a real session), so a later process that
//! reused the pid is not taken for it.
//!
//! Entries named with [`RELAY_NAME_PREFIX`] are cross-agent's own relays (real Claude Code
//! processes that carry native sends): never sessions, never listed, never chosen. Their
//! transcripts, filed under a cwd in `<CROSS_AGENT_HOME>/relays/xa-…`, are likewise kept out of
//! listings ([`is_relay_cwd`]). Read-only, like every reader here; the `.key` files beside the
//! entries (peer tokens) are never opened.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::Warnings;

pub use cross_agent_protocol::vocabulary::{RELAY_NAME_PREFIX, RELAYS_DIR};

/// `<config>/sessions`, where Claude Code registers its running processes.
pub fn sessions_dir(config: &Path) -> PathBuf {
    config.join("sessions")
}

/// Whether a registry name is a relay's.
pub fn is_relay_name(name: &str) -> bool {
    name.starts_with(RELAY_NAME_PREFIX)
}

/// Whether a session's working directory is a relay's (`…/relays/xa-…`): its transcript is a
/// relay's, never a session to list or send to.
pub fn is_relay_cwd(cwd: &Path) -> bool {
    let mut parts = cwd.components().rev();
    let name = parts.next().map(|c| c.as_os_str().to_string_lossy());
    let parent = parts.next().map(|c| c.as_os_str().to_string_lossy());
    matches!((name, parent), (Some(name), Some(parent)) if is_relay_name(&name) && parent == RELAYS_DIR)
}

/// One registry entry, as Claude Code wrote it. Fields this reader does not use are left out;
/// absent ones are `None` (older or newer versions may leave some out).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryEntry {
    pub pid: u32,
    pub session_id: String,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The process's start time in clock ticks since boot, as a decimal string.
    #[serde(default)]
    pub proc_start: Option<String>,
    /// The name other sessions address it by (`--name`, else derived from the cwd).
    #[serde(default)]
    pub name: Option<String>,
    /// `busy` or `idle`.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub messaging_socket_path: Option<PathBuf>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub updated_at: Option<i64>,
}

impl RegistryEntry {
    /// The recorded start time, when it is a number.
    pub fn proc_start_ticks(&self) -> Option<u64> {
        self.proc_start
            .as_deref()
            .and_then(|s| s.trim().parse().ok())
    }

    /// True while the process that wrote this entry still runs: its pid is alive and started
    /// when the entry says. An entry without a readable start time cannot be told from a reused
    /// pid, so it counts as stale: such a session is reached over the CLI, which is always safe
    /// for a session nobody runs.
    pub fn is_live(&self) -> bool {
        self.proc_start_ticks()
            .is_some_and(|start| cross_agent_process::is_same_process(self.pid, start))
    }

    /// Whether this entry is one of cross-agent's relays.
    pub fn is_relay(&self) -> bool {
        self.name.as_deref().is_some_and(is_relay_name)
            || self.cwd.as_deref().is_some_and(is_relay_cwd)
    }

    /// The native address of its inbox, `uds:<socket>`, when it announced one.
    pub fn native_address(&self) -> Option<String> {
        self.messaging_socket_path
            .as_ref()
            .map(|p| format!("uds:{}", p.display()))
    }
}

/// How much of a transcript's end [`last_permission_mode`] reads.
const MODE_TAIL_BYTES: u64 = 256 * 1024;

/// The permission mode a Claude session last ran in, as its transcript records it (Claude Code
/// writes `"permissionMode":"default"` and the like on each user record): only the file's end
/// is read. A relay sending to a live session starts in the same mode, since Claude holds a
/// message from another permission class instead of delivering it.
pub fn last_permission_mode(transcript: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    const KEY: &[u8] = b"\"permissionMode\":\"";
    let mut file = std::fs::File::open(transcript).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(MODE_TAIL_BYTES)))
        .ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    let at = memchr::memmem::rfind(&tail, KEY)? + KEY.len();
    let rest = &tail[at..];
    let end = memchr::memchr(b'"', rest)?;
    let mode = std::str::from_utf8(&rest[..end]).ok()?;
    (!mode.is_empty() && mode.bytes().all(|b| b.is_ascii_alphanumeric())).then(|| mode.to_owned())
}

/// Every entry under `<config>/sessions`, relays included, live or not. A file that cannot be
/// read or parsed is a warning naming it (an entry being rewritten is skipped this time).
pub fn read_entries(config: &Path, warnings: &mut Warnings) -> Vec<RegistryEntry> {
    let dir = sessions_dir(config);
    let listing = match std::fs::read_dir(&dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => {
            warnings.push(
                &dir,
                None,
                format!("cannot list Claude's session registry: {error}"),
            );
            return Vec::new();
        }
    };
    let mut entries = Vec::new();
    for item in listing.flatten() {
        let path = item.path();
        // `<pid>.json` only: the `<pid>.<hash>.key` files hold peer tokens and are never read.
        let is_entry = path.extension().is_some_and(|e| e == "json")
            && path
                .file_stem()
                .and_then(|s| s.to_str())
                .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
        if !is_entry {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<RegistryEntry>(&bytes) {
                Ok(entry) => entries.push(entry),
                Err(error) => warnings.push(
                    &path,
                    None,
                    format!("not a Claude session registry entry: {error}"),
                ),
            },
            // Removed between the listing and the read: its process exited.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => warnings.push(&path, None, format!("cannot read: {error}")),
        }
    }
    entries.sort_by_key(|e| e.pid);
    entries
}

/// What the registry says about the sessions it names: live sessions (relays left out) and the
/// stale entries a dead process left behind.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub entries: Vec<RegistryEntry>,
}

impl Registry {
    /// Reads the registry under `config` (a Claude config root such as `~/.claude`).
    pub fn read(config: &Path, warnings: &mut Warnings) -> Registry {
        Registry {
            entries: read_entries(config, warnings),
        }
    }

    /// The live, non-relay entry of `session_id`, when a running process holds it. When two
    /// live processes claim the session (a resume beside a running one), the most recently
    /// updated wins.
    pub fn live_session(&self, session_id: &str) -> Option<&RegistryEntry> {
        self.entries
            .iter()
            .filter(|e| e.session_id == session_id && !e.is_relay() && e.is_live())
            .max_by_key(|e| e.updated_at.unwrap_or(0))
    }

    /// Every live session (relays left out).
    pub fn live_sessions(&self) -> impl Iterator<Item = &RegistryEntry> {
        self.entries.iter().filter(|e| !e.is_relay() && e.is_live())
    }

    /// The entries of `session_id` whose process is gone (pid dead or reused): a crash left
    /// them behind.
    pub fn stale_entries_of<'a>(
        &'a self,
        session_id: &'a str,
    ) -> impl Iterator<Item = &'a RegistryEntry> + 'a {
        self.entries
            .iter()
            .filter(move |e| e.session_id == session_id && !e.is_relay() && !e.is_live())
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn entry_json(pid: u32, session: &str, proc_start: &str, name: &str, cwd: &str) -> String {
        format!(
            r#"{{"pid":{pid},"sessionId":"{session}","cwd":"{cwd}","startedAt":1,"procStart":"{proc_start}","version":"2.1.332","peerProtocol":1,"kind":"interactive","messagingSocketPath":"/tmp/cc-socks/{pid}.sock","name":"{name}","nameSource":"derived","status":"idle","updatedAt":5}}"#
        )
    }

    #[test]
    fn relay_names_and_dirs_are_recognised() {
        assert!(is_relay_name("xa-cli-on-box"));
        assert!(!is_relay_name("proj-95"));
        assert!(is_relay_cwd(Path::new(
            "/h/.cross-agent/relays/xa-cli-on-box"
        )));
        assert!(!is_relay_cwd(Path::new("/h/relays/proj")));
        assert!(!is_relay_cwd(Path::new("/h/work/xa-thing")));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_entry_is_live_only_while_its_pid_runs_with_the_recorded_start() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = sessions_dir(dir.path());
        let me = std::process::id();
        let start = cross_agent_process::start_ticks(me).unwrap();
        write(
            &sessions,
            &format!("{me}.json"),
            &entry_json(me, "s-live", &start.to_string(), "proj-1", "/w/proj"),
        );
        // Same pid, another start time: the pid was reused, the entry is stale.
        write(
            &sessions,
            "1.json",
            &entry_json(1, "s-reused", "1", "proj-2", "/w/proj"),
        );
        // A relay's entry, live: never a session.
        write(
            &sessions,
            "2.json",
            &entry_json(
                me,
                "s-relay",
                &start.to_string(),
                "xa-cli-on-box",
                "/h/relays/xa-cli-on-box",
            ),
        );
        write(&sessions, "3.json", "{not json");
        write(&sessions, "3.abc.key", r#"{"peerToken":"secret"}"#);
        let mut warnings = Warnings::default();
        let registry = Registry::read(dir.path(), &mut warnings);
        assert_eq!(registry.entries.len(), 3);
        assert_eq!(warnings.items.len(), 1, "{:?}", warnings.items);
        assert!(warnings.items[0].to_string().contains("3.json"));
        let live = registry.live_session("s-live").unwrap();
        assert_eq!(live.name.as_deref(), Some("proj-1"));
        assert_eq!(live.status.as_deref(), Some("idle"));
        assert_eq!(
            live.native_address().as_deref(),
            Some(format!("uds:/tmp/cc-socks/{me}.sock").as_str())
        );
        assert!(registry.live_session("s-reused").is_none());
        assert_eq!(registry.stale_entries_of("s-reused").count(), 1);
        assert!(registry.live_session("s-relay").is_none());
        let names: Vec<_> = registry
            .live_sessions()
            .filter_map(|e| e.name.clone())
            .collect();
        assert_eq!(names, vec!["proj-1".to_owned()]);
    }

    #[test]
    fn the_last_permission_mode_of_a_transcript_is_read_from_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"type":"user","permissionMode":"default","message":{}}"#,
                "\n",
                r#"{"type":"assistant","message":{}}"#,
                "\n",
                r#"{"type":"user","permissionMode":"bypassPermissions","message":{}}"#,
                "\n",
            ),
        )
        .unwrap();
        assert_eq!(
            last_permission_mode(&path).as_deref(),
            Some("bypassPermissions")
        );
        std::fs::write(&path, r#"{"type":"user","message":{}}"#).unwrap();
        assert_eq!(last_permission_mode(&path), None);
        assert_eq!(last_permission_mode(&dir.path().join("none.jsonl")), None);
    }

    #[test]
    fn a_missing_registry_is_empty_without_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let mut warnings = Warnings::default();
        assert!(Registry::read(dir.path(), &mut warnings).entries.is_empty());
        assert!(warnings.items.is_empty());
    }
}
