//! The decisions log's record: one JSON object per line of `$CROSS_AGENT_HOME/decisions.jsonl`
//! (docs/spec/vsc-relay.txt, "Every decision … is written as one JSON line"), for every decision the program
//! makes — a send accepted or refused, a target chosen, a wait on a busy session, a delivery's
//! outcome, and later approvals, asks, gate verdicts, danger matches, review verdicts and
//! Telegram delivery outcomes.
//!
//! The envelope is stable and every later feature extends it without breaking readers:
//!
//! ```json
//! {"at":"2026-05-01T12:00:00.123Z","kind":"send_refused","outcome":"refused",
//!  "agent":"codex","session":"…","guard":"hop_budget","reason":"…",
//!  "details":{"hops_spent":8,"max_hops":8}}
//! ```
//!
//! - `at` comes first and is RFC 3339 UTC with milliseconds, always 24 characters, so readers
//!   compare it as a string before parsing the rest of the line.
//! - `kind` and `outcome` are open sets ([`DecisionKind`], [`Outcome`]: string newtypes with
//!   constants for the values known today), so a reader built before a new kind exists still
//!   reads, counts and prints it.
//! - Fields this version does not know are kept in [`Decision::extra`] and written back
//!   unchanged, so a record passes through an older program intact.
//!
//! **Never the message payload or a secret.** There is no field for a payload, and the writer
//! (`cross-agent-decisions`) withholds the value of any `details` (or unknown top-level) key named
//! like one — `message`, `text`, `prompt`, `body`, `payload`, `content`, `reply`, `answer`,
//! `token`, `secret`, `password`, `api_key`, `env`, `authorization`, `cookie`, `credential` — by
//! writing `"[withheld]"` instead. Numbers and booleans pass (a `message_chars` count or a
//! `has_token` flag says nothing secret). This cannot catch a secret under an innocent name, so
//! the constructors that fill `details` take structured values (ids, counts, enum names), never
//! free text the user wrote.
//!
//! Types only: stamping the time, withholding and appending are the writer's.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What kind of decision a record is. An open set: any string reads; the constants name the
/// kinds this version writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DecisionKind(Cow<'static, str>);

impl DecisionKind {
    /// A send was accepted and a delivery recorded.
    pub const SEND_ACCEPTED: DecisionKind = DecisionKind::known("send_accepted");
    /// A send was refused by a guard (`guard` names it, `details` the values it compared).
    pub const SEND_REFUSED: DecisionKind = DecisionKind::known("send_refused");
    /// The target session of a send was chosen (`details.target_selected_by`).
    pub const TARGET_CHOSEN: DecisionKind = DecisionKind::known("target_chosen");
    /// A session name two or more sessions answer to was refused.
    pub const NAME_AMBIGUOUS: DecisionKind = DecisionKind::known("name_ambiguous");
    /// A delivery waits behind others for a busy session.
    pub const BUSY_WAIT: DecisionKind = DecisionKind::known("busy_wait");
    /// A delivery finished (`outcome` is `delivered` or `failed`).
    pub const DELIVERY_OUTCOME: DecisionKind = DecisionKind::known("delivery_outcome");
    /// An answer missing from the CLI's output was looked for in the peer's transcript.
    pub const RECOVERY: DecisionKind = DecisionKind::known("recovery");
    /// A peer turn was killed for inactivity.
    pub const TIMEOUT_KILL: DecisionKind = DecisionKind::known("timeout_kill");
    /// A delivery an earlier daemon handed over but never closed was marked orphaned.
    pub const ORPHAN: DecisionKind = DecisionKind::known("orphan");
    /// An answer arrived after its delivery had been closed.
    pub const LATE_ANSWER: DecisionKind = DecisionKind::known("late_answer");
    /// A session was pinned for an agent.
    pub const PIN_SET: DecisionKind = DecisionKind::known("pin_set");
    /// A pin was removed (by the caller, or dropped by the engine).
    pub const PIN_CLEARED: DecisionKind = DecisionKind::known("pin_cleared");
    /// A cross review got a verdict (`outcome` `verdict`, `details.verdict` which one).
    pub const REVIEW_VERDICT: DecisionKind = DecisionKind::known("review_verdict");
    /// A cross review got no verdict (`outcome` `unparseable`, `reviewer_failed` or
    /// `no_reviewer`; `guard` the failure's kind).
    pub const REVIEW_FAILED: DecisionKind = DecisionKind::known("review_failed");

    /// Every kind this version writes.
    pub const KNOWN: [DecisionKind; 14] = [
        DecisionKind::SEND_ACCEPTED,
        DecisionKind::SEND_REFUSED,
        DecisionKind::TARGET_CHOSEN,
        DecisionKind::NAME_AMBIGUOUS,
        DecisionKind::BUSY_WAIT,
        DecisionKind::DELIVERY_OUTCOME,
        DecisionKind::RECOVERY,
        DecisionKind::TIMEOUT_KILL,
        DecisionKind::ORPHAN,
        DecisionKind::LATE_ANSWER,
        DecisionKind::PIN_SET,
        DecisionKind::PIN_CLEARED,
        DecisionKind::REVIEW_VERDICT,
        DecisionKind::REVIEW_FAILED,
    ];

    const fn known(name: &'static str) -> DecisionKind {
        DecisionKind(Cow::Borrowed(name))
    }

    /// A kind by name: a later feature's own kind, or one read from the log.
    pub fn new(name: impl Into<Cow<'static, str>>) -> DecisionKind {
        DecisionKind(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DecisionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

/// What came of a decision. An open set like [`DecisionKind`]; empty when a record has none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Outcome(Cow<'static, str>);

impl Outcome {
    pub const ACCEPTED: Outcome = Outcome::known("accepted");
    pub const REFUSED: Outcome = Outcome::known("refused");
    /// A target, route or value was chosen.
    pub const CHOSEN: Outcome = Outcome::known("chosen");
    /// Waiting (behind a busy session, for an approval, …).
    pub const WAITING: Outcome = Outcome::known("waiting");
    pub const DELIVERED: Outcome = Outcome::known("delivered");
    pub const FAILED: Outcome = Outcome::known("failed");
    pub const KILLED: Outcome = Outcome::known("killed");
    pub const ORPHANED: Outcome = Outcome::known("orphaned");
    pub const RECOVERED: Outcome = Outcome::known("recovered");
    pub const NOT_RECOVERED: Outcome = Outcome::known("not_recovered");
    /// An answer was received (a late answer, an ask answered).
    pub const ANSWERED: Outcome = Outcome::known("answered");
    pub const SET: Outcome = Outcome::known("set");
    pub const CLEARED: Outcome = Outcome::known("cleared");
    /// A cross review's outcomes: a verdict, an answer that did not validate after one
    /// repair, a reviewer that did not answer, no reviewer of another family configured.
    pub const VERDICT: Outcome = Outcome::known("verdict");
    pub const UNPARSEABLE: Outcome = Outcome::known("unparseable");
    pub const REVIEWER_FAILED: Outcome = Outcome::known("reviewer_failed");
    pub const NO_REVIEWER: Outcome = Outcome::known("no_reviewer");

    const fn known(name: &'static str) -> Outcome {
        Outcome(Cow::Borrowed(name))
    }

    pub fn new(name: impl Into<Cow<'static, str>>) -> Outcome {
        Outcome(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

/// One decision: one line of `decisions.jsonl`. Build it with [`Decision::new`] and the
/// chaining setters; the writer stamps `at` when it is empty.
///
/// `session` is the session the decision was made for or in (the sender of a send, the session
/// a pin names); `target_session` is the session it acts on (where a message goes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// RFC 3339 UTC with milliseconds (`2026-05-01T12:00:00.123Z`). Empty until written.
    pub at: String,
    pub kind: DecisionKind,
    /// Read as empty when absent, so a later kind that has no outcome still reads.
    #[serde(default)]
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The delivery id (`dlv_…`) the decision concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<String>,
    /// The agent involved (`claude`, `codex`, `grok`, later others): a string, so a reader never
    /// breaks on an agent it does not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The rule that decided (`hop_budget`, `self_call`, a gate's name, a danger pattern's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// Why, in the program's own words (never text a user or a model wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The values the decision compared, by name. Always written, `{}` when empty.
    #[serde(default)]
    pub details: Map<String, Value>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Decision {
    /// A decision of `kind` with `outcome`, stamped when written.
    pub fn new(kind: DecisionKind, outcome: Outcome) -> Decision {
        Decision {
            at: String::new(),
            kind,
            outcome,
            session: None,
            delivery: None,
            agent: None,
            target_session: None,
            conversation_id: None,
            guard: None,
            reason: None,
            details: Map::new(),
            extra: Map::new(),
        }
    }

    pub fn at(mut self, at: impl Into<String>) -> Decision {
        self.at = at.into();
        self
    }

    pub fn session(mut self, id: impl Into<String>) -> Decision {
        self.session = Some(id.into());
        self
    }

    pub fn delivery(mut self, id: impl Into<String>) -> Decision {
        self.delivery = Some(id.into());
        self
    }

    pub fn agent(mut self, agent: impl Into<String>) -> Decision {
        self.agent = Some(agent.into());
        self
    }

    pub fn target_session(mut self, id: impl Into<String>) -> Decision {
        self.target_session = Some(id.into());
        self
    }

    pub fn conversation(mut self, id: impl Into<String>) -> Decision {
        self.conversation_id = Some(id.into());
        self
    }

    pub fn guard(mut self, guard: impl Into<String>) -> Decision {
        self.guard = Some(guard.into());
        self
    }

    pub fn reason(mut self, reason: impl Into<String>) -> Decision {
        self.reason = Some(reason.into());
        self
    }

    /// Sets one value in `details` (ids, counts, flags, enum names — never free text).
    pub fn detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Decision {
        self.details.insert(key.into(), value.into());
        self
    }

    /// Sets `details` values from a JSON object (other values are ignored).
    pub fn details_from(mut self, values: Value) -> Decision {
        if let Value::Object(map) = values {
            self.details.extend(map);
        }
        self
    }
}
