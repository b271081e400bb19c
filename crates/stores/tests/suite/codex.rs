//! Codex reader: discovery of plain, `.zst` and archived rollouts; which threads count (panel
//! threads without `thread_source` do, sub-agent and internal ones do not); the newest rollout
//! of a thread wins; names from `session_index.jsonl`. Fixtures under `tests/fixtures/codex/`
//! are hand-written in the line shapes codex-cli 0.171.0 wrote here (`ordinal`, `event_msg`
//! `item_completed` user messages, `Process exited with code N` outputs), plus one older shape
//! (`event_msg` `user_message`, JSON `function_call_output`) as earlier Codex versions wrote it.

use std::io::Write;
use std::path::PathBuf;

use cross_agent_stores::codex::{self, CodexFold, ThreadNames};
use cross_agent_stores::lines::{Position, read_complete_lines};
use cross_agent_stores::{Agent, Session, TranscriptFold, Warnings};
use pretty_assertions::assert_eq;

use super::reader_support::{FixtureHome, fold_file, ms, sessions_of};

const EXEC: &str = "019a0000-0000-7000-8000-000000000001";
const VSCODE: &str = "019a0000-0000-7000-8000-000000000002";
const SUBAGENT: &str = "019a0000-0000-7000-8000-000000000003";
const OLD: &str = "019a0000-0000-7000-8000-000000000005";

fn rollout(home: &FixtureHome, day: &str, time: &str, id: &str) -> PathBuf {
    home.path()
        .join(".codex/sessions")
        .join(day)
        .join(format!("rollout-{time}-{id}.jsonl"))
}

#[test]
fn panel_threads_count_subagent_and_internal_threads_do_not() {
    let home = FixtureHome::new();
    let mut warnings = Warnings::default();
    let files = codex::discover(&home.roots(), &mut warnings);
    assert_eq!(files.len(), 6, "{files:#?}");
    let sessions = sessions_of::<CodexFold>(&files, &mut warnings);
    let ids: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
    // OLD appears twice (live and archived copy) until newest_per_thread picks one.
    assert_eq!(ids, vec![EXEC, VSCODE, OLD, OLD]);
    assert!(warnings.items.is_empty(), "{:#?}", warnings.items);

    let sub = rollout(&home, "2026/11/21", "2026-11-21T11-01-00", SUBAGENT);
    let fold = fold_file::<CodexFold>(&sub).0;
    assert!(
        fold.session(&sub).is_none(),
        "a sub-agent thread is not listed"
    );
}

#[test]
fn an_exec_thread_reads_whole() {
    let home = FixtureHome::new();
    let path = rollout(&home, "2026/11/20", "2026-11-20T10-00-00", EXEC);
    let (fold, _, warnings) = fold_file::<CodexFold>(&path);
    assert_eq!(
        fold.session(&path),
        Some(Session {
            agent: Agent::Codex,
            session_id: EXEC.to_owned(),
            cwd: Some(PathBuf::from("/home/u/billing")),
            title: Some("Fix the flaky payment test".to_owned()),
            title_is_assigned: false,
            first_activity: ms("2026-11-20T10:00:00.000Z"),
            last_activity: ms("2026-11-20T10:00:09.500Z"),
            is_working: false,
            path: path.clone(),
            copilot: None,
        })
    );
    assert!(warnings.items.is_empty());
}

#[test]
fn a_started_turn_without_task_complete_is_working() {
    let home = FixtureHome::new();
    let path = rollout(&home, "2026/11/21", "2026-11-21T11-00-00", VSCODE);
    let session = fold_file::<CodexFold>(&path).0.session(&path).unwrap();
    assert!(session.is_working);
    assert_eq!(session.cwd, Some(PathBuf::from("/home/u/billing/api")));
    assert_eq!(
        session.title.as_deref(),
        Some("Add pagination to the list endpoint")
    );

    // task_complete arrives: no longer working.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(
        file,
        r#"{{"timestamp":"2026-11-21T11:00:10.000Z","type":"event_msg","payload":{{"type":"task_complete","turn_id":"t1"}}}}"#
    )
    .unwrap();
    assert!(
        !fold_file::<CodexFold>(&path)
            .0
            .session(&path)
            .unwrap()
            .is_working
    );
}

#[test]
fn the_newest_rollout_of_a_thread_wins() {
    let home = FixtureHome::new();
    let mut warnings = Warnings::default();
    let files = codex::discover(&home.roots(), &mut warnings);
    let sessions = codex::newest_per_thread(sessions_of::<CodexFold>(&files, &mut warnings));
    let old = sessions.iter().find(|s| s.session_id == OLD).unwrap();
    assert!(
        old.path.to_string_lossy().contains("archived_sessions"),
        "{old:#?}"
    );
    assert_eq!(old.last_activity, ms("2026-10-02T09:00:00.000Z"));
    // Older rollouts: the title skips the injected `<user_instructions>` message.
    assert_eq!(
        old.title.as_deref(),
        Some("Write a script that rotates logs")
    );
    assert_eq!(sessions.len(), 3);
}

#[test]
fn names_newest_updated_at_wins_and_empty_names_are_skipped() {
    let home = FixtureHome::new();
    let mut warnings = Warnings::default();
    let names = codex::read_thread_names(&home.path().join(".codex"), &mut warnings);
    assert_eq!(names.get(EXEC), Some("payments-fix"));
    // The newest entry was written before an older one: updated_at decides, not the order.
    assert_eq!(names.get(VSCODE), Some("api-pagination"));
    assert_eq!(names.get(OLD), None);
    assert_eq!(warnings.items.len(), 1, "the garbage line");
    assert_eq!(warnings.items[0].line, Some(5));

    let path = rollout(&home, "2026/11/20", "2026-11-20T10-00-00", EXEC);
    let mut session = fold_file::<CodexFold>(&path).0.session(&path).unwrap();
    names.apply(&mut session);
    assert_eq!(session.title.as_deref(), Some("payments-fix"));
    assert!(session.title_is_assigned);
}

#[test]
fn names_fold_resumes_from_an_offset() {
    let home = FixtureHome::new();
    let index = codex::session_index_path(&home.path().join(".codex"));
    let mut warnings = Warnings::default();
    let mut names = ThreadNames::default();
    let pos = read_complete_lines(&index, Position::default(), &mut names, &mut warnings).unwrap();
    let saved = serde_json::to_string(&names).unwrap();

    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&index)
        .unwrap();
    writeln!(
        file,
        r#"{{"id":"{EXEC}","thread_name":"payments-v2","updated_at":"2026-11-22T00:00:00Z"}}"#
    )
    .unwrap();
    let mut names: ThreadNames = serde_json::from_str(&saved).unwrap();
    read_complete_lines(&index, pos, &mut names, &mut warnings).unwrap();
    assert_eq!(names.get(EXEC), Some("payments-v2"));
}

#[test]
fn compressed_rollouts_are_read_and_a_corrupt_one_is_a_warning() {
    let home = FixtureHome::new();
    let plain = rollout(&home, "2026/11/20", "2026-11-20T10-00-00", EXEC);
    let text = std::fs::read(&plain).unwrap();
    let archived = home.path().join(".codex/archived_sessions");
    let zst = archived.join(format!("rollout-2026-11-20T10-00-00-{EXEC}.jsonl.zst"));
    std::fs::write(&zst, zstd::encode_all(&text[..], 3).unwrap()).unwrap();
    std::fs::remove_file(&plain).unwrap();
    let bad = archived.join("rollout-2026-11-19T10-00-00-bad.jsonl.zst");
    std::fs::write(&bad, b"\x28\xb5\x2f\xfd this is not a zstd frame").unwrap();

    let mut warnings = Warnings::default();
    let files = codex::discover(&home.roots(), &mut warnings);
    assert_eq!(files.iter().filter(|f| f.compressed).count(), 2);
    let sessions = sessions_of::<CodexFold>(&files, &mut warnings);
    let exec = sessions.iter().find(|s| s.session_id == EXEC).unwrap();
    assert_eq!(exec.path, zst);
    assert_eq!(exec.title.as_deref(), Some("Fix the flaky payment test"));
    assert_eq!(warnings.items.len(), 1, "{:#?}", warnings.items);
    assert_eq!(warnings.items[0].path, bad);
    assert!(warnings.items[0].message.contains("decompress"));
}
