//! The review robot's cadence (docs/review.md, "The robot"): which idle sessions the daemon
//! reviews on its own, when, and what it remembers of that across restarts.
//!
//! A session becomes due [`Cadence::after_idle`] after its last turn ended, and at most once per
//! [`Cadence::interval`]; it is reviewed once per idle period (a new turn starts a new period),
//! never while it works, and not when it has been idle longer than [`Cadence::max_idle`] (the
//! robot watches live chats, not the archive). A pass reviews the due sessions oldest-due first,
//! one at a time, at most [`Cadence::per_pass`] of them, so neither a first start nor a restart
//! reviews every chat at once.
//!
//! What the robot did is kept in `CROSS_AGENT_HOME/robot-review-state.json`, one entry per
//! session under a **keyed hash** of its agent and id (HMAC-SHA256 with a per-install secret,
//! `robot-review.key`, created once owner-only and never printed): the file tells a reader
//! nothing about which sessions exist, and `review status` names an entry only by hashing the
//! ids it can see live. The file is replaced whole (temporary file, fsync, rename: never written
//! through a link); a damaged one is moved aside to `<file>.damaged-<ms>` and named in the
//! answer, and the robot starts afresh — still at most `per_pass` a pass.
//!
//! This module decides and remembers; the daemon lists the sessions, runs the reviews and the
//! corrections (`daemon/src/robot.rs`).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cross_agent_protocol::bridge::SessionEntry;
use cross_agent_stores::UnixMillis;
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};

use crate::error::{Result, ReviewError};
use crate::settings;

/// The robot's state file in the home.
pub const STATE_FILE: &str = "robot-review-state.json";

/// The most of a state file read back: far above what the robot writes.
const MAX_STATE_BYTES: u64 = 16 << 20;
/// The per-install secret the state file's hashes are keyed with.
pub const KEY_FILE: &str = "robot-review.key";
/// The most sessions one pass reviews.
pub const DEFAULT_PER_PASS: usize = 2;
/// A session idle longer than this is not the robot's business any more.
pub const DEFAULT_MAX_IDLE: Duration = Duration::from_secs(24 * 60 * 60);
/// How long an entry is kept after its last review (a session not seen since is forgotten).
pub const RETAIN: Duration = Duration::from_secs(14 * 24 * 60 * 60);
/// The most entries the state file keeps (the oldest reviews forgotten first).
pub const MAX_ENTRIES: usize = 10_000;

const FILE_MODE: u32 = 0o600;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// When sessions become due and how many one pass takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    pub after_idle: Duration,
    pub interval: Duration,
    pub per_pass: usize,
    pub max_idle: Duration,
}

impl Default for Cadence {
    fn default() -> Cadence {
        Cadence {
            after_idle: Duration::from_secs(settings::DEFAULT_ROBOT_AFTER_IDLE_MINUTES * 60),
            interval: Duration::from_secs(settings::DEFAULT_ROBOT_INTERVAL_MINUTES * 60),
            per_pass: DEFAULT_PER_PASS,
            max_idle: DEFAULT_MAX_IDLE,
        }
    }
}

/// The per-install secret: 32 random bytes, kept owner-only in the home. Its `Debug` hides it.
#[derive(Clone)]
pub struct InstallKey([u8; 32]);

impl std::fmt::Debug for InstallKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InstallKey(..)")
    }
}

impl InstallKey {
    /// A key from these bytes (tests; a fresh install uses [`InstallKey::load_or_create`]).
    pub fn from_bytes(bytes: [u8; 32]) -> InstallKey {
        InstallKey(bytes)
    }

    /// The home's key, created on first use (`O_EXCL`, `0600`, never through a link).
    pub fn load_or_create(home: &Path) -> Result<InstallKey> {
        if let Some(key) = InstallKey::read(home)? {
            return Ok(key);
        }
        let path = home.join(KEY_FILE);
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| ReviewError::State {
            path: path.clone(),
            problem: format!("no random bytes for a new secret: {e}"),
        })?;
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .custom_flags(cross_agent_home::home::no_follow_flag())
            .open(&path);
        match created {
            Ok(mut file) => {
                file.write_all(hex(&bytes).as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(|e| ReviewError::io(&path, e))?;
                Ok(InstallKey(bytes))
            }
            // Another process made it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => InstallKey::read(home)?
                .ok_or_else(|| ReviewError::State {
                    path,
                    problem: "it vanished while it was being created".to_owned(),
                }),
            Err(e) => Err(ReviewError::io(&path, e)),
        }
    }

    /// The home's key, `None` when there is none yet. A link, a file others may read, or one
    /// that is not 64 hex digits is refused, naming the path and the fix.
    pub fn read(home: &Path) -> Result<Option<InstallKey>> {
        let path = home.join(KEY_FILE);
        let Some(text) = read_no_follow(&path)? else {
            return Ok(None);
        };
        let fix =
            "remove it: the robot makes a new secret (and forgets which sessions it reviewed)";
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.permissions().mode() & 0o077 != 0
        {
            return Err(ReviewError::State {
                path,
                problem: format!(
                    "it may be read by others (mode {:o}); run chmod 600 on it, or {fix}",
                    meta.permissions().mode() & 0o777
                ),
            });
        }
        let text = text.trim();
        let mut bytes = [0u8; 32];
        let parsed = text.len() == 64
            && bytes.iter_mut().enumerate().all(|(i, byte)| {
                text.get(i * 2..i * 2 + 2)
                    .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                    .map(|b| *byte = b)
                    .is_some()
            });
        if !parsed {
            return Err(ReviewError::State {
                path,
                problem: format!("it is not 64 hexadecimal digits; {fix}"),
            });
        }
        Ok(Some(InstallKey(bytes)))
    }

    /// The name a session has in the state file: hex HMAC-SHA256 of `agent`, NUL, `session_id`.
    pub fn hash(&self, agent: &str, session_id: &str) -> String {
        // `new_from_slice` accepts any key length for HMAC, so this arm is never taken.
        let Ok(mut mac) = HmacSha256::new_from_slice(&self.0) else {
            return String::new();
        };
        mac.update(agent.as_bytes());
        mac.update(&[0]);
        mac.update(session_id.as_bytes());
        hex(&mac.finalize().into_bytes())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads one of the robot's own files whole (at most [`MAX_STATE_BYTES`]) without following a
/// link; `None` when it does not exist.
fn read_no_follow(path: &Path) -> Result<Option<String>> {
    use cross_agent_home::safety::{self, StateFileRefusal};

    safety::read_state_file(path, MAX_STATE_BYTES).map_err(|refusal| match refusal {
        StateFileRefusal::Link => ReviewError::State {
            path: path.to_owned(),
            problem: "it is a symbolic link, and cross-agent never follows links in its \
                      home; remove the link (the robot then starts this file afresh)"
                .to_owned(),
        },
        StateFileRefusal::Io(e) => ReviewError::io(path, e),
    })
}

/// What the robot remembers of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// When the robot last reviewed it (Unix ms), whatever came of it.
    pub reviewed_at_ms: i64,
    /// The end of the last turn before that review (Unix ms): the idle period it looked at.
    pub idle_since_ms: i64,
    /// Whether that idle period is done with (a reviewer failure leaves it open, so it is tried
    /// again after the interval).
    pub period_done: bool,
    /// `verdict`, `unparseable`, `reviewer_failed`, `no_reviewer` or `failed`.
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// What became of a correction: `sent`, or `refused: <rule>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction: Option<String>,
}

/// The whole state file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Entries by keyed hash (see [`InstallKey::hash`]).
    #[serde(default)]
    pub sessions: BTreeMap<String, Entry>,
}

/// The state as read, and where a damaged file was moved.
#[derive(Debug, Default)]
pub struct Loaded {
    pub state: State,
    pub quarantined: Option<PathBuf>,
}

/// Reads the home's state file (empty when there is none). A damaged one is moved aside to
/// `<file>.damaged-<ms>`, named in [`Loaded::quarantined`], and read as empty; a link is refused.
pub fn load(home: &Path) -> Result<Loaded> {
    let path = home.join(STATE_FILE);
    let Some(text) = read_no_follow(&path)? else {
        return Ok(Loaded::default());
    };
    match serde_json::from_str::<State>(&text) {
        Ok(state) => Ok(Loaded {
            state,
            quarantined: None,
        }),
        Err(_) => {
            let aside = cross_agent_home::safety::move_aside_damaged(&path)
                .map_err(|e| ReviewError::io(&path, e))?;
            Ok(Loaded {
                state: State::default(),
                quarantined: Some(aside),
            })
        }
    }
}

/// Replaces the home's state file whole, owner-only (never written through a link).
pub fn save(home: &Path, state: &State) -> Result<()> {
    let path = home.join(STATE_FILE);
    let bytes = serde_json::to_vec_pretty(state).map_err(|e| ReviewError::State {
        path: path.clone(),
        problem: e.to_string(),
    })?;
    cross_agent_home::atomic::write_private(&path, &bytes).map_err(|e| ReviewError::State {
        path,
        problem: e.to_string(),
    })
}

/// A session the daemon sees live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub agent: String,
    pub session_id: String,
    /// When its last turn ended (Unix ms): its last activity while it is not working.
    pub last_turn_ended_ms: i64,
    /// A turn is running (or an approval waits): not idle.
    pub working: bool,
}

impl Candidate {
    /// The candidates of a session listing (`list_sessions`), with the titles beside them: a
    /// session without a last activity is not one (it has never had a turn to end).
    pub fn of_listing(
        sessions: BTreeMap<String, Vec<SessionEntry>>,
    ) -> impl Iterator<Item = (Candidate, Option<String>)> {
        sessions.into_iter().flat_map(|(agent, entries)| {
            entries.into_iter().filter_map(move |entry| {
                let ended = entry
                    .last_activity
                    .as_deref()
                    .and_then(UnixMillis::parse_rfc3339)?;
                let candidate = Candidate {
                    agent: agent.clone(),
                    session_id: entry.session_id,
                    last_turn_ended_ms: ended.0,
                    working: entry.is_working,
                };
                Some((candidate, entry.title))
            })
        })
    }
}

/// Where one live session stands with the robot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// A turn is running.
    Working,
    /// Idle longer than [`Cadence::max_idle`].
    TooOld,
    /// This idle period was reviewed; due again after its next turn.
    Reviewed,
    /// Due at this time (Unix ms); due now when it is not after the pass's clock.
    DueAt(i64),
}

/// The standing of each candidate at `now` (Unix ms), in the order given.
pub fn plan(
    state: &State,
    key: &InstallKey,
    candidates: &[Candidate],
    now: i64,
    cadence: &Cadence,
) -> Vec<Standing> {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    candidates
        .iter()
        .map(|c| {
            if c.working {
                return Standing::Working;
            }
            if now.saturating_sub(c.last_turn_ended_ms) > ms(cadence.max_idle) {
                return Standing::TooOld;
            }
            let after_idle = c.last_turn_ended_ms.saturating_add(ms(cadence.after_idle));
            match state.sessions.get(&key.hash(&c.agent, &c.session_id)) {
                Some(entry) if entry.period_done && entry.idle_since_ms >= c.last_turn_ended_ms => {
                    Standing::Reviewed
                }
                Some(entry) => Standing::DueAt(
                    after_idle.max(entry.reviewed_at_ms.saturating_add(ms(cadence.interval))),
                ),
                None => Standing::DueAt(after_idle),
            }
        })
        .collect()
}

/// The candidates this pass reviews, in order: due at `now`, the longest-due first, at most
/// [`Cadence::per_pass`].
pub fn pick<'a>(
    state: &State,
    key: &InstallKey,
    candidates: &'a [Candidate],
    now: i64,
    cadence: &Cadence,
) -> Vec<&'a Candidate> {
    let mut due: Vec<(i64, &Candidate)> = plan(state, key, candidates, now, cadence)
        .into_iter()
        .zip(candidates)
        .filter_map(|(standing, c)| match standing {
            Standing::DueAt(at) if at <= now => Some((at, c)),
            _ => None,
        })
        .collect();
    due.sort_by_key(|(at, _)| *at);
    due.into_iter()
        .take(cadence.per_pass)
        .map(|(_, c)| c)
        .collect()
}

/// What one robot review came to, for the state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    pub outcome: String,
    pub verdict: Option<String>,
    pub correction: Option<String>,
}

impl Reviewed {
    /// Whether the idle period is done with: a reviewer that failed (or a review that could not
    /// run) is tried again after the interval; any answer, or no reviewer at all, is final.
    fn period_done(&self) -> bool {
        matches!(
            self.outcome.as_str(),
            "verdict" | "unparseable" | "no_reviewer"
        )
    }
}

impl State {
    /// Remembers a review of `candidate` at `now`, then forgets entries past [`RETAIN`] and
    /// beyond [`MAX_ENTRIES`].
    pub fn record(&mut self, key: &InstallKey, candidate: &Candidate, now: i64, done: Reviewed) {
        self.sessions.insert(
            key.hash(&candidate.agent, &candidate.session_id),
            Entry {
                reviewed_at_ms: now,
                idle_since_ms: candidate.last_turn_ended_ms,
                period_done: done.period_done(),
                outcome: done.outcome,
                verdict: done.verdict,
                correction: done.correction,
            },
        );
        let retain = i64::try_from(RETAIN.as_millis()).unwrap_or(i64::MAX);
        self.sessions
            .retain(|_, e| now.saturating_sub(e.reviewed_at_ms) <= retain);
        if self.sessions.len() > MAX_ENTRIES {
            let mut by_age: Vec<(i64, String)> = self
                .sessions
                .iter()
                .map(|(k, e)| (e.reviewed_at_ms, k.clone()))
                .collect();
            by_age.sort();
            let extra = self.sessions.len() - MAX_ENTRIES;
            for (_, k) in by_age.into_iter().take(extra) {
                self.sessions.remove(&k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use pretty_assertions::assert_eq;

    use super::*;

    const MIN: i64 = 60_000;

    fn idle(id: &str, ended: i64) -> Candidate {
        Candidate {
            agent: "claude".into(),
            session_id: id.into(),
            last_turn_ended_ms: ended,
            working: false,
        }
    }

    fn verdict() -> Reviewed {
        Reviewed {
            outcome: "verdict".into(),
            verdict: Some("on_track".into()),
            correction: None,
        }
    }

    #[test]
    fn due_after_idle_once_per_period_and_not_before_the_interval() {
        let key = InstallKey::from_bytes([7; 32]);
        let cadence = Cadence {
            after_idle: Duration::from_secs(20 * 60),
            interval: Duration::from_secs(120 * 60),
            ..Cadence::default()
        };
        let mut state = State::default();
        let now = 1_000 * MIN;
        let session = idle("a", now - 10 * MIN);
        assert_eq!(
            plan(&state, &key, std::slice::from_ref(&session), now, &cadence),
            vec![Standing::DueAt(now + 10 * MIN)]
        );
        let later = now + 10 * MIN;
        assert_eq!(
            pick(
                &state,
                &key,
                std::slice::from_ref(&session),
                later,
                &cadence
            )
            .len(),
            1
        );
        state.record(&key, &session, later, verdict());
        // The same idle period: reviewed, however long it lasts.
        assert_eq!(
            plan(
                &state,
                &key,
                std::slice::from_ref(&session),
                later + 300 * MIN,
                &cadence
            ),
            vec![Standing::Reviewed]
        );
        // A new turn ended 5 minutes after the review: due after idle, but not before the
        // interval since the last review.
        let again = idle("a", later + 5 * MIN);
        assert_eq!(
            plan(
                &state,
                &key,
                std::slice::from_ref(&again),
                later + 30 * MIN,
                &cadence
            ),
            vec![Standing::DueAt(later + 120 * MIN)]
        );
        // A reviewer failure leaves the period open, due again after the interval.
        state.record(
            &key,
            &again,
            later + 120 * MIN,
            Reviewed {
                outcome: "reviewer_failed".into(),
                verdict: None,
                correction: None,
            },
        );
        assert_eq!(
            plan(
                &state,
                &key,
                std::slice::from_ref(&again),
                later + 121 * MIN,
                &cadence
            ),
            vec![Standing::DueAt(later + 240 * MIN)]
        );
    }

    #[test]
    fn working_and_long_idle_sessions_are_never_due() {
        let key = InstallKey::from_bytes([7; 32]);
        let now = 100_000 * MIN;
        let mut busy = idle("b", now - 60 * MIN);
        busy.working = true;
        let old = idle("c", now - 25 * 60 * MIN);
        assert_eq!(
            plan(
                &State::default(),
                &key,
                &[busy, old],
                now,
                &Cadence::default()
            ),
            vec![Standing::Working, Standing::TooOld]
        );
    }

    #[test]
    fn a_pass_takes_the_longest_due_first_up_to_the_cap() {
        let key = InstallKey::from_bytes([7; 32]);
        let now = 100_000 * MIN;
        let sessions: Vec<Candidate> = (0..5)
            .map(|i| idle(&format!("s{i}"), now - (30 + i) * MIN))
            .collect();
        let picked: Vec<&str> = pick(&State::default(), &key, &sessions, now, &Cadence::default())
            .into_iter()
            .map(|c| c.session_id.as_str())
            .collect();
        assert_eq!(picked, vec!["s4", "s3"]);
    }

    #[test]
    fn hashes_depend_on_the_key_agent_and_id() {
        let one = InstallKey::from_bytes([1; 32]);
        let two = InstallKey::from_bytes([2; 32]);
        assert_ne!(one.hash("claude", "x"), two.hash("claude", "x"));
        assert_ne!(one.hash("claude", "x"), one.hash("codex", "x"));
        assert_eq!(one.hash("claude", "x").len(), 64);
        assert_eq!(format!("{one:?}"), "InstallKey(..)");
    }
}
