//! Cursor's agent sessions: `~/.cursor/chats/<workspace hash>/<session>/store.db`, a
//! content-addressed blob store in SQLite (WAL), with `meta.json` beside it carrying the working
//! directory.
//!
//! The layout followed is the public reverse-engineered description ("Cursor Agent Database
//! Format Guide"): table `meta` with key `"0"` holding hex-encoded JSON whose
//! `latestRootBlobId` names the root blob; table `blobs(id, data)` where a blob is either a
//! message (JSON, `{role, content}`) or a linking blob (`0x0A 0x20` + a 32-byte child id,
//! repeated, optionally followed by an embedded JSON message). Walking the tree from the root
//! gives the messages in order. Only this store holds tool results (Cursor's own transcript
//! records calls without outcomes), so it is the source of truth.
//!
//! The database is opened read-only, so a live session is never disturbed; a WAL beside it is
//! read as SQLite reads it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use super::{ForeignSession, TurnBuilder};
use crate::error::{Result, StoreError};
use crate::model::{UnixMillis, Warnings};
use crate::turns::{Message, Role, ToolCall, ToolResult, TurnItem};

/// How deep the blob tree is walked: far beyond any real session, and a guard against a
/// corrupted store whose links loop.
const MAX_DEPTH: usize = 64;

/// Where Cursor keeps its chats under a home folder.
pub fn chats_root(home: &Path) -> PathBuf {
    home.join(".cursor").join("chats")
}

/// The `store.db` of session `session_id` under `root` (any workspace), if there is one.
pub fn find_session(root: &Path, session_id: &str) -> Option<PathBuf> {
    let workspaces = std::fs::read_dir(root).ok()?;
    workspaces
        .flatten()
        .map(|w| w.path().join(session_id).join("store.db"))
        .find(|p| p.is_file())
}

/// Reads one session from its `store.db`.
pub fn read_session(store: &Path, warnings: &mut Warnings) -> Result<ForeignSession> {
    let sqlite = |source| StoreError::Sqlite {
        path: store.to_path_buf(),
        source,
    };
    let conn = Connection::open_with_flags(
        store,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite)?;
    let meta_text: String = conn
        .query_row("SELECT value FROM meta WHERE key = '0'", [], |row| {
            let v: rusqlite::types::Value = row.get(0)?;
            Ok(match v {
                rusqlite::types::Value::Text(t) => t,
                rusqlite::types::Value::Blob(b) => String::from_utf8_lossy(&b).into_owned(),
                _ => String::new(),
            })
        })
        .map_err(sqlite)?;
    let meta = decode_meta(&meta_text).map_err(|source| StoreError::Format {
        path: store.to_path_buf(),
        what: "Cursor session record (hex-encoded JSON in meta)",
        source,
    })?;
    let mut blobs: HashMap<String, Vec<u8>> = HashMap::new();
    let mut stmt = conn.prepare("SELECT id, data FROM blobs").map_err(sqlite)?;
    let rows = stmt
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, Vec<u8>>(1)?))
        })
        .map_err(sqlite)?;
    for row in rows {
        let (id, data) = row.map_err(sqlite)?;
        blobs.insert(id.to_ascii_lowercase(), data);
    }

    let session_dir = store.parent().unwrap_or(store);
    let session_id = meta
        .get("agentId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            session_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let created_at = meta
        .get("createdAt")
        .and_then(Value::as_i64)
        .map(UnixMillis);
    let title = meta.get("name").and_then(Value::as_str).map(str::to_owned);

    let mut messages = Vec::new();
    match meta.get("latestRootBlobId").and_then(Value::as_str) {
        Some(root) => {
            let mut seen = HashSet::new();
            collect(
                &blobs,
                &root.to_ascii_lowercase(),
                0,
                &mut seen,
                &mut messages,
                store,
                warnings,
            );
        }
        None => warnings.push(store, None, "the session record names no root blob"),
    }

    let mut turns = TurnBuilder::default();
    for message in &messages {
        feed_message(&mut turns, message, created_at);
    }
    Ok(ForeignSession {
        session_id,
        cwd: read_cwd(&session_dir.join("meta.json"), warnings),
        cwd_derived: false,
        title,
        path: store.to_path_buf(),
        turns: turns.into_turns(),
    })
}

/// The session record: hex-encoded JSON, or plain JSON.
fn decode_meta(text: &str) -> serde_json::Result<Value> {
    let trimmed = text.trim();
    if trimmed.starts_with('{') {
        return serde_json::from_str(trimmed);
    }
    let bytes: Vec<u8> = (0..trimmed.len() / 2)
        .filter_map(|i| u8::from_str_radix(trimmed.get(i * 2..i * 2 + 2)?, 16).ok())
        .collect();
    serde_json::from_slice(&bytes)
}

/// The working directory `meta.json` records (`cwd`, or the names other builds use).
fn read_cwd(path: &Path, warnings: &mut Warnings) -> Option<PathBuf> {
    let bytes = std::fs::read(path).ok()?;
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(path, None, format!("not JSON: {e}"));
            return None;
        }
    };
    ["cwd", "workingDirectory", "workspacePath", "workspace"]
        .iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
}

/// Walks the blob tree from `id`, appending every message in order.
fn collect(
    blobs: &HashMap<String, Vec<u8>>,
    id: &str,
    depth: usize,
    seen: &mut HashSet<String>,
    out: &mut Vec<Value>,
    store: &Path,
    warnings: &mut Warnings,
) {
    if depth > MAX_DEPTH || !seen.insert(id.to_owned()) {
        warnings.push(
            store,
            None,
            format!("blob {id} is linked in a loop; skipped"),
        );
        return;
    }
    let Some(data) = blobs.get(id) else {
        warnings.push(store, None, format!("blob {id} is missing"));
        return;
    };
    if data.first() == Some(&b'{') {
        push_json(data, id, out, store, warnings);
        return;
    }
    let mut at = 0;
    while at + 34 <= data.len() && data[at] == 0x0A && data[at + 1] == 0x20 {
        let child: String = data[at + 2..at + 34]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        collect(blobs, &child, depth + 1, seen, out, store, warnings);
        at += 34;
    }
    if let Some(start) = data[at..].iter().position(|b| *b == b'{') {
        push_json(&data[at + start..], id, out, store, warnings);
    }
}

fn push_json(data: &[u8], id: &str, out: &mut Vec<Value>, store: &Path, warnings: &mut Warnings) {
    match serde_json::from_slice::<Value>(data) {
        Ok(v) => out.push(v),
        Err(e) => warnings.push(store, None, format!("blob {id} is not a JSON message: {e}")),
    }
}

fn feed_message(turns: &mut TurnBuilder, message: &Value, at: Option<UnixMillis>) {
    match message.get("role").and_then(Value::as_str) {
        Some("user") => {
            let text = content_text(message.get("content"));
            if let Some(query) = user_query(&text) {
                turns.prompt(query, at);
            }
        }
        Some("assistant") => {
            let blocks = match message.get("content") {
                Some(Value::Array(blocks)) => blocks.clone(),
                Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
                _ => return,
            };
            for block in &blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                        if !text.trim().is_empty() {
                            turns.push(
                                TurnItem::Message(Message {
                                    role: Role::Assistant,
                                    text: text.to_owned(),
                                    timestamp: at,
                                }),
                                at,
                            );
                        }
                    }
                    Some("tool-call") => turns.push(
                        TurnItem::ToolCall(ToolCall {
                            id: str_field(block, "toolCallId"),
                            name: str_field(block, "toolName"),
                            input: block.get("args").map(Value::to_string).unwrap_or_default(),
                            timestamp: at,
                        }),
                        at,
                    ),
                    _ => {}
                }
            }
        }
        Some("tool") => {
            let Some(Value::Array(blocks)) = message.get("content") else {
                return;
            };
            for block in blocks {
                if block.get("type").and_then(Value::as_str) != Some("tool-result") {
                    continue;
                }
                let output = content_text(block.get("result"));
                let exit_code = exit_code(&output);
                turns.push(
                    TurnItem::ToolResult(ToolResult {
                        call_id: str_field(block, "toolCallId"),
                        is_error: block.get("isError").and_then(Value::as_bool),
                        exit_code,
                        output,
                        timestamp: at,
                    }),
                    at,
                );
            }
        }
        _ => {}
    }
}

/// What the person typed: the `<user_query>` inside Cursor's context wrapping, or the whole
/// text when there is no wrapping. A message of context alone is no one's instruction.
fn user_query(text: &str) -> Option<String> {
    if let Some(start) = text.find("<user_query>") {
        let rest = &text[start + "<user_query>".len()..];
        let end = rest.find("</user_query>").unwrap_or(rest.len());
        let query = rest[..end].trim();
        return (!query.is_empty()).then(|| query.to_owned());
    }
    let t = text.trim();
    (!t.is_empty() && !t.starts_with('<')).then(|| t.to_owned())
}

/// Cursor writes `Exit code: N` in the text of every shell result.
fn exit_code(output: &str) -> Option<i32> {
    output.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("Exit code:")?;
        rest.trim().parse().ok()
    })
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

/// A content value's text: a string, or the `text` of each block.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(s.as_str()),
                other => other.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Object(o)) => o
            .get("text")
            .and_then(Value::as_str)
            .map_or_else(|| Value::Object(o.clone()).to_string(), str::to_owned),
        Some(other @ (Value::Number(_) | Value::Bool(_))) => other.to_string(),
        Some(Value::Null) | None => String::new(),
    }
}
