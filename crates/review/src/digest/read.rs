//! Reading a transcript from both ends without reading the middle: the head forward in blocks
//! until the first human message, the end backwards in growing windows until the caller has
//! what it needs. A 100 MB transcript costs a few hundred KB of reading in the usual case.
//!
//! Every line goes through the stores crate's own turn reader ([`TurnReader`]), so the four
//! agents' formats are read exactly as the rest of the bridge reads them; a small sniff of the
//! same line picks out what the turn model does not keep (the model name, the record's kind,
//! timestamp and id). Half-written last lines, malformed lines, over-long lines and records the
//! digest does not read are skipped and counted, never fatal.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use cross_agent_stores::lines::{LineSink, MAX_LINE_BYTES};
use cross_agent_stores::turns::TurnReader;
use cross_agent_stores::{Agent, LineContext, LineProblem, UnixMillis, Warnings};
use serde::Deserialize;

use crate::error::{Result, ReviewError};

/// The head is read forward in blocks of this size.
const HEAD_BLOCK: usize = 64 << 10;
/// The first window at the end; each next one is at least [`GROWTH`] times larger, up to the
/// cap.
const FIRST_TAIL_WINDOW: u64 = 256 << 10;
const GROWTH: u64 = 2;

/// What reading one byte range produced.
#[derive(Debug)]
pub(crate) struct Parser {
    agent: Agent,
    path: PathBuf,
    pub(crate) reader: TurnReader,
    /// The latest model name a record carried.
    pub(crate) model: Option<String>,
    pub(crate) counts: LineCounts,
    /// The last timestamp and record id (Claude's `uuid`, Copilot's `id`) seen, for the
    /// reviewed position:
    /// Claude ends a transcript with records that carry neither.
    pub(crate) last_timestamp: Option<UnixMillis>,
    pub(crate) last_record_id: Option<String>,
    pub(crate) warnings: Warnings,
    line_no: u64,
}

/// Lines skipped while reading, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LineCounts {
    pub(crate) malformed: usize,
    pub(crate) too_long: usize,
    /// Records of a kind the digest does not read (metadata, snapshots, unknown types).
    pub(crate) other_records: usize,
    /// Codex `compacted` records: the summary that replaced earlier history.
    pub(crate) compacted: usize,
}

/// The few fields of any agent's record the turn reader does not keep.
#[derive(Deserialize)]
struct Sniff<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<SniffModel<'a>>,
    #[serde(borrow, default)]
    payload: Option<SniffModel<'a>>,
}

#[derive(Deserialize)]
struct SniffModel<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
}

/// The same of a Copilot SDK event (`docs/observed/copilot.md` §4.3): its `id`, and the model
/// its `data` names — `model` on the assistant's and tools' events, `newModel` on
/// `session.model_change`, `selectedModel` on `session.start` and `session.resume`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CopilotSniff<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    /// A sub-agent's event: its model is not the session's.
    #[serde(default)]
    agent_id: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    data: Option<CopilotModel<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CopilotModel<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    new_model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    selected_model: Option<Cow<'a, str>>,
}

/// The Copilot events the turn reader makes turns of (`cross_agent_stores::turns`).
const COPILOT_TURN_EVENTS: [&str; 6] = [
    "user.message",
    "assistant.message",
    "tool.execution_start",
    "tool.execution_complete",
    "abort",
    "session.error",
];

impl Parser {
    pub(crate) fn new(agent: Agent, path: &Path) -> Parser {
        Parser {
            agent,
            path: path.to_path_buf(),
            reader: TurnReader::new(agent, path),
            model: None,
            counts: LineCounts::default(),
            last_timestamp: None,
            last_record_id: None,
            warnings: Warnings::default(),
            line_no: 0,
        }
    }

    /// Feeds one complete line (without its newline).
    fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        self.line_no += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let at = LineContext {
            path: &self.path,
            line: self.line_no,
        };
        if line.len() > MAX_LINE_BYTES {
            self.counts.too_long += 1;
            self.warnings.push_line(
                at,
                LineProblem::TooLong,
                format!("a line of {} bytes, skipped unread", line.len()),
            );
            return;
        }
        let before = self.warnings.items.len();
        self.reader.feed_line(line, at, &mut self.warnings);
        if self.warnings.items.len() > before {
            self.counts.malformed += 1;
            return;
        }
        self.sniff(line);
    }

    fn sniff(&mut self, line: &[u8]) {
        if self.agent == Agent::Copilot {
            return self.sniff_copilot(line);
        }
        let Ok(rec) = serde_json::from_slice::<Sniff<'_>>(line) else {
            // The turn reader took it; a shape the sniff does not know changes nothing here.
            return;
        };
        if let Some(at) = rec.timestamp.as_deref().and_then(UnixMillis::parse_rfc3339) {
            self.last_timestamp = Some(at);
        }
        if let Some(id) = rec.uuid {
            self.last_record_id = Some(id.into_owned());
        }
        let kind = rec.kind.as_deref();
        let model = match self.agent {
            Agent::Claude => match kind {
                Some("user") => None,
                Some("assistant") => rec.message.and_then(|m| m.model),
                _ => {
                    self.counts.other_records += 1;
                    None
                }
            },
            Agent::Codex => match kind {
                Some("turn_context") => rec.payload.and_then(|p| p.model),
                Some("event_msg" | "response_item" | "session_meta") => None,
                Some("compacted") => {
                    self.counts.compacted += 1;
                    None
                }
                _ => {
                    self.counts.other_records += 1;
                    None
                }
            },
            // Grok's lines are ACP notifications; the turn reader takes what it knows.
            Agent::Grok | Agent::Copilot => None,
        };
        self.note_model(model);
    }

    fn sniff_copilot(&mut self, line: &[u8]) {
        let Ok(rec) = serde_json::from_slice::<CopilotSniff<'_>>(line) else {
            return;
        };
        if let Some(at) = rec.timestamp.as_deref().and_then(UnixMillis::parse_rfc3339) {
            self.last_timestamp = Some(at);
        }
        if let Some(id) = rec.id {
            self.last_record_id = Some(id.into_owned());
        }
        let kind = rec.kind.as_deref().unwrap_or_default();
        if rec.agent_id.is_some() {
            self.counts.other_records += 1;
            return;
        }
        if kind == "session.compaction_complete" {
            self.counts.compacted += 1;
        } else if !COPILOT_TURN_EVENTS.contains(&kind) {
            self.counts.other_records += 1;
        }
        let model = rec
            .data
            .and_then(|d| d.model.or(d.new_model).or(d.selected_model));
        self.note_model(model);
    }

    fn note_model(&mut self, model: Option<Cow<'_, str>>) {
        if let Some(model) = model.filter(|m| !m.is_empty() && m != "<synthetic>") {
            self.model = Some(model.into_owned());
        }
    }

    /// Feeds every complete line of `bytes` (each ends in `\n`; a last piece without one is
    /// fed too only when `last_is_whole`).
    pub(crate) fn lines(&mut self, bytes: &[u8], last_is_whole: bool) {
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', bytes) {
            self.line(&bytes[start..nl]);
            start = nl + 1;
        }
        if last_is_whole && start < bytes.len() {
            self.line(&bytes[start..]);
        }
    }
}

impl LineSink for Parser {
    fn feed_line(&mut self, line: &[u8], _at: LineContext<'_>, _warnings: &mut Warnings) {
        self.line(line);
    }
}

/// How the head was read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeadRead {
    pub(crate) bytes: u64,
    /// The search stopped at the cap before finding what it looked for.
    pub(crate) capped: bool,
}

/// Reads `file` forward from its start in blocks until `done` says the parsed lines hold what
/// is wanted, the file ends, or `cap` bytes were read. A line cut by the cap is not fed.
pub(crate) fn read_head(
    file: &mut File,
    path: &Path,
    agent: Agent,
    cap: u64,
    mut done: impl FnMut(&Parser) -> bool,
) -> Result<(Parser, HeadRead)> {
    let mut parser = Parser::new(agent, path);
    file.seek(SeekFrom::Start(0))
        .map_err(|e| ReviewError::io(path, e))?;
    let mut carry: Vec<u8> = Vec::new();
    let mut block = vec![0u8; HEAD_BLOCK];
    let mut read: u64 = 0;
    loop {
        if done(&parser) {
            return Ok((
                parser,
                HeadRead {
                    bytes: read,
                    capped: false,
                },
            ));
        }
        if read >= cap {
            return Ok((
                parser,
                HeadRead {
                    bytes: read,
                    capped: true,
                },
            ));
        }
        let n = read_some(file, &mut block, path)?;
        if n == 0 {
            // The end: a half-written last line is left alone.
            return Ok((
                parser,
                HeadRead {
                    bytes: read,
                    capped: false,
                },
            ));
        }
        read += n as u64;
        carry.extend_from_slice(&block[..n]);
        if let Some(last_nl) = memchr::memrchr(b'\n', &carry) {
            parser.lines(&carry[..=last_nl], /*last_is_whole*/ false);
            carry.drain(..=last_nl);
        } else if carry.len() > MAX_LINE_BYTES {
            // One line longer than any record worth holding: drop what is held and skip the
            // rest of it.
            parser.counts.too_long += 1;
            carry.clear();
            skip_to_newline(file, &mut block, path, &mut read)?;
        }
    }
}

fn skip_to_newline(file: &mut File, block: &mut [u8], path: &Path, read: &mut u64) -> Result<()> {
    loop {
        let n = read_some(file, block, path)?;
        if n == 0 {
            return Ok(());
        }
        *read += n as u64;
        if let Some(nl) = memchr::memchr(b'\n', &block[..n]) {
            // Step back to just after the newline.
            let back = (n - nl - 1) as i64;
            file.seek(SeekFrom::Current(-back))
                .map_err(|e| ReviewError::io(path, e))?;
            *read -= back as u64;
            return Ok(());
        }
    }
}

fn read_some(file: &mut File, block: &mut [u8], path: &Path) -> Result<usize> {
    loop {
        match file.read(block) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReviewError::io(path, e)),
        }
    }
}

/// How the end was read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TailRead {
    /// Where the first whole line of the final window starts.
    pub(crate) from: u64,
    /// Just after the last complete line: the reviewed position.
    pub(crate) to: u64,
    /// Bytes read from the end.
    pub(crate) bytes: u64,
    /// The window reached the start of the file.
    pub(crate) reached_start: bool,
    /// The window stopped at the cap before the caller had what it wanted.
    pub(crate) capped: bool,
    /// The file ended in a line without its newline (being written): skipped.
    pub(crate) partial_last_line: bool,
}

/// Reads `file` (of `len` bytes) backwards in growing windows, parsing each window from its
/// first whole line to its last complete line, until `judge` says the parse holds enough
/// (`None`), the window reaches the file's start, or it reaches `cap` bytes. Otherwise `judge`
/// names the window it estimates would be enough, and the next one is at least that and at
/// least [`GROWTH`] times the last (so a poor estimate still ends in a few rounds). Returns the
/// last parse, what `judge` made of it, and where it read.
pub(crate) fn read_tail<T>(
    file: &mut File,
    path: &Path,
    agent: Agent,
    len: u64,
    cap: u64,
    mut judge: impl FnMut(&Parser, u64) -> (T, Option<u64>),
) -> Result<(Parser, T, TailRead)> {
    // `held` is the file's bytes [start, len).
    let mut held: Vec<u8> = Vec::new();
    let mut start = len;
    let mut window = FIRST_TAIL_WINDOW.min(cap.max(1));
    loop {
        let new_start = len.saturating_sub(window);
        if new_start < start {
            let mut more = vec![0u8; (start - new_start) as usize];
            file.seek(SeekFrom::Start(new_start))
                .map_err(|e| ReviewError::io(path, e))?;
            file.read_exact(&mut more)
                .map_err(|e| ReviewError::io(path, e))?;
            more.extend_from_slice(&held);
            held = more;
            start = new_start;
        }
        let reached_start = start == 0;
        let capped = !reached_start && window >= cap;
        // A window that starts mid-line drops up to its first newline (that line began
        // before it); one that starts at 0 keeps everything.
        let first = if reached_start {
            Some(0)
        } else {
            memchr::memchr(b'\n', &held).map(|nl| nl + 1)
        };
        let last = memchr::memrchr(b'\n', &held).map(|nl| nl + 1);
        let partial_last_line = held.last().is_some_and(|b| *b != b'\n');
        let mut parser = Parser::new(agent, path);
        let (from, to) = match (first, last) {
            (Some(first), Some(last)) if first <= last => {
                parser.lines(&held[first..last], /*last_is_whole*/ false);
                (start + first as u64, start + last as u64)
            }
            // No complete line in the window yet.
            _ => (start, start),
        };
        let (value, wanted) = judge(&parser, to - from);
        let enough = wanted.is_none();
        if enough || reached_start || capped {
            return Ok((
                parser,
                value,
                TailRead {
                    from,
                    to,
                    bytes: len - start,
                    reached_start,
                    capped: capped && !enough,
                    partial_last_line,
                },
            ));
        }
        window = window
            .saturating_mul(GROWTH)
            .max(wanted.unwrap_or(0))
            .min(cap);
    }
}
