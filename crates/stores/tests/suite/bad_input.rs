//! Bad input never panics and never stops a listing: each case is skipped with a warning naming
//! the file (and the line where it helps).

use std::io::Write;
use std::path::Path;

use cross_agent_stores::claude::{self, ClaudeFold};
use cross_agent_stores::codex::CodexFold;
use cross_agent_stores::grok::GrokFold;
use cross_agent_stores::lines::{MAX_LINE_BYTES, Position, read_complete_lines, read_zstd_lines};
use cross_agent_stores::{StoreRoots, TranscriptFold, Warnings};
use pretty_assertions::assert_eq;

use super::reader_support::{fold_file, sessions_of};

const ID: &str = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";

fn user_line(text: &str, ts: &str) -> String {
    serde_json::json!({
        "type": "user", "isSidechain": false, "cwd": "/w", "sessionId": ID,
        "timestamp": ts, "message": {"role": "user", "content": text}
    })
    .to_string()
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_half_written_last_line_is_left_for_the_next_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{ID}.jsonl"));
    let first = user_line("first prompt", "2026-11-01T00:00:00Z");
    let title = r#"{"type":"custom-title","customTitle":"half-way","sessionId":"x"}"#;
    let (head, tail) = title.split_at(20);
    write(&path, format!("{first}\n{head}").as_bytes());

    let mut warnings = Warnings::default();
    let mut fold = ClaudeFold::default();
    let pos = read_complete_lines(&path, Position::default(), &mut fold, &mut warnings).unwrap();
    assert_eq!(
        pos,
        Position {
            offset: first.len() as u64 + 1,
            line: 1
        }
    );
    assert!(
        warnings.items.is_empty(),
        "the torn line is not an error yet"
    );
    assert_eq!(
        fold.session(&path).unwrap().title.as_deref(),
        Some("first prompt")
    );

    // The writer finishes the line: the next read takes exactly it.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file, "{tail}").unwrap();
    let pos = read_complete_lines(&path, pos, &mut fold, &mut warnings).unwrap();
    assert_eq!(pos.line, 2);
    assert_eq!(pos.offset, std::fs::metadata(&path).unwrap().len());
    let session = fold.session(&path).unwrap();
    assert_eq!(session.title.as_deref(), Some("half-way"));
    assert!(warnings.items.is_empty(), "{:#?}", warnings.items);
}

#[test]
fn non_json_lines_and_unknown_records_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{ID}.jsonl"));
    let text = [
        "not json at all".to_owned(),
        user_line("real prompt", "2026-11-01T00:00:00Z"),
        r#"{"type":"brand-new-record","whatever":[1,2,{"x":null}]}"#.to_owned(),
        r#"{"type":"user","message":{"role":"user","content":42},"unknownField":true,"timestamp":"2026-11-01T00:00:01Z"}"#.to_owned(),
        "[1,2,3]".to_owned(),
        r#"{"type":"assistant","message":"not an object"}"#.to_owned(),
        "\r".to_owned(),
        String::new(),
    ]
    .join("\n");
    write(&path, text.as_bytes());
    let (fold, pos, warnings) = fold_file::<ClaudeFold>(&path);
    assert_eq!(pos.line, 7);
    let session = fold.session(&path).unwrap();
    assert_eq!(session.title.as_deref(), Some("real prompt"));
    let lines: Vec<Option<u64>> = warnings.items.iter().map(|w| w.line).collect();
    assert_eq!(lines, vec![Some(1), Some(5)]);
    assert!(warnings.items.iter().all(|w| w.path == path));
}

#[test]
fn crlf_line_endings_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{ID}.jsonl"));
    write(
        &path,
        format!(
            "{}\r\n",
            user_line("windows prompt", "2026-11-01T00:00:00Z")
        )
        .as_bytes(),
    );
    let (fold, _, warnings) = fold_file::<ClaudeFold>(&path);
    assert_eq!(
        fold.session(&path).unwrap().title.as_deref(),
        Some("windows prompt")
    );
    assert!(warnings.items.is_empty());
}

#[test]
fn lines_of_many_megabytes_are_read_and_oversized_ones_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{ID}.jsonl"));
    // 6 MB: a big tool result is read whole.
    let big = serde_json::json!({
        "type": "user", "sessionId": ID, "timestamp": "2026-11-01T00:00:02Z",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
            "content": "x".repeat(6 << 20)}]}
    })
    .to_string();
    // Past the cap: skipped with a warning, and the line after it still read.
    let huge = format!(
        "{{\"type\":\"user\",\"pad\":\"{}\"}}",
        "y".repeat(MAX_LINE_BYTES)
    );
    let text = format!(
        "{}\n{big}\n{huge}\n{}\n",
        user_line("first", "2026-11-01T00:00:00Z"),
        r#"{"type":"custom-title","customTitle":"after-the-giant","sessionId":"x"}"#
    );
    write(&path, text.as_bytes());
    let (fold, pos, warnings) = fold_file::<ClaudeFold>(&path);
    assert_eq!(
        pos,
        Position {
            offset: text.len() as u64,
            line: 4
        }
    );
    let session = fold.session(&path).unwrap();
    assert_eq!(session.title.as_deref(), Some("after-the-giant"));
    assert_eq!(
        session.last_activity,
        super::reader_support::ms("2026-11-01T00:00:02Z")
    );
    assert_eq!(warnings.items.len(), 1, "{:#?}", warnings.items);
    assert_eq!(warnings.items[0].line, Some(3));
    assert!(warnings.items[0].message.contains("longer than"));
}

#[test]
fn binary_garbage_and_empty_files_give_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.jsonl");
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    bytes.extend_from_slice(b"\n\xff\xfe{\"type\":\n\x00\x00\n");
    write(&garbage, &bytes);
    let empty = dir.path().join("empty.jsonl");
    write(&empty, b"");

    for path in [&garbage, &empty] {
        let (claude, _, w1) = fold_file::<ClaudeFold>(path);
        let (codex, _, _) = fold_file::<CodexFold>(path);
        let (grok, _, _) = fold_file::<GrokFold>(path);
        assert!(claude.session(path).is_none());
        assert!(codex.session(path).is_none());
        // Grok needs its folder's summary; updates alone name no session id here beyond the
        // folder, which is fine — but no prompt and no summary must not invent a title.
        assert_eq!(grok.session(path).and_then(|s| s.title), None);
        assert!(w1.items.iter().all(|w| w.path == **path));
    }
    assert!(fold_file::<ClaudeFold>(&empty).2.items.is_empty());
}

#[test]
fn an_unreadable_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // A folder where a transcript should be: opening works, reading fails.
    let path = dir.path().join("folder.jsonl");
    std::fs::create_dir(&path).unwrap();
    let err = read_complete_lines(
        &path,
        Position::default(),
        &mut ClaudeFold::default(),
        &mut Warnings::default(),
    )
    .unwrap_err();
    assert_eq!(err.path(), Some(path.as_path()));
    assert!(err.to_string().contains("folder.jsonl"));

    let missing = dir.path().join("gone.jsonl");
    let err = read_zstd_lines(
        &missing,
        &mut CodexFold::default(),
        &mut Warnings::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("gone.jsonl"));
}

#[cfg(unix)]
#[test]
fn unreadable_folders_and_files_are_warnings_and_the_rest_is_listed() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let projects = home.path().join(".claude/projects");
    let good = projects.join("-good").join(format!("{ID}.jsonl"));
    write(
        &good,
        format!("{}\n", user_line("ok", "2026-11-01T00:00:00Z")).as_bytes(),
    );
    let locked = projects.join("-locked");
    write(&locked.join("x.jsonl"), b"{}\n");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let privileged = std::fs::read_dir(&locked).is_ok();

    let mut warnings = Warnings::default();
    let files = claude::discover(&StoreRoots::under_home(home.path()), &mut warnings);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(files.iter().any(|f| f.path == good));
    if privileged {
        // Root reads anything: nothing to warn about, and nothing was lost.
        assert_eq!(files.len(), 2);
    } else {
        assert_eq!(files.len(), 1);
        assert_eq!(warnings.items.len(), 1);
        assert_eq!(warnings.items[0].path, locked);
    }
}

#[cfg(unix)]
#[test]
fn symlink_loops_and_dangling_links_do_not_stop_discovery() {
    let home = tempfile::tempdir().unwrap();
    let projects = home.path().join(".claude/projects");
    let slug = projects.join("-proj");
    write(
        &slug.join(format!("{ID}.jsonl")),
        format!("{}\n", user_line("ok", "2026-11-01T00:00:00Z")).as_bytes(),
    );
    // A project folder linking back to the projects root, one linking to itself, and a
    // transcript link to nowhere.
    std::os::unix::fs::symlink(&projects, projects.join("-loop")).unwrap();
    std::os::unix::fs::symlink(projects.join("-self"), projects.join("-self")).unwrap();
    std::os::unix::fs::symlink(
        home.path().join("nowhere.jsonl"),
        slug.join("dangling.jsonl"),
    )
    .unwrap();

    let mut warnings = Warnings::default();
    let files = claude::discover(&StoreRoots::under_home(home.path()), &mut warnings);
    assert_eq!(files.len(), 1, "{files:#?}");
    let sessions = sessions_of::<ClaudeFold>(&files, &mut warnings);
    assert_eq!(sessions.len(), 1);
    let warned: Vec<&Path> = warnings.items.iter().map(|w| w.path.as_path()).collect();
    assert!(
        warned.contains(&projects.join("-loop").as_path()),
        "{warned:?}"
    );
    assert!(
        warned.contains(&projects.join("-self").as_path()),
        "{warned:?}"
    );
    assert!(
        warned.contains(&slug.join("dangling.jsonl").as_path()),
        "{warned:?}"
    );

    // The Codex walk goes deeper (YYYY/MM/DD): a loop there ends too.
    let sessions_dir = home.path().join(".codex/sessions/2026");
    std::fs::create_dir_all(&sessions_dir).unwrap();
    std::os::unix::fs::symlink(home.path().join(".codex/sessions"), sessions_dir.join("11"))
        .unwrap();
    let mut warnings = Warnings::default();
    let files =
        cross_agent_stores::codex::discover(&StoreRoots::under_home(home.path()), &mut warnings);
    assert!(files.is_empty());
    assert_eq!(warnings.items.len(), 1, "{:#?}", warnings.items);
}

#[test]
fn a_shrunk_file_reads_nothing_from_a_stale_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jsonl");
    write(&path, b"{}\n");
    let mut warnings = Warnings::default();
    let stale = Position {
        offset: 10_000,
        line: 50,
    };
    let pos = read_complete_lines(&path, stale, &mut ClaudeFold::default(), &mut warnings).unwrap();
    assert_eq!(pos, stale);
}

#[test]
fn a_corrupt_grok_summary_is_a_warning_and_the_session_still_lists() {
    let home = tempfile::tempdir().unwrap();
    let dir = home
        .path()
        .join(".grok/sessions/%2Fw/01a0630c-9370-72e0-87ad-0000000000ff");
    write(&dir.join("summary.json"), b"{\"info\": {\"id\": ");
    write(
        &dir.join("updates.jsonl"),
        br#"{"timestamp":1795168860,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hello"}}}}
"#,
    );
    let mut warnings = Warnings::default();
    let files =
        cross_agent_stores::grok::discover(&StoreRoots::under_home(home.path()), &mut warnings);
    let sessions = sessions_of::<GrokFold>(&files, &mut warnings);
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].title.as_deref(), Some("hello"));
    assert_eq!(sessions[0].cwd, Some(std::path::PathBuf::from("/w")));
    assert_eq!(warnings.items.len(), 1);
    assert_eq!(warnings.items[0].path, dir.join("summary.json"));
}
