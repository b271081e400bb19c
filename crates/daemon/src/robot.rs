//! The review robot: with `review.robot = true` in `CROSS_AGENT_HOME/config.toml` the daemon
//! reviews idle sessions on its own (docs/review.md, "The robot").
//!
//! Every pass ([`PASS`], or `CROSS_AGENT_REVIEW_ROBOT_PASS_SECONDS`) reads the `[review]`
//! settings again (so turning the robot on or off needs no restart), lists the live sessions
//! from the hub's index, and lets `review::cadence` pick the due ones — at most its cap, one at
//! a time, each in a blocking task. A verdict with a correction goes to the escalation guard as
//! `requested_by: robot` when `review.steer = true`. What was done is remembered in
//! `robot-review-state.json` (session ids hashed with the install's secret) after each review,
//! so a restart carries on where this daemon stopped instead of reviewing every chat at once.
//! Each review is a `review_robot` decision line (session, agent, outcome, verdict, review id;
//! never the task, gaps or correction), each correction asked `review_robot_correction`.
//!
//! The robot stops with the Telegram poller's stop signal: a daemon being replaced lets its
//! successor do the passes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_hub::Engine;
use cross_agent_protocol::bridge::{AgentFilter, CallerContext, ListSessionsParams};
use cross_agent_protocol::settings as var;
use cross_agent_review::cadence::{self, Cadence, Candidate, InstallKey, Reviewed};
use cross_agent_review::settings;
use cross_agent_stores::UnixMillis;
use cross_agent_telegram::sessions::CorrectionAnswer;
use tokio::sync::watch;

use crate::passes::{self, LastingProblem};
use crate::review_door::{Corrections, RequestedBy, Reviews};

/// How often the robot looks for due sessions.
pub const PASS: Duration = Duration::from_secs(60);
/// How many sessions the hub's index is asked for (the newest).
const LISTED: u32 = 200;

/// The `[review]` settings the robot reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RobotSettings {
    pub robot: bool,
    pub steer: bool,
    pub cadence: Cadence,
}

/// Reads `robot`, `steer`, `robot_after_idle_minutes` and `robot_interval_minutes` from the
/// `[review]` table of `<home>/config.toml` (defaults when absent). An unreadable file, a link
/// or a value of the wrong type is an error naming the file.
pub fn read_settings(home: &Path) -> Result<RobotSettings, String> {
    let config = settings::load(home).map_err(|e| e.to_string())?;
    Ok(RobotSettings {
        robot: config.robot,
        steer: config.steer,
        cadence: Cadence {
            after_idle: config.robot_after_idle,
            interval: config.robot_interval,
            ..Cadence::default()
        },
    })
}

/// The decision line's outcome for a review's `outcome` (a word it does not know is `other`).
fn outcome_word(outcome: &str) -> &'static str {
    match outcome {
        "verdict" => "verdict",
        "unparseable" => "unparseable",
        "reviewer_failed" => "reviewer_failed",
        "no_reviewer" => "no_reviewer",
        _ => "other",
    }
}

/// Starts the robot's passes; they end when `stop` turns true.
pub fn start(
    engine: Engine,
    home: PathBuf,
    decisions: DecisionLog,
    corrections: Arc<dyn Corrections>,
    stop: watch::Receiver<bool>,
) {
    let robot = Robot {
        engine,
        home,
        decisions,
        corrections,
        reviews: Reviews::new(),
        problem: LastingProblem::new("the review robot"),
    };
    let every = passes::interval_from_env(var::REVIEW_ROBOT_PASS_SECONDS, PASS);
    passes::run_every(every, stop, move |stopped| robot.pass(stopped));
}

struct Robot {
    engine: Engine,
    home: PathBuf,
    decisions: DecisionLog,
    corrections: Arc<dyn Corrections>,
    reviews: Reviews,
    problem: LastingProblem,
}

impl Robot {
    fn problem(&self, problem: Option<String>) {
        self.problem.set(problem);
    }

    fn pass(&self, stop: &watch::Receiver<bool>) {
        let settings = match read_settings(&self.home) {
            Ok(settings) => settings,
            Err(problem) => return self.problem(Some(problem)),
        };
        if !settings.robot {
            return self.problem(None);
        }
        let key = match InstallKey::load_or_create(&self.home) {
            Ok(key) => key,
            Err(e) => return self.problem(Some(e.to_string())),
        };
        let loaded = match cadence::load(&self.home) {
            Ok(loaded) => loaded,
            Err(e) => return self.problem(Some(e.to_string())),
        };
        self.problem(None);
        if let Some(aside) = &loaded.quarantined {
            tracing::warn!(
                moved_to = %aside.display(),
                "the review robot's state file was damaged and moved aside; starting it afresh"
            );
        }
        let mut state = loaded.state;
        let candidates = match self.candidates() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "the review robot could not list the sessions");
                return;
            }
        };
        let now = UnixMillis::now().0;
        for candidate in cadence::pick(&state, &key, &candidates, now, &settings.cadence) {
            if *stop.borrow() {
                return;
            }
            let done = self.review(candidate, settings.steer);
            state.record(&key, candidate, UnixMillis::now().0, done);
            if let Err(e) = cadence::save(&self.home, &state) {
                tracing::warn!(error = %e, "the review robot could not save its state");
                return;
            }
        }
    }

    fn candidates(&self) -> Result<Vec<Candidate>, String> {
        let listed = self
            .engine
            .list_sessions(ListSessionsParams {
                agent: AgentFilter::All,
                scope: None,
                cwd: None,
                limit: Some(LISTED),
                caller: CallerContext::default(),
            })
            .map_err(|e| e.to_string())?;
        Ok(Candidate::of_listing(listed.sessions)
            .map(|(candidate, _)| candidate)
            .collect())
    }

    /// Reviews one session (and asks for its correction when steering); what came of it.
    fn review(&self, candidate: &Candidate, steer: bool) -> Reviewed {
        let decision = |outcome: &'static str| {
            Decision::new(DecisionKind::new("review_robot"), Outcome::new(outcome))
                .session(candidate.session_id.clone())
                .agent(candidate.agent.clone())
        };
        let card = match self.reviews.review(&candidate.session_id) {
            Ok(card) => card,
            Err(reason) => {
                self.decisions.record(decision("failed").reason(reason));
                return Reviewed {
                    outcome: "failed".to_owned(),
                    verdict: None,
                    correction: None,
                };
            }
        };
        let mut line =
            decision(outcome_word(&card.outcome)).detail("review_id", card.review_id.clone());
        if let Some(verdict) = &card.verdict {
            line = line.detail("verdict", verdict.clone());
        }
        self.decisions.record(line);
        let correction = (steer && card.correction.is_some()).then(|| {
            let answer = self.corrections.request(
                &candidate.agent,
                &candidate.session_id,
                &card,
                RequestedBy::Robot,
            );
            let asked = Decision::new(
                DecisionKind::new("review_robot_correction"),
                Outcome::new(match &answer {
                    CorrectionAnswer::Sent { .. } => "sent",
                    CorrectionAnswer::Refused { .. } => "refused",
                }),
            )
            .session(candidate.session_id.clone())
            .agent(candidate.agent.clone())
            .detail("review_id", card.review_id.clone())
            .detail("requested_by", RequestedBy::Robot.as_str());
            match answer {
                CorrectionAnswer::Sent { delivery_id } => {
                    self.decisions
                        .record(asked.detail("delivery_id", delivery_id));
                    "sent".to_owned()
                }
                CorrectionAnswer::Refused { rule, .. } => {
                    self.decisions.record(asked.guard(rule.clone()));
                    format!("refused: {rule}")
                }
            }
        });
        Reviewed {
            outcome: card.outcome,
            verdict: card.verdict,
            correction,
        }
    }
}
