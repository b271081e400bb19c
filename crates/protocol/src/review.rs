//! The daemon request that puts a cross review's correction into the reviewed session
//! (docs/review.md, "Corrections and the escalation guard"): `review_correction`.
//!
//! Every door — `cross-agent review SESSION --send`, the "Send correction" tap on a verdict's
//! Telegram card, the review robot with `review.steer` on — asks the daemon, which runs one
//! guard with what it knows live (is a turn running, is an approval waiting, what was sent
//! before) and answers [`ReviewCorrectionResponse::Sent`] with the delivery that carries the
//! correction, or [`ReviewCorrectionResponse::Refused`] naming the first [`GuardRule`] that
//! refused it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bridge::CallerContext;
use crate::vocabulary::Agent;

/// `review_correction`: send a review's correction into the session it reviewed, if the guard
/// allows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewCorrectionParams {
    /// The session reviewed, which receives the correction.
    pub session: ReviewedSession,
    /// The review's id (as `cross-agent review list` shows it), for the record.
    pub review_id: String,
    /// What the reviewer judged.
    pub verdict: ReviewVerdict,
    /// The reviewer's message to the agent.
    pub correction: String,
    /// Who reviewed: the envelope's `from:` line names it.
    pub reviewer: ReviewerIdentity,
    /// How far the review read the transcript: a person's message after it refuses the
    /// correction.
    pub reviewed_up_to: ReviewedUpTo,
    /// Which door asked.
    pub requested_by: CorrectionRequester,
    /// The requesting process's settings and environment (where the agents' stores are); its
    /// identity only tells whether the session asks to correct itself — the correction is
    /// always sent as the reviewer's, never as the requester's.
    #[serde(default)]
    pub caller: CallerContext,
}

/// One agent session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewedSession {
    pub agent: Agent,
    pub session_id: String,
}

/// The verdict of a review, as in the verdict schema (`crates/review/schema/verdict.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    /// Working on the task it was given.
    OnTrack,
    /// Still on the task but wandering.
    Drifting,
    /// On something else, or against an explicit constraint.
    OffTrack,
    /// Cannot go on without something it does not have.
    Blocked,
}

impl ReviewVerdict {
    /// As spelled on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewVerdict::OnTrack => "on_track",
            ReviewVerdict::Drifting => "drifting",
            ReviewVerdict::OffTrack => "off_track",
            ReviewVerdict::Blocked => "blocked",
        }
    }
}

/// The reviewer: a provider of the pool and the model that answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewerIdentity {
    /// The provider's name in the pool (`openai`, `xai`, …).
    pub provider: String,
    /// The model that answered (`gpt-5`).
    pub model: String,
    /// The model family (`openai`, `anthropic`, `xai`, …).
    pub family: String,
}

/// Where the review stopped reading the transcript.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewedUpTo {
    /// The byte just after the last complete line read.
    pub offset: u64,
    /// The latest timestamp read, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The id of the last record read that has one (Claude's `uuid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_id: Option<String>,
}

/// Which door asked for the correction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CorrectionRequester {
    /// A person ran `cross-agent review SESSION --send`.
    Cli,
    /// A person tapped "Send correction" on the verdict's Telegram card.
    Telegram,
    /// The review robot, with `review.steer` on.
    Robot,
}

impl CorrectionRequester {
    pub fn as_str(self) -> &'static str {
        match self {
            CorrectionRequester::Cli => "cli",
            CorrectionRequester::Telegram => "telegram",
            CorrectionRequester::Robot => "robot",
        }
    }
}

/// The daemon's answer to `review_correction`, tagged by `outcome`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReviewCorrectionResponse {
    /// The correction was queued as a delivery into the session (panel first).
    Sent {
        /// The delivery carrying it (`bridge_status(delivery_id)` follows it).
        delivery_id: String,
    },
    /// The guard refused it; nothing was sent.
    Refused {
        /// The first rule that refused it.
        rule: GuardRule,
        /// Why, naming the session and the values compared, and what would let it through.
        reason: String,
    },
}

/// The escalation guard's rules, in the order they are checked (docs/review.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GuardRule {
    /// The robot asked, and `review.steer` is off.
    SteeringOff,
    /// The verdict is `on_track`: there is nothing to correct.
    Verdict,
    /// The correction is empty.
    NoCorrection,
    /// The session is not in any store the daemon reads.
    UnknownSession,
    /// The session asked to correct itself.
    OwnSession,
    /// A turn is running in the session, or a delivery to it is queued or under way.
    SessionBusy,
    /// The session waits on an approval (in its panel, its Copilot host or on the phone).
    AwaitingApproval,
    /// A person wrote in the session after the part the review read.
    HumanAfterReview,
    /// The transcript is shorter than the part the review read: it was rewritten.
    TranscriptReplaced,
    /// The same correction was sent to the session within the last 24 hours.
    SameCorrection,
    /// The session had its most corrections for one day.
    DailyLimit,
    /// The session had a correction less than the cool-down ago.
    Cooldown,
    /// Past the guard, the bridge's own send guards refused the delivery (no route left:
    /// `CROSS_AGENT_DISABLE_HEADLESS` with no panel, …); the reason names which.
    SendRefused,
    /// A rule this build does not know, sent by a newer daemon.
    #[serde(other)]
    Unknown,
}

impl GuardRule {
    /// As spelled on the wire and in decision lines.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardRule::SteeringOff => "steering_off",
            GuardRule::Verdict => "verdict",
            GuardRule::NoCorrection => "no_correction",
            GuardRule::UnknownSession => "unknown_session",
            GuardRule::OwnSession => "own_session",
            GuardRule::SessionBusy => "session_busy",
            GuardRule::AwaitingApproval => "awaiting_approval",
            GuardRule::HumanAfterReview => "human_after_review",
            GuardRule::TranscriptReplaced => "transcript_replaced",
            GuardRule::SameCorrection => "same_correction",
            GuardRule::DailyLimit => "daily_limit",
            GuardRule::Cooldown => "cooldown",
            GuardRule::SendRefused => "send_refused",
            GuardRule::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for GuardRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_are_tagged_by_outcome() {
        let refused = ReviewCorrectionResponse::Refused {
            rule: GuardRule::SameCorrection,
            reason: "r".into(),
        };
        assert_eq!(
            serde_json::to_value(&refused).unwrap(),
            json!({"outcome": "refused", "rule": "same_correction", "reason": "r"})
        );
        let sent: ReviewCorrectionResponse =
            serde_json::from_value(json!({"outcome": "sent", "delivery_id": "dlv_1"})).unwrap();
        assert_eq!(
            sent,
            ReviewCorrectionResponse::Sent {
                delivery_id: "dlv_1".into()
            }
        );
        // Every rule's wire name is its as_str.
        for rule in [
            GuardRule::SteeringOff,
            GuardRule::HumanAfterReview,
            GuardRule::Cooldown,
        ] {
            assert_eq!(serde_json::to_value(rule).unwrap(), json!(rule.as_str()));
        }
    }
}
