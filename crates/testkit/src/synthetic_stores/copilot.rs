//! Builders for GitHub Copilot's files as VS Code's Agent Host and the Copilot SDK write them
//! (`docs/observed/copilot.md` §2.1, §4): the endpoint registry entry (schema 2, `0600` in a
//! `0700` folder, named by its identity), the host catalog `agent-host.db` (schema v4: the
//! legacy `sessions` table and `metadata`), a session's `agentSessionData/<id>/session.db`
//! (`turns`, `session_metadata`) and the SDK's `session-state/<id>/events.jsonl`.
//!
//! Real SQLite files with the tables and columns VS Code creates, so the reader is tested
//! against the shape, not against a fake of it.

use std::fs;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::Connection;
use sha2::{Digest, Sha256};

use super::{Millis, js, rfc3339, write_lines};

/// One editor's user-data folder (`~/.config/Code`, say) and the Copilot files in it.
#[derive(Debug, Clone)]
pub struct CopilotEditor {
    pub user_data: PathBuf,
}

impl CopilotEditor {
    pub fn new(user_data: &Path) -> Self {
        CopilotEditor {
            user_data: user_data.to_path_buf(),
        }
    }

    /// `<userData>/User/globalStorage/agent-host.db`.
    pub fn host_db(&self) -> PathBuf {
        self.user_data.join("User/globalStorage/agent-host.db")
    }

    /// `<userData>/agentSessionData`.
    pub fn session_dir(&self) -> PathBuf {
        self.user_data.join("agentSessionData")
    }

    /// `<userData>/agent-host/local-endpoint/entries`.
    pub fn endpoint_dir(&self) -> PathBuf {
        self.user_data.join("agent-host/local-endpoint/entries")
    }

    /// Creates `agent-host.db` with VS Code's schema v4 (§4.1): `sessions(session_uri PK,
    /// provider, start_time, external, registration_source, modified_time)` and
    /// `metadata(key PK, value)`.
    pub fn create_host_db(&self) -> Result<Connection> {
        let path = self.host_db();
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
        }
        let conn = Connection::open(&path).with_context(|| path.display().to_string())?;
        // A test's file needs no durability against power loss: no sync per statement (the
        // benchmark's generator writes a thousand of these).
        conn.execute_batch(
            "PRAGMA synchronous = OFF;
             CREATE TABLE IF NOT EXISTS sessions (session_uri TEXT PRIMARY KEY, provider TEXT NOT NULL, \
             start_time INTEGER NOT NULL, external INTEGER NOT NULL DEFAULT 0, \
             registration_source TEXT NOT NULL DEFAULT 'explicit', modified_time INTEGER);
             CREATE TABLE IF NOT EXISTS metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             PRAGMA user_version = 4;",
        )?;
        Ok(conn)
    }

    /// Registers a session in `agent-host.db` (created when missing).
    pub fn register(&self, uri: &str, start: Millis, modified: Millis) -> Result<()> {
        let conn = self.create_host_db()?;
        let provider = uri.split(':').next().unwrap_or("copilotcli");
        conn.execute(
            "INSERT OR REPLACE INTO sessions (session_uri, provider, start_time, modified_time) \
             VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![uri, provider, start, modified],
        )?;
        Ok(())
    }

    /// Marks a session deleted, as VS Code does (`sessionTombstone:<uri>` = `true`).
    pub fn tombstone(&self, uri: &str) -> Result<()> {
        let conn = self.create_host_db()?;
        conn.execute(
            "INSERT OR REPLACE INTO metadata (key, value) VALUES (?1, 'true')",
            [format!("sessionTombstone:{uri}")],
        )?;
        Ok(())
    }

    /// A session's `session.db` (created with VS Code's tables), to fill with metadata.
    pub fn session(&self, id: &str) -> Result<CopilotSessionDb> {
        let dir = self.session_dir().join(sanitized(id));
        fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
        let path = dir.join("session.db");
        let conn = Connection::open(&path).with_context(|| path.display().to_string())?;
        conn.execute_batch(
            "PRAGMA synchronous = OFF;
             CREATE TABLE IF NOT EXISTS turns (id TEXT PRIMARY KEY NOT NULL, event_id TEXT);
             CREATE TABLE IF NOT EXISTS file_edits (turn_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, \
             file_path TEXT NOT NULL, PRIMARY KEY (turn_id, tool_call_id, file_path));
             CREATE TABLE IF NOT EXISTS session_metadata (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
             PRAGMA user_version = 4;",
        )?;
        Ok(CopilotSessionDb { path, conn })
    }

    /// Writes a schema-2 endpoint entry for a host with `pid` listening on `socket`, as VS Code
    /// does: folders `0700`, the file `0600`, named by its identity. Returns the entry's path.
    pub fn endpoint(
        &self,
        pid: u32,
        instance_id: &str,
        socket: &Path,
        token: &str,
    ) -> Result<PathBuf> {
        let dir = self.endpoint_dir();
        fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
        for folder in [dir.as_path(), dir.parent().unwrap_or(&dir)] {
            fs::set_permissions(folder, fs::Permissions::from_mode(0o700))?;
        }
        let path = dir.join(format!(
            "{}.json",
            endpoint_identity("editor", pid, instance_id)
        ));
        let text = format!(
            r#"{{"schemaVersion":2,"type":"editor","pid":{pid},"instanceId":{},"endpoint":{{"type":"socket","path":{}}},"connectionToken":{},"protocolVersion":"0.10.0"}}"#,
            js(instance_id),
            js(&socket.to_string_lossy()),
            js(token),
        );
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| path.display().to_string())?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        Ok(path)
    }
}

/// An entry's identity: the lowercase hex sha256 of `type\0pid\0instanceId`.
pub fn endpoint_identity(kind: &str, pid: u32, instance_id: &str) -> String {
    Sha256::digest(format!("{kind}\0{pid}\0{instance_id}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// VS Code's folder name for a session id: `[^a-zA-Z0-9_.-]` become `-`.
pub fn sanitized(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// One session's `session.db`, open.
#[derive(Debug)]
pub struct CopilotSessionDb {
    pub path: PathBuf,
    pub conn: Connection,
}

impl CopilotSessionDb {
    /// Sets one `session_metadata` key.
    pub fn set(&self, key: &str, value: &str) -> Result<&Self> {
        self.conn.execute(
            "INSERT OR REPLACE INTO session_metadata (key, value) VALUES (?1, ?2)",
            [key, value],
        )?;
        Ok(self)
    }

    /// `customTitle`.
    pub fn title(&self, title: &str) -> Result<&Self> {
        self.set("customTitle", title)
    }

    /// `defaultChatProviderData` as `encodeProviderData` writes it.
    pub fn default_chat(&self, sdk_session_id: &str, model: &str) -> Result<&Self> {
        self.set(
            "defaultChatProviderData",
            &format!(
                r#"{{"sdkSessionId":{},"model":{{"id":{}}}}}"#,
                js(sdk_session_id),
                js(model)
            ),
        )
    }

    /// `copilot.workingDirectory`, a `file://` URI.
    pub fn working_directory(&self, dir: &str) -> Result<&Self> {
        self.set("copilot.workingDirectory", &format!("file://{dir}"))
    }
}

/// The Copilot SDK's `events.jsonl` of one session, line by line (§4.3).
#[derive(Debug, Clone)]
pub struct SdkEvents {
    pub path: PathBuf,
    lines: Vec<String>,
    counter: u64,
    parent: Option<String>,
}

impl SdkEvents {
    /// `<sdk_session_dir>/<sdk_session_id>/events.jsonl`.
    pub fn new(sdk_session_dir: &Path, sdk_session_id: &str) -> Self {
        SdkEvents {
            path: sdk_session_dir.join(sdk_session_id).join("events.jsonl"),
            lines: Vec::new(),
            counter: 0,
            parent: None,
        }
    }

    /// Appends one event with the SDK's envelope; `agent_id` marks a sub-agent's.
    pub fn event(&mut self, kind: &str, at: Millis, data: &str, agent_id: Option<&str>) -> String {
        self.counter += 1;
        let id = format!("00000000-0000-4000-9000-{:012x}", self.counter);
        let parent = self.parent.as_deref().map_or("null".to_owned(), js);
        let agent = agent_id.map_or(String::new(), |a| format!(r#","agentId":{}"#, js(a)));
        self.lines.push(format!(
            r#"{{"type":{},"id":{},"timestamp":{},"parentId":{parent}{agent},"data":{data}}}"#,
            js(kind),
            js(&id),
            js(&rfc3339(at)),
        ));
        self.parent = Some(id.clone());
        id
    }

    pub fn user_message(&mut self, content: &str, at: Millis) -> &mut Self {
        self.event(
            "user.message",
            at,
            &format!(r#"{{"content":{}}}"#, js(content)),
            None,
        );
        self
    }

    /// A root assistant message; with `tool` it asks for that tool (the turn goes on).
    pub fn assistant(&mut self, content: &str, tool: Option<&str>, at: Millis) -> &mut Self {
        let requests = tool.map_or(String::new(), |name| {
            format!(
                r#","toolRequests":[{{"toolCallId":"call_{}","name":{},"arguments":{{}}}}]"#,
                self.counter,
                js(name)
            )
        });
        self.event(
            "assistant.message",
            at,
            &format!(
                r#"{{"messageId":"m{}","content":{}{requests}}}"#,
                self.counter,
                js(content)
            ),
            None,
        );
        self
    }

    pub fn turn_start(&mut self, at: Millis) -> &mut Self {
        self.event("assistant.turn_start", at, r#"{"turnId":"0"}"#, None);
        self
    }

    pub fn turn_end(&mut self, at: Millis) -> &mut Self {
        self.event("assistant.turn_end", at, r#"{"turnId":"0"}"#, None);
        self
    }

    pub fn tool_start(&mut self, name: &str, at: Millis) -> &mut Self {
        self.event(
            "tool.execution_start",
            at,
            &format!(r#"{{"toolCallId":"c","toolName":{}}}"#, js(name)),
            None,
        );
        self
    }

    pub fn abort(&mut self, at: Millis) -> &mut Self {
        self.event("abort", at, r#"{"reason":"user"}"#, None);
        self
    }

    pub fn session_error(&mut self, message: &str, at: Millis) -> &mut Self {
        self.event(
            "session.error",
            at,
            &format!(r#"{{"errorType":"x","message":{}}}"#, js(message)),
            None,
        );
        self
    }

    /// A sub-agent's assistant message (has an `agentId`): not the root's answer.
    pub fn sub_agent_message(&mut self, content: &str, at: Millis) -> &mut Self {
        self.event(
            "assistant.message",
            at,
            &format!(r#"{{"messageId":"s","content":{}}}"#, js(content)),
            Some("sub-1"),
        );
        self
    }

    /// A line as given: damage, or a shape no helper here writes.
    pub fn raw(&mut self, line: &str) -> &mut Self {
        self.lines.push(line.to_owned());
        self
    }

    pub fn write(&self) -> Result<()> {
        write_lines(&self.path, &self.lines)
    }
}
