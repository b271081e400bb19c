//! Synthetic agent stores shaped like the real ones, for the session index's tests and benchmark.
//!
//! Two layers:
//! - **builders** for small hand-made sessions in a temp HOME ([`ClaudeTranscript`],
//!   [`CodexRollout`], [`GrokSession`], [`codex_thread_name`]): each writes records in the shape
//!   the real program writes (Claude Code 2.1.332 and Codex 0.171.0 as recorded in
//!   `shared/observed/`; Grok Build from its public descriptions, as `stores::grok` documents);
//! - a **generator** ([`generate`]) for whole stores of thousands of sessions with a size mix
//!   from 2 KB to 50 MB, tool calls and results, `custom-title` records sprinkled through Claude
//!   files (sometimes twice: the last one wins), Codex names in `session_index.jsonl`, and Grok
//!   `/rename` titles. Deterministic for a given seed, so a store generated once under `/tmp` can
//!   be reused between benchmark runs.
//!
//! This crate does not depend on `stores` (the stores' tests depend on it), so agents are named
//! by strings here.
//!
//! One file, past the usual ~800 lines: the three agents' synthetic layouts share the size mix
//! and the deterministic generator, and must stay in step with each other for the benchmark.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cross_agent_protocol::timestamp::UnixMillis;

/// A point in time as milliseconds since the Unix epoch.
pub type Millis = i64;

/// RFC 3339 UTC with milliseconds, as the agents write their timestamps.
pub fn rfc3339(ms: Millis) -> String {
    UnixMillis(ms).to_rfc3339()
}

/// The current time in milliseconds.
pub fn now_millis() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A JSON string literal (with quotes) for `s`.
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// Claude Code's project folder name for a cwd: every non-alphanumeric character becomes `-`.
pub fn claude_slug(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Grok's folder name for a short cwd: percent-encoded except `A-Za-z0-9-_.~`.
pub fn grok_folder(cwd: &str) -> String {
    let mut out = String::new();
    for b in cwd.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Builders for hand-made sessions.
// ---------------------------------------------------------------------------------------------

/// A Claude Code transcript being written line by line:
/// `<home>/.claude/projects/<slug(cwd)>/<session id>.jsonl`.
#[derive(Debug, Clone)]
pub struct ClaudeTranscript {
    pub path: PathBuf,
    pub session_id: String,
    pub cwd: String,
    lines: Vec<String>,
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

    fn uuid(&mut self) -> String {
        self.counter += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.counter)
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
        let line = self.envelope("assistant", at, &message, r#","requestId":"req_1""#);
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
        let line = self.envelope("assistant", at, &message, r#","requestId":"req_1""#);
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
    lines: Vec<String>,
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
    lines: Vec<String>,
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

fn write_lines(path: &Path, lines: &[String]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    fs::write(path, text).with_context(|| path.display().to_string())
}

/// Appends raw bytes to a file (creating it and its folder).
pub fn append_raw(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| path.display().to_string())?;
    file.write_all(bytes)
        .with_context(|| path.display().to_string())
}

// ---------------------------------------------------------------------------------------------
// The generator.
// ---------------------------------------------------------------------------------------------

/// Changes whenever [`generate`] writes something different for the same spec, so a store kept
/// on disk between benchmark runs is regenerated rather than reused stale.
pub const GENERATOR_VERSION: u32 = 2;

/// What to generate.
#[derive(Debug, Clone)]
pub struct SyntheticSpec {
    pub claude: usize,
    pub codex: usize,
    pub grok: usize,
    pub seed: u64,
    /// Multiplies every session's target size (1.0: the 2 KB – 50 MB mix, about 45 KB a
    /// session on average, so 22,000 sessions are about 1 GB).
    pub size_scale: f64,
    /// "Now" for the generated timestamps: sessions spread over the 60 days before it, a few
    /// within the last hours.
    pub now: Millis,
}

impl SyntheticSpec {
    /// The benchmark store: 10,000 Claude + 10,000 Codex + 2,000 Grok sessions.
    pub fn full(now: Millis) -> Self {
        SyntheticSpec {
            claude: 10_000,
            codex: 10_000,
            grok: 2_000,
            seed: 0x5e55_1085,
            size_scale: 1.0,
            now,
        }
    }
}

/// A session the generator gave a unique name, for lookups to aim at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NamedSession {
    pub agent: String,
    pub session_id: String,
    pub name: String,
    /// The transcript (Claude, Codex) or session folder (Grok).
    pub path: PathBuf,
    pub size: u64,
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Generated {
    pub files: usize,
    pub bytes: u64,
    /// Sessions with a unique assigned name (their last one), one per agent at least.
    pub named: Vec<NamedSession>,
    /// The largest Claude transcript: where the benchmark appends.
    pub largest_claude: Option<PathBuf>,
}

/// A small, fast, deterministic generator (SplitMix64): no dependency, same store for a seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn uuid(&mut self) -> String {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        bytes[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        // Version 4, RFC 4122 variant, like the ids the agents mint.
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .to_string()
    }
}

/// Opening prompts: few, so generated titles repeat across sessions as real ones do.
const PROMPTS: &[&str] = &[
    "fix the failing tests in the billing module",
    "review this pull request for race conditions",
    "add a retry with backoff to the http client",
    "why does the build fail on CI but not locally",
    "refactor the session store into its own crate",
    "write a migration that adds an index on user_id",
    "explain what this function does",
    "update the README with the new install steps",
    "profile the listing and make it faster",
    "port the parser to the new grammar",
    "help me debug a deadlock in the worker pool",
    "summarise the last week of commits",
];

const COMMANDS: &[&str] = &[
    "cargo test --workspace",
    "git status --short",
    "rg -n \"fn main\" src",
    "ls -la crates",
    "cat Cargo.toml",
    "npm run build",
];

/// Filler text for tool output and replies: ASCII, JSON-safe after escaping, cut to length.
fn filler(rng: &mut Rng, len: usize) -> String {
    const WORDS: &[&str] = &[
        "alpha",
        "beta",
        "gamma",
        "delta",
        "session",
        "index",
        "offset",
        "error:",
        "warning",
        "passed",
        "failed",
        "test",
        "crate",
        "module",
        "fn",
        "struct",
        "impl",
        "let",
        "match",
        "return",
        "Ok(())",
        "path/to/file.rs:42:7",
        "{\"k\":1}",
        "tab\there",
        "line\nbreak",
    ];
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        out.push(' ');
    }
    out.truncate(len);
    out
}

/// A target size in bytes from the benchmark's mix (2 KB to 50 MB): mostly small transcripts, a
/// long tail of big ones, about 45 KB on average (so 22,000 sessions make about 1 GB).
fn target_size(rng: &mut Rng, scale: f64) -> u64 {
    let tier = rng.below(10_000);
    let (lo, hi): (f64, f64) = match tier {
        // 80 %: 2–12 KB, a few turns.
        0..=7_999 => (2e3, 12e3),
        // 17 %: 12–200 KB.
        8_000..=9_699 => (12e3, 200e3),
        // 2.95 %: 200 KB – 2 MB.
        9_700..=9_994 => (200e3, 2e6),
        // 0.05 %: 10–50 MB, the long sessions that dominate a real store's bytes.
        _ => (10e6, 50e6),
    };
    // Log-uniform within the tier.
    let size = (lo.ln() + rng.unit() * (hi.ln() - lo.ln())).exp() * scale;
    size.max(600.0) as u64
}

/// The length of one tool output: usually a short log, now and then (in sessions big enough to
/// hold one) a long line — a file dump or a build log — of up to a tenth of the session.
fn tool_output_len(rng: &mut Rng, target: u64) -> usize {
    if target >= 200_000 && rng.below(200) == 0 {
        (rng.below(target / 10) + 20_000) as usize
    } else {
        (rng.below(1_200) + 80) as usize
    }
}

fn cwd_for(rng: &mut Rng) -> String {
    let project = rng.below(400);
    match rng.below(10) {
        0 => "/home/dev".to_owned(),
        1 => format!("/home/dev/work/project-{project:03}/crates/core"),
        _ => format!("/home/dev/work/project-{project:03}"),
    }
}

/// When a session was last active: most within 60 days, a few within the active window.
fn last_active(rng: &mut Rng, now: Millis) -> Millis {
    const HOUR: i64 = 3_600_000;
    if rng.below(50) == 0 {
        now - rng.below(3 * HOUR as u64) as i64
    } else {
        now - rng.below(60 * 24 * HOUR as u64) as i64
    }
}

/// Writes a whole synthetic store under `home` (`.claude`, `.codex`, `.grok`).
pub fn generate(home: &Path, spec: &SyntheticSpec) -> Result<Generated> {
    let mut out = Generated::default();
    let mut rng = Rng::new(spec.seed);
    let mut largest: u64 = 0;
    for i in 0..spec.claude {
        let (path, size, named) = generate_claude(home, &mut rng, i, spec)?;
        if size > largest {
            largest = size;
            out.largest_claude = Some(path);
        }
        out.files += 1;
        out.bytes += size;
        out.named.extend(named);
    }
    let mut index = BufWriter::new(Vec::new());
    for i in 0..spec.codex {
        let (size, named) = generate_codex(home, &mut rng, i, spec, &mut index)?;
        out.files += 1;
        out.bytes += size;
        out.named.extend(named);
    }
    let index = index
        .into_inner()
        .context("buffering session_index.jsonl")?;
    if !index.is_empty() {
        let path = home.join(".codex/session_index.jsonl");
        fs::write(&path, &index).with_context(|| path.display().to_string())?;
        out.files += 1;
        out.bytes += index.len() as u64;
    }
    for i in 0..spec.grok {
        let (size, named) = generate_grok(home, &mut rng, i, spec)?;
        out.files += 2;
        out.bytes += size;
        out.named.extend(named);
    }
    Ok(out)
}

/// The store of `spec` in `home`, generated unless a complete one for the same spec is there
/// already (the benchmarks share one). What [`generate`] reported is kept beside it
/// (`generated.json`) as the truth a listing is checked against; the duration is `None` when
/// the store was reused. "Now" is fixed at generation, so a reused store keeps its shape.
pub fn ensure(
    home: &Path,
    spec: &SyntheticSpec,
) -> Result<(Generated, Option<std::time::Duration>)> {
    let marker = home.with_file_name("generated.txt");
    let truth = home.with_file_name("generated.json");
    let key = format!(
        "v{GENERATOR_VERSION} {} {} {} {} {}",
        spec.claude, spec.codex, spec.grok, spec.size_scale, spec.seed
    );
    if let Ok(text) = fs::read_to_string(&marker)
        && let Some((stored_key, _generated_at)) = text.trim().rsplit_once(' ')
        && stored_key == key
        && let Ok(json) = fs::read(&truth)
        && let Ok(generated) = serde_json::from_slice::<Generated>(&json)
    {
        return Ok((generated, None));
    }
    if home.exists() {
        fs::remove_dir_all(home).with_context(|| home.display().to_string())?;
    }
    let now = now_millis();
    let spec = SyntheticSpec {
        now,
        ..spec.clone()
    };
    let started = std::time::Instant::now();
    let generated = generate(home, &spec)?;
    let took = started.elapsed();
    fs::write(&truth, serde_json::to_vec(&generated)?)
        .with_context(|| truth.display().to_string())?;
    fs::write(&marker, format!("{key} {now}\n")).with_context(|| marker.display().to_string())?;
    Ok((generated, Some(took)))
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    let file = File::create(path).with_context(|| path.display().to_string())?;
    Ok(BufWriter::with_capacity(256 << 10, file))
}

/// One Claude transcript of about its target size, with turns of tool calls and a
/// `custom-title` (sometimes two) sprinkled at a random turn.
fn generate_claude(
    home: &Path,
    rng: &mut Rng,
    i: usize,
    spec: &SyntheticSpec,
) -> Result<(PathBuf, u64, Option<NamedSession>)> {
    let id = rng.uuid();
    let cwd = cwd_for(rng);
    let target = target_size(rng, spec.size_scale);
    let end = last_active(rng, spec.now);
    let mut t = ClaudeTranscript::new(home, &cwd, &id);
    let path = t.path.clone();
    let mut w = create(&path)?;
    let prompt = PROMPTS[rng.below(PROMPTS.len() as u64) as usize];
    // A third of the sessions are named; a tenth of those renamed once more later on.
    let name = (rng.below(3) == 0).then(|| format!("claude-{i:05}"));
    let renamed = name.is_some() && rng.below(10) == 0;
    let name_at = rng.unit();
    let mut written: u64 = 0;
    let mut turn = 0u64;
    let mut named_done = false;
    let mut renamed_done = false;
    // Each turn is ~1.5–3 KB on average; timestamps step backwards from `end`.
    let turns_estimate = (target / 2_000).max(1);
    let step = (3_600_000 / turns_estimate.max(1)).max(1) as i64;
    let start = end - step * turns_estimate as i64;
    while written < target {
        let at = start + step * turn as i64;
        let mut lines = Vec::new();
        t.lines.clear();
        let text = if turn == 0 {
            prompt.to_owned()
        } else {
            format!("next step {turn}: {}", filler(rng, 60))
        };
        t.user(&text, at);
        let tools = rng.below(3);
        for _ in 0..tools {
            let command = COMMANDS[rng.below(COMMANDS.len() as u64) as usize];
            t.tool_use(command, at + 1);
            // Now and then a big tool output line (a long log, a file dump).
            let out_len = tool_output_len(rng, target);
            let output = filler(rng, out_len);
            t.tool_result(&output, at + 2);
        }
        let len = (rng.below(600) + 40) as usize;
        let reply = filler(rng, len);
        t.assistant_text(&reply, at + 3);
        if let Some(name) = &name {
            let progress = written as f64 / target.max(1) as f64;
            if !named_done && progress >= name_at * 0.9 {
                if renamed {
                    t.custom_title(&format!("{name}-old"));
                } else {
                    t.custom_title(name);
                }
                named_done = true;
            } else if renamed && named_done && !renamed_done && progress >= 0.95 {
                t.custom_title(name);
                renamed_done = true;
            }
        }
        if turn == 1 && rng.below(2) == 0 {
            t.ai_title(&format!("{prompt} (summary)"));
        }
        lines.append(&mut t.lines);
        for line in &lines {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    // A name not placed yet (a one-turn file) goes at the end.
    let mut tail = Vec::new();
    if let Some(name) = &name
        && (!named_done || (renamed && !renamed_done))
    {
        t.lines.clear();
        t.custom_title(name);
        tail.append(&mut t.lines);
    }
    for line in &tail {
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
        written += line.len() as u64 + 1;
    }
    w.flush().with_context(|| path.display().to_string())?;
    let named = name.map(|name| NamedSession {
        agent: "claude".to_owned(),
        session_id: id,
        name,
        path: path.clone(),
        size: written,
    });
    Ok((path, written, named))
}

fn generate_codex(
    home: &Path,
    rng: &mut Rng,
    i: usize,
    spec: &SyntheticSpec,
    names: &mut impl Write,
) -> Result<(u64, Option<NamedSession>)> {
    let id = rng.uuid();
    let cwd = cwd_for(rng);
    let target = target_size(rng, spec.size_scale);
    let end = last_active(rng, spec.now);
    let turns_estimate = (target / 2_000).max(1);
    let step = (3_600_000 / turns_estimate.max(1)).max(1) as i64;
    let start = end - step * turns_estimate as i64;
    let mut r = CodexRollout::new(home, &cwd, &id, start);
    let path = r.path.clone();
    let mut w = create(&path)?;
    let mut written: u64 = 0;
    let prompt = PROMPTS[rng.below(PROMPTS.len() as u64) as usize];
    let mut turn = 0u64;
    while written < target {
        let at = start + step * turn as i64;
        let text = if turn == 0 {
            prompt.to_owned()
        } else {
            format!("continue with step {turn}")
        };
        r.user(&text, at);
        for _ in 0..rng.below(3) {
            let command = COMMANDS[rng.below(COMMANDS.len() as u64) as usize];
            let out_len = tool_output_len(rng, target);
            let output = filler(rng, out_len);
            r.tool_call(command, &output, at + 1);
        }
        let len = (rng.below(600) + 40) as usize;
        let reply = filler(rng, len);
        r.answer(&reply, at + 2);
        for line in r.lines.drain(..) {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    w.flush().with_context(|| path.display().to_string())?;
    // A third of the threads are named in session_index.jsonl, some renamed (newest wins).
    let named = if rng.below(3) == 0 {
        let name = format!("codex-{i:05}");
        if rng.below(10) == 0 {
            writeln!(
                names,
                "{{\"id\":{},\"thread_name\":{},\"updated_at\":\"{}\"}}",
                js(&id),
                js(&format!("{name}-old")),
                rfc3339(end - 1000)
            )?;
        }
        writeln!(
            names,
            "{{\"id\":{},\"thread_name\":{},\"updated_at\":\"{}\"}}",
            js(&id),
            js(&name),
            rfc3339(end)
        )?;
        Some(NamedSession {
            agent: "codex".to_owned(),
            session_id: id,
            name,
            path,
            size: written,
        })
    } else {
        None
    };
    Ok((written, named))
}

fn generate_grok(
    home: &Path,
    rng: &mut Rng,
    i: usize,
    spec: &SyntheticSpec,
) -> Result<(u64, Option<NamedSession>)> {
    let id = rng.uuid();
    let cwd = cwd_for(rng);
    // Grok writes every streamed chunk as a line; sessions are smaller on average.
    let target = target_size(rng, spec.size_scale * 0.5);
    let end = last_active(rng, spec.now);
    let turns_estimate = (target / 2_000).max(1);
    let step = (3_600_000 / turns_estimate.max(1)).max(1) as i64;
    let start = end - step * turns_estimate as i64;
    let mut s = GrokSession::new(home, &cwd, &id, start);
    let prompt = PROMPTS[rng.below(PROMPTS.len() as u64) as usize];
    let mut written: u64 = 0;
    let updates = s.dir.join("updates.jsonl");
    let mut w = create(&updates)?;
    let mut turn = 0u64;
    while written < target {
        let at = start + step * turn as i64;
        let text = if turn == 0 {
            prompt.to_owned()
        } else {
            format!("go on with part {turn}")
        };
        s.user(&text, at);
        for _ in 0..rng.below(3) {
            let len = (rng.below(1_200) + 80) as usize;
            let output = filler(rng, len);
            s.tool_call("Run shell command", &output, at + 1);
        }
        for _ in 0..(rng.below(6) + 2) {
            let len = (rng.below(80) + 8) as usize;
            let chunk = filler(rng, len);
            s.agent_chunk(&chunk, at + 2);
        }
        s.turn_completed(at + 3);
        for line in s.lines.drain(..) {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
            written += line.len() as u64 + 1;
        }
        turn += 1;
    }
    w.flush().with_context(|| updates.display().to_string())?;
    let name = (rng.below(3) == 0).then(|| format!("grok-{i:05}"));
    match &name {
        Some(name) => {
            s.rename(name);
        }
        None => s.generated_title = Some(format!("{prompt} (grok)")),
    }
    let summary = s.summary_json();
    let summary_path = s.dir.join("summary.json");
    fs::write(&summary_path, &summary).with_context(|| summary_path.display().to_string())?;
    written += summary.len() as u64;
    let named = name.map(|name| NamedSession {
        agent: "grok".to_owned(),
        session_id: id,
        name,
        path: s.dir.clone(),
        size: written,
    });
    Ok((written, named))
}
