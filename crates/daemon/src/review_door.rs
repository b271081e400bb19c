//! How the daemon runs a review and asks for a correction, for the review robot
//! ([`crate::robot`]) and the Telegram Review button (`telegram_sessions`).
//!
//! A review runs as this daemon's own binary, `cross-agent review SESSION --json`, in a child
//! process (as handoffs do): the provider calls, their timeouts and retries, the decision line
//! and the report kept in `CROSS_AGENT_HOME/reviews/` are that command's, and a slow reviewer
//! never holds a thread of the runtime. Its JSON is read for the fields the issue fixes
//! (`id`, `outcome`, `verdict`, `task`, `gaps`, `correction`, `reviewer`).
//!
//! A correction goes through the escalation guard's `review_correction` request; until that
//! request is part of this daemon, [`Corrections`] answers every ask with the refusal
//! `unavailable`, so nothing reaches a session without the guard.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

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

/// The guard as this build has it: not yet, so every correction is refused by name.
#[derive(Debug, Default)]
pub struct NoGuardYet;

impl Corrections for NoGuardYet {
    fn request(
        &self,
        _agent: &str,
        _session_id: &str,
        _card: &ReviewCard,
        _requested_by: RequestedBy,
    ) -> CorrectionAnswer {
        CorrectionAnswer::Refused {
            rule: "unavailable".to_owned(),
            reason: "this daemon has no escalation guard (`review_correction`) yet, so it sends \
                     no correction"
                .to_owned(),
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
