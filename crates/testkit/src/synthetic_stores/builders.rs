//! Builders for small hand-made sessions in a temp HOME, each writing records in the shape the
//! real program writes: Claude Code transcripts, Codex rollouts and thread names, Grok sessions.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Millis, append_raw, claude_slug, grok_folder, js, rfc3339, write_lines};

/// A Claude Code transcript being written line by line:
/// `<home>/.claude/projects/<slug(cwd)>/<session id>.jsonl`.
#[derive(Debug, Clone)]
pub struct ClaudeTranscript {
    pub path: PathBuf,
    pub session_id: String,
    pub cwd: String,
    pub(super) lines: Vec<String>,
    counter: u64,
}

impl ClaudeTranscript {
    pub fn new(home: &Path, cwd: &str, session_id: &str) -> Self {
        let path = home
            .join(".claude/projects")
            .join(claude_slug(cwd))
            .join(format!("{session_id}.jsonl"));
        ClaudeTranscript {
            path,
            session_id: session_id.to_owned(),
            cwd: cwd.to_owned(),
            lines: Vec::new(),
            counter: 0,
        }
    }

    /// A line's (and a reply's) id: unique across sessions, as Claude Code's are — a reply's
    /// `message.id` + `requestId` is what usage counts once, so ids that repeated from one
    /// session to the next would make every session's nth reply a copy of every other's.
    fn uuid(&mut self) -> String {
        self.counter += 1;
        let stem = xxhash_rust::xxh3::xxh3_64(self.session_id.as_bytes());
        format!(
            "{:08x}-{:04x}-4000-8000-{:012x}",
            stem >> 32,
            stem & 0xffff,
            self.counter
        )
    }

    fn envelope(&mut self, kind: &str, at: Millis, message: &str, extra: &str) -> String {
        let uuid = self.uuid();
        format!(
            r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":{cwd},"sessionId":{sid},"version":"2.1.332","gitBranch":"main","type":"{kind}","message":{message}{extra},"uuid":"{uuid}","timestamp":"{ts}"}}"#,
            cwd = js(&self.cwd),
            sid = js(&self.session_id),
            ts = rfc3339(at),
        )
    }

    /// A prompt a person typed.
    pub fn user(&mut self, text: &str, at: Millis) -> &mut Self {
        let message = format!(r#"{{"role":"user","content":{}}}"#, js(text));
        let line = self.envelope("user", at, &message, "");
        self.lines.push(line);
        self
    }

    /// An assistant reply that ends the turn.
    pub fn assistant_text(&mut self, text: &str, at: Millis) -> &mut Self {
        let id = self.uuid();
        let message = format!(
            r#"{{"id":"msg_{id}","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"text","text":{}}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":12,"output_tokens":34}}}}"#,
            js(text)
        );
        let request = format!(r#","requestId":"req_{}""#, id.replace('-', ""));
        let line = self.envelope("assistant", at, &message, &request);
        self.lines.push(line);
        self
    }

    /// An assistant record that stops on a tool call: the turn is running until its result.
    pub fn tool_use(&mut self, command: &str, at: Millis) -> &mut Self {
        let id = self.uuid();
        let message = format!(
            r#"{{"id":"msg_{id}","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"toolu_{id}","name":"Bash","input":{{"command":{}}}}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{{"input_tokens":12,"output_tokens":34}}}}"#,
            js(command)
        );
        let request = format!(r#","requestId":"req_{}""#, id.replace('-', ""));
        let line = self.envelope("assistant", at, &message, &request);
        self.lines.push(line);
        self
    }

    /// The result of the last tool call.
    pub fn tool_result(&mut self, output: &str, at: Millis) -> &mut Self {
        let message = format!(
            r#"{{"role":"user","content":[{{"tool_use_id":"toolu_x","type":"tool_result","content":{},"is_error":false}}]}}"#,
            js(output)
        );
        let extra = format!(
            r#","toolUseResult":{{"stdout":{},"stderr":"","interrupted":false,"isImage":false}}"#,
            js(output)
        );
        let line = self.envelope("user", at, &message, &extra);
        self.lines.push(line);
        self
    }

    /// A `/rename`: `{"type":"custom-title","customTitle":…}`.
    pub fn custom_title(&mut self, name: &str) -> &mut Self {
        self.lines.push(format!(
            r#"{{"type":"custom-title","customTitle":{},"sessionId":{}}}"#,
            js(name),
            js(&self.session_id)
        ));
        self
    }

    /// Claude's own generated title.
    pub fn ai_title(&mut self, title: &str) -> &mut Self {
        self.lines.push(format!(
            r#"{{"type":"ai-title","aiTitle":{},"sessionId":{}}}"#,
            js(title),
            js(&self.session_id)
        ));
        self
    }

    /// Any raw line (garbage, unknown records, a half-written tail without newline is written
    /// with [`append_raw`]).
    pub fn raw(&mut self, line: &str) -> &mut Self {
        self.lines.push(line.to_owned());
        self
    }

    /// Writes every line so far (replacing the file).
    pub fn write(&self) -> Result<PathBuf> {
        write_lines(&self.path, &self.lines)?;
        Ok(self.path.clone())
    }

    /// Appends the lines added since `from` (a count of lines already written).
    pub fn append_since(&self, from: usize) -> Result<()> {
        let mut text = String::new();
        for line in &self.lines[from..] {
            text.push_str(line);
            text.push('\n');
        }
        append_raw(&self.path, text.as_bytes())
    }

    /// How many lines there are so far.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// The lines so far, without newlines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// A Codex rollout: `<home>/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`.
#[derive(Debug, Clone)]
pub struct CodexRollout {
    pub path: PathBuf,
    pub thread_id: String,
    pub cwd: String,
    pub(super) lines: Vec<String>,
}

impl CodexRollout {
    /// A thread a person started with `codex exec` (`thread_source: "user"`).
    pub fn new(home: &Path, cwd: &str, thread_id: &str, started: Millis) -> Self {
        Self::with_source(home, cwd, thread_id, started, r#""exec""#, Some("user"))
    }

    /// A thread with a given `source` (JSON text) and `thread_source` (`None`: no key, as a
    /// VS Code panel thread has).
    pub fn with_source(
        home: &Path,
        cwd: &str,
        thread_id: &str,
        started: Millis,
        source_json: &str,
        thread_source: Option<&str>,
    ) -> Self {
        let ts = rfc3339(started);
        let (date, time) = (&ts[..10], ts[11..19].replace(':', "-"));
        let path = home
            .join(".codex/sessions")
            .join(&ts[..4])
            .join(&ts[5..7])
            .join(&ts[8..10])
            .join(format!("rollout-{date}T{time}-{thread_id}.jsonl"));
        let thread_source = thread_source
            .map(|t| format!(r#","thread_source":{}"#, js(t)))
            .unwrap_or_default();
        let meta = format!(
            r#"{{"timestamp":"{ts}","type":"session_meta","payload":{{"session_id":{id},"id":{id},"timestamp":"{ts}","cwd":{cwd},"originator":"codex_exec","cli_version":"0.171.0","source":{source_json}{thread_source},"model_provider":"openai","base_instructions":{{"text":"You are Codex, a coding agent."}}}}}}"#,
            id = js(thread_id),
            cwd = js(cwd),
        );
        CodexRollout {
            path,
            thread_id: thread_id.to_owned(),
            cwd: cwd.to_owned(),
            lines: vec![meta],
        }
    }

    fn event(&mut self, at: Millis, payload: &str) {
        self.lines.push(format!(
            r#"{{"timestamp":"{}","type":"event_msg","payload":{payload}}}"#,
            rfc3339(at)
        ));
    }

    fn item(&mut self, at: Millis, payload: &str) {
        self.lines.push(format!(
            r#"{{"timestamp":"{}","type":"response_item","payload":{payload}}}"#,
            rfc3339(at)
        ));
    }

    /// A turn starts with a prompt a person typed.
    pub fn user(&mut self, text: &str, at: Millis) -> &mut Self {
        self.event(
            at,
            r#"{"type":"task_started","model_context_window":258400}"#,
        );
        self.item(
            at,
            &format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":{}}}]}}"#,
                js(text)
            ),
        );
        self.event(
            at,
            &format!(
                r#"{{"type":"user_message","message":{},"images":[]}}"#,
                js(text)
            ),
        );
        self
    }

    /// A tool call and its output.
    pub fn tool_call(&mut self, command: &str, output: &str, at: Millis) -> &mut Self {
        let args = js(&format!(r#"{{"cmd":{}}}"#, js(command)));
        self.item(
            at,
            &format!(
                r#"{{"type":"function_call","name":"exec_command","arguments":{args},"call_id":"call_1"}}"#
            ),
        );
        self.item(
            at,
            &format!(
                r#"{{"type":"function_call_output","call_id":"call_1","output":{}}}"#,
                js(output)
            ),
        );
        self
    }

    /// The assistant's answer, and the turn completes.
    pub fn answer(&mut self, text: &str, at: Millis) -> &mut Self {
        self.item(
            at,
            &format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":{}}}]}}"#,
                js(text)
            ),
        );
        self.event(
            at,
            r#"{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"output_tokens":20}}}"#,
        );
        self.event(
            at,
            &format!(
                r#"{{"type":"task_complete","last_agent_message":{}}}"#,
                js(text)
            ),
        );
        self
    }

    /// The model of the turns that follow (`turn_context`), as Codex writes it each turn.
    pub fn model(&mut self, model: &str, at: Millis) -> &mut Self {
        self.lines.push(format!(
            r#"{{"timestamp":"{}","type":"turn_context","payload":{{"model":{}}}}}"#,
            rfc3339(at),
            js(model)
        ));
        self
    }

    /// A model call's `token_count`: this call's usage (input, cached input, output) and the
    /// thread's running total after it, as Codex 0.171.0 writes them.
    pub fn token_count(
        &mut self,
        at: Millis,
        last: (u64, u64, u64),
        total: (u64, u64, u64),
    ) -> &mut Self {
        let usage = |(i, c, o): (u64, u64, u64)| {
            format!(
                r#"{{"input_tokens":{i},"cached_input_tokens":{c},"output_tokens":{o},"reasoning_output_tokens":0,"total_tokens":{}}}"#,
                i + o
            )
        };
        self.event(
            at,
            &format!(
                r#"{{"type":"token_count","info":{{"total_token_usage":{},"last_token_usage":{},"model_context_window":272000}},"rate_limits":null}}"#,
                usage(total),
                usage(last)
            ),
        );
        self
    }

    pub fn raw(&mut self, line: &str) -> &mut Self {
        self.lines.push(line.to_owned());
        self
    }

    pub fn write(&self) -> Result<PathBuf> {
        write_lines(&self.path, &self.lines)?;
        Ok(self.path.clone())
    }

    pub fn append_since(&self, from: usize) -> Result<()> {
        let mut text = String::new();
        for line in &self.lines[from..] {
            text.push_str(line);
            text.push('\n');
        }
        append_raw(&self.path, text.as_bytes())
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// Appends a rename to `<home>/.codex/session_index.jsonl`, as `thread/name/set` does.
pub fn codex_thread_name(home: &Path, thread_id: &str, name: &str, at: Millis) -> Result<()> {
    let line = format!(
        "{{\"id\":{},\"thread_name\":{},\"updated_at\":\"{}\"}}\n",
        js(thread_id),
        js(name),
        rfc3339(at)
    );
    append_raw(&home.join(".codex/session_index.jsonl"), line.as_bytes())
}

/// A Grok Build session folder: `<home>/.grok/sessions/<encoded cwd>/<id>/` with
/// `summary.json` and `updates.jsonl`.
#[derive(Debug, Clone)]
pub struct GrokSession {
    pub dir: PathBuf,
    pub session_id: String,
    pub cwd: String,
    pub generated_title: Option<String>,
    pub title_is_manual: bool,
    pub session_kind: String,
    pub created: Millis,
    pub last_active: Millis,
    pub(super) lines: Vec<String>,
}

impl GrokSession {
    pub fn new(home: &Path, cwd: &str, session_id: &str, created: Millis) -> Self {
        GrokSession {
            dir: home
                .join(".grok/sessions")
                .join(grok_folder(cwd))
                .join(session_id),
            session_id: session_id.to_owned(),
            cwd: cwd.to_owned(),
            generated_title: None,
            title_is_manual: false,
            session_kind: "interactive".to_owned(),
            created,
            last_active: created,
            lines: Vec::new(),
        }
    }

    fn update(&mut self, at: Millis, update: &str) {
        self.last_active = self.last_active.max(at);
        self.lines.push(format!(
            r#"{{"timestamp":{:.3},"method":"session/update","params":{{"sessionId":{},"update":{update}}}}}"#,
            at as f64 / 1000.0,
            js(&self.session_id)
        ));
    }

    pub fn user(&mut self, text: &str, at: Millis) -> &mut Self {
        let update = format!(
            r#"{{"sessionUpdate":"user_message_chunk","content":{{"type":"text","text":{}}}}}"#,
            js(text)
        );
        self.update(at, &update);
        self
    }

    pub fn agent_chunk(&mut self, text: &str, at: Millis) -> &mut Self {
        let update = format!(
            r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":{}}}}}"#,
            js(text)
        );
        self.update(at, &update);
        self
    }

    pub fn tool_call(&mut self, title: &str, output: &str, at: Millis) -> &mut Self {
        let call = format!(
            r#"{{"sessionUpdate":"tool_call","toolCallId":"call_1","title":{},"kind":"execute","status":"pending"}}"#,
            js(title)
        );
        self.update(at, &call);
        let done = format!(
            r#"{{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{{"type":"content","content":{{"type":"text","text":{}}}}}]}}"#,
            js(output)
        );
        self.update(at, &done);
        self
    }

    pub fn turn_completed(&mut self, at: Millis) -> &mut Self {
        self.last_active = self.last_active.max(at);
        self.lines.push(format!(
            r#"{{"timestamp":{:.3},"method":"_x.ai/session/update","params":{{"sessionId":{},"update":{{"sessionUpdate":"turn_completed","stopReason":"end_turn"}}}}}}"#,
            at as f64 / 1000.0,
            js(&self.session_id)
        ));
        self
    }

    /// A `/rename` in Grok: the title becomes manual.
    pub fn rename(&mut self, title: &str) -> &mut Self {
        self.generated_title = Some(title.to_owned());
        self.title_is_manual = true;
        self
    }

    pub fn summary_json(&self) -> String {
        let title = self
            .generated_title
            .as_deref()
            .map_or_else(|| "null".to_owned(), js);
        format!(
            r#"{{"info":{{"id":{id},"cwd":{cwd}}},"session_summary":null,"generated_title":{title},"title_is_manual":{manual},"session_kind":{kind},"created_at":"{created}","updated_at":"{last}","last_active_at":"{last}"}}"#,
            id = js(&self.session_id),
            cwd = js(&self.cwd),
            manual = self.title_is_manual,
            kind = js(&self.session_kind),
            created = rfc3339(self.created),
            last = rfc3339(self.last_active),
        )
    }

    /// Writes `summary.json` (replaced whole, as Grok does) and `updates.jsonl`.
    pub fn write(&self) -> Result<PathBuf> {
        fs::create_dir_all(&self.dir).with_context(|| self.dir.display().to_string())?;
        let summary = self.dir.join("summary.json");
        fs::write(&summary, self.summary_json()).with_context(|| summary.display().to_string())?;
        write_lines(&self.dir.join("updates.jsonl"), &self.lines)?;
        Ok(self.dir.clone())
    }
}
