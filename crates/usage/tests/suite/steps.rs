//! What the suites that step a live index through appends share: a transcript grown line by
//! line, a reply of a chosen size, and a report's rows as plain triples.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::Path;

use cross_agent_stores::StoreRoots;
use cross_agent_usage::{Report, Tokens};
use serde_json::json;

use super::claude::assistant;

/// The model [`reply`]'s callers use when the model does not matter.
pub const SONNET: &str = "claude-sonnet-4-5";

/// The stores under `home` with only Claude's (`home/.claude`).
pub fn claude_roots(home: &Path) -> StoreRoots {
    StoreRoots {
        claude_config: Some(home.join(".claude")),
        ..StoreRoots::default()
    }
}

/// Appends `lines` to the transcript at `path`, made with its folders when new.
pub fn add_lines(path: &Path, lines: &[String]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
}

/// Reply `msg` of `session` at minute `minute`: 100 tokens in, `output` out.
pub fn reply(session: &str, msg: &str, minute: u32, model: &str, output: u64) -> String {
    assistant(
        session,
        msg,
        &format!("req-{msg}"),
        &format!("2026-12-01T10:{minute:02}:00.000Z"),
        model,
        json!({"input_tokens": 100, "output_tokens": output}),
        false,
    )
}

pub fn tokens(input: u64, output: u64) -> Tokens {
    Tokens {
        input,
        output,
        ..Tokens::default()
    }
}

/// The report's rows as (key, calls, tokens), sorted by key.
pub fn triples(report: &Report) -> Vec<(String, u64, Tokens)> {
    let mut rows: Vec<_> = report
        .rows
        .iter()
        .map(|r| (r.key.clone(), r.calls, r.tokens))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}
