mod concurrency;
mod events;
mod query;
mod retention;
mod writer;

use std::path::Path;

use cross_agent_decisions::{Decision, DecisionKind, Outcome, clock};

/// `n` minutes before now, as a stamp.
pub fn minutes_ago(n: i64) -> String {
    clock::format_millis(clock::now_millis() - n * 60_000)
}

/// The log's lines across every file, oldest file first.
pub fn all_lines(dir: &Path) -> Vec<String> {
    let mut files: Vec<_> = cross_agent_decisions::rotate::rotated_files(dir)
        .unwrap()
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    files.push(dir.join("decisions.jsonl"));
    files
        .iter()
        .filter(|p| p.exists())
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A decision with a sequence number, to count what arrived.
pub fn numbered(writer: u64, seq: u64) -> Decision {
    Decision::new(DecisionKind::DELIVERY_OUTCOME, Outcome::DELIVERED)
        .delivery(format!("dlv_{writer}_{seq}"))
        .detail("writer", writer)
        .detail("seq", seq)
        .detail("padding", "x".repeat(usize::try_from(seq % 97).unwrap()))
}
