//! The digest: what a reviewer is shown of one session (docs/review.md).
//!
//! - the **opening goal**: the first message a person wrote, from the head of the transcript;
//! - a **bounded tail**: the most recent messages — the person's, the agent's text, and each
//!   tool call as its name and a short summary of its arguments — newest kept first until the
//!   token budget is spent, shown oldest first;
//! - the **latest real instruction**: the last message a person wrote;
//! - the session's **model family**, from the model the transcript records ([`family`]);
//! - the **reviewed position**: the byte offset just after the last complete line read, with
//!   that record's timestamp and id, so a later guard can tell whether a person wrote after it
//!   ([`human_messages_after`]).
//!
//! Left out, and counted: bridge envelopes and the turns they opened (work done for a peer),
//! `BRIDGE REPLY` / `DELIVERY FAILED` / `PROGRESS` turns, reminders and injected context,
//! compaction summaries, tool output, and lines that are malformed, too long or half-written.
//! Which user message a person wrote is [`cross_agent_stores::human`]'s rule, shared with the
//! handoff brief.
//!
//! Budgets are in **estimated tokens**: one token per four characters (Unicode scalar values),
//! rounded up — close to what the Anthropic and OpenAI tokenizers give for English prose and
//! code, and never a reason to hold a tokenizer's tables.

pub mod family;
mod read;

use std::fs::File;
use std::path::{Path, PathBuf};

use cross_agent_stores::human::{self, UserText};
use cross_agent_stores::scan::{self, ScanOptions};
use cross_agent_stores::turns::{Role, Transcript, Turn, TurnItem};
use cross_agent_stores::{Agent, StoreRoots, UnixMillis, Warnings};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use family::{FamilySource, ModelFamily, SessionModel, family_of_model};

use crate::error::{Result, ReviewError};
use read::{HeadRead, Parser, TailRead};

/// How much of a session the digest holds and how far it looks (docs/review.md "Bounds").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The opening goal, at most (estimated tokens).
    pub goal_tokens: usize,
    /// The tail, all entries together.
    pub tail_tokens: usize,
    /// The latest instruction.
    pub instruction_tokens: usize,
    /// One message of the tail: a longer one keeps its start and its end.
    pub entry_tokens: usize,
    /// A tool call's argument summary, in characters.
    pub tool_summary_chars: usize,
    /// How far into the file the opening goal is looked for, in bytes.
    pub head_bytes: u64,
    /// How far back from the end the tail and the latest instruction are looked for.
    pub tail_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            goal_tokens: 2_000,
            tail_tokens: 12_000,
            instruction_tokens: 2_000,
            entry_tokens: 1_500,
            tool_summary_chars: 120,
            head_bytes: 8 << 20,
            tail_bytes: 16 << 20,
        }
    }
}

/// The estimated token count of `text`: a quarter of its characters, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// A message quoted within a budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Excerpt {
    pub text: String,
    pub at: Option<UnixMillis>,
    /// The estimated tokens of `text` as quoted.
    pub tokens: usize,
    /// The message was longer: its middle was cut (marked `[…]`).
    pub clipped: bool,
}

/// One entry of the tail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TailEntry {
    /// A message a person wrote.
    User {
        text: String,
        at: Option<UnixMillis>,
        clipped: bool,
    },
    /// The agent's text.
    Assistant {
        text: String,
        at: Option<UnixMillis>,
        clipped: bool,
    },
    /// A tool the agent called: its name and a one-line summary of its arguments (the output
    /// is left out).
    ToolCall {
        name: String,
        summary: String,
        at: Option<UnixMillis>,
    },
    /// A turn the bridge delivered, left out: a peer's request and the work done for it, or a
    /// reply or notice the bridge returned.
    Bridged {
        what: BridgedTurn,
        at: Option<UnixMillis>,
    },
}

/// What opened a turn the bridge delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BridgedTurn {
    PeerRequest,
    ReplyOrNotice,
}

impl TailEntry {
    /// Its estimated tokens (what the budget counts).
    pub fn tokens(&self) -> usize {
        match self {
            TailEntry::User { text, .. } | TailEntry::Assistant { text, .. } => {
                estimate_tokens(text)
            }
            TailEntry::ToolCall { name, summary, .. } => {
                estimate_tokens(name) + estimate_tokens(summary)
            }
            TailEntry::Bridged { .. } => 8,
        }
    }
}

/// Where the review read up to: a guard compares later records against it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewedPosition {
    /// The byte just after the last complete line read.
    pub offset: u64,
    /// The latest timestamp a record read carried.
    pub timestamp: Option<UnixMillis>,
    /// The id of the last record read that has one (Claude's `uuid`, a Copilot event's `id`;
    /// Codex and Grok give none): Claude ends a transcript with bookkeeping records that carry
    /// no id.
    pub record_id: Option<String>,
}

/// What was left out, in the part read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Peer requests in the bridge's envelope, each with the turn it opened.
    pub bridge_messages: usize,
    /// `BRIDGE REPLY`, `DELIVERY FAILED` and `PROGRESS` turns.
    pub bridge_notices: usize,
    /// Entries of those turns.
    pub bridged_items: usize,
    /// Summaries the agent wrote when it compacted (Claude's messages, Codex's `compacted`,
    /// Copilot's `session.compaction_complete`).
    pub compact_summaries: usize,
    /// Reminders, context blocks and command echoes in the user role.
    pub injected: usize,
    /// Tool results.
    pub tool_outputs: usize,
    /// Lines that are not JSON records.
    pub malformed_lines: usize,
    /// Lines over the stores' line limit, skipped unread.
    pub too_long_lines: usize,
    /// Records of a kind the digest does not read (metadata, snapshots, unknown types).
    pub other_records: usize,
    /// The file ended in a line still being written.
    pub partial_last_line: bool,
}

/// How much was read, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadStats {
    pub file_bytes: u64,
    /// Read from the start looking for the opening goal (0 when the tail covered the file).
    pub head_bytes: u64,
    /// Read from the end.
    pub tail_bytes: u64,
    /// Where the first whole line the tail read starts.
    pub tail_from: u64,
    /// The tail's window reached the start: the whole file was read once.
    pub whole_file: bool,
    /// The opening goal was looked for up to `head_bytes` and not found.
    pub goal_search_capped: bool,
    /// The tail or the latest instruction was looked for up to `tail_bytes` and not complete.
    pub tail_search_capped: bool,
}

/// What a reviewer is shown of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    pub agent: Agent,
    pub session_id: String,
    pub path: PathBuf,
    pub model: SessionModel,
    pub opening_goal: Option<Excerpt>,
    /// The last message a person wrote (the opening goal itself when it is the only one).
    pub latest_instruction: Option<Excerpt>,
    /// Oldest first.
    pub tail: Vec<TailEntry>,
    pub tail_tokens: usize,
    /// The tail stopped at its budget: there is more before it.
    pub tail_truncated: bool,
    pub reviewed_to: ReviewedPosition,
    pub skipped: Skipped,
    pub read: ReadStats,
    pub limits: Limits,
}

/// Finds session `id` in the agents' stores (through the session index, whose cache file is
/// used when given) and digests it. A Copilot session's transcript is the Copilot SDK's
/// `events.jsonl` of its default chat (`docs/observed/copilot.md` §4.2–4.3), not the
/// `session.db` it is listed by.
pub fn digest_session(
    roots: &StoreRoots,
    cache_file: Option<PathBuf>,
    id: &str,
    limits: &Limits,
    warnings: &mut Warnings,
) -> Result<Digest> {
    let listing = scan::list_sessions(
        roots,
        &ScanOptions {
            cache_file,
            refresh: Default::default(),
            agents: Vec::new(),
        },
    );
    warnings.items.extend(listing.warnings);
    let Some(session) = listing.sessions.into_iter().find(|s| s.session_id == id) else {
        let looked: Vec<String> = [Agent::Claude, Agent::Codex, Agent::Grok, Agent::Copilot]
            .iter()
            .filter_map(|a| roots.root(*a).map(|r| r.display().to_string()))
            .collect();
        return Err(ReviewError::SessionNotFound {
            id: id.to_owned(),
            looked: looked.join(", "),
        });
    };
    let path = match session.agent {
        Agent::Copilot => copilot_events(roots, &session)?,
        Agent::Claude | Agent::Codex | Agent::Grok => session.path.clone(),
    };
    digest_file(session.agent, &session.session_id, &path, limits, warnings)
}

/// The SDK events file of a Copilot session's default chat, or why there is none.
fn copilot_events(roots: &StoreRoots, session: &cross_agent_stores::Session) -> Result<PathBuf> {
    let no = |why: String| ReviewError::NoTranscript {
        id: session.session_id.clone(),
        agent: Agent::Copilot,
        why,
    };
    let details = session
        .copilot
        .as_deref()
        .ok_or_else(|| no("the listing carries none of its Copilot details".to_owned()))?;
    if details.sdk_session_id.is_none() {
        return Err(no(format!(
            "its session.db ({}) names no default chat (defaultChatProviderData has no \
             sdkSessionId); send it a first message in VS Code",
            session.path.display()
        )));
    }
    cross_agent_stores::copilot::events_of(&roots.copilot, details).ok_or_else(|| {
        no(format!(
            "no Copilot SDK session folder is known for the editor at {} (set COPILOT_HOME or \
             CROSS_AGENT_COPILOT_* to where ~/.copilot/session-state is), or its SDK session \
             id is not a plain name",
            details.user_data_dir
        ))
    })
}

/// Digests the transcript at `path` (Claude's or Codex's `.jsonl`, a `.jsonl.zst` rollout,
/// Grok's session folder or `updates.jsonl`, or the Copilot SDK session's folder or
/// `events.jsonl`).
pub fn digest_file(
    agent: Agent,
    session_id: &str,
    path: &Path,
    limits: &Limits,
    warnings: &mut Warnings,
) -> Result<Digest> {
    let path = transcript_file(agent, path)?;
    if cross_agent_stores::lines::is_zstd_path(&path) {
        return digest_compressed(agent, session_id, &path, limits, warnings);
    }
    let mut file = open_no_follow(&path)?;
    let len = file
        .metadata()
        .map_err(|e| ReviewError::io(&path, e))?
        .len();

    let (tail_parser, pick, tail_read) = read::read_tail(
        &mut file,
        &path,
        agent,
        len,
        limits.tail_bytes,
        |parser, parsed| {
            let pick = pick_tail(parser.reader.transcript(), limits);
            let wanted = next_window(&pick, parsed, limits);
            (pick, wanted)
        },
    )?;
    let (goal, head_read, head_model) = if tail_read.reached_start {
        (
            first_human(tail_parser.reader.transcript()),
            HeadRead {
                bytes: 0,
                capped: false,
            },
            None,
        )
    } else {
        let (head, head_read) =
            read::read_head(&mut file, &path, agent, limits.head_bytes, |parser| {
                first_human(parser.reader.transcript()).is_some()
            })?;
        let goal = first_human(head.reader.transcript());
        let model = head.model.clone();
        warnings.items.extend(head.warnings.items);
        (goal, head_read, model)
    };
    Ok(assemble(
        agent,
        session_id,
        &path,
        limits,
        Assembly {
            tail_parser,
            pick,
            tail_read,
            goal,
            head_read,
            head_model,
            file_bytes: len,
        },
        warnings,
    ))
}

/// A compressed rollout cannot be entered in the middle: it is read whole, once.
fn digest_compressed(
    agent: Agent,
    session_id: &str,
    path: &Path,
    limits: &Limits,
    warnings: &mut Warnings,
) -> Result<Digest> {
    refuse_symlink(path)?;
    let mut parser = Parser::new(agent, path);
    let mut outer = Warnings::default();
    let end = cross_agent_stores::lines::read_zstd_lines(path, &mut parser, &mut outer).map_err(
        |source| ReviewError::Store {
            id: session_id.to_owned(),
            source,
        },
    )?;
    warnings.items.extend(outer.items);
    let pick = pick_tail(parser.reader.transcript(), limits);
    let goal = first_human(parser.reader.transcript());
    let file_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    Ok(assemble(
        agent,
        session_id,
        path,
        limits,
        Assembly {
            tail_parser: parser,
            pick,
            tail_read: TailRead {
                from: 0,
                to: end.offset,
                bytes: file_bytes,
                reached_start: true,
                capped: false,
                partial_last_line: false,
            },
            goal,
            head_read: HeadRead {
                bytes: 0,
                capped: false,
            },
            head_model: None,
            file_bytes,
        },
        warnings,
    ))
}

struct Assembly {
    tail_parser: Parser,
    pick: TailPick,
    tail_read: TailRead,
    goal: Option<(String, Option<UnixMillis>)>,
    head_read: HeadRead,
    head_model: Option<String>,
    file_bytes: u64,
}

fn assemble(
    agent: Agent,
    session_id: &str,
    path: &Path,
    limits: &Limits,
    a: Assembly,
    warnings: &mut Warnings,
) -> Digest {
    let Assembly {
        tail_parser,
        pick,
        tail_read,
        goal,
        head_read,
        head_model,
        file_bytes,
    } = a;
    let recorded = tail_parser.model.clone().or(head_model);
    let model = match recorded {
        Some(name) => SessionModel {
            family: family_of_model(&name),
            model: Some(name),
            source: FamilySource::Transcript,
        },
        None if agent == Agent::Grok => SessionModel {
            model: None,
            family: ModelFamily::Xai,
            source: FamilySource::Agent,
        },
        None => SessionModel {
            model: None,
            family: ModelFamily::Unknown,
            source: FamilySource::None,
        },
    };
    let opening_goal = goal.map(|(text, at)| excerpt(&text, at, limits.goal_tokens));
    // The only message a person wrote is both the goal and the latest instruction; the tail
    // finds none only when none is within `tail_bytes` of the end.
    let latest_instruction = pick
        .latest
        .as_ref()
        .map(|(text, at)| excerpt(text, *at, limits.instruction_tokens));
    let counts = tail_parser.counts;
    let mut skipped = pick.skipped;
    skipped.malformed_lines = counts.malformed;
    skipped.too_long_lines = counts.too_long;
    skipped.other_records = counts.other_records;
    skipped.compact_summaries += counts.compacted;
    skipped.partial_last_line = tail_read.partial_last_line;
    warnings.items.extend(tail_parser.warnings.items);
    if tail_read.partial_last_line {
        warnings.push(
            path,
            None,
            "the last line is still being written; the digest stops before it",
        );
    }
    Digest {
        agent,
        session_id: session_id.to_owned(),
        path: path.to_path_buf(),
        model,
        opening_goal,
        latest_instruction,
        tail_tokens: pick.entries.iter().map(TailEntry::tokens).sum(),
        tail: pick.entries,
        tail_truncated: pick.truncated,
        reviewed_to: ReviewedPosition {
            offset: tail_read.to,
            timestamp: tail_parser.last_timestamp,
            record_id: tail_parser.last_record_id,
        },
        skipped,
        read: ReadStats {
            file_bytes,
            head_bytes: head_read.bytes,
            tail_bytes: tail_read.bytes,
            tail_from: tail_read.from,
            whole_file: tail_read.reached_start,
            goal_search_capped: head_read.capped,
            tail_search_capped: tail_read.capped,
        },
        limits: *limits,
    }
}

/// Grok's transcript is its session folder's `updates.jsonl`, a Copilot SDK session's its
/// folder's `events.jsonl`.
fn transcript_file(agent: Agent, path: &Path) -> Result<PathBuf> {
    refuse_symlink(path)?;
    let is_dir = std::fs::symlink_metadata(path)
        .map_err(|e| ReviewError::io(path, e))?
        .is_dir();
    Ok(match agent {
        Agent::Grok if is_dir => path.join("updates.jsonl"),
        Agent::Copilot if is_dir => path.join("events.jsonl"),
        _ => path.to_path_buf(),
    })
}

fn refuse_symlink(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ReviewError::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(_) => Ok(()),
        Err(e) => Err(ReviewError::io(path, e)),
    }
}

/// Opens a transcript read-only, refusing a symbolic link (`O_NOFOLLOW`).
fn open_no_follow(path: &Path) -> Result<File> {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(File::from(fd)),
        Err(rustix::io::Errno::LOOP) => Err(ReviewError::Symlink {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(ReviewError::io(path, e.into())),
    }
}

/// The first message a person wrote, and when.
fn first_human(transcript: &Transcript) -> Option<(String, Option<UnixMillis>)> {
    transcript
        .turns
        .iter()
        .flat_map(|t| t.items.iter())
        .find_map(|item| match item {
            TurnItem::Message(m) if m.role == Role::User => match human::classify(&m.text) {
                UserText::Human(words) => Some((words.to_owned(), m.timestamp)),
                _ => None,
            },
            _ => None,
        })
}

/// The tail picked from a window's turns.
#[derive(Debug, Clone, Default)]
struct TailPick {
    entries: Vec<TailEntry>,
    /// The budget ran out before the window's start.
    truncated: bool,
    latest: Option<(String, Option<UnixMillis>)>,
    skipped: Skipped,
}

/// Walks the window's turns newest first, keeping entries until the tail budget is spent and
/// noting the newest message a person wrote (looked for past the budget too).
fn pick_tail(transcript: &Transcript, limits: &Limits) -> TailPick {
    let mut pick = TailPick::default();
    let mut budget = limits.tail_tokens;
    let mut newest_first: Vec<TailEntry> = Vec::new();
    for turn in transcript.turns.iter().rev() {
        if let Some(what) = bridged(turn) {
            match what {
                BridgedTurn::PeerRequest => pick.skipped.bridge_messages += 1,
                BridgedTurn::ReplyOrNotice => pick.skipped.bridge_notices += 1,
            }
            pick.skipped.bridged_items += turn.items.len();
            let entry = TailEntry::Bridged {
                what,
                at: turn.started_at,
            };
            keep(&mut newest_first, &mut budget, &mut pick.truncated, entry);
            continue;
        }
        for item in turn.items.iter().rev() {
            let entry = match item {
                TurnItem::Message(m) if m.role == Role::User => match human::classify(&m.text) {
                    UserText::Human(words) => {
                        if pick.latest.is_none() {
                            pick.latest = Some((words.to_owned(), m.timestamp));
                        }
                        let (text, clipped) = clip(words, limits.entry_tokens);
                        TailEntry::User {
                            text,
                            at: m.timestamp,
                            clipped,
                        }
                    }
                    UserText::CompactSummary => {
                        pick.skipped.compact_summaries += 1;
                        continue;
                    }
                    UserText::BridgeMessage => {
                        pick.skipped.bridge_messages += 1;
                        continue;
                    }
                    UserText::BridgeNotice => {
                        pick.skipped.bridge_notices += 1;
                        continue;
                    }
                    UserText::Injected => {
                        pick.skipped.injected += 1;
                        continue;
                    }
                },
                TurnItem::Message(m) => {
                    let text = human::strip_system_reminders(&m.text);
                    let text = text.trim();
                    if text.is_empty() {
                        continue;
                    }
                    let (text, clipped) = clip(text, limits.entry_tokens);
                    TailEntry::Assistant {
                        text,
                        at: m.timestamp,
                        clipped,
                    }
                }
                TurnItem::ToolCall(c) => TailEntry::ToolCall {
                    name: c.name.clone(),
                    summary: tool_summary(&c.input, limits.tool_summary_chars),
                    at: c.timestamp,
                },
                TurnItem::ToolResult(_) => {
                    pick.skipped.tool_outputs += 1;
                    continue;
                }
            };
            keep(&mut newest_first, &mut budget, &mut pick.truncated, entry);
        }
    }
    newest_first.reverse();
    pick.entries = newest_first;
    pick
}

/// `None` when the pick is enough (the budget is full and a message a person wrote is found);
/// else the window expected to fill the budget, from the bytes per token seen so far (a quarter
/// more, for the turn cut at the window's start).
fn next_window(pick: &TailPick, parsed_bytes: u64, limits: &Limits) -> Option<u64> {
    if pick.truncated && pick.latest.is_some() {
        return None;
    }
    if pick.truncated {
        return Some(0);
    }
    let tokens: usize = pick.entries.iter().map(TailEntry::tokens).sum();
    let per_token = parsed_bytes as f64 / tokens.max(1) as f64;
    Some((per_token * limits.tail_tokens as f64 * 1.25) as u64)
}

/// Keeps `entry` if the budget allows; once one does not fit, nothing older is kept.
fn keep(kept: &mut Vec<TailEntry>, budget: &mut usize, full: &mut bool, entry: TailEntry) {
    if *full {
        return;
    }
    let cost = entry.tokens();
    if cost > *budget {
        *full = true;
        return;
    }
    *budget -= cost;
    kept.push(entry);
}

/// Whether the bridge delivered the turn: its first user message is an envelope or a notice
/// (a Telegram envelope is the person's own words and is not).
fn bridged(turn: &Turn) -> Option<BridgedTurn> {
    let first_user = turn.items.iter().find_map(|item| match item {
        TurnItem::Message(m) if m.role == Role::User => Some(m.text.as_str()),
        _ => None,
    })?;
    match human::classify(first_user) {
        UserText::BridgeMessage => Some(BridgedTurn::PeerRequest),
        UserText::BridgeNotice => Some(BridgedTurn::ReplyOrNotice),
        UserText::Human(_) | UserText::CompactSummary | UserText::Injected => None,
    }
}

fn excerpt(text: &str, at: Option<UnixMillis>, tokens: usize) -> Excerpt {
    let (text, clipped) = clip(text, tokens);
    Excerpt {
        tokens: estimate_tokens(&text),
        text,
        at,
        clipped,
    }
}

/// `text` within `tokens` estimated tokens: its start and its end, with `[…]` where the middle
/// was cut (the ask is usually at the start, the state of things at the end).
pub fn clip(text: &str, tokens: usize) -> (String, bool) {
    const MARK: &str = "\n[…]\n";
    let max_chars = tokens.saturating_mul(4);
    let count = text.chars().count();
    if count <= max_chars {
        return (text.to_owned(), false);
    }
    let room = max_chars.saturating_sub(MARK.chars().count());
    let head = room * 2 / 3;
    let tail = room - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(count - tail)
        .map_or(text.len(), |(i, _)| i);
    (
        format!("{}{MARK}{}", &text[..head_end], &text[tail_start..]),
        true,
    )
}

/// A tool call's arguments on one line: the field that says what it does (a command, a path,
/// a pattern, a URL, a description), else the arguments' JSON, cut to `max` characters.
fn tool_summary(input: &str, max: usize) -> String {
    let value: Value = serde_json::from_str(input).unwrap_or(Value::Null);
    const FIELDS: [&str; 12] = [
        "command",
        "cmd",
        "file_path",
        "path",
        "notebook_path",
        "pattern",
        "query",
        "url",
        "prompt",
        "description",
        "input",
        "patch",
    ];
    let principal = FIELDS.iter().find_map(|k| match value.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    });
    let text = principal.unwrap_or_else(|| match &value {
        Value::Null => input.to_owned(),
        other => other.to_string(),
    });
    one_line(&text, max)
}

/// `text` on one line, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// What a guard finds after a reviewed position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SinceReview {
    /// No message a person wrote after the reviewed position.
    Quiet,
    /// A person wrote after it (the first such message's time).
    HumanMessage { at: Option<UnixMillis> },
    /// The file is shorter than the reviewed position: it was replaced or truncated, so what
    /// was reviewed is no longer what is there.
    Replaced,
}

/// Whether a person wrote into the transcript after `since` (read from there to the end).
pub fn human_messages_after(
    agent: Agent,
    path: &Path,
    since: &ReviewedPosition,
    warnings: &mut Warnings,
) -> Result<SinceReview> {
    use std::io::{Read, Seek, SeekFrom};
    let path = transcript_file(agent, path)?;
    let mut file = open_no_follow(&path)?;
    let len = file
        .metadata()
        .map_err(|e| ReviewError::io(&path, e))?
        .len();
    if len < since.offset {
        return Ok(SinceReview::Replaced);
    }
    file.seek(SeekFrom::Start(since.offset))
        .map_err(|e| ReviewError::io(&path, e))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| ReviewError::io(&path, e))?;
    let mut parser = Parser::new(agent, &path);
    // A line still being written is left for the next look.
    let complete = memchr::memrchr(b'\n', &bytes).map_or(0, |nl| nl + 1);
    parser.lines(&bytes[..complete], /*last_is_whole*/ false);
    warnings.items.extend(parser.warnings.items);
    Ok(match first_human(parser.reader.transcript()) {
        Some((_, at)) => SinceReview::HumanMessage { at },
        None => SinceReview::Quiet,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_keeps_start_and_end_within_the_budget() {
        let text = format!("{}{}", "a".repeat(100), "z".repeat(100));
        let (clipped, cut) = clip(&text, 10);
        assert!(cut);
        assert!(estimate_tokens(&clipped) <= 10, "{clipped}");
        assert!(
            clipped.starts_with('a') && clipped.ends_with('z'),
            "{clipped}"
        );
        assert_eq!(clip("short", 10), ("short".to_owned(), false));
    }

    #[test]
    fn tool_calls_are_summarised_by_what_they_do() {
        assert_eq!(
            tool_summary(r#"{"command":"cargo test -p x","description":"run"}"#, 120),
            "cargo test -p x"
        );
        assert_eq!(
            tool_summary(r#"{"command":["bash","-lc","ls"]}"#, 120),
            "bash -lc ls"
        );
        assert_eq!(tool_summary(r#"{"x":1}"#, 120), r#"{"x":1}"#);
        assert_eq!(tool_summary("not json", 3), "not…");
    }
}
