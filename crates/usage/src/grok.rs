//! Grok Build's usage, as far as its files record it. Grok cannot run on these machines and its
//! store is read from public descriptions (see `cross_agent_stores::grok`): the only usage
//! described is the `usage: {inputTokens, outputTokens}` of an `_x.ai/session/update`
//! `turn_completed` line in `updates.jsonl` — per turn, with no model and no cache kinds. So a
//! Grok turn that has it counts its tokens with the cost unknown (no model to price), and a
//! session without any is reported as "no usage recorded" (docs/usage.md).

use std::path::{Path, PathBuf};

use cross_agent_protocol::timestamp::UnixMillis;
use serde_json::Value;

use crate::lines::LineBuffer;
use crate::tokens::Tokens;

/// One turn's usage as `turn_completed` recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrokTurn {
    pub timestamp: Option<UnixMillis>,
    pub tokens: Tokens,
}

/// What one Grok session's `updates.jsonl` records about usage.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GrokFile {
    pub path: PathBuf,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub started: Option<UnixMillis>,
    pub turns: Vec<GrokTurn>,
    pub bad_lines: u64,
}

/// Reads one `updates.jsonl` from any number of appended pieces.
#[derive(Debug, Clone, Default)]
pub struct GrokReader {
    file: GrokFile,
    lines: LineBuffer,
}

impl GrokReader {
    pub fn new(path: &Path) -> Self {
        let dir = path.parent();
        Self {
            file: GrokFile {
                path: path.to_path_buf(),
                session_id: dir
                    .and_then(Path::file_name)
                    .and_then(|n| n.to_str())
                    .map(str::to_owned),
                cwd: dir
                    .and_then(Path::parent)
                    .and_then(cross_agent_stores::grok::folder_cwd)
                    .map(|p| p.to_string_lossy().into_owned()),
                ..GrokFile::default()
            },
            lines: LineBuffer::default(),
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(bytes, |line| self.line(line));
        self.lines = lines;
    }

    pub fn finish(mut self) -> GrokFile {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|line| self.line(line));
        self.file
    }

    fn line(&mut self, raw: &[u8]) {
        if raw.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(line) = serde_json::from_slice::<Value>(raw) else {
            self.file.bad_lines += 1;
            return;
        };
        // `timestamp` is seconds since the epoch, with a fraction.
        let timestamp = line
            .get("timestamp")
            .and_then(Value::as_f64)
            .map(|s| UnixMillis((s * 1000.0).round() as i64));
        if let Some(ts) = timestamp {
            self.file.started = Some(self.file.started.map_or(ts, |s| s.min(ts)));
        }
        let Some(update) = line.get("params").and_then(|p| p.get("update")) else {
            return;
        };
        if update.get("sessionUpdate").and_then(Value::as_str) != Some("turn_completed") {
            return;
        }
        let Some(usage) = update.get("usage") else {
            return;
        };
        let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
        self.file.turns.push(GrokTurn {
            timestamp,
            tokens: Tokens {
                input: count("inputTokens"),
                output: count("outputTokens"),
                ..Tokens::default()
            },
        });
    }
}

/// Reads a whole `updates.jsonl`.
pub fn read(path: &Path, bytes: &[u8]) -> GrokFile {
    let mut reader = GrokReader::new(path);
    reader.feed(bytes);
    reader.finish()
}
