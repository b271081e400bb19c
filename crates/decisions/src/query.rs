//! Questions to the log: the decisions in a time window that match some conditions, or how many
//! there are grouped by any fields — what `cross-agent decisions` prints.
//!
//! Reads the files directly (no daemon): the rotated files oldest first, then the current one.
//! A file whose records all lie outside the window is not read at all (its first and last
//! records are looked at, with a minute's slack for writers' clocks). In the files that are
//! read, a line's `at` is compared as a string before anything else is parsed
//! ([`crate::line`]). With a `--since`, each file is read from the window's start, found by
//! bisecting it ([`crate::ranges`]); what is read is cut into pieces split at newlines, scanned on
//! every core.
//!
//! Lines that are not records (torn by a crash, not JSON, no `at`) are skipped and counted in
//! [`Stats::bad_lines`], never fatal. A line outside the window is skipped before it is parsed,
//! so a bad line there is not counted.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use memchr::memchr_iter;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::line::{self, Found, Wanted};
use crate::ranges;
use crate::rotate::{self, CURRENT_FILE};
use crate::{clock, redact};

/// Records this close to the window's edge keep a file from being skipped: stamps from several
/// processes are only as ordered as their clocks.
const EDGE_SLACK_MS: i64 = 60_000;

/// A field named in `--by` or `--where`: a top-level key (`kind`, `guard`, `session`) or a dotted
/// path into nested objects (`details.guard`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    segments: Vec<String>,
}

impl FieldPath {
    pub fn parse(text: &str) -> Result<FieldPath> {
        let text = text.trim();
        let segments: Vec<String> = text.split('.').map(str::to_owned).collect();
        if text.is_empty() || segments.iter().any(String::is_empty) {
            return Err(Error::BadField {
                text: text.to_owned(),
            });
        }
        Ok(FieldPath {
            text: text.to_owned(),
            segments,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }
}

/// `FIELD=VALUE`: the field's value, as text (a string as itself, a number or boolean as
/// written, an object as compact JSON), equals `VALUE`. `FIELD=` matches a field that is
/// missing, null or empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub field: FieldPath,
    pub value: String,
}

impl Condition {
    pub fn parse(text: &str) -> Result<Condition> {
        let Some((field, value)) = text.split_once('=') else {
            return Err(Error::BadCondition {
                text: text.to_owned(),
            });
        };
        Ok(Condition {
            field: FieldPath::parse(field)?,
            value: value.to_owned(),
        })
    }

    fn matches(&self, found: Option<&Found<'_>>) -> bool {
        match found.and_then(Found::text) {
            Some(text) => *text == self.value,
            None => self.value.is_empty(),
        }
    }
}

/// A point in time for `--since` / `--until`: a duration back from `now_ms` in humantime's
/// forms (`90m`, `24h`, `2d`, `1w`, `1h30m`, `2h 15min`) or an RFC 3339 time. Returns the
/// canonical stamp.
pub fn parse_time(text: &str, now_ms: i64) -> Result<String> {
    let trimmed = text.trim();
    if let Some(stamp) = clock::canonical(trimmed) {
        return Ok(stamp.into_owned());
    }
    let bad = |source| Error::BadTime {
        text: text.to_owned(),
        source,
    };
    let back = humantime::parse_duration(trimmed).map_err(|e| bad(Some(e)))?;
    // A bare "0" is humantime's one duration without a unit; every other needs one.
    if trimmed == "0" {
        return Err(bad(None));
    }
    let back_ms = i64::try_from(back.as_millis()).map_err(|_| bad(None))?;
    Ok(clock::format_millis(now_ms.saturating_sub(back_ms)))
}

/// What to look for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Only records at or after this canonical stamp ([`parse_time`]).
    pub since: Option<String>,
    /// Only records before this canonical stamp.
    pub until: Option<String>,
    /// Only these kinds (any of them); empty = every kind.
    pub kinds: Vec<String>,
    /// Every condition must hold.
    pub conditions: Vec<Condition>,
    /// Count by these fields instead of listing records.
    pub group_by: Vec<FieldPath>,
}

/// One group of a grouped count: the fields' values (as text; `None` = missing) and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub values: Vec<Option<String>>,
    pub count: u64,
}

/// The answer to a [`Query`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The matching records, as written, oldest first (newest last).
    Records(Vec<String>),
    /// Counts by the `group_by` fields, largest first (ties by value).
    Groups(Vec<Group>),
}

/// What a query read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Log files found, and how many were skipped unread because of the window.
    pub files: usize,
    pub files_skipped: usize,
    pub bytes_read: u64,
    /// Non-empty lines seen in the files read.
    pub lines: u64,
    /// Lines skipped because they are not records (torn, not JSON, no `at`).
    pub bad_lines: u64,
    /// Records that matched.
    pub matched: u64,
    /// Files that could not be read, with why (the rest were still read).
    pub unreadable: Vec<(PathBuf, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub answer: Answer,
    pub stats: Stats,
}

/// The log's files in `dir`, opened, oldest first, each once (see [`open_files`]).
struct LogFile {
    path: PathBuf,
    file: File,
}

/// Opens the current file first, then lists and opens the rotated ones, and drops a file seen
/// twice (by inode). A rotation between the two steps then neither hides the renamed file (it
/// is listed) nor reads it twice; a file deleted by retention meanwhile is passed over.
fn open_files(dir: &Path, stats: &mut Stats) -> Result<Vec<LogFile>> {
    let current_path = dir.join(CURRENT_FILE);
    let current = match File::open(&current_path) {
        Ok(file) => Some(file),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io("open", &current_path, e)),
    };
    let mut files = Vec::new();
    let mut seen = Vec::new();
    for (_, path) in rotate::rotated_files(dir)? {
        match File::open(&path) {
            Ok(file) => {
                if let Ok(meta) = file.metadata() {
                    seen.push((meta.dev(), meta.ino()));
                }
                files.push(LogFile { path, file });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => stats.unreadable.push((path, e.to_string())),
        }
    }
    if let Some(file) = current {
        let id = file.metadata().ok().map(|m| (m.dev(), m.ino()));
        if id.is_none_or(|id| !seen.contains(&id)) {
            files.push(LogFile {
                path: current_path,
                file,
            });
        }
    }
    Ok(files)
}

/// The query prepared for scanning: the window, and the slots of the fields it reads.
struct Plan<'q> {
    query: &'q Query,
    since_ms: Option<i64>,
    until_ms: Option<i64>,
    wanted: Wanted,
}

/// Slots: `at`, `kind`, then the conditions', then the groups'.
const AT: usize = 0;
const KIND: usize = 1;
const FIRST_FIELD: usize = 2;

impl<'q> Plan<'q> {
    fn new(query: &'q Query) -> Plan<'q> {
        let mut paths: Vec<&[String]> = Vec::new();
        let at = ["at".to_owned()];
        let kind = ["kind".to_owned()];
        paths.push(&at);
        paths.push(&kind);
        paths.extend(query.conditions.iter().map(|c| c.field.segments()));
        paths.extend(query.group_by.iter().map(FieldPath::segments));
        Plan {
            query,
            since_ms: query.since.as_deref().and_then(clock::to_millis),
            until_ms: query.until.as_deref().and_then(clock::to_millis),
            wanted: Wanted::new(&paths),
        }
    }

    fn in_window(&self, stamp: &str) -> bool {
        self.query.since.as_deref().is_none_or(|s| stamp >= s)
            && self.query.until.as_deref().is_none_or(|u| stamp < u)
    }

    /// Whether a file's records may fall in the window, from its first and last record.
    fn may_hold(&self, file: &File) -> bool {
        let Ok(meta) = file.metadata() else {
            return true;
        };
        if meta.len() == 0 {
            return false;
        }
        if let Some(since) = self.since_ms
            && let Some(last) =
                rotate::last_stamp(file, meta.len()).and_then(|s| clock::to_millis(&s))
            && last.saturating_add(EDGE_SLACK_MS) < since
        {
            return false;
        }
        if let Some(until) = self.until_ms
            && let Some(first) = rotate::first_stamp(file).and_then(|s| clock::to_millis(&s))
            && first.saturating_sub(EDGE_SLACK_MS) >= until
        {
            return false;
        }
        true
    }
}

/// What one file contributed.
#[derive(Default)]
struct Partial {
    lines: u64,
    bad_lines: u64,
    matched: u64,
    bytes: u64,
    records: Vec<(String, String)>,
    /// Encoded group key → index into `groups`.
    index: HashMap<String, usize>,
    groups: Vec<Group>,
    error: Option<String>,
}

/// Runs `query` over the log in `dir`. A missing log is an empty answer.
pub fn run(dir: &Path, query: &Query) -> Result<Report> {
    let mut stats = Stats::default();
    let files = open_files(dir, &mut stats)?;
    stats.files = files.len();
    let plan = Plan::new(query);
    let to_read: Vec<&LogFile> = files.iter().filter(|f| plan.may_hold(&f.file)).collect();
    stats.files_skipped = files.len() - to_read.len();

    // Each file from the start of the window (found by bisection), cut into pieces that the
    // cores scan together, in order; each worker thread reuses its line buffer.
    let mut pieces = Vec::new();
    for (i, log) in to_read.iter().enumerate() {
        let len = match log.file.metadata() {
            Ok(meta) => meta.len(),
            Err(e) => {
                stats.unreadable.push((log.path.clone(), e.to_string()));
                continue;
            }
        };
        let start = match plan.since_ms {
            Some(since) => {
                ranges::window_start(&log.file, len, since.saturating_sub(EDGE_SLACK_MS))
            }
            None => 0,
        };
        ranges::pieces(i, start, len, &mut pieces);
    }
    let results: Vec<Partial> = pieces
        .par_iter()
        .map_init(Vec::new, |buf, piece| match to_read.get(piece.file) {
            Some(log) => scan_piece(&log.file, *piece, &plan, buf),
            None => Partial::default(),
        })
        .collect();

    let mut records: Vec<(String, String)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    for (i, partial) in results.into_iter().enumerate() {
        stats.lines += partial.lines;
        stats.bad_lines += partial.bad_lines;
        stats.matched += partial.matched;
        stats.bytes_read += partial.bytes;
        if let Some(error) = partial.error
            && let Some(log) = pieces.get(i).and_then(|piece| to_read.get(piece.file))
        {
            stats.unreadable.push((log.path.clone(), error));
        }
        records.extend(partial.records);
        for (key, at) in partial.index {
            let Some(group) = partial.groups.get(at) else {
                continue;
            };
            match index.get(&key) {
                Some(&j) => {
                    if let Some(total) = groups.get_mut(j) {
                        total.count += group.count;
                    }
                }
                None => {
                    index.insert(key, groups.len());
                    groups.push(group.clone());
                }
            }
        }
    }

    let answer = if query.group_by.is_empty() {
        // Files are in age order already; the stable sort only fixes stamps that writers'
        // clocks put out of order.
        records.sort_by(|a, b| a.0.cmp(&b.0));
        Answer::Records(records.into_iter().map(|(_, line)| line).collect())
    } else {
        groups.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.values.cmp(&b.values)));
        Answer::Groups(groups)
    };
    Ok(Report { answer, stats })
}

fn scan_piece(file: &File, piece: ranges::Piece, plan: &Plan<'_>, buf: &mut Vec<u8>) -> Partial {
    let mut partial = Partial::default();
    match ranges::read_piece(file, piece, buf) {
        Ok(read) => partial.bytes = read,
        Err(e) => {
            partial.error = Some(e.to_string());
            return partial;
        }
    }
    let mut out: Vec<Option<Found<'_>>> = Vec::new();
    let mut key = String::new();
    let mut start = 0;
    let ends = memchr_iter(b'\n', buf).chain(std::iter::once(buf.len()));
    for end in ends {
        let Some(raw) = buf.get(start..end) else {
            break;
        };
        start = end + 1;
        let line = raw.trim_ascii();
        if line.is_empty() {
            continue;
        }
        partial.lines += 1;
        let fast = line::fast_stamp(line);
        if let Some(stamp) = fast
            && !plan.in_window(stamp)
        {
            continue;
        }
        if line::extract(line, &plan.wanted, &mut out).is_err() {
            partial.bad_lines += 1;
            continue;
        }
        let stamp = match fast {
            Some(stamp) => stamp.to_owned(),
            None => match out.get(AT).and_then(Option::as_ref) {
                Some(Found::Str(text)) => match clock::canonical(text) {
                    Some(stamp) => stamp.into_owned(),
                    None => {
                        partial.bad_lines += 1;
                        continue;
                    }
                },
                Some(Found::Other(_)) | None => {
                    partial.bad_lines += 1;
                    continue;
                }
            },
        };
        if fast.is_none() && !plan.in_window(&stamp) {
            continue;
        }
        let query = plan.query;
        if !query.kinds.is_empty() {
            let kind = out.get(KIND).and_then(Option::as_ref).and_then(Found::text);
            if !kind.is_some_and(|k| query.kinds.iter().any(|want| *want == *k)) {
                continue;
            }
        }
        let conditions_hold = query.conditions.iter().enumerate().all(|(i, condition)| {
            condition.matches(out.get(FIRST_FIELD + i).and_then(Option::as_ref))
        });
        if !conditions_hold {
            continue;
        }
        partial.matched += 1;
        if query.group_by.is_empty() {
            partial
                .records
                .push((stamp, String::from_utf8_lossy(line).into_owned()));
            continue;
        }
        let first_group = FIRST_FIELD + query.conditions.len();
        let values = out.get(first_group..).unwrap_or_default();
        // An unambiguous lookup key without allocating per line: `-` for missing, else
        // length-prefixed text.
        key.clear();
        for value in values {
            match value.as_ref().and_then(Found::text) {
                Some(text) => {
                    let _ = write!(key, "{}:", text.len());
                    key.push_str(&text);
                }
                None => key.push('-'),
            }
        }
        match partial.index.get(key.as_str()) {
            Some(&i) => {
                if let Some(group) = partial.groups.get_mut(i) {
                    group.count += 1;
                }
            }
            None => {
                partial.index.insert(key.clone(), partial.groups.len());
                partial.groups.push(Group {
                    values: values
                        .iter()
                        .map(|v| v.as_ref().and_then(Found::text).map(|t| t.into_owned()))
                        .collect(),
                    count: 1,
                });
            }
        }
    }
    partial
}

/// Whether a query's field would only ever show `[withheld]` (it names a withheld key): the CLI
/// warns, so nobody wonders why every value is the same.
pub fn names_withheld_field(field: &FieldPath) -> bool {
    field
        .segments()
        .last()
        .is_some_and(|last| redact::is_withheld_key(last))
}
