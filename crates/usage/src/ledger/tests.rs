//! The ledger's unit tests: which copy wins a call, and what taking a file out leaves.

use super::*;
use crate::{FileUsage, claude};
use std::path::PathBuf;

/// Decides again for the file at `path`, as `files` now has it (none: taken out).
fn update(ledger: &mut Ledger, files: &HashMap<PathBuf, FileUsage>, path: &str) -> Accounting {
    ledger.update(
        [Arc::from(Path::new(path))],
        &|p| files.get(p).map(FileUsage::borrowed),
        None,
    )
}

fn transcript(path: &str, msg: &str, output: u64) -> FileUsage {
    let line = format!(
        r#"{{"type":"assistant","requestId":"r","timestamp":"2026-12-01T10:00:00.000Z","message":{{"id":"{msg}","model":"m","usage":{{"input_tokens":1,"output_tokens":{output}}}}}}}"#
    );
    FileUsage::Claude(claude::read(
        Path::new(path),
        format!("{line}\n").as_bytes(),
    ))
}

/// Copies that tie — the same rank (two transcripts of one session id, one time), the same
/// total usage told apart by kind — go to the first file in path order, as a whole scan
/// decides, whatever order the ledger met them in.
#[test]
fn copies_that_tie_go_to_the_first_file_in_path_order() {
    let reply = |path: &str, input: u64, output: u64| {
        let line = format!(
            r#"{{"type":"assistant","requestId":"r","timestamp":"2026-12-01T10:00:00.000Z","message":{{"id":"x","model":"m","usage":{{"input_tokens":{input},"output_tokens":{output}}}}}}}"#
        );
        FileUsage::Claude(claude::read(
            Path::new(path),
            format!("{line}\n").as_bytes(),
        ))
    };
    let mut files: HashMap<PathBuf, FileUsage> = HashMap::new();
    let mut ledger = Ledger::default();
    let mut accounting = None;
    // Met last-first: the ledger's first copy is the last path.
    for (path, input, output) in [
        ("/p3/s.jsonl", 3, 3),
        ("/p2/s.jsonl", 5, 1),
        ("/p1/s.jsonl", 1, 5),
    ] {
        files.insert(path.into(), reply(path, input, output));
        accounting = Some(ledger.update(
            [Arc::from(Path::new(path))],
            &|p| files.get(p).map(FileUsage::borrowed),
            None,
        ));
    }
    let accounting = accounting.unwrap();
    let got: Vec<(u64, u64)> = accounting
        .charges()
        .map(|c| (c.tokens.input, c.tokens.output))
        .collect();
    assert_eq!(got, vec![(1, 5)]);
    let mut whole: Vec<FileUsage> = files.into_values().collect();
    whole.sort_by(|a, b| a.path().cmp(b.path()));
    let scanned: Vec<(u64, u64)> = crate::account::account(&whole)
        .charges()
        .map(|c| (c.tokens.input, c.tokens.output))
        .collect();
    assert_eq!(scanned, got);
}

/// A key no file records any more is let go at once, its place given to the next new key;
/// each key is then found again by itself (not by the place it once had) when its file
/// changes, and nothing is left in the key table for the key let go.
#[test]
fn a_key_let_go_gives_its_place_to_the_next_and_each_is_found_by_itself() {
    let mut files: HashMap<PathBuf, FileUsage> = HashMap::new();
    let mut ledger = Ledger::default();
    files.insert("/a.jsonl".into(), transcript("/a.jsonl", "a", 1));
    files.insert("/c.jsonl".into(), transcript("/c.jsonl", "c", 7));
    update(&mut ledger, &files, "/a.jsonl");
    update(&mut ledger, &files, "/c.jsonl");
    files.remove(std::path::Path::new("/a.jsonl"));
    update(&mut ledger, &files, "/a.jsonl");
    assert_eq!((ledger.index.len(), ledger.free_keys.len()), (1, 1));
    files.insert("/b.jsonl".into(), transcript("/b.jsonl", "b", 2));
    update(&mut ledger, &files, "/b.jsonl");
    assert_eq!((ledger.index.len(), ledger.free_keys.len()), (2, 0));
    files.insert("/b.jsonl".into(), transcript("/b.jsonl", "b", 5));
    update(&mut ledger, &files, "/b.jsonl");
    files.insert("/c.jsonl".into(), transcript("/c.jsonl", "c", 9));
    let accounting = update(&mut ledger, &files, "/c.jsonl");
    let mut got: Vec<(String, u64)> = accounting
        .charges()
        .map(|c| (c.session_id.to_string(), c.tokens.output))
        .collect();
    got.sort();
    assert_eq!(got, vec![("b".to_owned(), 5), ("c".to_owned(), 9)]);
    assert_eq!(accounting.duplicates_skipped, 0);
    assert_eq!(ledger.index.len(), 2);
}

/// A rollout: its thread `id`, forked from `base`, with a call per (running total, last)
/// input count.
fn rollout(path: &str, id: &str, base: &str, calls: &[(u64, u64)]) -> FileUsage {
    let mut text = format!(
        r#"{{"timestamp":"2026-12-01T10:00:00.000Z","type":"session_meta","payload":{{"id":"{id}","forked_from_id":"{base}"}}}}
{{"timestamp":"2026-12-01T10:00:00.000Z","type":"turn_context","payload":{{"model":"gpt-5"}}}}
"#
    );
    for (total, last) in calls {
        text.push_str(&format!(
            r#"{{"timestamp":"2026-12-01T10:00:01.000Z","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{total}}},"last_token_usage":{{"input_tokens":{last}}}}}}}}}"#
        ));
        text.push('\n');
    }
    FileUsage::Codex(crate::codex::read(Path::new(path), text.as_bytes()))
}

/// A rollout's calls are keyed in its thread family, which its base's own base, found
/// later, changes: the rollout is taken out in the family it was put in (the slot keeps
/// it), so no key is left behind in the table, and the calls count as a whole scan counts
/// them.
#[test]
fn a_rollout_whose_family_changes_is_taken_out_in_the_family_it_was_put_in() {
    let mut files: HashMap<PathBuf, FileUsage> = HashMap::new();
    let mut ledger = Ledger::default();
    // The fork, in family `b` (its base, not on disk yet).
    files.insert(
        "/f.jsonl".into(),
        rollout("/f.jsonl", "f", "b", &[(10, 10), (30, 20)]),
    );
    update(&mut ledger, &files, "/f.jsonl");
    assert_eq!(ledger.index.len(), 2);
    // The base, forked from `a`: the fork's family is `a` now, its calls keyed again.
    files.insert(
        "/b.jsonl".into(),
        rollout("/b.jsonl", "b", "a", &[(10, 10), (70, 60)]),
    );
    let accounting = update(&mut ledger, &files, "/b.jsonl");
    assert!(ledger.stats().codex_whole);
    assert_eq!(ledger.index.len(), 3);
    assert_eq!(ledger.keys.len() - ledger.free_keys.len(), 3);
    let mut whole: Vec<FileUsage> = files.into_values().collect();
    whole.sort_by(|a, b| a.path().cmp(b.path()));
    let scanned = crate::account::account(&whole);
    let inputs = |a: &Accounting| {
        let mut got: Vec<(String, u64)> = a
            .charges()
            .map(|c| (c.session_id.to_owned(), c.tokens.input))
            .collect();
        got.sort();
        got
    };
    assert_eq!(inputs(&accounting), inputs(&scanned));
    assert_eq!(accounting.duplicates_skipped, scanned.duplicates_skipped);
}

/// A Grok session with no usage recorded is said by the ledger as a whole scan says it,
/// named by its folder, and no more once a turn with usage is written; the ledger keeps a
/// flag for it, the session's name made from the path when an accounting is made.
#[test]
fn a_grok_session_with_no_usage_is_named_as_a_whole_scan_names_it() {
    let grok = |path: &str, turns: &[u64]| {
        let mut text = String::from(
            r#"{"timestamp":1700000000.5,"params":{"update":{"sessionUpdate":"user_message_chunk"}}}"#,
        );
        text.push('\n');
        for input in turns {
            text.push_str(&format!(
                r#"{{"timestamp":1700000001.5,"params":{{"update":{{"sessionUpdate":"turn_completed","usage":{{"inputTokens":{input},"outputTokens":2}}}}}}}}"#
            ));
            text.push('\n');
        }
        FileUsage::Grok(crate::grok::read(Path::new(path), text.as_bytes()))
    };
    let mut files: HashMap<PathBuf, FileUsage> = HashMap::new();
    let mut ledger = Ledger::default();
    let whole = |files: &HashMap<PathBuf, FileUsage>| {
        let mut whole: Vec<FileUsage> = files.values().cloned().collect();
        whole.sort_by(|a, b| a.path().cmp(b.path()));
        crate::account::account(&whole).no_usage_recorded
    };
    let quiet = "/grok/sessions/-work/quiet-session/updates.jsonl";
    let busy = "/grok/sessions/-work/busy-session/updates.jsonl";
    files.insert(quiet.into(), grok(quiet, &[]));
    files.insert(busy.into(), grok(busy, &[5]));
    update(&mut ledger, &files, quiet);
    let accounting = update(&mut ledger, &files, busy);
    assert_eq!(
        accounting.no_usage_recorded,
        vec![(Agent::Grok, "quiet-session".to_owned())]
    );
    assert_eq!(accounting.no_usage_recorded, whole(&files));
    files.insert(quiet.into(), grok(quiet, &[3]));
    let accounting = update(&mut ledger, &files, quiet);
    assert_eq!(accounting.no_usage_recorded, Vec::new());
    assert_eq!(accounting.no_usage_recorded, whole(&files));
}

/// The charges of an accounting as (session, input, output), in order.
fn charges(accounting: &Accounting) -> Vec<(String, u64, u64)> {
    let mut got: Vec<(String, u64, u64)> = accounting
        .charges()
        .map(|c| (c.session_id.to_string(), c.tokens.input, c.tokens.output))
        .collect();
    got.sort();
    got
}

/// A whole scan's charges over `files`.
fn scanned(files: &HashMap<PathBuf, FileUsage>) -> Vec<(String, u64, u64)> {
    let mut whole: Vec<FileUsage> = files.values().cloned().collect();
    whole.sort_by(|a, b| a.path().cmp(b.path()));
    charges(&crate::account::account(&whole))
}

/// With the records' directory gone before the key states are first written, they stay in
/// memory for good: one warning naming the directory, and every accounting a whole scan's
/// (a copy in another file with a larger usage among them).
#[test]
fn key_states_that_cannot_be_written_stay_in_memory_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("records");
    std::fs::create_dir(&gone).unwrap();
    let spill = Spill::new(&gone);
    std::fs::remove_dir(&gone).unwrap();
    let mut files: HashMap<PathBuf, FileUsage> = HashMap::new();
    let mut ledger = Ledger::default();
    for (path, msg, output) in [
        ("/a.jsonl", "x", 1),
        ("/b.jsonl", "x", 4),
        ("/c.jsonl", "y", 2),
        ("/a.jsonl", "x", 6),
    ] {
        files.insert(path.into(), transcript(path, msg, output));
        let accounting = ledger.update(
            [Arc::from(Path::new(path))],
            &|p| files.get(p).map(FileUsage::borrowed),
            Some(&spill),
        );
        assert_eq!(charges(&accounting), scanned(&files), "{path} {output}");
        assert!(!ledger.keys.on_disk());
    }
    let warning = spill.take_warning().unwrap();
    assert!(warning.contains(&gone.display().to_string()), "{warning}");
    assert_eq!(spill.take_warning(), None);
    assert_eq!(spill.failure(), None);
}

/// Key states read back from a damaged file are the records' failure, naming the
/// directory: the report made then is an error and the index reads the stores again.
#[test]
fn a_damaged_key_state_file_is_a_failure_naming_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let spill = Spill::new(dir.path());
    let mut files: HashMap<PathBuf, FileUsage> = HashMap::new();
    let mut ledger = Ledger::default();
    let mut update = |ledger: &mut Ledger, path: &str, output: u64| {
        files.insert(path.into(), transcript(path, "x", output));
        let accounting = ledger.update(
            [Arc::from(Path::new(path))],
            &|p| files.get(p).map(FileUsage::borrowed),
            Some(&spill),
        );
        (charges(&accounting), scanned(&files))
    };
    let (got, whole) = update(&mut ledger, "/a.jsonl", 1);
    assert_eq!(got, whole);
    let (got, whole) = update(&mut ledger, "/b.jsonl", 3);
    assert_eq!(got, whole);
    assert!(ledger.keys.on_disk());
    assert_eq!(spill.failure(), None);
    ledger.keys.damage();
    update(&mut ledger, "/b.jsonl", 5);
    let failure = spill.failure().unwrap();
    assert!(
        failure.contains(&dir.path().display().to_string()),
        "{failure}"
    );
}

/// A cold update over files whose records are on disk reads them back a few times a file, not
/// once a call or more: each file's keys are held while the update runs (the key table's
/// searches and growth read no record), and a key's copies in other files are read with the
/// blocks of the files they are in kept (a resumed session's copies of its base, decided key
/// by key, read each file once). The accounting is a whole scan's.
#[test]
fn a_cold_update_reads_the_records_back_a_few_times_a_file_not_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let spill = Spill::new(dir.path());
    let reply = |msg: &str, output: u64| {
        format!(
            r#"{{"type":"assistant","requestId":"r-{msg}","timestamp":"2026-12-01T10:00:00.000Z","message":{{"id":"{msg}","model":"m","usage":{{"input_tokens":1,"output_tokens":{output}}}}}}}"#
        )
    };
    let mut files: HashMap<PathBuf, FileUsage> = HashMap::new();
    const BASES: usize = 40;
    const REPLIES: usize = 30;
    for b in 0..BASES {
        let base: Vec<String> = (0..REPLIES)
            .map(|r| reply(&format!("m{b}-{r}"), r as u64 + 1))
            .collect();
        // Each base resumed twice: its replies copied, one of its own after them.
        for (path, own) in [
            (format!("/p/{b:03}/base.jsonl"), None),
            (
                format!("/p/{b:03}/resumed-1.jsonl"),
                Some(reply(&format!("r1-{b}"), 7)),
            ),
            (
                format!("/p/{b:03}/resumed-2.jsonl"),
                Some(reply(&format!("r2-{b}"), 9)),
            ),
        ] {
            let text: String = base
                .iter()
                .chain(own.iter())
                .map(|l| format!("{l}\n"))
                .collect();
            let mut file = claude::read(Path::new(&path), text.as_bytes());
            Arc::get_mut(&mut file.messages).unwrap().spill(&spill);
            assert!(file.messages.on_disk());
            files.insert(path.into(), FileUsage::Claude(file));
        }
    }
    let before = spill.reads();
    let mut ledger = Ledger::default();
    let accounting = ledger.update(
        files
            .keys()
            .map(|p| Arc::from(p.as_path()))
            .collect::<Vec<Arc<Path>>>(),
        &|p| files.get(p).map(FileUsage::borrowed),
        Some(&spill),
    );
    let reads = spill.reads() - before;
    assert_eq!(charges(&accounting), scanned(&files));
    let calls = BASES * (3 * REPLIES + 2);
    assert!(
        reads <= 4 * files.len() as u64,
        "{reads} reads back for {} files of {calls} calls",
        files.len()
    );
}
