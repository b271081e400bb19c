//! VS Code's Agent Host endpoint registry, read-only: one `<identity>.json` per running host in
//! `<userData>/agent-host/local-endpoint/entries/` (`docs/observed/copilot.md` §2.1, §7).
//!
//! An entry is used only when VS Code could have written it and it is still true: schema 2, a
//! regular file (never a link) named by its own identity (lowercase hex sha256 of
//! `type\0pid\0instanceId`), its process alive. Other entries are skipped silently, as VS Code's
//! own reader does — but nothing is ever deleted here. What VS Code writes owner-only (the
//! folders `0700`, the files `0600`, all owned by the user) is refused when it is not, and so is
//! an entry whose socket belongs to another user: each is an [`EndpointProblem`] naming the
//! file and the fix, and its token is never read into anything that could print it.
//!
//! The connection token lives in [`ConnectionToken`], whose `Debug` and `Display` say
//! `<redacted>`: an endpoint can be logged, put in an error or a decision whole.

use std::fmt;
use std::fs::{self, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The largest entry file read: VS Code's are a few hundred bytes.
const MAX_ENTRY_BYTES: u64 = 64 * 1024;

/// Group and other permission bits: an owner-only file or folder has none.
const GROUP_OTHER: u32 = 0o077;

/// The secret a client presents to the host (`?tkn=`). Never printed, serialised or compared
/// in a way that leaks it; [`ConnectionToken::expose`] is the one way to the text, for the
/// connection itself.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionToken(String);

impl ConnectionToken {
    /// The token's text, to put on the wire (and nowhere else).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ConnectionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ConnectionToken(<redacted>)")
    }
}

impl fmt::Display for ConnectionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de> Deserialize<'de> for ConnectionToken {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(ConnectionToken)
    }
}

/// Who published the endpoint: the editor's own host, or `code agent host` (standalone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostKind {
    Editor,
    Standalone,
}

impl HostKind {
    fn as_str(self) -> &'static str {
        match self {
            HostKind::Editor => "editor",
            HostKind::Standalone => "standalone",
        }
    }
}

/// Where the host listens.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum EndpointAddress {
    /// A Unix socket (what the editor publishes).
    Socket { path: PathBuf },
    /// A TCP port on `host` (what `code agent host` publishes).
    Tcp { host: String, port: u16 },
}

/// One running Agent Host, as its registry entry describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The entry file it was read from.
    pub entry: PathBuf,
    pub kind: HostKind,
    pub pid: u32,
    pub instance_id: String,
    pub address: EndpointAddress,
    pub token: ConnectionToken,
    /// The protocol version the host speaks (for diagnostics; the handshake negotiates).
    pub protocol_version: String,
}

/// An entry file or folder that is not used because it is not safe to: not owner-only, not
/// owned by this user, a link, or an entry whose socket is another user's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointProblem {
    /// The file or folder at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl fmt::Display for EndpointProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Agent Host endpoint {} not used: {}; {}",
            self.path.display(),
            self.problem,
            self.fix
        )
    }
}

/// The entries of one registry: the live endpoints, and what was refused.
#[derive(Debug, Default)]
pub struct Registry {
    pub endpoints: Vec<Endpoint>,
    pub problems: Vec<EndpointProblem>,
}

/// The entry file as VS Code writes it (schema 2). Unknown fields are ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntryFile {
    schema_version: u32,
    #[serde(rename = "type")]
    kind: HostKind,
    pid: u64,
    instance_id: String,
    endpoint: EndpointAddress,
    connection_token: ConnectionToken,
    protocol_version: String,
}

/// Only the version, read first: an entry of another schema is skipped whatever its shape.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntryVersion {
    schema_version: serde_json::Value,
}

/// The live endpoints in the registry folder `dir` (`…/local-endpoint/entries`); a folder that
/// does not exist has none. `is_alive` says whether a pid still runs (the process crate's, in
/// production).
pub fn read_registry(dir: &Path, is_alive: impl Fn(u32) -> bool) -> Registry {
    let mut registry = Registry::default();
    // The folder and its parent are what VS Code creates 0700 and checks are the user's.
    let parent = dir
        .parent()
        .filter(|p| p.file_name().is_some_and(|name| name == "local-endpoint"));
    for folder in parent.into_iter().chain([dir]) {
        match fs::symlink_metadata(folder) {
            Err(_) => return registry,
            Ok(meta) => {
                if let Some(problem) = folder_problem(folder, &meta) {
                    registry.problems.push(problem);
                    return registry;
                }
            }
        }
    }
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            registry.problems.push(EndpointProblem {
                path: dir.to_path_buf(),
                problem: format!("cannot be listed ({error})"),
                fix: "make it readable by you (VS Code creates it with mode 0700)".to_owned(),
            });
            return registry;
        }
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.extension().is_none_or(|ext| ext != "json") {
            // VS Code's temporary `<hex>.tmp` files, and anything else: not entries.
            continue;
        }
        match read_entry(&path, &is_alive) {
            Ok(Some(endpoint)) => registry.endpoints.push(endpoint),
            Ok(None) => {}
            Err(problem) => registry.problems.push(problem),
        }
    }
    registry
}

/// A registry folder that is a link, not a folder, or not the user's own and owner-only.
fn folder_problem(path: &Path, meta: &Metadata) -> Option<EndpointProblem> {
    let problem = |problem: String, fix: String| {
        Some(EndpointProblem {
            path: path.to_path_buf(),
            problem,
            fix,
        })
    };
    if meta.file_type().is_symlink() {
        return problem(
            "is a symbolic link; VS Code creates it as a real folder".to_owned(),
            format!(
                "remove the link (VS Code creates the folder again): rm {}",
                path.display()
            ),
        );
    }
    if !meta.is_dir() {
        return problem(
            "is not a folder".to_owned(),
            format!(
                "remove it (VS Code creates the folder): rm {}",
                path.display()
            ),
        );
    }
    owner_only_problem(path, meta, 0o700)
}

/// Not owned by this user, or open to group or others: what VS Code never writes.
fn owner_only_problem(path: &Path, meta: &Metadata, mode: u32) -> Option<EndpointProblem> {
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Some(EndpointProblem {
            path: path.to_path_buf(),
            problem: format!("is owned by uid {}, not by you (uid {me})", meta.uid()),
            fix: "it was not written by your VS Code; remove it, and quit and reopen VS Code"
                .to_owned(),
        });
    }
    let actual = meta.mode() & 0o7777;
    if actual & GROUP_OTHER != 0 {
        return Some(EndpointProblem {
            path: path.to_path_buf(),
            problem: format!(
                "is readable or writable by others (mode {actual:04o}), so its connection \
                 token may be known to them"
            ),
            fix: format!(
                "VS Code writes it with mode {mode:04o}: chmod {mode:o} {}, then quit and \
                 reopen VS Code so the host makes a new token",
                path.display()
            ),
        });
    }
    None
}

/// One entry: `Ok(None)` when it is skipped as VS Code's reader skips it, `Err` when it is
/// refused as unsafe.
fn read_entry(
    path: &Path,
    is_alive: &impl Fn(u32) -> bool,
) -> Result<Option<Endpoint>, EndpointProblem> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(None);
    };
    if meta.file_type().is_symlink() {
        return Err(EndpointProblem {
            path: path.to_path_buf(),
            problem: "is a symbolic link, and links are never followed here".to_owned(),
            fix: format!("remove the link: rm {}", path.display()),
        });
    }
    if !meta.is_file() {
        return Ok(None);
    }
    if let Some(problem) = owner_only_problem(path, &meta, 0o600) {
        return Err(problem);
    }
    // Opened without following a link swapped in since the check.
    let Ok(file) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
    else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    if file.take(MAX_ENTRY_BYTES).read_to_end(&mut bytes).is_err() {
        return Ok(None);
    }
    match serde_json::from_slice::<EntryVersion>(&bytes) {
        Ok(version) if version.schema_version == serde_json::json!(2) => {}
        // Another schema, or not an entry at all: skipped, as VS Code skips it. The parse
        // error is not kept: it could quote the file, token and all.
        _ => return Ok(None),
    }
    let Ok(entry) = serde_json::from_slice::<EntryFile>(&bytes) else {
        return Ok(None);
    };
    let pid = match u32::try_from(entry.pid) {
        Ok(pid) if pid > 0 && entry.schema_version == 2 => pid,
        _ => return Ok(None),
    };
    if path.file_stem().and_then(|s| s.to_str())
        != Some(identity(entry.kind, pid, &entry.instance_id).as_str())
    {
        return Ok(None);
    }
    if let EndpointAddress::Tcp { port: 0, .. } = entry.endpoint {
        return Ok(None);
    }
    if !is_alive(pid) {
        return Ok(None);
    }
    if let EndpointAddress::Socket { path: socket } = &entry.endpoint {
        match fs::symlink_metadata(socket) {
            // Not listening (yet, or any more): nothing to connect to.
            Err(_) => return Ok(None),
            Ok(meta) => {
                let me = rustix::process::geteuid().as_raw();
                if meta.uid() != me {
                    return Err(EndpointProblem {
                        path: path.to_path_buf(),
                        problem: format!(
                            "names the socket {}, which belongs to uid {}, not to you (uid {me})",
                            socket.display(),
                            meta.uid()
                        ),
                        fix: "another user's process may be posing as your VS Code: remove the \
                              entry, and quit and reopen VS Code"
                            .to_owned(),
                    });
                }
                if !meta.file_type().is_socket() {
                    return Ok(None);
                }
            }
        }
    }
    Ok(Some(Endpoint {
        entry: path.to_path_buf(),
        kind: entry.kind,
        pid,
        instance_id: entry.instance_id,
        address: entry.endpoint,
        token: entry.connection_token,
        protocol_version: entry.protocol_version,
    }))
}

/// An entry's identity, its file name without `.json`: the lowercase hex sha256 of
/// `${type}\0${pid}\0${instanceId}` (VS Code's `LOCAL_ENDPOINT.md`).
pub fn identity(kind: HostKind, pid: u32, instance_id: &str) -> String {
    let digest = Sha256::digest(format!("{}\0{pid}\0{instance_id}", kind.as_str()).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_redacted_in_debug_and_display() {
        let token = ConnectionToken("s3cr3t-token".to_owned());
        assert_eq!(format!("{token}"), "<redacted>");
        assert!(!format!("{token:?}").contains("s3cr3t"));
        assert_eq!(token.expose(), "s3cr3t-token");
    }

    #[test]
    fn identity_is_the_hex_sha256_of_type_pid_and_instance() {
        // printf 'editor\x00123\x00abc' | sha256sum
        assert_eq!(
            identity(HostKind::Editor, 123, "abc"),
            "7cdec1ec02cb0cf0113d961a49e8c9b6de91e02fe3ac1ed229d24d8410984255"
        );
    }
}
