//! Cursor and Antigravity session stores written from their public descriptions, since neither
//! program runs here. Each writer says which description it follows; the readers under test
//! (`cross_agent_stores::foreign`) must read them back.

use std::path::{Path, PathBuf};

use anyhow::Result;
use rusqlite::{Connection, params};
use serde_json::Value;

/// Writes a Cursor agent session as the "Cursor Agent Database Format Guide" (a public
/// reverse-engineered description) lays it out: `~/.cursor/chats/<workspace hash>/<session>/`
/// holding `store.db` (WAL; `meta` key `"0"` = hex-encoded JSON naming `latestRootBlobId`;
/// `blobs(id, data)` with JSON message blobs and linking blobs of `0x0A 0x20` + 32-byte child
/// ids) and `meta.json` with the working directory. The first half of the messages sit one
/// linking level deeper than the rest, so the tree walk is exercised. Blob ids are distinct
/// but not SHA-256 of the content: the reader does not verify them.
pub fn cursor_session(
    home: &Path,
    workspace_hash: &str,
    session_id: &str,
    cwd: &Path,
    messages: &[Value],
) -> Result<PathBuf> {
    let dir = home
        .join(".cursor")
        .join("chats")
        .join(workspace_hash)
        .join(session_id);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("meta.json"),
        serde_json::to_vec(&serde_json::json!({ "cwd": cwd }))?,
    )?;
    let store = dir.join("store.db");
    let conn = Connection::open(&store)?;
    conn.pragma_update(None, "journal_mode", "wal")?;
    conn.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
         CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB);",
    )?;
    let mut next_id = 0u64;
    let mut blob = |data: Vec<u8>| -> Result<[u8; 32]> {
        next_id += 1;
        let mut id = [0u8; 32];
        id[24..].copy_from_slice(&next_id.to_be_bytes());
        id[0] = 0xc5;
        conn.execute(
            "INSERT INTO blobs (id, data) VALUES (?1, ?2)",
            params![hex(&id), data],
        )?;
        Ok(id)
    };
    let mut ids = Vec::new();
    for message in messages {
        ids.push(blob(serde_json::to_vec(message)?)?);
    }
    let link = |children: &[[u8; 32]]| -> Vec<u8> {
        children
            .iter()
            .flat_map(|c| [0x0A, 0x20].into_iter().chain(c.iter().copied()))
            .collect()
    };
    let half = ids.len() / 2;
    let inner = blob(link(&ids[..half]))?;
    let mut root_children = vec![inner];
    root_children.extend_from_slice(&ids[half..]);
    let root = blob(link(&root_children))?;
    let meta = serde_json::json!({
        "agentId": session_id,
        "latestRootBlobId": hex(&root),
        "name": "fixture session",
        "mode": "auto-run",
        "createdAt": 1_767_225_600_000_i64,
        "lastUsedModel": "claude-4.5-opus-high-thinking",
    });
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('0', ?1)",
        params![hex(&serde_json::to_vec(&meta)?)],
    )?;
    Ok(store)
}

/// Writes an Antigravity session's `transcript.jsonl` under
/// `~/.gemini/antigravity-cli/brain/<session>/.system_generated/logs/`, one step per line, in
/// the layout third-party reports show (no public document fixes it). `tail` is appended as
/// is, so a test can leave a half-written last line.
pub fn antigravity_session(
    home: &Path,
    session_id: &str,
    steps: &[Value],
    tail: &str,
) -> Result<PathBuf> {
    let dir = home
        .join(".gemini")
        .join("antigravity-cli")
        .join("brain")
        .join(session_id)
        .join(".system_generated")
        .join("logs");
    std::fs::create_dir_all(&dir)?;
    let mut text = String::new();
    for step in steps {
        text.push_str(&serde_json::to_string(step)?);
        text.push('\n');
    }
    text.push_str(tail);
    let path = dir.join("transcript.jsonl");
    std::fs::write(&path, text)?;
    Ok(path)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
