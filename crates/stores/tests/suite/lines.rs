//! The line reader: a file is read a chunk ([`CHUNK`]) at a time, lines crossing a chunk's end
//! come out whole, and lines longer than a chunk are held by at most [`LONG_LINES_AT_ONCE`]
//! readers at once in the whole process.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use cross_agent_stores::claude::ClaudeFold;
use cross_agent_stores::lines::{
    CHUNK, LONG_LINES_AT_ONCE, LineSink, Position, read_complete_lines,
};
use cross_agent_stores::model::LineContext;
use cross_agent_stores::{TranscriptFold, Warnings};
use pretty_assertions::assert_eq;

const ID: &str = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";

fn user_line(text: &str, ts: &str) -> String {
    serde_json::json!({
        "type": "user", "isSidechain": false, "cwd": "/w", "sessionId": ID,
        "timestamp": ts, "message": {"role": "user", "content": text}
    })
    .to_string()
}

/// A tool result of about `len` bytes: a line the listing steps over.
fn tool_result(len: usize, ts: &str) -> String {
    serde_json::json!({
        "type": "user", "sessionId": ID, "timestamp": ts,
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
            "content": "x\\n".repeat(len / 3)}]}
    })
    .to_string()
}

/// Collects every line handed over.
#[derive(Default)]
struct Collect(Vec<(u64, Vec<u8>)>);

impl LineSink for Collect {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, _: &mut Warnings) {
        self.0.push((at.line, line.to_vec()));
    }
}

/// The file's lines as a whole-file split gives them, numbered, blank ones left out.
fn split_whole(text: &str) -> Vec<(u64, Vec<u8>)> {
    text.split_terminator('\n')
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| (i as u64 + 1, line.as_bytes().to_vec()))
        .collect()
}

#[test]
fn lines_crossing_chunk_ends_are_read_as_the_whole_file_splits_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{ID}.jsonl"));
    // Lines of about a chunk, just under and over it, and of several chunks, so that chunk ends
    // fall inside lines of every kind; the title comes after the longest.
    let mut lines = vec![user_line("first prompt", "2026-11-01T00:00:00Z")];
    for (i, len) in [
        CHUNK - 200,
        CHUNK,
        CHUNK + 300,
        3 * CHUNK + 7,
        100,
        2 * CHUNK,
    ]
    .into_iter()
    .enumerate()
    {
        lines.push(tool_result(len, &format!("2026-11-01T00:00:{:02}Z", i + 1)));
    }
    lines.push(
        r#"{"type":"custom-title","customTitle":"after the long ones","sessionId":"x"}"#.into(),
    );
    lines.push(tool_result(5 * CHUNK, "2026-11-01T00:01:00Z"));
    let text = lines.join("\n") + "\n";
    assert!(text.len() > 8 * CHUNK);
    std::fs::write(&path, &text).unwrap();

    let mut warnings = Warnings::default();
    let mut collected = Collect::default();
    let end =
        read_complete_lines(&path, Position::default(), &mut collected, &mut warnings).unwrap();
    assert!(warnings.items.is_empty(), "{:#?}", warnings.items);
    assert_eq!(
        end,
        Position {
            offset: text.len() as u64,
            line: lines.len() as u64
        }
    );
    let whole = split_whole(&text);
    assert_eq!(collected.0.len(), whole.len());
    assert!(collected.0 == whole, "a line came out other than whole");

    // The fold summarises it as it does the lines of the whole file, fed one by one.
    let mut read = ClaudeFold::default();
    read_complete_lines(&path, Position::default(), &mut read, &mut warnings).unwrap();
    let mut fed = ClaudeFold::default();
    for (line_no, line) in &whole {
        TranscriptFold::feed_line(
            &mut fed,
            line,
            LineContext {
                path: &path,
                line: *line_no,
            },
            &mut warnings,
        );
    }
    let session = read.session(&path).unwrap();
    assert_eq!(session.title.as_deref(), Some("after the long ones"));
    assert_eq!(read.session(&path), fed.session(&path));
    assert_eq!(
        serde_json::to_string(&read).unwrap(),
        serde_json::to_string(&fed).unwrap()
    );
}

/// Counts how many long lines its readers are handed at the same time.
struct Overlap {
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    long_lines: usize,
}

impl LineSink for Overlap {
    fn feed_line(&mut self, line: &[u8], _: LineContext<'_>, _: &mut Warnings) {
        if line.len() <= CHUNK {
            return;
        }
        self.long_lines += 1;
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        // Long enough that readers not held back would all be here together.
        std::thread::sleep(Duration::from_millis(150));
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn no_more_than_a_few_long_lines_are_held_at_once_however_many_readers() {
    const READERS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\n{}\n{}\n",
        user_line("hello", "2026-11-01T00:00:00Z"),
        tool_result(3 * CHUNK, "2026-11-01T00:00:01Z"),
        user_line("bye", "2026-11-01T00:00:02Z"),
    );
    let paths: Vec<_> = (0..READERS)
        .map(|i| {
            let path = dir.path().join(format!("{i}.jsonl"));
            std::fs::write(&path, &text).unwrap();
            path
        })
        .collect();
    let now = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(READERS));
    let readers: Vec<_> = paths
        .into_iter()
        .map(|path| {
            let (now, most, start) = (now.clone(), most.clone(), start.clone());
            std::thread::spawn(move || read_counting(&path, now, most, &start))
        })
        .collect();
    let long_lines: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();

    assert_eq!(long_lines, READERS, "every reader got its long line");
    let most = most.load(Ordering::SeqCst);
    assert!(
        (1..=LONG_LINES_AT_ONCE).contains(&most),
        "{most} long lines were held at once; at most {LONG_LINES_AT_ONCE} may be"
    );
}

fn read_counting(
    path: &Path,
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    start: &Barrier,
) -> usize {
    let mut sink = Overlap {
        now,
        most,
        long_lines: 0,
    };
    let mut warnings = Warnings::default();
    start.wait();
    read_complete_lines(path, Position::default(), &mut sink, &mut warnings).unwrap();
    assert!(warnings.items.is_empty(), "{:#?}", warnings.items);
    sink.long_lines
}
