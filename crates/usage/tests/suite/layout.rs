//! The usage index's compact layout (`cross_agent_usage::keys`, the per-file place tables, the
//! ledger's side tables, the interned model names) where it could go wrong and a fresh scan
//! would not show it: each total is a hand-computed one.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs;

use cross_agent_stores::StoreRoots;
use cross_agent_usage::claude::ClaudeReader;
use cross_agent_usage::{GroupBy, PriceTable, Report, Tokens, UsageIndex};
use pretty_assertions::assert_eq;

use super::steps::{add_lines, claude_roots, reply, tokens, triples};

/// The index refreshed: its rows by `by` as (key, calls, tokens), sorted by key.
fn rows(index: &mut UsageIndex, roots: &StoreRoots, by: GroupBy) -> Vec<(String, u64, Tokens)> {
    rows_and_copies(index, roots, by).0
}

/// [`rows`], and how many copies of a call were not counted again.
fn rows_and_copies(
    index: &mut UsageIndex,
    roots: &StoreRoots,
    by: GroupBy,
) -> (Vec<(String, u64, Tokens)>, u64) {
    let mut warnings = Vec::new();
    index.refresh(roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new());
    let prices = PriceTable::shipped().unwrap();
    let accounting = index.accounting();
    let report = Report::build(&accounting, &prices, by, None);
    (triples(&report), accounting.duplicates_skipped)
}

/// A reply whose lines are written apart — other replies between them, the later line in a
/// later append, after the file's tables were read and grown again — is still one reply of the
/// file, kept once with its largest usage (each reply is found again by its key, not only the
/// last one): the file's parse has it once, and the index counts no copy.
#[test]
fn a_reply_written_on_lines_appended_apart_counts_once_with_its_largest_usage() {
    let home = tempfile::tempdir().unwrap();
    let roots = claude_roots(home.path());
    let file = home.path().join(".claude/projects/-work/s.jsonl");
    const M: &str = "claude-sonnet-4-5";
    // The reply `x` first, with a partial output count, then 40 other replies.
    let mut first = vec![reply("s", "x", 0, M, 10)];
    first.extend((0..40).map(|n| reply("s", &format!("y{n}"), 1, M, 1)));
    add_lines(&file, &first);
    let mut index = UsageIndex::new();
    assert_eq!(
        rows_and_copies(&mut index, &roots, GroupBy::Session),
        (vec![("s".to_owned(), 41, tokens(4100, 50))], 0)
    );
    let mut reader = ClaudeReader::new(&file);
    reader.feed(&fs::read(&file).unwrap());
    // Another append: 40 more replies, `x`'s last line (its whole output) among them, then
    // `x` once more with a smaller count (kept: the largest).
    let mut second: Vec<String> = (0..20)
        .map(|n| reply("s", &format!("z{n}"), 2, M, 1))
        .collect();
    second.push(reply("s", "x", 3, M, 500));
    second.extend((20..40).map(|n| reply("s", &format!("z{n}"), 4, M, 1)));
    second.push(reply("s", "x", 5, M, 7));
    let before = fs::metadata(&file).unwrap().len() as usize;
    add_lines(&file, &second);
    assert_eq!(
        rows_and_copies(&mut index, &roots, GroupBy::Session),
        (vec![("s".to_owned(), 81, tokens(8100, 580))], 0)
    );
    reader.feed(&fs::read(&file).unwrap()[before..]);
    let messages = &reader.file().messages;
    assert_eq!(messages.len(), 81);
    assert_eq!(messages.get(0).unwrap().tokens, tokens(100, 500));
}

/// A model first seen after an accounting is named in the next (the names are interned once,
/// the calls hold ids), and a model's name stays its own after the files that named it first
/// are gone and others name it again.
#[test]
fn a_model_first_seen_later_is_named_and_a_dropped_files_model_keeps_its_name() {
    let home = tempfile::tempdir().unwrap();
    let roots = claude_roots(home.path());
    let project = home.path().join(".claude/projects/-work");
    // Names no other test interns (the names are the process's).
    let first = format!("layout-first-{}", std::process::id());
    let later = format!("layout-later-{}", std::process::id());
    add_lines(&project.join("a.jsonl"), &[reply("a", "a1", 0, &first, 1)]);
    let mut index = UsageIndex::new();
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Model),
        vec![(first.clone(), 1, tokens(100, 1))]
    );
    add_lines(&project.join("b.jsonl"), &[reply("b", "b1", 1, &later, 2)]);
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Model),
        vec![
            (first.clone(), 1, tokens(100, 1)),
            (later.clone(), 1, tokens(100, 2)),
        ]
    );
    // The first model's file gone, a new one names it again: the same name, not another's.
    fs::remove_file(project.join("a.jsonl")).unwrap();
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Model),
        vec![(later.clone(), 1, tokens(100, 2))]
    );
    add_lines(&project.join("c.jsonl"), &[reply("c", "c1", 2, &first, 3)]);
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Model),
        vec![(first, 1, tokens(100, 3)), (later, 1, tokens(100, 2))]
    );
}

/// A reply copied into a resumed session whose copy recorded a larger usage than the winning
/// copy's own counts the larger (kept aside from the winner's record), and the smaller again
/// when that copy is gone; a third copy's taking out and putting back leaves one call.
#[test]
fn a_copys_larger_usage_counts_while_the_copy_is_there() {
    let home = tempfile::tempdir().unwrap();
    let roots = claude_roots(home.path());
    let project = home.path().join(".claude/projects/-work");
    const M: &str = "claude-sonnet-4-5";
    // The base wins `m` (it sorts first on a tie); the copies recorded more output.
    add_lines(
        &project.join("a-base.jsonl"),
        &[reply("a-base", "m", 0, M, 10)],
    );
    let mut index = UsageIndex::new();
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Session),
        vec![("a-base".to_owned(), 1, tokens(100, 10))]
    );
    add_lines(
        &project.join("b-copy.jsonl"),
        &[reply("b-copy", "m", 0, M, 90)],
    );
    add_lines(
        &project.join("c-copy.jsonl"),
        &[reply("c-copy", "m", 0, M, 40)],
    );
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Session),
        vec![("a-base".to_owned(), 1, tokens(100, 90))]
    );
    fs::remove_file(project.join("b-copy.jsonl")).unwrap();
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Session),
        vec![("a-base".to_owned(), 1, tokens(100, 40))]
    );
    fs::remove_file(project.join("c-copy.jsonl")).unwrap();
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Session),
        vec![("a-base".to_owned(), 1, tokens(100, 10))]
    );
    // The base gone, a copy comes back: it wins the call alone.
    fs::remove_file(project.join("a-base.jsonl")).unwrap();
    add_lines(
        &project.join("c-copy.jsonl"),
        &[reply("c-copy", "m", 0, M, 40)],
    );
    assert_eq!(
        rows(&mut index, &roots, GroupBy::Session),
        vec![("c-copy".to_owned(), 1, tokens(100, 40))]
    );
}
