//! What the bot keeps under `CROSS_AGENT_HOME/telegram/`, every file owner-only (0600) and
//! replaced whole (written beside, then renamed):
//!
//! - `token`: the bot token, alone on its line.
//! - `access.json`: the paired users and chats, and the one pending pairing code.
//! - `status.json`: what the poller last did (its state, the last update received, the last
//!   error, the updates it skipped), written by the poller, read by `cross-agent telegram
//!   status`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How long a pairing code is good for.
pub const PAIR_CODE_TTL_MS: i64 = 10 * 60 * 1000;

/// The bot's directory in a home.
pub fn dir(home: &Path) -> PathBuf {
    home.join("telegram")
}

pub fn token_path(home: &Path) -> PathBuf {
    dir(home).join("token")
}

pub fn access_path(home: &Path) -> PathBuf {
    dir(home).join("access.json")
}

pub fn status_path(home: &Path) -> PathBuf {
    dir(home).join("status.json")
}

/// What the daemon's outbound queue holds, for `telegram status` (rewritten while it polls).
pub fn outbound_path(home: &Path) -> PathBuf {
    dir(home).join("outbound.json")
}

pub fn read_outbound(home: &Path) -> Result<crate::queue::QueueSnapshot> {
    read_json(&outbound_path(home))
}

pub fn write_outbound(home: &Path, snapshot: &crate::queue::QueueSnapshot) -> Result<()> {
    write_json(&outbound_path(home), snapshot)
}

/// Writes `bytes` to `path` owner-only, replacing it whole.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    // Only `telegram/` itself: the daemon rewrites these files while it polls, and one whose
    // home was deleted under it must fail here rather than re-create the home.
    cross_agent_home::home::ensure_private_subdir(parent).map_err(|error| Error::Io {
        path: parent.to_owned(),
        source: std::io::Error::other(error),
    })?;
    // A new file of a random name beside `path` (`O_EXCL`, so never a link), owner-only from
    // the start, synced, then renamed over `path`: a reader sees the old file or the new one.
    let mut temp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(parent)
        .map_err(|e| Error::io(parent, e))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| Error::io(temp.path(), e))?;
    temp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// The stored token, `None` when no bot is set up.
pub fn read_token(home: &Path) -> Result<Option<String>> {
    let path = token_path(home);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(Error::io(path, error)),
    }
}

/// Stores the token; `telegram setup` is a start-up of the home, so this one creates it.
pub fn write_token(home: &Path, token: &str) -> Result<()> {
    cross_agent_home::home::ensure_private_dir(home).map_err(|error| Error::Io {
        path: home.to_owned(),
        source: std::io::Error::other(error),
    })?;
    write_private(&token_path(home), format!("{token}\n").as_bytes())
}

/// One person allowed to use the bot, and the chat they paired from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paired {
    pub user_id: i64,
    pub chat_id: i64,
    #[serde(default)]
    pub name: String,
    pub paired_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCode {
    pub code: String,
    /// Unix milliseconds.
    pub expires_at_ms: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    #[serde(default)]
    pub paired: Vec<Paired>,
    #[serde(default)]
    pub pending: Option<PendingCode>,
}

impl Access {
    /// Whether this user, in this chat, may use the bot.
    pub fn allows(&self, user_id: i64, chat_id: i64) -> bool {
        self.paired
            .iter()
            .any(|p| p.user_id == user_id && p.chat_id == chat_id)
    }
}

/// Reads a JSON file of the bot: `T::default()` when it does not exist yet.
pub(crate) fn read_json<T: for<'de> Deserialize<'de> + Default>(path: &Path) -> Result<T> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(error) => Err(Error::io(path, error)),
    }
}

/// Reads a state file the bot rewrites whole (`desk.json`, `topics.json`,
/// `hook_sessions.json`): a damaged one is moved aside to `<file>.damaged-<ms>` — its bytes kept
/// for the person to look at, said in the log with both paths — and the bot goes on from
/// empty, so its next write does not replace what the file held. Other errors (a file it may
/// not read) are returned.
pub(crate) fn read_state<T: for<'de> Deserialize<'de> + Default>(path: &Path) -> Result<T> {
    match read_json(path) {
        Err(Error::Json { source, .. }) => {
            let mut aside = path.as_os_str().to_owned();
            aside.push(format!(
                ".damaged-{}",
                cross_agent_protocol::timestamp::UnixMillis::now().0
            ));
            let aside = PathBuf::from(aside);
            match std::fs::rename(path, &aside) {
                Ok(()) => tracing::warn!(
                    path = %path.display(),
                    moved_to = %aside.display(),
                    error = %source,
                    "a damaged telegram state file was moved aside; starting it afresh"
                ),
                Err(error) => {
                    return Err(Error::io(path, error));
                }
            }
            Ok(T::default())
        }
        other => other,
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|source| Error::Json {
        path: path.to_owned(),
        source,
    })?;
    write_private(path, &bytes)
}

pub fn read_access(home: &Path) -> Result<Access> {
    read_json(&access_path(home))
}

pub fn write_access(home: &Path, access: &Access) -> Result<()> {
    write_json(&access_path(home), access)
}

/// What the poller last did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollerStatus {
    /// `polling`, `backing_off`, `unauthorized`, `stopped`; empty when no poller ever ran.
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub bot_username: Option<String>,
    /// When the last update actually arrived (RFC 3339): the bot's health.
    #[serde(default)]
    pub last_update_at: Option<String>,
    #[serde(default)]
    pub updates_received: u64,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_error_at: Option<String>,
    /// Updates that could not be read and were gone past (each also a `telegram_update`
    /// decision).
    #[serde(default)]
    pub updates_skipped: u64,
    /// The last of them, and why.
    #[serde(default)]
    pub last_skipped: Option<LastSkipped>,
    #[serde(default)]
    pub updated_at: String,
}

/// The last update the poller skipped, and when (RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastSkipped {
    pub at: String,
    #[serde(flatten)]
    pub update: crate::updates::SkippedUpdate,
}

pub fn read_status(home: &Path) -> Result<PollerStatus> {
    read_json(&status_path(home))
}

pub fn write_status(home: &Path, status: &PollerStatus) -> Result<()> {
    write_json(&status_path(home), status)
}

#[cfg(test)]
mod state_tests {
    use super::*;

    #[test]
    fn a_damaged_state_file_is_moved_aside_with_its_bytes_and_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("desk.json");
        std::fs::write(&path, b"{\"cards\": [half a line").unwrap();
        let read: Vec<String> = read_state(&path).unwrap();
        assert!(read.is_empty());
        assert!(
            !path.exists(),
            "the damaged file is no longer where the next write goes"
        );
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(aside.len(), 1, "{aside:?}");
        let name = aside[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("desk.json.damaged-"), "{name}");
        assert_eq!(
            std::fs::read(&aside[0]).unwrap(),
            b"{\"cards\": [half a line"
        );

        // A good file is read; a missing one is empty; neither is moved.
        std::fs::write(&path, b"[\"a\"]").unwrap();
        assert_eq!(read_state::<Vec<String>>(&path).unwrap(), ["a"]);
        assert!(path.exists());
        std::fs::remove_file(&path).unwrap();
        assert!(read_state::<Vec<String>>(&path).unwrap().is_empty());
    }
}
