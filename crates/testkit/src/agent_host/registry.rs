//! The fake host's endpoint registry entry, written the way VS Code's host writes its own
//! (`docs/observed/copilot.md` §2.1): schema v2 at
//! `<userData>/agent-host/local-endpoint/entries/<sha256 identity>.json`, directories 0700, the
//! file 0600 through a temporary file and a rename, written after the socket listens and removed
//! when the host stops.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};

/// The fields of one entry.
pub(crate) struct Entry<'a> {
    pub pid: u32,
    pub instance_id: &'a str,
    pub socket: &'a Path,
    pub token: &'a str,
    pub protocol_version: &'a str,
}

/// `lowercase hex(sha256("editor\0{pid}\0{instanceId}"))`.
pub fn identity(kind: &str, pid: u32, instance_id: &str) -> String {
    let digest = Sha256::digest(format!("{kind}\0{pid}\0{instance_id}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The entries directory under a user data directory.
pub fn entries_dir(user_data: &Path) -> PathBuf {
    user_data
        .join("agent-host")
        .join("local-endpoint")
        .join("entries")
}

/// Writes the entry and returns its path.
pub(crate) fn write(user_data: &Path, entry: &Entry<'_>) -> anyhow::Result<PathBuf> {
    let dir = entries_dir(user_data);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    // Key order as VS Code's `JSON.stringify` of its object literal writes it.
    let body = format!(
        "{{\"schemaVersion\":2,\"type\":\"editor\",\"pid\":{},\"instanceId\":{},\"endpoint\":{{\"type\":\"socket\",\"path\":{}}},\"connectionToken\":{},\"protocolVersion\":{}}}",
        entry.pid,
        serde_json::to_string(entry.instance_id)?,
        serde_json::to_string(&entry.socket.to_string_lossy())?,
        serde_json::to_string(entry.token)?,
        serde_json::to_string(entry.protocol_version)?,
    );
    let name = identity("editor", entry.pid, entry.instance_id);
    let tmp = dir.join(format!("{}.tmp", uuid::Uuid::new_v4().simple()));
    let path = dir.join(format!("{name}.json"));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(body.as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(path)
}
