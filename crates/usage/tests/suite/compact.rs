//! The live index's compaction after a refresh that read many files (`live::Entry::compacted`):
//! what it keeps is made again in fresh allocations, and every report it answers stays what a
//! fresh whole scan of the same files says — copies across files, counts past 32 bits, a last
//! line without its newline, and lists a share still holds when their file grows.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

use cross_agent_stores::StoreRoots;
use cross_agent_usage::{GroupBy, PriceTable, Report, UsageIndex, account, scan};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::claude::assistant;
use super::steps::claude_roots;

/// Sessions in the store: each a base transcript and a resumed copy of it, so the cold
/// refresh reads 2 × this many files, past the index's threshold of 1,000.
const SESSIONS: usize = 520;

fn append(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Session `s`'s reply `n`: every tenth session's first reply has a count past 32 bits.
fn reply(session: &str, s: usize, n: usize, hour: u32) -> String {
    let input = if s.is_multiple_of(10) && n == 0 {
        u64::from(u32::MAX) + 7
    } else {
        (s * 10 + n) as u64
    };
    assistant(
        session,
        &format!("m{s}-{n}"),
        &format!("r{s}-{n}"),
        &format!("2026-12-01T{hour:02}:00:{n:02}.000Z"),
        "claude-sonnet-4-5-20250929",
        json!({"input_tokens": input, "output_tokens": n + 1}),
        false,
    )
}

/// Every grouping's report from the index after a refresh, and from a fresh whole scan.
fn reports(index: &mut UsageIndex, roots: &StoreRoots) -> (Vec<Report>, Vec<Report>) {
    let prices = PriceTable::shipped().unwrap();
    let found = scan::scan(roots);
    assert_eq!(found.warnings, Vec::<String>::new());
    let fresh = account(&found.files);
    let live = index.accounting();
    let groups = [
        GroupBy::Session,
        GroupBy::Agent,
        GroupBy::Model,
        GroupBy::Day,
        GroupBy::Cwd,
    ];
    let report = |acc, by| Report::build(acc, &prices, by, None);
    (
        groups.iter().map(|&by| report(&live, by)).collect(),
        groups.iter().map(|&by| report(&fresh, by)).collect(),
    )
}

/// A cold refresh of 1,040 files is compacted and answers as a scan does; so does a refresh
/// that resumes every file (their lists held by the last accounting's shares, so left where
/// they are), a refresh of one file, which is not, and one after bases were removed, whose
/// copies then count from the copies the compacted ledger kept.
#[test]
fn a_compacted_index_answers_every_report_as_a_fresh_scan() {
    answers_every_report_as_a_fresh_scan(UsageIndex::new());
}

/// The same with the call records written to a directory (`UsageIndex::with_records_in`):
/// read back, appended to (each list taken back on the heap, written again), dropped — every
/// report as a fresh scan says, the lists on the heap only where they are.
#[test]
fn an_index_with_its_records_on_disk_answers_every_report_as_a_fresh_scan() {
    let records = tempfile::tempdir().unwrap();
    let index =
        answers_every_report_as_a_fresh_scan(UsageIndex::new().with_records_in(records.path()));
    assert_eq!(index.records_failure(), None);
    let lists = part(&index, "call lists");
    let calls = part(&index, "(call records)");
    // On the heap: 36 bytes a call and 16 a list (~190 KB here); on disk ~56 bytes a file
    // where its records are, and the lists of waiting last lines (a seventh of the resumed
    // files) on the heap.
    assert!(calls > 4_000, "{calls} calls");
    assert!(lists < calls * 20, "call lists {lists} B for {calls} calls");
}

/// The part `name` of the index's heap (`UsageIndex::heap_parts`).
fn part(index: &UsageIndex, name: &str) -> usize {
    index
        .heap_parts()
        .into_iter()
        .find(|(part, _)| *part == name)
        .map(|(_, bytes)| bytes)
        .unwrap()
}

/// Session `s`'s base transcript (three replies) and a resumed session's copies of them, an
/// hour later each.
fn base_and_resumed(s: usize) -> (String, String) {
    let lines = |file: &str, hour: u32| -> String {
        (0..3).map(|n| reply(file, s, n, hour) + "\n").collect()
    };
    (lines(&format!("b{s}"), 10), lines(&format!("c{s}"), 11))
}

fn answers_every_report_as_a_fresh_scan(mut index: UsageIndex) -> UsageIndex {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/-work-shop");
    let roots = claude_roots(home.path());
    for s in 0..SESSIONS {
        // The resumed session copies the base's replies later, then makes its own.
        let (base, mut resumed) = base_and_resumed(s);
        resumed.push_str(&reply(&format!("c{s}"), s + SESSIONS, 0, 11));
        // Every seventh resumed file's last line has no newline yet (a line being written).
        if s % 7 != 0 {
            resumed.push('\n');
        }
        append(&project.join(format!("b{s}.jsonl")), &base);
        append(&project.join(format!("c{s}.jsonl")), &resumed);
    }
    let mut warnings = Vec::new();
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(stats.files_compacted, 2 * SESSIONS);
    let (live, fresh) = reports(&mut index, &roots);
    assert_eq!(live, fresh, "after the cold refresh");
    assert!(fresh[0].rows.len() >= SESSIONS);

    // Every file grows by a reply (its reader resumed, its list held by a share), the waiting
    // last lines ended first.
    for s in 0..SESSIONS {
        append(
            &project.join(format!("b{s}.jsonl")),
            &(reply(&format!("b{s}"), s, 3, 10) + "\n"),
        );
        let end = if s % 7 == 0 { "\n" } else { "" };
        append(
            &project.join(format!("c{s}.jsonl")),
            &format!("{end}{}\n", reply(&format!("c{s}"), s + SESSIONS, 1, 11)),
        );
    }
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(
        (stats.files_appended, stats.files_compacted),
        (2 * SESSIONS, 2 * SESSIONS)
    );
    let (live, fresh) = reports(&mut index, &roots);
    assert_eq!(live, fresh, "after every base grew");

    append(&project.join("b1.jsonl"), &(reply("b1", 1, 4, 10) + "\n"));
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!((stats.files_appended, stats.files_compacted), (1, 0));
    let (live, fresh) = reports(&mut index, &roots);
    assert_eq!(live, fresh, "after one file grew");

    // Bases gone: their replies now count for the copies the compacted ledger kept.
    for s in (0..SESSIONS).step_by(10) {
        std::fs::remove_file(project.join(format!("b{s}.jsonl"))).unwrap();
    }
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(stats.files_dropped, SESSIONS / 10);
    let (live, fresh) = reports(&mut index, &roots);
    assert_eq!(live, fresh, "after bases were removed");
    index
}

/// With a directory for its records, the ledger's key states (each identity's first copy and
/// winner) are in a file of it between updates: the heap keeps a slot of the key table per
/// identity, not its 16-byte state. Small updates read and write them a block at a time, and
/// every report stays what a fresh scan says — after a reply appended, a copy in another file
/// that wins its reply's usage later (a larger one), and a file removed.
#[test]
fn the_ledger_keeps_its_key_states_on_disk_and_answers_every_report_as_a_fresh_scan() {
    let records = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/-work-shop");
    let roots = claude_roots(home.path());
    for s in 0..SESSIONS {
        let (base, resumed) = base_and_resumed(s);
        append(&project.join(format!("b{s}.jsonl")), &base);
        append(&project.join(format!("c{s}.jsonl")), &resumed);
    }
    let mut index = UsageIndex::new().with_records_in(records.path());
    let mut warnings = Vec::new();
    // Each identity's key-table slot (5 bytes, up to twice as many slots as identities), not a
    // 16-byte state beside it.
    let bounded = |index: &mut UsageIndex, step: &str| {
        let identities = index.accounting().charges().count();
        let states = part(index, "ledger key states");
        assert!(
            states < identities * 12,
            "{step}: key states {states} B for {identities} identities"
        );
    };
    let mut check = |index: &mut UsageIndex, step: &str| {
        index.refresh(&roots, &mut warnings);
        assert_eq!(warnings, Vec::<String>::new(), "{step}");
        let (live, fresh) = reports(index, &roots);
        assert_eq!(live, fresh, "{step}");
        bounded(index, step);
        assert_eq!(index.records_failure(), None, "{step}");
    };
    check(&mut index, "after the cold refresh");

    append(&project.join("b5.jsonl"), &(reply("b5", 5, 3, 10) + "\n"));
    check(&mut index, "after a reply appended");

    // The resumed session's copy of its base's first reply, with more output: its usage counts.
    let larger = assistant(
        "c7",
        "m7-0",
        "r7-0",
        "2026-12-01T11:00:00.000Z",
        "claude-sonnet-4-5-20250929",
        json!({"input_tokens": 70, "output_tokens": 9_000}),
        false,
    );
    append(&project.join("c7.jsonl"), &(larger + "\n"));
    check(&mut index, "after a copy with a larger usage");

    std::fs::remove_file(project.join("b7.jsonl")).unwrap();
    check(&mut index, "after a base removed");
}
