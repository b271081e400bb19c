//! The live index's decision kept current file by file (`cross_agent_usage::ledger`): after a
//! change only the calls the changed file records are decided again, and a changed file's copy
//! of another file's reply still counts once — never twice, never dropped — as a fresh whole
//! scan counts it.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs;

use cross_agent_stores::StoreRoots;
use cross_agent_usage::{
    GroupBy, LedgerStats, PriceTable, Report, SessionSpent, SessionTotals, Tokens, UsageIndex,
    account, scan,
};
use pretty_assertions::assert_eq;

use super::steps::{SONNET, add_lines, claude_roots, reply, tokens, triples};

/// The index brought current (the files unchanged since are kept, not read), its report by
/// session as (session, calls, tokens) beside a fresh scan's, and what its decision looked at.
fn step(
    index: &mut UsageIndex,
    totals: &mut SessionTotals,
    roots: &StoreRoots,
) -> (Vec<(String, u64, Tokens)>, LedgerStats) {
    let prices = PriceTable::shipped().unwrap();
    let mut warnings = Vec::new();
    index.refresh(roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new());
    let accounting = index.accounting();
    let live = Report::build(&accounting, &prices, GroupBy::Session, None);
    let found = scan::scan(roots);
    let fresh = Report::build(&account(&found.files), &prices, GroupBy::Session, None);
    assert_eq!(live, fresh);
    // The listing's table, kept by file, is the report's rows.
    let (kept, shares) = totals.by_session(&accounting, &prices);
    // Keyed by the session ids the shares hold, not copies of them.
    for session in kept.keys() {
        assert!(
            accounting
                .chunks
                .iter()
                .any(|share| cross_agent_usage::Name::same_held(&share.session_id, session)),
            "{session} is a copy"
        );
    }
    let mut kept: Vec<_> = kept
        .into_iter()
        .map(|(session, spent)| (session.to_string(), spent))
        .collect();
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    let mut rows: Vec<_> = live
        .rows
        .iter()
        .map(|row| (row.key.clone(), SessionSpent::of(row)))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(kept, rows);
    if index.accounting_stats().files_changed == 1 {
        // One file changed: its share, and the shares whose calls moved, grouped again.
        assert!(shares.shares_grouped <= 2, "{shares:?}");
    }
    (triples(&live), index.accounting_stats())
}

#[test]
fn a_changed_files_copy_of_another_files_reply_counts_once_after_each_step() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".claude");
    let project = config.join("projects/-work-shop");
    let roots = claude_roots(home.path());
    let base = project.join("base.jsonl");
    // Sorts before the base: on a tie of time and start, a copy there wins the call.
    let fork = project.join("a-fork.jsonl");
    add_lines(
        &base,
        &[
            reply("base", "m1", 0, SONNET, 10),
            reply("base", "m2", 1, SONNET, 20),
        ],
    );
    // Sessions nobody copies: their calls are not decided again when another file changes.
    for n in 0..5 {
        let id = format!("other{n}");
        add_lines(
            &project.join(format!("{id}.jsonl")),
            &[
                reply(&id, &format!("{id}-a"), 2, SONNET, 1),
                reply(&id, &format!("{id}-b"), 3, SONNET, 1),
            ],
        );
    }
    let mut index = UsageIndex::new();
    let mut totals = SessionTotals::new();
    let (rows, _) = step(&mut index, &mut totals, &roots);
    assert_eq!(rows[0], ("base".to_owned(), 2, tokens(200, 30)));

    // A resumed session: its file opens with a copy of the base's first reply (same time, same
    // start), then its own. The copy wins the call: the base counts it no more.
    add_lines(
        &fork,
        &[
            reply("a-fork", "m1", 0, SONNET, 10),
            reply("a-fork", "m3", 4, SONNET, 5),
        ],
    );
    let (rows, stats) = step(&mut index, &mut totals, &roots);
    assert_eq!(
        rows[..2],
        [
            ("a-fork".to_owned(), 2, tokens(200, 15)),
            ("base".to_owned(), 1, tokens(100, 20)),
        ]
    );
    assert_eq!(
        (stats.files_changed, stats.keys_decided),
        (1, 2),
        "{stats:?}"
    );

    // It copies the base's second reply too, with a larger usage (a later line of the same
    // reply): one call, the fork's, with the larger usage; the base has none left.
    add_lines(&fork, &[reply("a-fork", "m2", 1, SONNET, 25)]);
    let (rows, stats) = step(&mut index, &mut totals, &roots);
    assert_eq!(rows[0], ("a-fork".to_owned(), 3, tokens(300, 40)));
    assert_eq!(rows[1].0, "other0");
    assert_eq!(
        (stats.files_changed, stats.keys_decided),
        (1, 3),
        "{stats:?}"
    );

    // The base grows a reply of its own: the copies stay the fork's, counted once.
    add_lines(&base, &[reply("base", "m4", 5, SONNET, 1)]);
    let (rows, stats) = step(&mut index, &mut totals, &roots);
    assert_eq!(
        rows[..2],
        [
            ("a-fork".to_owned(), 3, tokens(300, 40)),
            ("base".to_owned(), 1, tokens(100, 1)),
        ]
    );
    assert_eq!(
        (stats.files_changed, stats.keys_decided),
        (1, 3),
        "{stats:?}"
    );

    // The fork is gone: the replies it had won count for the base again, not dropped.
    fs::remove_file(&fork).unwrap();
    let (rows, stats) = step(&mut index, &mut totals, &roots);
    assert_eq!(rows[0], ("base".to_owned(), 3, tokens(300, 31)));
    assert_eq!(rows.len(), 6);
    assert_eq!(
        (stats.files_changed, stats.keys_decided),
        (1, 3),
        "{stats:?}"
    );
}

/// `path` replaced by a file of `lines` (another inode, as an editor's save or a rewrite makes).
fn write_anew(path: &std::path::Path, lines: &[String]) {
    let new = path.with_extension("new");
    add_lines(&new, lines);
    fs::rename(&new, path).unwrap();
}

/// The ledger keeps no key of its own: each copy's key is read from its file's calls as they
/// were put in. A file written anew with other replies at its places (another inode: read
/// again from its start) takes out the keys it had there, not the ones it has now — its copies
/// elsewhere count as a fresh scan counts them after each step — and when it is gone its
/// copies count where they are.
#[test]
fn a_file_written_anew_takes_out_the_keys_it_had_and_its_copies_count_where_they_are() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/-work-shop");
    let roots = claude_roots(home.path());
    let base = project.join("base.jsonl");
    let fork = project.join("fork.jsonl");
    add_lines(
        &base,
        &[
            reply("base", "m1", 0, SONNET, 10),
            reply("base", "m2", 1, SONNET, 20),
        ],
    );
    add_lines(
        &fork,
        &[
            reply("fork", "m1", 0, SONNET, 10),
            reply("fork", "m2", 1, SONNET, 20),
            reply("fork", "m5", 6, SONNET, 50),
        ],
    );
    let mut index = UsageIndex::new();
    let mut totals = SessionTotals::new();
    let (rows, _) = step(&mut index, &mut totals, &roots);
    assert_eq!(
        rows,
        [
            ("base".to_owned(), 2, tokens(200, 30)),
            ("fork".to_owned(), 1, tokens(100, 50)),
        ]
    );
    // Written anew: `m2` at the place `m1` had, a new reply at `m2`'s, `m1` gone. The base now
    // starts after the fork, so the fork's copy of `m2` is the earlier.
    write_anew(
        &base,
        &[
            reply("base", "m2", 1, SONNET, 20),
            reply("base", "m3", 2, SONNET, 3),
        ],
    );
    let (rows, _) = step(&mut index, &mut totals, &roots);
    assert_eq!(
        rows,
        [
            ("base".to_owned(), 1, tokens(100, 3)),
            ("fork".to_owned(), 3, tokens(300, 80)),
        ]
    );
    // And again, starting with the fork (the first path wins a tie), then gone: every copy the
    // fork holds is its own.
    write_anew(
        &base,
        &[
            reply("base", "m3", 2, SONNET, 3),
            reply("base", "m1", 0, SONNET, 10),
            reply("base", "m5", 6, SONNET, 50),
        ],
    );
    let (rows, _) = step(&mut index, &mut totals, &roots);
    assert_eq!(
        rows,
        [
            ("base".to_owned(), 3, tokens(300, 63)),
            ("fork".to_owned(), 1, tokens(100, 20)),
        ]
    );
    fs::remove_file(&base).unwrap();
    let (rows, _) = step(&mut index, &mut totals, &roots);
    assert_eq!(rows, [("fork".to_owned(), 3, tokens(300, 80))]);
}
