//! The listing's cache location and a listing with no cache at all.

use cross_agent_stores::StoreRoots;
use cross_agent_stores::scan::{self, ScanOptions, cache_file, list_sessions};
use tempfile::TempDir;

#[test]
fn the_cache_lives_under_the_state_directory() {
    let tmp = TempDir::new().unwrap();
    assert_eq!(
        cache_file(&tmp.path().join(".cross-agent")),
        tmp.path().join(".cross-agent/cache/sessions-index.bin")
    );
}

#[test]
fn listing_without_a_cache_still_works() {
    let tmp = TempDir::new().unwrap();
    let listing = list_sessions(&StoreRoots::under_home(tmp.path()), &ScanOptions::default());
    assert!(listing.sessions.is_empty());
    assert!(listing.warnings.is_empty(), "{:?}", listing.warnings);
}

#[test]
fn a_scanner_keeps_the_index_in_memory_between_listings() {
    use cross_agent_stores::index::RefreshOptions;
    use cross_agent_stores::scan::Scanner;
    use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

    let tmp = TempDir::new().unwrap();
    let now = now_millis();
    let mut t = ClaudeTranscript::new(tmp.path(), "/work/p", "c1");
    t.user("start", now - 2_000)
        .assistant_text("ok", now - 1_000);
    t.write().unwrap();
    let roots = StoreRoots::under_home(tmp.path());
    let cache = cache_file(&tmp.path().join("xa"));
    // The state directory exists before its cache is written, as start-up makes it.
    std::fs::create_dir_all(tmp.path().join("xa")).unwrap();
    let options = ScanOptions {
        cache_file: Some(cache.clone()),
        refresh: RefreshOptions { threads: 2 },
        agents: Vec::new(),
    };
    let mut scanner = Scanner::new(options.clone());
    let first = scanner.list(&roots);
    assert_eq!(first.stats.files_new, 1);
    assert!(cache.exists());

    let n = t.len();
    t.custom_title("renamed");
    t.append_since(n).unwrap();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&t.path)
        .unwrap();
    let mtime = std::fs::metadata(&t.path).unwrap().modified().unwrap();
    file.set_modified(mtime + std::time::Duration::from_secs(1))
        .unwrap();
    let second = scanner.list_agents(&roots, &[cross_agent_stores::Agent::Claude]);
    assert_eq!(second.stats.files_appended, 1);
    assert_eq!(second.timings.load_cache, std::time::Duration::ZERO);
    assert_eq!(second.sessions[0].title.as_deref(), Some("renamed"));

    // What the scanner saved is what a fresh process starts from.
    let fresh = list_sessions(&roots, &options);
    assert_eq!(fresh.stats.bytes_read, 0);
    assert_eq!(fresh.sessions, second.sessions);
}

/// A first listing without a cache reads every file; a scanner kept between listings then holds
/// the index as the cache it saved (one buffer, the fold states left in the file) rather than
/// each file's own path, session and fold. A file that grows afterwards resumes from its fold,
/// read back from the file by its range, and the listing stays what a fresh process lists.
#[test]
fn a_scanner_holds_a_cold_index_as_the_cache_it_saved() {
    use cross_agent_stores::scan::Scanner;

    let tmp = TempDir::new().unwrap();
    let (mut files, options) = kept_store(tmp.path(), 600);
    let roots = StoreRoots::under_home(tmp.path());
    let mut scanner = Scanner::new(options.clone());
    let first = scanner.list(&roots);
    assert_eq!((first.stats.files_new, first.sessions.len()), (600, 600));
    let held = scanner.heap_bytes();
    assert_eq!(
        (held.entries, held.folds, held.sessions),
        (0, 0, 0),
        "no file's own entry is held: {held:?}"
    );
    assert!(held.stored > 0 && held.blob == 0, "{held:?}");

    let t = &mut files[17];
    let n = t.len();
    t.custom_title("renamed");
    t.append_since(n).unwrap();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&t.path)
        .unwrap();
    let mtime = std::fs::metadata(&t.path).unwrap().modified().unwrap();
    file.set_modified(mtime + std::time::Duration::from_secs(1))
        .unwrap();
    let second = scanner.list(&roots);
    assert_eq!(
        (second.stats.files_appended, second.stats.files_reread),
        (1, 0),
        "the grown file resumed from its fold"
    );
    let renamed = second
        .sessions
        .iter()
        .find(|s| s.session_id == "k017")
        .unwrap();
    assert_eq!(renamed.title.as_deref(), Some("renamed"));
    assert_eq!(scanner.heap_bytes().blob, 0, "only that fold was read");

    let fresh = cross_agent_stores::scan::list_sessions(
        &roots,
        &ScanOptions {
            cache_file: None,
            ..options
        },
    );
    assert_eq!(fresh.sessions, second.sessions);
}

/// The folder listings a scanner keeps for its next walk (`walk::DirCache`) are in its
/// accounting, and are not on its heap: a folder is 32 bytes — a hash of its path, where its
/// listing is in the folder-cache file and a hash of that — not its path and every file name in
/// it (which were ~6 MB of a daemon's heap at 111,000 sessions).
#[test]
fn a_scanners_accounting_counts_the_folder_listings_it_keeps() {
    use cross_agent_stores::scan::Scanner;

    let tmp = TempDir::new().unwrap();
    let (files, options) = kept_store(tmp.path(), 60);
    // A folder's listing is remembered only once its mtime has settled (`walk::SETTLE`).
    age_folders(
        tmp.path(),
        std::time::SystemTime::now() - std::time::Duration::from_secs(60),
    );
    let roots = StoreRoots::under_home(tmp.path());
    let mut scanner = Scanner::new(options);
    let cold = scanner.list(&roots);
    assert_eq!(cold.sessions.len(), 60);
    let folders = cold.walk.dirs_listed;

    let held = scanner.heap_bytes();
    let names: usize = files
        .iter()
        .map(|t| t.path.file_name().unwrap().len())
        .sum();
    assert!(
        held.dirs > 0 && held.dirs <= 32 * folders,
        "{folders} folders, {names} bytes of file names: {held:?}"
    );
    assert!(held.total() >= held.stored + held.dirs, "{held:?}");

    // Read back from the file, the listings serve the next walk.
    let warm = scanner.list(&roots);
    assert_eq!((warm.walk.dirs_listed, warm.walk.dirs_reused), (0, folders));
    assert_eq!(warm.sessions, cold.sessions);
    assert_eq!(scanner.heap_bytes().dirs, held.dirs);
}

/// Sets the mtime of every folder under `dir` (itself included) to `at`.
fn age_folders(dir: &std::path::Path, at: std::time::SystemTime) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            age_folders(&path, at);
        }
    }
    std::fs::File::open(dir).unwrap().set_modified(at).unwrap();
}

/// A scanner kept between listings (the daemon's index) holds nothing more per session after a
/// warm listing than after the cold one: an unchanged file's entry stays as the cache saved it,
/// and the path the walk found it at is not kept beside it (it was, ~150 bytes a session).
#[test]
fn a_warm_listing_keeps_nothing_more_per_session() {
    use cross_agent_stores::scan::Scanner;

    let tmp = TempDir::new().unwrap();
    let (_files, options) = kept_store(tmp.path(), 600);
    let roots = StoreRoots::under_home(tmp.path());
    let mut scanner = Scanner::new(options.clone());
    let cold = scanner.list(&roots);
    assert_eq!(cold.sessions.len(), 600);
    let held = scanner.heap_bytes();
    assert!(held.stored > 0, "{held:?}");

    let warm = scanner.list(&roots);
    assert_eq!(warm.stats.files_unchanged, 600);
    assert_eq!(warm.sessions, cold.sessions);
    assert_eq!(scanner.heap_bytes(), held);

    // A scanner started from that cache holds the same after its first listing.
    let mut restarted = Scanner::new(options);
    let again = restarted.list(&roots);
    assert_eq!(again.stats.bytes_read, 0);
    assert_eq!(again.sessions, cold.sessions);
    assert_eq!(restarted.heap_bytes().stored, held.stored);
}

/// A listing read once without a cache packs each file's entry as it is read, on the reader's
/// thread (`index::packed`), where a listing through a cache file holds the entries: both list
/// the same sessions in the same order with the same warnings, and render to the same bytes —
/// on a store with every agent, Codex thread names, a Grok rename, titles that need escaping,
/// sessions active at `now`, and lines that are skipped with a warning.
#[test]
fn a_listing_read_once_lists_what_a_held_index_lists() {
    use cross_agent_stores::index::RefreshOptions;
    use cross_agent_stores::render::{self, Chosen};
    use cross_agent_stores::resolve::ActiveWindow;
    use cross_agent_stores::{Agent, UnixMillis};
    use cross_agent_testkit::synthetic_stores::{
        ClaudeTranscript, CodexRollout, GrokSession, SyntheticSpec, codex_thread_name, generate,
    };

    let tmp = TempDir::new().unwrap();
    let home = tmp.path().join("home");
    let now = 1_800_000_000_000;
    generate(
        &home,
        &SyntheticSpec {
            claude: 40,
            codex: 40,
            grok: 12,
            copilot: 3,
            seed: 7,
            size_scale: 0.02,
            now,
        },
    )
    .unwrap();
    let escaped = "quote \" back\\slash tab\t new\nline \u{1} é 😀 </script>";
    let mut claude = ClaudeTranscript::new(&home, "/work/odd \"dir\"", "c-escapes");
    claude
        .user("start", now - 60_000)
        .raw("{not json")
        .custom_title(escaped)
        .tool_use("ls", now - 1_000);
    claude.write().unwrap();
    let mut codex = CodexRollout::new(
        &home,
        "/work/named",
        "019a0000-0000-7000-8000-00000000c0de",
        now - 90_000,
    );
    codex.user("hello", now - 80_000).raw("garbage line");
    codex.write().unwrap();
    codex_thread_name(
        &home,
        "019a0000-0000-7000-8000-00000000c0de",
        "a thread \"name\"",
        now - 70_000,
    )
    .unwrap();
    let mut grok = GrokSession::new(&home, "/work/grok", "g-renamed", now - 50_000);
    grok.user("hi", now - 40_000).rename("grok\\renamed");
    grok.write().unwrap();

    let roots = StoreRoots::under_home(&home);
    let refresh = RefreshOptions { threads: 4 };
    let packed = list_sessions(
        &roots,
        &ScanOptions {
            cache_file: None,
            refresh,
            agents: Vec::new(),
        },
    );
    std::fs::create_dir_all(tmp.path().join("xa")).unwrap();
    let held = list_sessions(
        &roots,
        &ScanOptions {
            cache_file: Some(cache_file(&tmp.path().join("xa"))),
            refresh,
            agents: Vec::new(),
        },
    );
    assert_eq!(packed.stats, held.stats);
    assert_eq!(packed.sessions, held.sessions);
    assert_eq!(packed.warnings, held.warnings);

    let titled = |title: &str| {
        packed
            .sessions
            .iter()
            .any(|s| s.title.as_deref() == Some(title))
    };
    assert!(titled(escaped), "the escaped Claude title is listed");
    assert!(
        titled("a thread \"name\""),
        "the Codex thread name is applied"
    );
    assert!(titled("grok\\renamed"), "the Grok rename is listed");
    for agent in Agent::ALL {
        assert!(
            packed.of(agent).next().is_some(),
            "{agent:?} sessions are listed"
        );
    }
    assert!(packed.warnings.len() >= 2, "{:?}", packed.warnings);

    let rendered = |listing: &scan::Listing| {
        let chosen: Vec<(Agent, Chosen<'_>)> = Agent::ALL
            .iter()
            .map(|&agent| (agent, Chosen::Sessions(listing.of(agent).collect())))
            .collect();
        let mut sink = render::WriteSink::new(Vec::new());
        render::write_listing(
            &mut sink,
            &chosen,
            ActiveWindow::from_minutes(240),
            UnixMillis(now),
            None,
        );
        String::from_utf8(sink.finish().unwrap()).unwrap()
    };
    let (packed_bytes, held_bytes) = (rendered(&packed), rendered(&held));
    assert!(
        packed_bytes.contains("\"is_active\": true"),
        "{packed_bytes}"
    );
    assert_eq!(packed_bytes, held_bytes);
}

/// Moves `path`'s mtime on by `seconds`, as a write would.
fn bump_mtime(path: &std::path::Path, seconds: u64) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    file.set_modified(mtime + std::time::Duration::from_secs(seconds))
        .unwrap();
}

/// `count` Claude sessions (`k000`, `k001`, …) under `home`, and the options of a scanner
/// keeping its cache in `home/xa`.
fn kept_store(
    home: &std::path::Path,
    count: usize,
) -> (
    Vec<cross_agent_testkit::synthetic_stores::ClaudeTranscript>,
    ScanOptions,
) {
    use cross_agent_stores::index::RefreshOptions;
    use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

    let now = now_millis();
    let mut files = Vec::new();
    for i in 0..count {
        let mut t = ClaudeTranscript::new(home, &format!("/work/p{}", i % 7), &format!("k{i:03}"));
        t.user(&format!("start {i}"), now - 10_000 + i as i64)
            .assistant_text("ok", now - 9_000 + i as i64);
        t.write().unwrap();
        files.push(t);
    }
    std::fs::create_dir_all(home.join("xa")).unwrap();
    let options = ScanOptions {
        cache_file: Some(cache_file(&home.join("xa"))),
        refresh: RefreshOptions { threads: 2 },
        agents: Vec::new(),
    };
    (files, options)
}

/// A scanner kept between listings (the daemon's index) leaves the cache's entries in the
/// cache file once the listing holds the sessions: what stays in memory is a path hash, a stamp
/// hash and where each entry is (it held each entry's bytes, about 300 a session here). Read
/// back from the file, a grown transcript still resumes from its fold, a rewritten side file
/// (Grok's summary) is seen, a gone file drops out, and the cache written again whole — the
/// entries left in the file with those read since — is what a fresh process lists without
/// reading a byte.
#[test]
fn a_kept_index_leaves_the_cache_entries_in_the_file() {
    use cross_agent_stores::scan::Scanner;
    use cross_agent_testkit::synthetic_stores::{GrokSession, now_millis};

    let tmp = TempDir::new().unwrap();
    let (mut files, options) = kept_store(tmp.path(), 600);
    let now = now_millis();
    let mut grok = GrokSession::new(tmp.path(), "/work/g", "grok-1", now - 60_000);
    grok.user("review the diff", now - 50_000)
        .agent_chunk("Looks fine.", now - 40_000)
        .turn_completed(now - 39_000);
    grok.write().unwrap();
    let roots = StoreRoots::under_home(tmp.path());
    let mut scanner = Scanner::new(options.clone());
    let cold = scanner.list(&roots);
    assert_eq!(cold.sessions.len(), 601);
    let per_entry = |scanner: &Scanner| {
        let held = scanner.heap_bytes();
        assert_eq!((held.entries, held.blob), (0, 0), "{held:?}");
        held.stored / 601
    };
    assert!(
        per_entry(&scanner) <= 64,
        "{} B an entry",
        per_entry(&scanner)
    );

    let warm = scanner.list(&roots);
    assert_eq!(
        (warm.stats.files_unchanged, warm.stats.bytes_read),
        (601, 0)
    );
    assert_eq!(warm.sessions, cold.sessions);

    let t = &mut files[17];
    let n = t.len();
    t.custom_title("renamed");
    t.append_since(n).unwrap();
    bump_mtime(&t.path, 1);
    grok.rename("reviewer");
    let summary = grok.dir.join("summary.json");
    std::fs::write(&summary, grok.summary_json()).unwrap();
    bump_mtime(&summary, 1);
    std::fs::remove_file(&files[40].path).unwrap();
    let changed = scanner.list(&roots);
    assert_eq!(
        (
            changed.stats.files_unchanged,
            changed.stats.files_reread,
            changed.stats.files_dropped
        ),
        (598, 0, 1),
        "{:?}",
        changed.stats
    );
    let title = |id: &str| {
        let found = changed.sessions.iter().find(|s| s.session_id == id);
        found.map(|s| s.title.clone())
    };
    assert_eq!(title("k017"), Some(Some("renamed".to_owned())));
    assert_eq!(title("grok-1"), Some(Some("reviewer".to_owned())));
    assert_eq!(title("k040"), None);

    // Most files touched: read again, and the whole cache written from them and from the
    // entries still left in the file.
    for t in files.iter().take(560).filter(|t| t.path.exists()) {
        bump_mtime(&t.path, 2);
    }
    let rewritten = scanner.list(&roots);
    assert_eq!(rewritten.sessions, changed.sessions);
    assert!(
        per_entry(&scanner) <= 64,
        "{} B an entry",
        per_entry(&scanner)
    );
    let fresh = list_sessions(&roots, &options);
    assert_eq!(fresh.stats.bytes_read, 0, "{:?}", fresh.stats);
    assert_eq!(fresh.sessions, changed.sessions);
}

/// The cache file a kept index left its entries in, written into in place by someone else (our
/// own writes replace it by renaming): the entries no longer read back as loaded, so the next
/// listing is made again from the stores — every session listed as before, none left out or
/// taken from the damaged bytes — and the cache is written sound again.
#[test]
fn a_cache_written_into_under_a_kept_index_is_listed_again_from_the_stores() {
    use std::io::{Seek, SeekFrom, Write};

    use cross_agent_stores::scan::Scanner;

    let tmp = TempDir::new().unwrap();
    let (_files, options) = kept_store(tmp.path(), 600);
    let roots = StoreRoots::under_home(tmp.path());
    let mut scanner = Scanner::new(options.clone());
    let cold = scanner.list(&roots);
    assert_eq!(cold.sessions.len(), 600);
    assert_eq!(
        scanner.heap_bytes().entries,
        0,
        "the entries are left in the file"
    );

    let cache = options.cache_file.clone().unwrap();
    let len = std::fs::metadata(&cache).unwrap().len();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&cache)
        .unwrap();
    file.seek(SeekFrom::Start(len / 3)).unwrap();
    file.write_all(&vec![b'Z'; 4096]).unwrap();
    drop(file);

    let again = scanner.list(&roots);
    assert_eq!(again.sessions, cold.sessions);
    assert_eq!(again.stats.files_new, 600, "{:?}", again.stats);
    // Sound again: a fresh process lists from the cache without reading a transcript.
    let fresh = list_sessions(&roots, &options);
    assert_eq!(fresh.stats.bytes_read, 0, "{:?}", fresh.stats);
    assert_eq!(fresh.sessions, cold.sessions);
}

/// A kept index whose journal outgrew its file writes the cache again whole, reading every
/// fold state in to do so: it then holds the index loaded again from that file, not every
/// fold (about 500 bytes a session), whatever few files the last walk read.
#[test]
fn a_kept_index_holds_no_fold_states_after_writing_the_cache_whole() {
    use cross_agent_stores::scan::Scanner;

    let tmp = TempDir::new().unwrap();
    let (files, options) = kept_store(tmp.path(), 600);
    let roots = StoreRoots::under_home(tmp.path());
    let mut scanner = Scanner::new(options);
    scanner.list(&roots);
    let journal =
        cross_agent_stores::index::cache::journal_file(&cache_file(&tmp.path().join("xa")));
    // Each walk reads a few hundred files (under the count that writes the cache whole), and
    // journals them, until the journal is written into the file.
    let mut journalled = false;
    for round in 1..=12u64 {
        for t in files.iter().take(400) {
            bump_mtime(&t.path, round);
        }
        let listing = scanner.list(&roots);
        assert_eq!(listing.sessions.len(), 600);
        journalled |= journal.exists();
        if journalled && !journal.exists() {
            let held = scanner.heap_bytes();
            assert_eq!(held.blob, 0, "{held:?}");
            return;
        }
    }
    panic!("the journal was never written into the cache (journalled: {journalled})");
}

/// A link planted at the session cache's name is not read through (a daemon keeps the cache open
/// and reads it back as long as it runs): the load refuses it, naming why, and the listing reads
/// the stores; the next save replaces the link, and the file it pointed to stays as it was.
#[cfg(unix)]
#[test]
fn a_link_at_the_session_caches_name_is_not_read_through() {
    use cross_agent_stores::index::cache::{CacheLoad, load};

    let tmp = TempDir::new().unwrap();
    let (_files, options) = kept_store(tmp.path(), 20);
    let roots = StoreRoots::under_home(tmp.path());
    let made = list_sessions(&roots, &options);
    let cache = options.cache_file.clone().unwrap();
    assert!(matches!(load(&cache), CacheLoad::Loaded(_)));

    // The sound cache moved aside, a link to it in its place.
    let elsewhere = tmp.path().join("elsewhere.bin");
    std::fs::rename(&cache, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &cache).unwrap();
    let before = std::fs::read(&elsewhere).unwrap();
    match load(&cache) {
        CacheLoad::Corrupt(why) => assert!(why.contains("session cache"), "{why}"),
        other => panic!(
            "read through the link: {}",
            matches!(other, CacheLoad::Loaded(_))
        ),
    }
    let listed = list_sessions(&roots, &options);
    assert_eq!(listed.sessions, made.sessions);
    assert_eq!(listed.stats.files_new, 20, "{:?}", listed.stats);
    assert!(!std::fs::symlink_metadata(&cache).unwrap().is_symlink());
    assert_eq!(std::fs::read(&elsewhere).unwrap(), before);
}
