//! `review_correction`: a cross review's correction into the session it reviewed, past the
//! escalation guard (docs/review.md). Every door comes here — the CLI's `review --send` over
//! the socket, the Telegram tap and the review robot in-process ([`correct`]) — so one check
//! runs with the daemon's live knowledge:
//!
//! 1. the facts are gathered: `config.toml`'s `[review]` table, the session as the engine sees
//!    it now (turn running, deliveries queued, panel state and approvals, Copilot host), the
//!    Telegram approval asks open for it, whether a person wrote after the reviewed part (read
//!    with the digest's reader), and the corrections sent to it in the last day (`hub.db`);
//! 2. `cross_agent_review::guard::check` names the first rule that refuses, if any;
//! 3. a correction that passes is an ordinary delivery (panel first, then the other doors) from
//!    a caller that is no session, its envelope naming the reviewer; it is recorded in
//!    `hub.db` (its hash, never its text).
//!
//! Every answer is a decision line: `review_correction_sent` with the delivery id, or
//! `review_correction_refused` with the rule — never the correction's text.
//!
//! Checks and sends are serialized, so two requests at once cannot both pass the cool-down.

use std::path::Path;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_hub::Engine;
use cross_agent_hub::envelope::reviewer_name;
use cross_agent_hub::records::SentCorrection;
use cross_agent_protocol::bridge::{CallerContext, SendParams, SendResponse, TargetKey};
use cross_agent_protocol::review::{GuardRule, ReviewCorrectionParams, ReviewCorrectionResponse};
use cross_agent_review::digest::{self, ReviewedPosition};
use cross_agent_review::guard::{self, Facts, Limits, PastCorrection, SessionFacts};
use cross_agent_review::settings;
use cross_agent_stores::UnixMillis;

/// The client name a correction is sent under (the envelope names the reviewer, not this).
pub const REVIEWER_CLIENT: &str = "cross-agent-reviewer";

/// One check-and-send at a time.
static ONE_AT_A_TIME: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Runs the guard over `params` and sends the correction when it passes. Blocking (reads the
/// transcript and `hub.db`). `Err` only when the daemon cannot judge at all (an unreadable
/// `config.toml`, a failing store): the message names what and how to fix it.
pub(crate) fn correct(
    engine: &Engine,
    bot: &cross_agent_telegram::Bot,
    home: &Path,
    params: &ReviewCorrectionParams,
) -> Result<ReviewCorrectionResponse, String> {
    let _one = ONE_AT_A_TIME.lock();
    let decisions = DecisionLog::in_existing_home(home);
    let config = settings::load(home).map_err(|e| e.to_string())?;
    let agent = params.session.agent;
    let session_id = params.session.session_id.as_str();
    let caller = stores_caller(&params.caller);
    let now_ms = UnixMillis::now().0;

    let activity = engine
        .session_activity(&caller, agent, session_id)
        .map_err(|e| e.to_string())?;
    let session = activity.as_ref().map(|activity| {
        let requester = cross_agent_hub::caller::identify(&params.caller, &engine.started_turns());
        let asks = bot.awaiting_approval();
        let mut warnings = cross_agent_stores::Warnings::default();
        let since_review = digest::human_messages_after(
            agent,
            &activity.transcript,
            &reviewed_position(params),
            &mut warnings,
        )
        .map_err(|e| e.to_string());
        SessionFacts {
            label: format!("{agent} session {session_id}"),
            is_requester: requester.agent == Some(agent)
                && requester.session_id.as_deref() == Some(session_id),
            busy: activity.busy.clone(),
            awaiting_approval: activity.awaiting_approval.clone().or_else(|| {
                asks.contains(session_id)
                    .then(|| "an approval ask for it is open on the phone".to_owned())
            }),
            since_review,
        }
    });
    let history: Vec<PastCorrection> = engine
        .review_corrections(agent, session_id, now_ms - guard_window_ms())
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|c| PastCorrection {
            sent_ms: c.sent_ms,
            hash: c.correction_hash,
        })
        .collect();
    let facts = Facts {
        requested_by: params.requested_by,
        verdict: params.verdict,
        correction: &params.correction,
        session,
        history: &history,
        now_ms,
        limits: Limits {
            steer: config.steer,
            max_corrections_per_day: config.max_corrections_per_day,
            cooldown: config.cooldown,
        },
    };
    if let Err(refused) = guard::check(&facts) {
        decisions.record(refused_line(params, refused.rule, &refused.reason));
        return Ok(ReviewCorrectionResponse::Refused {
            rule: refused.rule,
            reason: refused.reason,
        });
    }

    let cwd = activity
        .as_ref()
        .and_then(|a| a.cwd.as_ref())
        .map(|p| p.to_string_lossy().into_owned());
    let reviewer = reviewer_name(
        &params.reviewer.provider,
        &params.reviewer.model,
        &params.reviewer.family,
    );
    let sent = engine
        .send_review_correction(
            SendParams {
                agent,
                message: params.correction.clone(),
                session_id: Some(session_id.to_owned()),
                new_session: false,
                scope: None,
                cwd: cwd.clone(),
                timeout: None,
                conversation_id: None,
                raw: false,
                allow_same_agent: false,
                caller: reviewer_caller(caller, cwd),
            },
            &reviewer,
        )
        .map_err(|e| e.to_string())?;
    match sent {
        SendResponse::Accepted(receipt) => {
            engine
                .record_review_correction(&SentCorrection {
                    target_key: TargetKey::new(agent, session_id).to_string(),
                    sent_ms: now_ms,
                    correction_hash: guard::correction_hash(&params.correction),
                    review_id: params.review_id.clone(),
                    delivery_id: receipt.delivery_id.clone(),
                    requested_by: params.requested_by.as_str().to_owned(),
                })
                .map_err(|e| {
                    format!(
                        "the correction went out as delivery {}, but recording it failed: {e}",
                        receipt.delivery_id
                    )
                })?;
            decisions.record(
                about(params, "review_correction_sent", Outcome::new("sent"))
                    .delivery(receipt.delivery_id.clone()),
            );
            Ok(ReviewCorrectionResponse::Sent {
                delivery_id: receipt.delivery_id,
            })
        }
        SendResponse::Refused(refusal) => {
            // The bridge's own send guards (no route left, headless off, …) refused it.
            let reason = format!(
                "the bridge refused the delivery: {}",
                cross_agent_decisions::events::first_line(&refusal.message)
            );
            decisions.record(refused_line(params, GuardRule::SendRefused, &reason));
            Ok(ReviewCorrectionResponse::Refused {
                rule: GuardRule::SendRefused,
                reason,
            })
        }
    }
}

/// How far back the guard looks at corrections sent: its day.
fn guard_window_ms() -> i64 {
    i64::try_from(guard::DAY.as_millis()).unwrap_or(i64::MAX)
}

/// The reviewed position as the digest's reader takes it.
fn reviewed_position(params: &ReviewCorrectionParams) -> ReviewedPosition {
    let up_to = &params.reviewed_up_to;
    ReviewedPosition {
        offset: up_to.offset,
        timestamp: up_to
            .timestamp
            .as_deref()
            .and_then(UnixMillis::parse_rfc3339),
        record_id: up_to.record_id.clone(),
    }
}

/// Where the stores are and which settings apply: the requesting process's, or — for a door
/// inside the daemon (the Telegram tap, the robot), which sends no context — the daemon's own.
fn stores_caller(given: &CallerContext) -> CallerContext {
    if given.pid != 0 || !given.child_env.is_empty() || !given.settings.is_empty() {
        return given.clone();
    }
    crate::own_caller::daemon_caller(REVIEWER_CLIENT)
}

/// The caller a correction is sent as: the stores and settings of `stores`, but no session, no
/// process ancestry and no conversation — the reviewer is nobody's session, so the correction
/// never passes for the requester's (or the session's own) message.
fn reviewer_caller(stores: CallerContext, cwd: Option<String>) -> CallerContext {
    CallerContext {
        cwd,
        pid: std::process::id(),
        client_name: Some(REVIEWER_CLIENT.to_owned()),
        settings: stores.settings,
        child_env: stores.child_env,
        withheld_env: stores.withheld_env,
        ..CallerContext::default()
    }
}

/// The fields every review_correction decision carries: ids, names and the verdict, never text.
fn about(params: &ReviewCorrectionParams, kind: &'static str, outcome: Outcome) -> Decision {
    Decision::new(DecisionKind::new(kind), outcome)
        .agent(params.session.agent.as_str())
        .target_session(params.session.session_id.clone())
        .detail("review_id", params.review_id.clone())
        .detail("verdict", params.verdict.as_str())
        .detail("requested_by", params.requested_by.as_str())
        .detail("reviewer_provider", params.reviewer.provider.clone())
        .detail("reviewer_model", params.reviewer.model.clone())
        .detail("reviewer_family", params.reviewer.family.clone())
}

fn refused_line(params: &ReviewCorrectionParams, rule: GuardRule, reason: &str) -> Decision {
    about(params, "review_correction_refused", Outcome::REFUSED)
        .guard(rule.as_str())
        .detail("rule", rule.as_str())
        .reason(reason)
}
