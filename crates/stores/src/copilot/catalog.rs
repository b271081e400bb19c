//! The Agent Host's on-disk catalog, read-only: `agent-host.db` (the host's session registry)
//! and each session's `agentSessionData/<id>/session.db` (`docs/observed/copilot.md` §4.1, §4.2).
//!
//! **Never locking against the editor.** VS Code writes these files with a rollback journal and
//! `BEGIN IMMEDIATE` transactions, and whether it sets a busy timeout is not known: a reader
//! holding the shared lock while the editor commits could make the editor's commit fail. So a
//! database without a `-wal` file is opened `immutable=1`, which takes no lock at all, and the
//! read is made safe from the outside instead: it is refused while a `-journal` exists (a
//! transaction is being written), and thrown away when the file's size or mtime moved while it
//! was read or a `-journal` appeared meanwhile (read again once, then said as a problem). In WAL
//! mode readers never block the writer, so a database with a `-wal` file is opened `mode=ro`
//! with a short busy timeout and read in one tiny transaction. A database given as a link is
//! refused: links are never followed where files should be.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::roots::FileStamp;

/// How long a `mode=ro` read of a WAL database waits for a lock (a checkpoint) before it is a
/// problem: short, so a listing never stalls behind the editor.
const BUSY_TIMEOUT: Duration = Duration::from_millis(50);

/// One row of the host's legacy `sessions` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSession {
    pub session_uri: String,
    pub provider: Option<String>,
    /// As stored (probably epoch milliseconds; `docs/observed/copilot.md` §8).
    pub start_time: Option<i64>,
    pub modified_time: Option<i64>,
}

/// What one `session.db`'s `session_metadata` says about its session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionMetadata {
    pub custom_title: Option<String>,
    /// `defaultChatProviderData.sdkSessionId`.
    pub sdk_session_id: Option<String>,
    /// Every working directory recorded, as paths, in the order of the keys read.
    pub working_directories: Vec<PathBuf>,
    /// A backing SDK session of another session's chat (`peerChatBacking`): not a session of
    /// its own.
    pub is_chat_backing: bool,
    pub archived: bool,
}

/// Why a catalog file was not read. The listing goes on without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogProblem {
    pub path: PathBuf,
    pub message: String,
}

type Read<T> = Result<T, CatalogProblem>;

fn problem(path: &Path, message: impl Into<String>) -> CatalogProblem {
    CatalogProblem {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The sessions `agent-host.db` registers, tombstoned ones left out.
pub fn read_host_db(path: &Path) -> Read<Vec<HostSession>> {
    read_consistent(path, |conn| {
        let columns = columns(conn, "sessions").map_err(|e| sql(path, e))?;
        for needed in ["session_uri", "provider", "start_time"] {
            if !columns.iter().any(|c| c == needed) {
                return Err(problem(
                    path,
                    format!(
                        "is not an Agent Host catalog this version knows: its `sessions` table \
                         has no `{needed}` column (columns: {})",
                        shown_columns(&columns)
                    ),
                ));
            }
        }
        let modified = if columns.iter().any(|c| c == "modified_time") {
            "modified_time"
        } else {
            "NULL"
        };
        let tombstones = if columns_exist(conn, "metadata", &["key", "value"]) {
            "AND NOT EXISTS (SELECT 1 FROM metadata m \
             WHERE m.key = 'sessionTombstone:' || s.session_uri AND m.value = 'true')"
        } else {
            ""
        };
        let sql_text = format!(
            "SELECT s.session_uri, s.provider, s.start_time, s.{modified} FROM sessions s \
             WHERE s.session_uri IS NOT NULL {tombstones} ORDER BY s.session_uri"
        )
        .replace("s.NULL", "NULL");
        let mut statement = conn.prepare(&sql_text).map_err(|e| sql(path, e))?;
        let rows = statement
            .query_map([], |row| {
                Ok(HostSession {
                    session_uri: row.get(0)?,
                    provider: row.get(1).ok(),
                    start_time: number(row, 2),
                    modified_time: number(row, 3),
                })
            })
            .map_err(|e| sql(path, e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| sql(path, e))
    })
}

/// What a `session.db` says about its session.
pub fn read_session_db(path: &Path) -> Read<SessionMetadata> {
    let pairs = read_consistent(path, |conn| {
        if !columns_exist(conn, "session_metadata", &["key", "value"]) {
            return Err(problem(
                path,
                "is not a Copilot session database this version knows: it has no \
                 `session_metadata(key, value)` table",
            ));
        }
        let mut statement = conn
            .prepare("SELECT key, value FROM session_metadata")
            .map_err(|e| sql(path, e))?;
        let rows = statement
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?))
            })
            .map_err(|e| sql(path, e))?;
        rows.collect::<Result<BTreeMap<_, _>, _>>()
            .map_err(|e| sql(path, e))
    })?;
    Ok(metadata_of(&pairs))
}

/// The keys of `session_metadata` that matter (§4.2), read into [`SessionMetadata`].
fn metadata_of(pairs: &BTreeMap<String, Option<String>>) -> SessionMetadata {
    let get = |key: &str| pairs.get(key).and_then(|v| v.as_deref());
    let sdk_session_id = get("defaultChatProviderData")
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|value| {
            value
                .get("sdkSessionId")?
                .as_str()
                .filter(|id| !id.is_empty())
                .map(str::to_owned)
        });
    let mut working_directories: Vec<PathBuf> = Vec::new();
    let mut add = |text: &str| {
        if let Some(path) = path_of(text)
            && !working_directories.contains(&path)
        {
            working_directories.push(path);
        }
    };
    if let Some(text) = get("copilot.workingDirectory") {
        add(text);
    }
    if let Some(list) = get("copilot.workingDirectories")
        .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
    {
        list.iter().for_each(|text| add(text));
    }
    if let Some(text) = get("copilot.worktree.path") {
        add(text);
    }
    // The exact key is not confirmed (§4.2 "Archived"): each spelling seen in VS Code's
    // sources and notes is accepted.
    let archived = ["archived", "isArchived", "copilot.archived"]
        .iter()
        .filter_map(|key| get(key))
        .any(|v| matches!(v.trim(), "true" | "1"));
    SessionMetadata {
        custom_title: get("customTitle")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned),
        sdk_session_id,
        working_directories,
        is_chat_backing: get("peerChatBacking").is_some_and(|v| !v.trim().is_empty()),
        archived,
    }
}

/// A working directory as a path: a `file://` URI decoded, or an absolute path as is.
pub(crate) fn path_of(text: &str) -> Option<PathBuf> {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix("file://") {
        // `file:///x` (empty authority) or `file://localhost/x`.
        let path = rest.strip_prefix("localhost").unwrap_or(rest);
        if !path.starts_with('/') {
            return None;
        }
        return Some(PathBuf::from(percent_decode(path)?));
    }
    Path::new(text).is_absolute().then(|| PathBuf::from(text))
}

/// `%XX` escapes decoded; `None` when they do not make UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// An integer column, tolerating a float or text number (SQLite keeps what it was given).
fn number(row: &rusqlite::Row<'_>, i: usize) -> Option<i64> {
    use rusqlite::types::ValueRef;
    match row.get_ref(i).ok()? {
        ValueRef::Integer(n) => Some(n),
        ValueRef::Real(f) if f.is_finite() => Some(f as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let rows = statement.query_map([table], |row| row.get::<_, String>(0))?;
    rows.collect()
}

fn columns_exist(conn: &Connection, table: &str, needed: &[&str]) -> bool {
    columns(conn, table).is_ok_and(|have| needed.iter().all(|n| have.iter().any(|h| h == n)))
}

fn shown_columns(columns: &[String]) -> String {
    if columns.is_empty() {
        "none: there is no `sessions` table".to_owned()
    } else {
        columns.join(", ")
    }
}

fn sql(path: &Path, error: rusqlite::Error) -> CatalogProblem {
    let why = match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => "is not an SQLite database".to_owned(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            "is damaged or cut short (SQLite says the image is malformed)".to_owned()
        }
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            "is locked by the editor; it is read again at the next listing".to_owned()
        }
        _ => format!("cannot be read: {error}"),
    };
    problem(path, why)
}

/// Runs `read` on the database at `path` without taking a lock the editor could trip on (see
/// the module's header), and makes sure no write happened while it ran.
fn read_consistent<T>(path: &Path, read: impl Fn(&Connection) -> Read<T>) -> Read<T> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let before = check_file(path)?;
        let wal = sidecar(path, "-wal").exists();
        let result = open(path, wal).and_then(|conn| {
            if wal {
                // One short read transaction: a consistent snapshot, and a reader in WAL mode
                // never blocks the writer.
                conn.execute_batch("BEGIN").map_err(|e| sql(path, e))?;
                let result = read(&conn);
                let _ = conn.execute_batch("COMMIT");
                result
            } else {
                read(&conn)
            }
        });
        let unmoved = match check_file(path) {
            Ok(after) => wal || after == before,
            Err(_) => false,
        };
        if unmoved {
            return result;
        }
        // A write moved under the read: its answer may be torn. Once more, then say so.
        if attempts >= 2 {
            return Err(problem(
                path,
                "changed while it was read (the editor is writing it); it is read again at the \
                 next listing",
            ));
        }
    }
}

/// The file's stamp, or why it is not read now: a link, not a file, or being written.
fn check_file(path: &Path) -> Read<FileStamp> {
    let meta =
        fs::symlink_metadata(path).map_err(|e| problem(path, format!("cannot read: {e}")))?;
    if meta.file_type().is_symlink() {
        return Err(problem(
            path,
            "is a symbolic link, and links are never followed here; name the file itself",
        ));
    }
    if !meta.is_file() {
        return Err(problem(path, "is not a file"));
    }
    let journal = sidecar(path, "-journal");
    if journal.exists() {
        return Err(problem(
            path,
            format!(
                "is being written by the editor ({} exists); it is read again at the next \
                 listing",
                journal.display()
            ),
        ));
    }
    Ok(FileStamp::of(&meta))
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn open(path: &Path, wal: bool) -> Read<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let query = if wal {
        "mode=ro"
    } else {
        "mode=ro&immutable=1"
    };
    let uri = format!("{}?{query}", sqlite_uri(path));
    let conn = Connection::open_with_flags(uri, flags).map_err(|e| sql(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sql(path, e))?;
    // An empty or non-SQLite file opens fine; the first read says what it is. Read the schema
    // now so that is the error rather than "no such table".
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
        .optional()
        .map_err(|e| sql(path, e))?;
    Ok(conn)
}

/// A `file:` URI for SQLite, with the characters URIs reserve escaped.
fn sqlite_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'?' | b'#' | b'%' | 0x80.. => uri.push_str(&format!("%{byte:02X}")),
            _ => uri.push(char::from(*byte)),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            path_of("file:///home/u/my%20proj"),
            Some(PathBuf::from("/home/u/my proj"))
        );
        assert_eq!(path_of("/abs"), Some(PathBuf::from("/abs")));
        assert_eq!(path_of("relative"), None);
        assert_eq!(path_of("vscode-remote://x/y"), None);
    }
}
