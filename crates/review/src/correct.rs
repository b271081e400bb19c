//! Asking the daemon to send a review's correction (`review_correction`): the client side of
//! `cross-agent review SESSION --send`. The guard itself runs in the daemon (`guard`), so the
//! CLI, the Telegram tap and the robot all meet one check with the daemon's live knowledge;
//! this only builds the request and says what came back.

use cross_agent_caller::{PerCall, Snapshot};
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_protocol::bridge::CallerContext;
use cross_agent_protocol::review::{
    CorrectionRequester, ReviewCorrectionParams, ReviewCorrectionResponse, ReviewVerdict,
    ReviewedSession, ReviewedUpTo, ReviewerIdentity,
};
use cross_agent_stores::Agent;

use crate::digest::ReviewedPosition;
use crate::error::{Result, ReviewError};
use crate::run::ReviewReport;
use crate::verdict::VerdictKind;

/// The client name the request's caller context reports.
pub const CLIENT_NAME: &str = "cross-agent-review";

/// One review's correction, as the review produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correction<'a> {
    pub agent: Agent,
    pub session_id: &'a str,
    /// The review's id.
    pub review_id: &'a str,
    pub verdict: VerdictKind,
    /// The verdict's `correction`.
    pub text: &'a str,
    pub reviewer: ReviewerIdentity,
    /// The digest's `reviewed_to`.
    pub reviewed_to: &'a ReviewedPosition,
}

/// The verdict as the wire spells it.
pub fn wire_verdict(kind: VerdictKind) -> ReviewVerdict {
    match kind {
        VerdictKind::OnTrack => ReviewVerdict::OnTrack,
        VerdictKind::Drifting => ReviewVerdict::Drifting,
        VerdictKind::OffTrack => ReviewVerdict::OffTrack,
        VerdictKind::Blocked => ReviewVerdict::Blocked,
    }
}

/// The request for `correction`, asked by `requested_by` from a process whose caller context
/// is `caller` (its stores and settings; the daemon never sends as it).
pub fn params(
    correction: &Correction<'_>,
    requested_by: CorrectionRequester,
    caller: CallerContext,
) -> ReviewCorrectionParams {
    ReviewCorrectionParams {
        session: ReviewedSession {
            agent: correction.agent,
            session_id: correction.session_id.to_owned(),
        },
        review_id: correction.review_id.to_owned(),
        verdict: wire_verdict(correction.verdict),
        correction: correction.text.to_owned(),
        reviewer: correction.reviewer.clone(),
        reviewed_up_to: ReviewedUpTo {
            offset: correction.reviewed_to.offset,
            timestamp: correction.reviewed_to.timestamp.map(|t| t.to_rfc3339()),
            record_id: correction.reviewed_to.record_id.clone(),
        },
        requested_by,
        caller,
    }
}

/// This process as the requester: its environment (where the agents' stores are), cwd and
/// ancestry (so the daemon can tell a session asking to correct itself).
pub fn this_process() -> CallerContext {
    cross_agent_caller::context(
        &Snapshot::from_process(),
        PerCall {
            client_name: Some(CLIENT_NAME.to_owned()),
            codex_turn_metadata: None,
            copilot_caller_session: None,
        },
    )
}

/// Asks the daemon behind `client` to send `correction` past the escalation guard; answers
/// `sent {delivery_id}` or `refused {rule, reason}` (print the rule and the reason).
pub fn request(
    client: &BlockingClient,
    correction: &Correction<'_>,
    requested_by: CorrectionRequester,
) -> Result<ReviewCorrectionResponse> {
    client
        .call(params(correction, requested_by, this_process()))
        .map_err(|e| ReviewError::Daemon(Box::new(e)))
}

/// One line for a person: `sent as delivery dlv_…` or `refused (cooldown): …`.
pub fn describe(response: &ReviewCorrectionResponse) -> String {
    match response {
        ReviewCorrectionResponse::Sent { delivery_id } => format!(
            "correction sent as delivery {delivery_id} (`cross-agent status {delivery_id}` \
             follows it)"
        ),
        ReviewCorrectionResponse::Refused { rule, reason } => {
            format!("correction not sent, refused by the guard's {rule} rule: {reason}")
        }
    }
}

impl<'a> Correction<'a> {
    /// The correction a review's report carries: `None` when the review gave no verdict, or a
    /// verdict without a correction (there is nothing to send).
    pub fn of_report(report: &'a ReviewReport) -> Option<Correction<'a>> {
        let verdict = report.verdict?;
        let text = report.correction.as_deref()?;
        let reviewer = report.reviewer.as_ref()?;
        Some(Correction {
            agent: report.session.agent,
            session_id: &report.session.id,
            review_id: &report.id,
            verdict,
            text,
            reviewer: ReviewerIdentity {
                provider: reviewer.provider.clone(),
                model: reviewer.model.clone(),
                family: reviewer.family.clone(),
            },
            reviewed_to: &report.reviewed_to,
        })
    }
}
