//! Synthetic agent stores shaped like the real ones, for the session index's tests and benchmark.
//!
//! Two layers:
//! - **builders** for small hand-made sessions in a temp HOME ([`ClaudeTranscript`],
//!   [`CodexRollout`], [`GrokSession`], [`codex_thread_name`]): each writes records in the shape
//!   the real program writes (Claude Code 2.1.332 and Codex 0.171.0 as recorded in
//!   `shared/observed/`; Grok Build from its public descriptions, as `stores::grok` documents;
//!   Copilot's Agent Host files in [`copilot`], as `docs/observed/copilot.md` documents them);
//! - a **generator** ([`generate`]) for whole stores of thousands of sessions with a size mix
//!   from 2 KB to 50 MB, tool calls and results, `custom-title` records sprinkled through Claude
//!   files (sometimes twice: the last one wins), Codex names in `session_index.jsonl`, and Grok
//!   `/rename` titles. Deterministic for a given seed, so a store generated once under `/tmp` can
//!   be reused between benchmark runs.
//!
//! This crate does not depend on `stores` (the stores' tests depend on it), so agents are named
//! by strings here.
//!
//! The builders are in `builders.rs`, the generator in `generator.rs`; both are re-exported here, and
//! the small helpers they share (timestamps, folder names, writing lines) live in this file.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use cross_agent_protocol::timestamp::UnixMillis;

mod builders;
pub mod copilot;
mod generator;

pub use builders::{ClaudeTranscript, CodexRollout, GrokSession, codex_thread_name};
pub use copilot::{CopilotEditor, CopilotSessionDb, SdkEvents};
pub use generator::{
    GENERATOR_VERSION, Generated, NamedSession, Rng, SyntheticSpec, ensure, generate,
};

/// A point in time as milliseconds since the Unix epoch.
pub type Millis = i64;

/// RFC 3339 UTC with milliseconds, as the agents write their timestamps.
pub fn rfc3339(ms: Millis) -> String {
    UnixMillis(ms).to_rfc3339()
}

/// The current time in milliseconds.
pub fn now_millis() -> Millis {
    UnixMillis::now().0
}

/// A JSON string literal (with quotes) for `s`.
pub(crate) fn js(s: &str) -> String {
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

pub(crate) fn write_lines(path: &Path, lines: &[String]) -> Result<()> {
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
