//! How the daemon runs a review and asks for a correction, for the review robot
//! ([`crate::robot`]) and the Telegram Review button (`telegram_sessions`).
//!
//! A review runs as this daemon's own binary, `cross-agent review SESSION --json`, in a child
//! process (as handoffs do): the provider calls, their timeouts and retries, the decision line
//! and the report kept in `CROSS_AGENT_HOME/reviews/` are that command's, and a slow reviewer
//! never holds a thread of the runtime. Its JSON is read for the fields the issue fixes
//! (`id`, `outcome`, `verdict`, `task`, `gaps`, `correction`, `reviewer`).
//!
//! A correction goes through the escalation guard (`review_correction`'s handler, in process:
//! [`Guarded`]), the same check the CLI's `review --send` meets over the socket.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use cross_agent_protocol::bridge::CallerContext;
use cross_agent_protocol::review::{CorrectionRequester, ReviewCorrectionResponse};
use cross_agent_review::correct::{self, Correction};
use cross_agent_review::record;
use cross_agent_telegram::sessions::{CorrectionAnswer, ReviewCard};
use serde_json::Value;

/// A review reads a transcript and asks a provider (with its own timeouts and retries).
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Who asked for a correction (`requested_by` of `review_correction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestedBy {
    Telegram,
    Robot,
}

impl RequestedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestedBy::Telegram => "telegram",
            RequestedBy::Robot => "robot",
        }
    }
}

/// Runs reviews as the daemon's own binary.
#[derive(Debug, Clone)]
pub struct Reviews {
    exe: Option<PathBuf>,
}

impl Reviews {
    pub fn new() -> Reviews {
        Reviews {
            exe: std::env::current_exe().ok(),
        }
    }

    /// Reviews session `session_id`; an error when the review could not run at all.
    pub fn review(&self, session_id: &str) -> Result<ReviewCard, String> {
        let Some(exe) = &self.exe else {
            return Err(
                "this daemon cannot find its own binary to run `cross-agent review`".into(),
            );
        };
        let mut command = Command::new(exe);
        command.args(["review", session_id, "--json"]);
        let finished =
            cross_agent_process::run::run(command, None, REVIEW_TIMEOUT).map_err(|error| {
                match error {
                    cross_agent_process::run::RunError::TimedOut => format!(
                        "`cross-agent review` took longer than {} s",
                        REVIEW_TIMEOUT.as_secs()
                    ),
                    other => format!("`cross-agent review` could not run: {other:?}"),
                }
            })?;
        // The report is printed whatever the outcome (a reviewer failure may exit non-zero).
        match serde_json::from_slice::<Value>(&finished.stdout) {
            Ok(report) if report.get("outcome").is_some() => Ok(card_of(&report)),
            _ => {
                let stderr = String::from_utf8_lossy(&finished.stderr);
                let last = stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("no output");
                Err(format!(
                    "`cross-agent review` failed ({}): {}",
                    finished.status,
                    last.trim()
                ))
            }
        }
    }
}

/// The card's fields from `review --json`'s report.
fn card_of(report: &Value) -> ReviewCard {
    let text = |key: &str| {
        report[key]
            .as_str()
            .map(str::to_owned)
            .filter(|s| !s.is_empty())
    };
    let reviewer = &report["reviewer"];
    let reviewer = reviewer["provider"].as_str().map(|provider| {
        let model = reviewer["model"].as_str().unwrap_or("");
        let family = reviewer["family"].as_str().unwrap_or("?");
        format!("{provider} {model} ({family})").replace("  ", " ")
    });
    ReviewCard {
        review_id: text("id").unwrap_or_default(),
        outcome: text("outcome").unwrap_or_default(),
        verdict: text("verdict"),
        task: text("task"),
        gaps: report["gaps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g.as_str().map(str::to_owned))
            .collect(),
        correction: text("correction"),
        reviewer,
        reason: text("problem"),
    }
}

/// The seam to the escalation guard's `review_correction` request.
pub trait Corrections: Send + Sync + 'static {
    /// Asks the guard to send `card`'s correction into `agent`/`session_id`.
    fn request(
        &self,
        agent: &str,
        session_id: &str,
        card: &ReviewCard,
        requested_by: RequestedBy,
    ) -> CorrectionAnswer;
}

/// The escalation guard of this daemon: the review's kept report (`reviews/<id>.json`) gives
/// the correction, its verdict, reviewer and reviewed position, and `review_correction`'s own
/// handler judges and sends it — the one check the CLI's `--send` meets too.
pub struct Guarded {
    engine: cross_agent_hub::Engine,
    /// Weak: the bot holds this (through its session host), and a strong handle back would
    /// keep both — and the engine's store, left unclosed with its WAL — alive past shutdown.
    bot: cross_agent_telegram::WeakBot,
    home: PathBuf,
}

impl Guarded {
    pub fn new(
        engine: cross_agent_hub::Engine,
        bot: cross_agent_telegram::Bot,
        home: PathBuf,
    ) -> Guarded {
        Guarded {
            engine,
            bot: bot.downgrade(),
            home,
        }
    }
}

impl Corrections for Guarded {
    fn request(
        &self,
        agent: &str,
        session_id: &str,
        card: &ReviewCard,
        requested_by: RequestedBy,
    ) -> CorrectionAnswer {
        let refused = |rule: &str, reason: String| CorrectionAnswer::Refused {
            rule: rule.to_owned(),
            reason,
        };
        let report = match record::load(&self.home, &card.review_id) {
            Ok(report) => report,
            Err(e) => return refused("unavailable", format!("the review is not kept: {e}")),
        };
        if report.session.id != session_id || report.session.agent.as_str() != agent {
            return refused(
                "unknown_session",
                format!(
                    "review {} is of {} session {}, not of {agent} session {session_id}",
                    report.id, report.session.agent, report.session.id
                ),
            );
        }
        let Some(correction) = Correction::of_report(&report) else {
            return refused(
                "no_correction",
                format!("review {} proposes no correction", report.id),
            );
        };
        let requester = match requested_by {
            RequestedBy::Telegram => CorrectionRequester::Telegram,
            RequestedBy::Robot => CorrectionRequester::Robot,
        };
        let Some(bot) = self.bot.upgrade() else {
            return refused("unavailable", "the daemon is shutting down".to_owned());
        };
        // The daemon asks as nobody: no session, no ancestry, so never a session to itself.
        let params = correct::params(&correction, requester, CallerContext::default());
        match crate::review_correction::correct(&self.engine, &bot, &self.home, &params) {
            Ok(ReviewCorrectionResponse::Sent { delivery_id }) => {
                CorrectionAnswer::Sent { delivery_id }
            }
            Ok(ReviewCorrectionResponse::Refused { rule, reason }) => {
                refused(rule.as_str(), reason)
            }
            Err(why) => refused("unavailable", why),
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_card_takes_the_reports_fields() {
        let card = card_of(&json!({
            "id": "rv_1", "outcome": "verdict", "verdict": "drifting", "task": "fix the build",
            "gaps": ["tests not run"], "correction": "run the tests",
            "reviewer": {"provider": "openai", "model": "gpt-5", "family": "openai"},
        }));
        assert_eq!(
            card,
            ReviewCard {
                review_id: "rv_1".into(),
                outcome: "verdict".into(),
                verdict: Some("drifting".into()),
                task: Some("fix the build".into()),
                gaps: vec!["tests not run".into()],
                correction: Some("run the tests".into()),
                reviewer: Some("openai gpt-5 (openai)".into()),
                reason: None,
            }
        );
    }
}
