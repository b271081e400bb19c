//! The incremental index: a warm refresh reads nothing, an append reads only what was appended
//! (checked with the index's own byte counters), a rewrite is read again, the persisted cache
//! survives a new process and is rebuilt when missing or corrupt.
//!
//! Transcripts are written with the testkit builders in the shapes the real programs write
//! (Claude Code 2.1.332, Codex 0.171.0, Grok Build from its public descriptions).

use std::fs;
use std::path::{Path, PathBuf};

use cross_agent_stores::index::{HEAD_CHECK_BYTES, IndexStats, RefreshOptions, SessionIndex};
use cross_agent_stores::scan::{ScanOptions, list_sessions};
use cross_agent_stores::{Agent, Session, StoreRoots, Warnings};
use cross_agent_testkit::synthetic_stores::{
    ClaudeTranscript, CodexRollout, GrokSession, append_raw, codex_thread_name, now_millis,
};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

const THREADS: RefreshOptions = RefreshOptions { threads: 2 };

fn refresh(index: &mut SessionIndex, roots: &StoreRoots) -> IndexStats {
    let mut warnings = Warnings::default();
    index.refresh(roots, THREADS, &mut warnings)
}

fn by_id<'a>(sessions: &'a [Session], id: &str) -> &'a Session {
    sessions
        .iter()
        .find(|s| s.session_id == id)
        .unwrap_or_else(|| panic!("no session {id} in {sessions:#?}"))
}

/// A Claude session with one finished turn.
fn claude_session(home: &Path, id: &str, prompt: &str) -> ClaudeTranscript {
    let now = now_millis();
    let mut t = ClaudeTranscript::new(home, "/work/proj", id);
    t.user(prompt, now - 5_000)
        .tool_use("ls", now - 4_000)
        .tool_result("Cargo.toml\nsrc", now - 3_000)
        .assistant_text("Done.", now - 2_000);
    t.write().unwrap();
    t
}

/// Moves a file's mtime forward, so a rewrite within the same clock tick still looks changed.
fn bump_mtime(path: &Path, seconds: u64) {
    let file = fs::OpenOptions::new().write(true).open(path).unwrap();
    let modified = fs::metadata(path).unwrap().modified().unwrap();
    file.set_modified(modified + std::time::Duration::from_secs(seconds))
        .unwrap();
}

#[test]
fn a_warm_refresh_reads_nothing_when_nothing_changed() {
    let home = TempDir::new().unwrap();
    claude_session(home.path(), "c1", "first");
    claude_session(home.path(), "c2", "second");
    let roots = StoreRoots::under_home(home.path());

    let mut index = SessionIndex::new();
    let cold = refresh(&mut index, &roots);
    assert_eq!((cold.files_new, cold.files_seen), (2, 2));
    assert!(cold.bytes_read > 0);

    let warm = refresh(&mut index, &roots);
    assert_eq!(
        warm,
        IndexStats {
            files_seen: 2,
            files_unchanged: 2,
            ..IndexStats::default()
        }
    );
    assert!(!index.sessions().is_empty());
}

#[test]
fn an_append_reads_only_the_appended_bytes_and_sees_a_custom_title() {
    let home = TempDir::new().unwrap();
    let mut t = claude_session(home.path(), "c1", "fix the failing tests");
    claude_session(home.path(), "c2", "other");
    let roots = StoreRoots::under_home(home.path());
    let mut index = SessionIndex::new();
    refresh(&mut index, &roots);
    assert_eq!(
        by_id(&index.sessions(), "c1").title.as_deref(),
        Some("fix the failing tests")
    );

    // Append a turn, a rename, and another turn after it: the rename is in the middle.
    let before = fs::metadata(&t.path).unwrap().len();
    let written = t.len();
    let now = now_millis();
    t.user("and now the docs", now)
        .custom_title("billing-api")
        .assistant_text("Docs updated.", now + 1);
    t.append_since(written).unwrap();
    let appended = fs::metadata(&t.path).unwrap().len() - before;
    bump_mtime(&t.path, 1);

    let stats = refresh(&mut index, &roots);
    assert_eq!((stats.files_appended, stats.files_unchanged), (1, 1));
    // The appended bytes, plus at most the head check of the first line.
    assert!(
        stats.bytes_read >= appended && stats.bytes_read <= appended + HEAD_CHECK_BYTES as u64,
        "read {} bytes for {appended} appended",
        stats.bytes_read
    );
    let s = by_id(&index.sessions(), "c1").clone();
    assert_eq!(s.title.as_deref(), Some("billing-api"));
    assert!(s.title_is_assigned);
}

#[test]
fn renamed_twice_the_last_name_wins_across_appends() {
    let home = TempDir::new().unwrap();
    let mut t = claude_session(home.path(), "c1", "start");
    let roots = StoreRoots::under_home(home.path());
    let mut index = SessionIndex::new();

    let n = t.len();
    t.custom_title("first-name");
    t.append_since(n).unwrap();
    bump_mtime(&t.path, 1);
    refresh(&mut index, &roots);
    assert_eq!(
        by_id(&index.sessions(), "c1").title.as_deref(),
        Some("first-name")
    );

    let n = t.len();
    t.user("more", now_millis()).custom_title("second-name");
    t.append_since(n).unwrap();
    bump_mtime(&t.path, 2);
    let stats = refresh(&mut index, &roots);
    assert_eq!(stats.files_appended, 1);
    assert_eq!(
        by_id(&index.sessions(), "c1").title.as_deref(),
        Some("second-name")
    );
}

#[test]
fn a_half_written_last_line_is_read_once_it_is_finished() {
    let home = TempDir::new().unwrap();
    let t = claude_session(home.path(), "c1", "start");
    let roots = StoreRoots::under_home(home.path());
    let mut index = SessionIndex::new();
    refresh(&mut index, &roots);

    let line = r#"{"type":"custom-title","customTitle":"half-done","sessionId":"c1"}"#;
    let (head, tail) = line.split_at(20);
    append_raw(&t.path, head.as_bytes()).unwrap();
    bump_mtime(&t.path, 1);
    refresh(&mut index, &roots);
    assert_eq!(
        by_id(&index.sessions(), "c1").title.as_deref(),
        Some("start")
    );

    append_raw(&t.path, format!("{tail}\n").as_bytes()).unwrap();
    bump_mtime(&t.path, 2);
    let stats = refresh(&mut index, &roots);
    assert_eq!(stats.files_appended, 1);
    assert_eq!(
        by_id(&index.sessions(), "c1").title.as_deref(),
        Some("half-done")
    );
}

#[test]
fn a_truncated_or_rewritten_file_is_read_again_from_the_start() {
    let home = TempDir::new().unwrap();
    let mut t = claude_session(home.path(), "c1", "original prompt");
    let n = t.len();
    t.custom_title("keep-me");
    t.append_since(n).unwrap();
    let roots = StoreRoots::under_home(home.path());
    let mut index = SessionIndex::new();
    refresh(&mut index, &roots);
    assert_eq!(
        by_id(&index.sessions(), "c1").title.as_deref(),
        Some("keep-me")
    );

    // Shrunk: the rename is gone with the truncation.
    let fresh = claude_session(home.path(), "c1", "rewritten prompt");
    bump_mtime(&fresh.path, 1);
    let stats = refresh(&mut index, &roots);
    assert_eq!(stats.files_reread, 1);
    let s = by_id(&index.sessions(), "c1").clone();
    assert_eq!(s.title.as_deref(), Some("rewritten prompt"));
    assert!(!s.title_is_assigned);

    // Grown, but with another first line: a different file under the same name.
    let mut other = ClaudeTranscript::new(home.path(), "/elsewhere", "c1");
    other.path = fresh.path.clone();
    let now = now_millis();
    other
        .user(
            "a completely different session with a longer first prompt",
            now,
        )
        .assistant_text("Sure.", now + 1)
        .user("and a second turn to make it longer than before", now + 2)
        .assistant_text("Done.", now + 3);
    other.write().unwrap();
    bump_mtime(&other.path, 2);
    let stats = refresh(&mut index, &roots);
    assert_eq!((stats.files_reread, stats.files_appended), (1, 0));
    let s = by_id(&index.sessions(), "c1").clone();
    assert_eq!(s.cwd, Some(PathBuf::from("/elsewhere")));
}

#[test]
fn an_mtime_that_went_back_means_a_full_read() {
    let home = TempDir::new().unwrap();
    let mut t = claude_session(home.path(), "c1", "start");
    let roots = StoreRoots::under_home(home.path());
    let mut index = SessionIndex::new();
    refresh(&mut index, &roots);

    let n = t.len();
    t.user("more", now_millis());
    t.append_since(n).unwrap();
    let file = fs::OpenOptions::new().write(true).open(&t.path).unwrap();
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
        .unwrap();
    let stats = refresh(&mut index, &roots);
    assert_eq!((stats.files_reread, stats.files_appended), (1, 0));
}

#[test]
fn new_files_are_read_and_vanished_files_drop_out() {
    let home = TempDir::new().unwrap();
    let gone = claude_session(home.path(), "c1", "one");
    let roots = StoreRoots::under_home(home.path());
    let mut index = SessionIndex::new();
    refresh(&mut index, &roots);

    fs::remove_file(&gone.path).unwrap();
    claude_session(home.path(), "c2", "two");
    let stats = refresh(&mut index, &roots);
    assert_eq!((stats.files_new, stats.files_dropped), (1, 1));
    let ids: Vec<String> = index.sessions().into_iter().map(|s| s.session_id).collect();
    assert_eq!(ids, vec!["c2".to_owned()]);
}

#[test]
fn codex_names_appended_to_session_index_are_picked_up_incrementally() {
    let home = TempDir::new().unwrap();
    let now = now_millis();
    let mut r = CodexRollout::new(
        home.path(),
        "/work/proj",
        "019a0000-0000-7000-8000-000000000001",
        now - 60_000,
    );
    r.user("port the parser", now - 50_000)
        .answer("Ported.", now - 40_000);
    r.write().unwrap();
    codex_thread_name(home.path(), &r.thread_id, "parser-port", now - 30_000).unwrap();
    let cache = home.path().join("xa/cache/sessions-index.bin");
    // The state directory exists before its cache is written, as start-up makes it.
    std::fs::create_dir_all(home.path().join("xa")).unwrap();
    let options = ScanOptions {
        cache_file: Some(cache.clone()),
        refresh: THREADS,
        agents: Vec::new(),
    };
    let roots = StoreRoots::under_home(home.path());
    let listing = list_sessions(&roots, &options);
    assert_eq!(
        by_id(&listing.sessions, &r.thread_id).title.as_deref(),
        Some("parser-port")
    );

    let names = home.path().join(".codex/session_index.jsonl");
    let before = fs::metadata(&names).unwrap().len();
    codex_thread_name(home.path(), &r.thread_id, "parser-port-v2", now - 20_000).unwrap();
    let appended = fs::metadata(&names).unwrap().len() - before;
    bump_mtime(&names, 1);
    let listing = list_sessions(&roots, &options);
    assert_eq!(listing.stats.files_appended, 1);
    assert!(listing.stats.bytes_read <= appended + HEAD_CHECK_BYTES as u64);
    let s = by_id(&listing.sessions, &r.thread_id);
    assert_eq!(s.title.as_deref(), Some("parser-port-v2"));
    assert!(s.title_is_assigned);

    // A new process takes the names from the cache (the change came through its journal).
    let warm = list_sessions(&roots, &options);
    assert_eq!(warm.stats.bytes_read, 0);
    assert_eq!(
        by_id(&warm.sessions, &r.thread_id).title.as_deref(),
        Some("parser-port-v2")
    );
}

#[test]
fn a_grok_rename_in_a_rewritten_summary_is_picked_up() {
    let home = TempDir::new().unwrap();
    let now = now_millis();
    let mut g = GrokSession::new(home.path(), "/work/proj", "grok-1", now - 60_000);
    g.user("review the diff", now - 50_000)
        .agent_chunk("Looks fine.", now - 40_000)
        .turn_completed(now - 39_000);
    g.write().unwrap();
    let roots = StoreRoots::under_home(home.path());
    let mut index = SessionIndex::new();
    refresh(&mut index, &roots);
    let s = by_id(&index.sessions(), "grok-1").clone();
    assert!(!s.title_is_assigned);

    g.rename("reviewer");
    let summary = g.dir.join("summary.json");
    fs::write(&summary, g.summary_json()).unwrap();
    bump_mtime(&summary, 1);
    let stats = refresh(&mut index, &roots);
    // Only the summary changed; updates.jsonl was not read again.
    assert_eq!(stats.bytes_read, fs::metadata(&summary).unwrap().len());
    let s = by_id(&index.sessions(), "grok-1").clone();
    assert_eq!(s.title.as_deref(), Some("reviewer"));
    assert!(s.title_is_assigned);
}

fn cached_options(home: &Path) -> (ScanOptions, PathBuf) {
    let cache = home.join("xa/cache/sessions-index.bin");
    // The state directory exists before its cache is written, as start-up makes it.
    std::fs::create_dir_all(home.join("xa")).unwrap();
    (
        ScanOptions {
            cache_file: Some(cache.clone()),
            refresh: THREADS,
            agents: Vec::new(),
        },
        cache,
    )
}

#[test]
fn the_cache_makes_a_new_process_start_warm() {
    let home = TempDir::new().unwrap();
    claude_session(home.path(), "c1", "one");
    claude_session(home.path(), "c2", "two");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());

    let cold = list_sessions(&roots, &options);
    assert_eq!(cold.stats.files_new, 2);
    assert!(cache.exists());

    // A second listing loads the file afresh, as another process would.
    let warm = list_sessions(&roots, &options);
    assert_eq!(warm.stats.bytes_read, 0);
    assert_eq!(warm.stats.files_unchanged, 2);
    assert_eq!(warm.sessions, cold.sessions);
    assert!(warm.warnings.is_empty(), "{:?}", warm.warnings);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let file_mode = fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
        let dir_mode = fs::metadata(cache.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!((file_mode, dir_mode), (0o600, 0o700));
    }
}

#[test]
fn the_cache_round_trips_through_several_saves() {
    let home = TempDir::new().unwrap();
    let mut a = claude_session(home.path(), "c1", "one");
    claude_session(home.path(), "c2", "two");
    let roots = StoreRoots::under_home(home.path());
    let (options, _) = cached_options(home.path());
    list_sessions(&roots, &options);

    // Each round saves a mix of folds loaded from the previous cache and fresh ones.
    for round in 1..=3u64 {
        let n = a.len();
        a.custom_title(&format!("name-{round}"));
        a.append_since(n).unwrap();
        bump_mtime(&a.path, round);
        let listing = list_sessions(&roots, &options);
        assert_eq!(
            (listing.stats.files_appended, listing.stats.files_unchanged),
            (1, 1)
        );
        let expected = format!("name-{round}");
        assert_eq!(
            by_id(&listing.sessions, "c1").title.as_deref(),
            Some(expected.as_str())
        );
    }
    let warm = list_sessions(&roots, &options);
    let uncached = list_sessions(&roots, &ScanOptions::default());
    assert_eq!(warm.stats.bytes_read, 0);
    assert_eq!(warm.sessions, uncached.sessions);
}

#[test]
fn a_corrupt_cache_is_rebuilt_with_a_warning() {
    let home = TempDir::new().unwrap();
    claude_session(home.path(), "c1", "one");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());
    let first = list_sessions(&roots, &options);

    // Flip bytes in the entries, just after the 52-byte header.
    let mut bytes = fs::read(&cache).unwrap();
    for b in &mut bytes[60..64] {
        *b ^= 0xff;
    }
    fs::write(&cache, &bytes).unwrap();
    let rebuilt = list_sessions(&roots, &options);
    assert_eq!(rebuilt.sessions, first.sessions);
    assert_eq!(rebuilt.stats.files_new, 1);
    assert_eq!(rebuilt.warnings.len(), 1, "{:?}", rebuilt.warnings);
    assert_eq!(rebuilt.warnings[0].path, cache);
    assert!(rebuilt.warnings[0].message.contains("rebuilding"));

    // Truncated, and plain garbage: the same.
    fs::write(&cache, &bytes[..bytes.len() / 3]).unwrap();
    assert_eq!(list_sessions(&roots, &options).sessions, first.sessions);
    fs::write(&cache, b"not a cache at all").unwrap();
    let again = list_sessions(&roots, &options);
    assert_eq!(again.sessions, first.sessions);
    assert_eq!(again.warnings.len(), 1);

    // And the rebuilt cache is good again.
    let warm = list_sessions(&roots, &options);
    assert_eq!((warm.stats.bytes_read, warm.warnings.len()), (0, 0));
}

#[test]
fn a_damaged_fold_state_is_caught_when_its_file_changes() {
    let home = TempDir::new().unwrap();
    let mut t = claude_session(home.path(), "c1", "one");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());
    list_sessions(&roots, &options);

    // The fold states are the end of the file; damage the last one.
    let mut bytes = fs::read(&cache).unwrap();
    let end = bytes.len();
    for b in &mut bytes[end - 8..end - 4] {
        *b ^= 0xff;
    }
    fs::write(&cache, &bytes).unwrap();

    // Nothing changed: the listing does not need the fold and is served as before.
    let warm = list_sessions(&roots, &options);
    assert_eq!(warm.stats.files_unchanged, 1);

    // The file grows: the damaged state is not resumed; the file is read from the start.
    let n = t.len();
    t.custom_title("after-damage");
    t.append_since(n).unwrap();
    bump_mtime(&t.path, 1);
    let listing = list_sessions(&roots, &options);
    assert_eq!(
        (listing.stats.files_reread, listing.stats.files_appended),
        (1, 0)
    );
    assert_eq!(
        by_id(&listing.sessions, "c1").title.as_deref(),
        Some("after-damage")
    );
}

#[test]
fn a_missing_cache_is_rebuilt_silently() {
    let home = TempDir::new().unwrap();
    claude_session(home.path(), "c1", "one");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());
    list_sessions(&roots, &options);
    fs::remove_file(&cache).unwrap();
    let listing = list_sessions(&roots, &options);
    assert!(listing.warnings.is_empty(), "{:?}", listing.warnings);
    assert_eq!(listing.stats.files_new, 1);
    assert!(cache.exists());
}

/// A cache written by an earlier build in an earlier layout (format 3 had hand-made checksums;
/// 4 has XXH3) is not damage: it is rebuilt without a warning, in the current format.
#[test]
fn a_cache_of_an_earlier_format_is_rebuilt_silently() {
    const VERSION_AT: std::ops::Range<usize> = 8..12;
    let home = TempDir::new().unwrap();
    claude_session(home.path(), "c1", "one");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());
    list_sessions(&roots, &options);
    let mut bytes = fs::read(&cache).unwrap();
    let current = bytes[VERSION_AT].to_vec();
    assert_eq!(current, 4u32.to_le_bytes(), "the format version is 4");
    bytes[VERSION_AT].copy_from_slice(&3u32.to_le_bytes());
    fs::write(&cache, &bytes).unwrap();

    let listing = list_sessions(&roots, &options);
    assert!(listing.warnings.is_empty(), "{:?}", listing.warnings);
    assert_eq!(listing.stats.files_new, 1, "read again, not resumed");
    assert_eq!(&fs::read(&cache).unwrap()[VERSION_AT], current.as_slice());
    let again = list_sessions(&roots, &options);
    assert_eq!(again.stats.files_unchanged, 1);
}

#[test]
fn every_agent_is_indexed_and_each_codex_thread_listed_once() {
    let home = TempDir::new().unwrap();
    let now = now_millis();
    claude_session(home.path(), "c1", "claude prompt");
    let thread = "019a0000-0000-7000-8000-0000000000aa";
    let mut older = CodexRollout::new(home.path(), "/work/proj", thread, now - 7_200_000);
    older
        .user("codex prompt", now - 7_100_000)
        .answer("ok", now - 7_000_000);
    older.write().unwrap();
    // The same thread resumed into a newer rollout: the newer one wins.
    let mut newer = CodexRollout::new(home.path(), "/work/proj", thread, now - 60_000);
    newer
        .user("codex prompt", now - 50_000)
        .answer("ok again", now - 40_000);
    newer.write().unwrap();
    let mut g = GrokSession::new(home.path(), "/work/proj", "grok-1", now - 30_000);
    g.user("grok prompt", now - 20_000)
        .turn_completed(now - 10_000);
    g.write().unwrap();

    let roots = StoreRoots::under_home(home.path());
    let (options, _) = cached_options(home.path());
    let listing = list_sessions(&roots, &options);
    let agents: Vec<(Agent, String)> = listing
        .sessions
        .iter()
        .map(|s| (s.agent, s.session_id.clone()))
        .collect();
    assert_eq!(
        agents,
        vec![
            (Agent::Claude, "c1".to_owned()),
            (Agent::Grok, "grok-1".to_owned()),
            (Agent::Codex, thread.to_owned()),
        ]
    );
    assert_eq!(by_id(&listing.sessions, thread).path, newer.path);
}

#[test]
fn a_listing_of_one_agent_walks_only_its_store_and_keeps_the_others_cached() {
    let home = TempDir::new().unwrap();
    let now = now_millis();
    claude_session(home.path(), "c1", "claude prompt");
    let mut r = CodexRollout::new(
        home.path(),
        "/work/proj",
        "019a0000-0000-7000-8000-0000000000bb",
        now - 60_000,
    );
    r.user("codex prompt", now - 50_000)
        .answer("ok", now - 40_000);
    r.write().unwrap();
    let roots = StoreRoots::under_home(home.path());
    let (all, _) = cached_options(home.path());
    list_sessions(&roots, &all);

    let only_claude = ScanOptions {
        agents: vec![Agent::Claude],
        ..all.clone()
    };
    let claude = list_sessions(&roots, &only_claude);
    assert_eq!(claude.stats.files_seen, 1);
    assert_eq!(claude.stats.files_dropped, 0);
    let agents: Vec<Agent> = claude.sessions.iter().map(|s| s.agent).collect();
    assert_eq!(agents, vec![Agent::Claude]);

    // The Codex entry is still in the cache: the next full listing reads nothing.
    let warm = list_sessions(&roots, &all);
    assert_eq!((warm.stats.bytes_read, warm.stats.files_unchanged), (0, 2));
    assert_eq!(warm.sessions.len(), 2);
}

#[test]
fn folds_are_read_from_the_cache_file_as_loaded_even_after_another_process_replaced_it() {
    use cross_agent_stores::scan::Scanner;

    let home = TempDir::new().unwrap();
    let mut mine = claude_session(home.path(), "c1", "one");
    let mut theirs = claude_session(home.path(), "c2", "two");
    let roots = StoreRoots::under_home(home.path());
    let (options, _) = cached_options(home.path());
    list_sessions(&roots, &options);
    // Loaded; a warm listing reads the entries only, the folds stay in the file.
    let mut scanner = Scanner::new(options.clone());
    assert_eq!(scanner.list(&roots).stats.files_unchanged, 2);

    // Another process sees c2 grow and saves a new cache over the old one.
    let n = theirs.len();
    theirs.custom_title("theirs");
    theirs.append_since(n).unwrap();
    bump_mtime(&theirs.path, 1);
    list_sessions(&roots, &options);

    // Then c1 grows: the scanner resumes both from the folds of the file it loaded.
    let n = mine.len();
    mine.custom_title("mine");
    mine.append_since(n).unwrap();
    bump_mtime(&mine.path, 1);
    let listing = scanner.list(&roots);
    assert_eq!(
        (listing.stats.files_appended, listing.stats.files_reread),
        (2, 0)
    );
    assert_eq!(
        by_id(&listing.sessions, "c1").title.as_deref(),
        Some("mine")
    );
    assert_eq!(
        by_id(&listing.sessions, "c2").title.as_deref(),
        Some("theirs")
    );
}

#[test]
fn a_listing_of_one_agent_that_saves_keeps_the_other_agents_entries_it_did_not_decode() {
    use cross_agent_stores::scan::Scanner;

    let home = TempDir::new().unwrap();
    let now = now_millis();
    let mut c = claude_session(home.path(), "c1", "claude prompt");
    let mut r = CodexRollout::new(
        home.path(),
        "/work/proj",
        "019a0000-0000-7000-8000-0000000000cc",
        now - 60_000,
    );
    r.user("codex prompt", now - 50_000)
        .answer("ok", now - 40_000);
    r.write().unwrap();
    let mut g = GrokSession::new(home.path(), "/work/proj", "grok-1", now - 30_000);
    g.user("grok prompt", now - 20_000);
    g.write().unwrap();
    let roots = StoreRoots::under_home(home.path());
    let (all, _) = cached_options(home.path());
    let first = list_sessions(&roots, &all);

    // Claude's transcript grows: a Claude-only listing saves the cache, the Codex and Grok
    // entries going through it without ever being decoded.
    let n = c.len();
    c.custom_title("claude-name");
    c.append_since(n).unwrap();
    bump_mtime(&c.path, 1);
    let only_claude = ScanOptions {
        agents: vec![Agent::Claude],
        ..all.clone()
    };
    assert_eq!(list_sessions(&roots, &only_claude).stats.files_appended, 1);

    let warm = list_sessions(&roots, &all);
    assert_eq!((warm.stats.bytes_read, warm.stats.files_unchanged), (0, 3));
    assert_eq!(warm.sessions.len(), first.sessions.len());
    assert_eq!(
        by_id(&warm.sessions, "c1").title.as_deref(),
        Some("claude-name")
    );

    // A scanner loaded for Claude decodes the others when it is asked for them; their appends
    // resume from the stored folds.
    let mut scanner = Scanner::new(only_claude);
    scanner.list(&roots);
    let n = r.len();
    r.answer("more", now - 1_000);
    r.append_since(n).unwrap();
    bump_mtime(&r.path, 1);
    let listing = scanner.list_agents(&roots, &Agent::ALL);
    assert_eq!(
        (
            listing.stats.files_appended,
            listing.stats.files_unchanged,
            listing.stats.files_new
        ),
        (1, 2, 0)
    );
    assert_eq!(
        listing.sessions,
        list_sessions(&roots, &ScanOptions::default()).sessions
    );
}

/// Appends a `custom-title` to a transcript, its mtime moved on so the change shows.
fn rename(t: &mut ClaudeTranscript, name: &str) {
    let n = t.len();
    t.custom_title(name);
    t.append_since(n).unwrap();
    bump_mtime(&t.path, 1);
}

fn title<'a>(sessions: &'a [Session], id: &str) -> Option<&'a str> {
    by_id(sessions, id).title.as_deref()
}

#[test]
fn a_change_is_appended_to_the_journal_and_a_new_process_starts_from_both() {
    use cross_agent_stores::index::cache::journal_file;

    let home = TempDir::new().unwrap();
    let mut c1 = claude_session(home.path(), "c1", "one");
    let c2 = claude_session(home.path(), "c2", "two");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());
    list_sessions(&roots, &options);
    let base = fs::read(&cache).unwrap();
    assert!(!journal_file(&cache).exists());

    // A change: the cache file is left as it is, the change goes to the journal.
    rename(&mut c1, "renamed");
    assert_eq!(list_sessions(&roots, &options).stats.files_appended, 1);
    assert_eq!(fs::read(&cache).unwrap(), base);
    assert!(journal_file(&cache).exists());

    // A new process starts from both: nothing is read.
    let warm = list_sessions(&roots, &options);
    assert_eq!((warm.stats.bytes_read, warm.stats.files_unchanged), (0, 2));
    assert_eq!(title(&warm.sessions, "c1"), Some("renamed"));
    assert_eq!(
        warm.sessions,
        list_sessions(&roots, &ScanOptions::default()).sessions
    );

    // A file gone is dropped through the journal too.
    fs::remove_file(&c2.path).unwrap();
    assert_eq!(list_sessions(&roots, &options).stats.files_dropped, 1);
    let warm = list_sessions(&roots, &options);
    assert_eq!(
        (
            warm.stats.bytes_read,
            warm.stats.files_dropped,
            warm.sessions.len()
        ),
        (0, 0, 1)
    );
    assert_eq!(fs::read(&cache).unwrap(), base);
}

#[test]
fn a_torn_or_corrupt_journal_tail_is_read_again_from_the_stores() {
    use cross_agent_stores::index::cache::journal_file;

    for damage in ["torn", "corrupt"] {
        let home = TempDir::new().unwrap();
        let mut c1 = claude_session(home.path(), "c1", "one");
        let mut c2 = claude_session(home.path(), "c2", "two");
        let roots = StoreRoots::under_home(home.path());
        let (options, cache) = cached_options(home.path());
        list_sessions(&roots, &options);
        rename(&mut c1, "one-name");
        list_sessions(&roots, &options);
        let first_record_end = fs::metadata(journal_file(&cache)).unwrap().len() as usize;
        rename(&mut c2, "two-name");
        list_sessions(&roots, &options);

        // The second record is cut short (a crash while writing it) or damaged.
        let journal = journal_file(&cache);
        let mut bytes = fs::read(&journal).unwrap();
        assert!(bytes.len() > first_record_end + 16, "{damage}");
        match damage {
            "torn" => bytes.truncate(bytes.len() - 7),
            _ => bytes[first_record_end + 14] ^= 0xff,
        }
        fs::write(&journal, &bytes).unwrap();

        // The first record still counts; what the second held is read again, silently.
        let listing = list_sessions(&roots, &options);
        assert_eq!(listing.warnings, Vec::new(), "{damage}");
        assert_eq!(
            (
                listing.stats.files_unchanged,
                listing.stats.files_appended,
                listing.stats.files_new
            ),
            (1, 1, 0),
            "{damage}"
        );
        assert_eq!(title(&listing.sessions, "c1"), Some("one-name"));
        assert_eq!(title(&listing.sessions, "c2"), Some("two-name"));
        assert_eq!(
            listing.sessions,
            list_sessions(&roots, &ScanOptions::default()).sessions
        );

        // That save wrote the whole cache again, without the damaged journal.
        assert!(!journal.exists(), "{damage}");
        let warm = list_sessions(&roots, &options);
        assert_eq!((warm.stats.bytes_read, warm.stats.files_unchanged), (0, 2));
        assert_eq!(warm.sessions, listing.sessions);
    }
}

#[test]
fn a_journal_left_from_another_cache_file_is_not_replayed() {
    use cross_agent_stores::index::cache::journal_file;

    let home = TempDir::new().unwrap();
    let mut c1 = claude_session(home.path(), "c1", "one");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());
    list_sessions(&roots, &options);
    rename(&mut c1, "old-name");
    list_sessions(&roots, &options);
    let stale = fs::read(journal_file(&cache)).unwrap();

    // The cache is written anew (another process rebuilt it) with c1 renamed again; the old
    // journal comes back beside it. It names the old cache file: it is not replayed.
    fs::remove_file(&cache).unwrap();
    fs::remove_file(journal_file(&cache)).unwrap();
    rename(&mut c1, "new-name");
    list_sessions(&roots, &options);
    fs::write(journal_file(&cache), &stale).unwrap();

    let warm = list_sessions(&roots, &options);
    assert_eq!((warm.stats.bytes_read, warm.warnings.len()), (0, 0));
    assert_eq!(title(&warm.sessions, "c1"), Some("new-name"));

    // The next save writes the whole cache and drops the stale journal.
    rename(&mut c1, "newest-name");
    list_sessions(&roots, &options);
    assert!(!journal_file(&cache).exists());
    let warm = list_sessions(&roots, &options);
    assert_eq!(warm.stats.bytes_read, 0);
    assert_eq!(title(&warm.sessions, "c1"), Some("newest-name"));
}

/// A long-lived scanner (the daemon) whose cache file another process wrote again meanwhile
/// does not start a journal for the file that is gone: it writes the whole cache, so the next
/// process starts from its change and reads nothing.
#[test]
fn a_scanner_whose_cache_was_rewritten_by_another_process_keeps_its_change() {
    use cross_agent_stores::index::cache::journal_file;
    use cross_agent_stores::scan::Scanner;

    let home = TempDir::new().unwrap();
    let mut c1 = claude_session(home.path(), "c1", "one");
    let mut c2 = claude_session(home.path(), "c2", "two");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());
    let mut daemon = Scanner::new(options.clone());
    daemon.list(&roots);

    // Another process writes the cache whole (here: the cache and journal were removed).
    fs::remove_file(&cache).unwrap();
    let _ = fs::remove_file(journal_file(&cache));
    rename(&mut c2, "theirs");
    list_sessions(&roots, &options);
    assert!(!journal_file(&cache).exists());

    // The daemon sees both changes (c2's too: it was not looking) and saves them.
    rename(&mut c1, "mine");
    assert_eq!(daemon.list(&roots).stats.files_appended, 2);

    // A new process reads nothing and sees both names.
    let fresh = list_sessions(&roots, &options);
    assert_eq!(
        (fresh.stats.bytes_read, fresh.stats.files_unchanged),
        (0, 2),
        "{:?}",
        fresh.stats
    );
    assert_eq!(title(&fresh.sessions, "c1"), Some("mine"));
    assert_eq!(title(&fresh.sessions, "c2"), Some("theirs"));
}

/// Several journal records replacing the same entries, and a drop between them, replay to
/// what the stores hold.
#[test]
fn journal_records_replace_entries_in_order() {
    use cross_agent_stores::index::cache::journal_file;

    let home = TempDir::new().unwrap();
    let mut c1 = claude_session(home.path(), "c1", "one");
    let mut c2 = claude_session(home.path(), "c2", "two");
    let c3 = claude_session(home.path(), "c3", "three");
    let roots = StoreRoots::under_home(home.path());
    let (options, cache) = cached_options(home.path());
    list_sessions(&roots, &options);
    let base = fs::read(&cache).unwrap();
    for round in 0..3 {
        rename(&mut c1, &format!("one-{round}"));
        rename(&mut c2, &format!("two-{round}"));
        if round == 1 {
            fs::remove_file(&c3.path).unwrap();
        }
        list_sessions(&roots, &options);
    }
    assert_eq!(fs::read(&cache).unwrap(), base, "all went to the journal");
    assert!(journal_file(&cache).exists());
    let warm = list_sessions(&roots, &options);
    assert_eq!(warm.stats.bytes_read, 0, "{:?}", warm.stats);
    assert_eq!(title(&warm.sessions, "c1"), Some("one-2"));
    assert_eq!(title(&warm.sessions, "c2"), Some("two-2"));
    assert_eq!(
        warm.sessions,
        list_sessions(&roots, &ScanOptions::default()).sessions
    );
}
