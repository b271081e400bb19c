//! The walk's folder cache: a folder whose identity has not changed is not listed again, and
//! nothing on disk is missed because of it — an append that leaves its folder untouched, a new
//! file in a remembered folder, a folder replaced by another, a link pointed elsewhere, a Grok
//! session's `updates.jsonl` appearing later.
//!
//! A listing is only remembered once its folder's mtime is a few seconds old (see
//! `cross_agent_stores::walk::SETTLE`), so the tests set folder mtimes back an hour to make them
//! "settled" instead of sleeping; a later change then sets the mtime to now, as it would.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cross_agent_stores::index::RefreshOptions;
use cross_agent_stores::scan::{Listing, ScanOptions, Scanner, list_sessions};
use cross_agent_stores::walk::{WalkStats, dir_cache_file};
use cross_agent_stores::{Agent, Session, StoreRoots};
use cross_agent_testkit::synthetic_stores::{
    ClaudeTranscript, CodexRollout, GrokSession, now_millis,
};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

fn options(home: &Path) -> ScanOptions {
    // The state directory exists before its cache is written, as start-up makes it.
    std::fs::create_dir_all(home.join("xa")).unwrap();
    ScanOptions {
        cache_file: Some(home.join("xa/cache/sessions-index.bin")),
        refresh: RefreshOptions { threads: 2 },
        agents: Vec::new(),
    }
}

fn claude(home: &Path, cwd: &str, id: &str, prompt: &str) -> ClaudeTranscript {
    let now = now_millis();
    let mut t = ClaudeTranscript::new(home, cwd, id);
    t.user(prompt, now - 5_000)
        .assistant_text("ok", now - 4_000);
    t.write().unwrap();
    t
}

/// Every folder under `dir` (and `dir` itself) gets an mtime an hour ago.
fn settle(dir: &Path) {
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    set_dir_mtime(dir, an_hour_ago);
    for entry in fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            settle(&entry.path());
        }
    }
}

fn set_dir_mtime(dir: &Path, at: SystemTime) {
    fs::File::open(dir).unwrap().set_modified(at).unwrap();
}

fn dir_mtime(dir: &Path) -> SystemTime {
    fs::metadata(dir).unwrap().modified().unwrap()
}

/// Moves a file's mtime forward, so an append within the same clock tick still looks changed.
fn bump_mtime(path: &Path) {
    let modified = fs::metadata(path).unwrap().modified().unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(modified + Duration::from_secs(1))
        .unwrap();
}

fn ids(listing: &Listing) -> Vec<&str> {
    let mut ids: Vec<&str> = listing
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    ids.sort();
    ids
}

fn by_id<'a>(listing: &'a Listing, id: &str) -> &'a Session {
    listing
        .sessions
        .iter()
        .find(|s| s.session_id == id)
        .unwrap_or_else(|| panic!("no session {id} in {:#?}", listing.sessions))
}

/// A listing of `home`, checked against one made without any cache.
fn list(home: &Path) -> Listing {
    let roots = StoreRoots::under_home(home);
    let listing = list_sessions(&roots, &options(home));
    let uncached = list_sessions(&roots, &ScanOptions::default());
    assert_eq!(listing.sessions, uncached.sessions);
    listing
}

fn projects(home: &Path) -> PathBuf {
    home.join(".claude/projects")
}

#[test]
fn a_settled_folder_is_remembered_and_not_listed_again() {
    let home = TempDir::new().unwrap();
    claude(home.path(), "/work/a", "c1", "one");
    claude(home.path(), "/work/a", "c2", "two");
    claude(home.path(), "/work/b", "c3", "three");
    settle(&projects(home.path()));

    let first = list(home.path());
    assert_eq!(first.walk.dirs_listed, 3);
    assert!(dir_cache_file(&options(home.path()).cache_file.unwrap()).exists());

    let second = list(home.path());
    assert_eq!(
        second.walk,
        WalkStats {
            dirs_listed: 0,
            dirs_reused: 3,
            files_stated: 3,
        }
    );
    assert_eq!(second.stats.files_unchanged, 3);
    assert_eq!(ids(&second), vec!["c1", "c2", "c3"]);
}

#[test]
fn a_folder_changed_moments_ago_is_listed_again_next_time() {
    let home = TempDir::new().unwrap();
    claude(home.path(), "/work/a", "c1", "one");
    // Folders just written: a change within the same clock tick would not move their mtime, so
    // their listings are not trusted yet.
    list(home.path());
    let second = list(home.path());
    assert_eq!((second.walk.dirs_listed, second.walk.dirs_reused), (2, 0));
}

#[test]
fn a_file_appended_without_its_folder_changing_is_seen() {
    let home = TempDir::new().unwrap();
    let mut t = claude(home.path(), "/work/a", "c1", "one");
    claude(home.path(), "/work/a", "c2", "two");
    settle(&projects(home.path()));
    list(home.path());
    let folder = t.path.parent().unwrap().to_path_buf();
    let before = dir_mtime(&folder);

    let n = t.len();
    t.custom_title("appended-name");
    t.append_since(n).unwrap();
    bump_mtime(&t.path);
    assert_eq!(
        dir_mtime(&folder),
        before,
        "an append leaves the folder alone"
    );

    let listing = list(home.path());
    assert_eq!((listing.walk.dirs_listed, listing.walk.dirs_reused), (0, 2));
    assert_eq!(listing.stats.files_appended, 1);
    assert_eq!(
        by_id(&listing, "c1").title.as_deref(),
        Some("appended-name")
    );
}

#[test]
fn a_new_file_in_a_remembered_folder_is_seen() {
    let home = TempDir::new().unwrap();
    claude(home.path(), "/work/a", "c1", "one");
    settle(&projects(home.path()));
    list(home.path());

    // A new transcript in the same project folder, and a new project folder.
    claude(home.path(), "/work/a", "c2", "two");
    claude(home.path(), "/work/new", "c3", "three");
    let listing = list(home.path());
    assert_eq!(ids(&listing), vec!["c1", "c2", "c3"]);
    assert_eq!(listing.stats.files_new, 2);
    assert_eq!(listing.walk.dirs_listed, 3);
}

#[test]
fn a_removed_file_drops_out() {
    let home = TempDir::new().unwrap();
    claude(home.path(), "/work/a", "c1", "one");
    let t = claude(home.path(), "/work/a", "c2", "two");
    settle(&projects(home.path()));
    list(home.path());

    fs::remove_file(&t.path).unwrap();
    let listing = list(home.path());
    assert_eq!(ids(&listing), vec!["c1"]);
    assert_eq!(listing.stats.files_dropped, 1);
}

#[test]
fn a_replaced_folder_is_listed_again_even_with_the_same_mtime() {
    let home = TempDir::new().unwrap();
    let old = claude(home.path(), "/work/a", "c1", "one");
    settle(&projects(home.path()));
    list(home.path());
    let folder = old.path.parent().unwrap().to_path_buf();
    let projects_mtime = dir_mtime(&projects(home.path()));
    let folder_mtime = dir_mtime(&folder);

    // The project folder is moved away (kept, so its inode is not reused) and another with the
    // same name takes its place, holding another session; both mtimes are set back to what was
    // remembered. Only the inode and ctime tell the folders apart.
    fs::rename(&folder, home.path().join("moved-away")).unwrap();
    claude(home.path(), "/work/a", "c9", "replacement");
    set_dir_mtime(&folder, folder_mtime);
    set_dir_mtime(&projects(home.path()), projects_mtime);

    let listing = list(home.path());
    assert_eq!(ids(&listing), vec!["c9"]);
    assert!(listing.walk.dirs_listed >= 1, "{:?}", listing.walk);
}

#[cfg(unix)]
#[test]
fn a_link_pointed_elsewhere_is_followed_to_its_new_target() {
    let home = TempDir::new().unwrap();
    let a = claude(home.path(), "/work/a", "c1", "one");
    let b = claude(home.path(), "/work/b", "c2", "two");
    // Keep the two project folders outside `projects/`, reached through one link.
    let outside = home.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let a_dir = outside.join("a");
    let b_dir = outside.join("b");
    fs::rename(a.path.parent().unwrap(), &a_dir).unwrap();
    fs::rename(b.path.parent().unwrap(), &b_dir).unwrap();
    let link = projects(home.path()).join("-linked");
    std::os::unix::fs::symlink(&a_dir, &link).unwrap();
    settle(home.path());
    assert_eq!(ids(&list(home.path())), vec!["c1"]);

    // Re-pointed with a rename over the link, then every mtime set back.
    let tmp_link = projects(home.path()).join("-linked.tmp");
    std::os::unix::fs::symlink(&b_dir, &tmp_link).unwrap();
    fs::rename(&tmp_link, &link).unwrap();
    settle(home.path());
    assert_eq!(ids(&list(home.path())), vec!["c2"]);
}

#[test]
fn a_new_codex_day_folder_is_seen() {
    let home = TempDir::new().unwrap();
    let now = now_millis();
    let mut r = CodexRollout::new(
        home.path(),
        "/work/p",
        "019a0000-0000-7000-8000-0000000000a1",
        now - 3 * 86_400_000,
    );
    r.user("first", now - 3 * 86_400_000 + 1_000);
    r.write().unwrap();
    settle(&home.path().join(".codex"));
    list(home.path());

    let mut r = CodexRollout::new(
        home.path(),
        "/work/p",
        "019a0000-0000-7000-8000-0000000000a2",
        now - 1_000,
    );
    r.user("second", now - 500);
    r.write().unwrap();
    let listing = list(home.path());
    assert_eq!(listing.of(Agent::Codex).count(), 2);
}

#[test]
fn a_grok_session_and_its_updates_appearing_later_are_seen() {
    let home = TempDir::new().unwrap();
    let now = now_millis();
    let mut g = GrokSession::new(home.path(), "/work/p", "grok-1", now - 60_000);
    g.user("hello", now - 50_000);
    g.write().unwrap();
    // A session that has only its summary so far.
    let late = GrokSession::new(home.path(), "/work/p", "grok-2", now - 40_000);
    late.write().unwrap();
    fs::remove_file(late.dir.join("updates.jsonl")).unwrap();
    settle(&home.path().join(".grok"));
    let first = list(home.path());
    assert_eq!(ids(&first), vec!["grok-1", "grok-2"]);

    // Its `updates.jsonl` appears (written elsewhere and moved in, so `summary.json` stays as it
    // was); the session folders are never listed, only looked into.
    let elsewhere = TempDir::new().unwrap();
    let mut written = GrokSession::new(elsewhere.path(), "/work/p", "grok-2", now - 40_000);
    written.user("finally", now - 1_000);
    written.write().unwrap();
    fs::rename(
        written.dir.join("updates.jsonl"),
        late.dir.join("updates.jsonl"),
    )
    .unwrap();
    // And a third session folder appears in the remembered cwd folder.
    let mut third = GrokSession::new(home.path(), "/work/p", "grok-3", now - 30_000);
    third.user("third", now - 20_000);
    third.write().unwrap();
    let listing = list(home.path());
    assert_eq!(ids(&listing), vec!["grok-1", "grok-2", "grok-3"]);
    assert_eq!(
        by_id(&listing, "grok-2").title.as_deref(),
        Some("finally"),
        "{:#?}",
        listing.sessions
    );
}

#[test]
fn a_damaged_folder_cache_is_ignored_and_rebuilt() {
    let home = TempDir::new().unwrap();
    claude(home.path(), "/work/a", "c1", "one");
    settle(&projects(home.path()));
    list(home.path());
    let dirs = dir_cache_file(&options(home.path()).cache_file.unwrap());
    let mut bytes = fs::read(&dirs).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&dirs, &bytes).unwrap();

    let listing = list(home.path());
    assert!(listing.warnings.is_empty(), "{:?}", listing.warnings);
    assert_eq!(listing.walk.dirs_listed, 2);
    fs::write(&dirs, b"garbage").unwrap();
    assert_eq!(ids(&list(home.path())), vec!["c1"]);
    assert_eq!(list(home.path()).walk.dirs_reused, 2);
}

#[test]
fn a_scanner_keeps_the_folder_cache_in_memory_too() {
    let home = TempDir::new().unwrap();
    let mut t = claude(home.path(), "/work/a", "c1", "one");
    settle(&projects(home.path()));
    let roots = StoreRoots::under_home(home.path());
    let mut scanner = Scanner::new(options(home.path()));
    scanner.list(&roots);
    let warm = scanner.list(&roots);
    assert_eq!((warm.walk.dirs_listed, warm.walk.dirs_reused), (0, 2));

    let n = t.len();
    t.custom_title("scanned");
    t.append_since(n).unwrap();
    bump_mtime(&t.path);
    claude(home.path(), "/work/a", "c2", "two");
    let listing = scanner.list(&roots);
    assert_eq!(by_id(&listing, "c1").title.as_deref(), Some("scanned"));
    assert_eq!(listing.of(Agent::Claude).count(), 2);
}

/// A scanner reads its remembered listings back from the folder-cache file as it walks: that
/// file truncated, or written into in place, under it (its own saves replace the file by
/// renaming) makes the walk list those folders again and find every file, never leave out the
/// files of a listing that did not read back.
#[test]
fn a_folder_cache_changed_or_truncated_under_a_scanner_lists_the_folders_again() {
    let home = TempDir::new().unwrap();
    claude(home.path(), "/work/a", "c1", "one");
    claude(home.path(), "/work/a", "c2", "two");
    claude(home.path(), "/work/b", "c3", "three");
    settle(&projects(home.path()));
    let roots = StoreRoots::under_home(home.path());
    let dirs = dir_cache_file(&options(home.path()).cache_file.unwrap());
    let mut scanner = Scanner::new(options(home.path()));
    let cold = scanner.list(&roots);
    assert_eq!(ids(&cold), vec!["c1", "c2", "c3"]);
    let warm = scanner.list(&roots);
    assert_eq!((warm.walk.dirs_listed, warm.walk.dirs_reused), (0, 3));

    // Cut short where it is: every record past the header is gone.
    fs::OpenOptions::new()
        .write(true)
        .open(&dirs)
        .unwrap()
        .set_len(16)
        .unwrap();
    let after_truncation = scanner.list(&roots);
    assert_eq!(
        (
            after_truncation.walk.dirs_listed,
            after_truncation.walk.dirs_reused
        ),
        (3, 0)
    );
    assert_eq!(after_truncation.sessions, cold.sessions);
    assert!(
        after_truncation.warnings.is_empty(),
        "{:?}",
        after_truncation.warnings
    );

    // Listed again and saved, a new file: one name in it changed in place, to one of the same
    // length. The record still decodes, for its folder and stamp, but is not the one
    // remembered: that folder is listed again, and c1 is still found.
    let again = scanner.list(&roots);
    assert_eq!((again.walk.dirs_listed, again.walk.dirs_reused), (0, 3));
    let mut bytes = fs::read(&dirs).unwrap();
    let at = bytes
        .windows(b"c1.jsonl".len())
        .position(|w| w == b"c1.jsonl")
        .expect("c1's name in the folder cache");
    bytes[at] = b'x';
    fs::write(&dirs, &bytes).unwrap();
    let after_edit = scanner.list(&roots);
    assert_eq!(
        (after_edit.walk.dirs_listed, after_edit.walk.dirs_reused),
        (1, 2)
    );
    assert_eq!(after_edit.sessions, cold.sessions);
    assert!(after_edit.warnings.is_empty(), "{:?}", after_edit.warnings);
}

/// A folder stamped centuries ahead (a clock gone wrong) is listed like any other; its
/// timestamp in nanoseconds saturates rather than overflowing the walk.
#[test]
fn a_folder_stamped_far_in_the_future_is_still_walked() {
    let home = TempDir::new().unwrap();
    claude(home.path(), "/work/a", "c1", "one");
    let folder = projects(home.path()).join("-work-a");
    assert!(folder.is_dir(), "{}", folder.display());
    // 2300-01-01 and half a second: seconds times 10^9 alone saturates an i64.
    let future = SystemTime::UNIX_EPOCH + Duration::new(10_413_792_000, 500_000_000);
    set_dir_mtime(&folder, future);
    set_dir_mtime(&projects(home.path()), future);
    let first = list(home.path());
    assert_eq!(ids(&first), vec!["c1"]);
    let again = list(home.path());
    assert_eq!(ids(&again), vec!["c1"]);
}
