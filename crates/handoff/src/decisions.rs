//! The decision lines of handoffs (`handoff`) and receipt checks (`receipt_check`): kinds of
//! their own in the open set, built from the values in hand. Never the brief's or the prompt's
//! text: paths, ids, counts and verdicts only.

use cross_agent_protocol::decisions::{Decision, DecisionKind, Outcome};
use serde_json::json;

use crate::compact::{AttemptOutcome, CompactResult};
use crate::receipt::{ReceiptReport, Verdict};

pub const HANDOFF: &str = "handoff";
pub const RECEIPT_CHECK: &str = "receipt_check";

/// One handoff: where it went, what was written, how the compact came about, and whether the
/// delivery (launch, editor, chat) went through (`failure` names why not).
pub fn handoff(
    session: &str,
    family: &str,
    destination: &str,
    file: &str,
    compact: &CompactResult,
    failure: Option<&str>,
) -> Decision {
    let outcome = match failure {
        None => Outcome::DELIVERED,
        Some(_) => Outcome::FAILED,
    };
    let attempts: Vec<_> = compact
        .attempts
        .iter()
        .map(|a| {
            json!({
                "by": a.by,
                "outcome": match a.outcome {
                    AttemptOutcome::Answered => "answered",
                    AttemptOutcome::TimedOut => "timed_out",
                    AttemptOutcome::Failed => "failed",
                    AttemptOutcome::Unavailable => "unavailable",
                },
                "millis": a.millis,
            })
        })
        .collect();
    let mut d = Decision::new(DecisionKind::new(HANDOFF), outcome)
        .session(session.to_owned())
        .agent(family.to_owned())
        .detail("destination", destination.to_owned())
        .detail("file", file.to_owned())
        .detail(
            "compact_by",
            compact
                .compact
                .as_ref()
                .map_or(serde_json::Value::Null, |c| c.author.clone().into()),
        )
        .detail("compact_attempts", attempts);
    if let Some(why) = failure {
        d = d.reason(why.lines().next().unwrap_or("").to_owned());
    }
    d
}

/// One receipt check: the verdict and which anchors were missing.
pub fn receipt_check(report: &ReceiptReport) -> Decision {
    let outcome = match report.verdict {
        Verdict::Complete => "complete",
        Verdict::Missing => "missing",
        Verdict::NoReceipt => "no_receipt",
        Verdict::NoAnchors => "no_anchors",
    };
    Decision::new(DecisionKind::new(RECEIPT_CHECK), Outcome::new(outcome))
        .detail("file", report.file.display().to_string())
        .detail("anchors", report.anchors.len())
        .detail(
            "missing",
            report
                .missing
                .iter()
                .map(|a| a.text.clone())
                .collect::<Vec<_>>(),
        )
}

/// A handoff refused before anything was written (an unknown session or destination, a
/// directory that is not here).
pub fn handoff_refused(session: &str, destination: &str, why: &str) -> Decision {
    Decision::new(DecisionKind::new(HANDOFF), Outcome::REFUSED)
        .session(session.to_owned())
        .detail("destination", destination.to_owned())
        .reason(why.lines().next().unwrap_or("").to_owned())
}
