//! Grok Build's usage, as far as its files record it. Grok cannot run on these machines and its
//! store is read from public descriptions (see `cross_agent_stores::grok`): the only usage
//! described is the `usage: {inputTokens, outputTokens}` of an `_x.ai/session/update`
//! `turn_completed` line in `updates.jsonl` — per turn, with no model and no cache kinds. So a
//! Grok turn that has it counts its tokens with the cost unknown (no model to price), and a
//! session without any is reported as "no usage recorded" (docs/usage.md).

use std::path::Path;
use std::sync::Arc;

use cross_agent_protocol::timestamp::UnixMillis;
use serde_json::Value;

use crate::lines::{self, LineRecords, Reader};
use crate::tokens::Tokens;

/// One turn's usage as `turn_completed` recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrokTurn {
    pub timestamp: Option<UnixMillis>,
    pub tokens: Tokens,
}

/// What one Grok session's `updates.jsonl` records about usage.
#[derive(Debug, Clone, PartialEq)]
pub struct GrokFile {
    /// Shared: the live index keys the file by it and its ledger orders files by it.
    pub path: Arc<Path>,
    /// Shared, not copied, with the file's share of the calls in the live index.
    pub session_id: Option<crate::Name>,
    /// Shared with every file that names it ([`crate::keys::shared_cwd`]).
    pub cwd: Option<crate::keys::Cwd>,
    pub started: crate::lines::Earliest,
    pub turns: Vec<GrokTurn>,
    pub bad_lines: u64,
}

/// Reads one `updates.jsonl` from any number of appended pieces.
pub type GrokReader = Reader<GrokLines>;

/// What an `updates.jsonl`'s lines are taken for: the turns' usage.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrokLines;

impl LineRecords for GrokLines {
    type Line = Value;
    type File = GrokFile;

    /// The session and its cwd are named by the session's folder.
    fn start(path: &Path) -> GrokFile {
        let dir = path.parent();
        let held: Arc<Path> = Arc::from(path);
        GrokFile {
            // The folder's name, held in the path.
            session_id: folder_session(path).map(|id| crate::Name::in_path(&id, &held)),
            path: held,
            cwd: dir
                .and_then(Path::parent)
                .and_then(cross_agent_stores::grok::folder_cwd)
                .map(|p| crate::keys::shared_cwd(&p.to_string_lossy())),
            started: crate::lines::Earliest::default(),
            turns: Vec::new(),
            bad_lines: 0,
        }
    }

    /// `timestamp` is seconds since the epoch, with a fraction.
    fn timestamp(line: &Value) -> Option<UnixMillis> {
        line.get("timestamp")
            .and_then(Value::as_f64)
            .map(|s| UnixMillis((s * 1000.0).round() as i64))
    }

    fn started(file: &mut GrokFile) -> &mut crate::lines::Earliest {
        &mut file.started
    }

    fn bad_lines(file: &mut GrokFile) -> &mut u64 {
        &mut file.bad_lines
    }

    fn shrink(&mut self, file: &mut GrokFile) {
        file.turns.shrink_to_fit();
    }

    fn renew(file: &mut GrokFile) {
        crate::names::renew(&mut file.path, &mut [&mut file.session_id]);
    }

    fn record(&mut self, file: &mut GrokFile, line: Value, timestamp: Option<UnixMillis>) {
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
        file.turns.push(GrokTurn {
            timestamp,
            tokens: Tokens {
                input: count("inputTokens"),
                output: count("outputTokens"),
                ..Tokens::default()
            },
        });
    }
}

/// The session an `updates.jsonl` is of: its folder's name (a [`GrokFile`]'s `session_id`,
/// which no line changes).
fn folder_session(path: &Path) -> Option<String> {
    path.parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .map(str::to_owned)
}

/// The session a Grok file's usage counts for: its folder's name, else its file's stem — what
/// the accounting takes from the parse, from the path alone.
pub(crate) fn session_of(path: &Path) -> String {
    folder_session(path).unwrap_or_else(|| crate::account::stem(path))
}

/// Reads a whole `updates.jsonl`.
pub fn read(path: &Path, bytes: &[u8]) -> GrokFile {
    lines::read::<GrokLines>(path, bytes)
}
