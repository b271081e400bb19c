//! One cross review (docs/review.md "Running a review"): find the session, digest it, pick a
//! reviewer of another model family from the provider pool, ask with the verdict's JSON
//! Schema, validate the answer — an invalid one is sent back once with the validation error —
//! and return a [`ReviewReport`] whatever happened.
//!
//! Every way a review can end is an outcome, never a guess: a verdict; an answer that did not
//! validate after the one repair (`unparseable`); a reviewer that did not answer — timeout, 429,
//! 5xx, auth, … (`reviewer_failed`: never a verdict, so never a correction); no provider of
//! another family configured (`no_reviewer`, nothing asked). A session whose family is unknown
//! is an error: the "other family" rule cannot be kept without knowing it.
//!
//! Blocking: the CLI calls it directly, the daemon through `spawn_blocking`. Recording the
//! report (the decision line and the kept file) is [`crate::record`]'s.

use std::path::PathBuf;
use std::time::Instant;

use cross_agent_providers::{FailureKind, Family, Pool, Provider, Request};
use cross_agent_stores::{Agent, StoreRoots, Warnings};
use serde::{Deserialize, Serialize};

use crate::digest::{self, Digest, Limits, ModelFamily, ReviewedPosition, family_of_model};
use crate::error::{Result, ReviewError};
use crate::prompt::{self, ReviewPrompt};
use crate::verdict::{self, AnswerError, Verdict, VerdictKind};

/// How a review is run.
#[derive(Debug, Clone)]
pub struct ReviewSettings {
    /// Where the agents' stores are.
    pub roots: StoreRoots,
    /// The session index's cache file (`scan::cache_file(home)`), when there is a home.
    pub cache_file: Option<PathBuf>,
    /// How much of the session the reviewer is shown.
    pub limits: Limits,
    /// Ask this provider (by name) instead of the first of another family; it must still be of
    /// another family.
    pub reviewer: Option<String>,
    /// The answer's length limit (tokens): a full verdict (10 gaps of 500 characters and a
    /// 2,000-character correction) fits.
    pub max_tokens: u32,
}

impl ReviewSettings {
    /// The defaults for these stores.
    pub fn new(roots: StoreRoots) -> ReviewSettings {
        ReviewSettings {
            roots,
            cache_file: None,
            limits: Limits::default(),
            reviewer: None,
            max_tokens: ReviewSettings::DEFAULT_MAX_TOKENS,
        }
    }

    pub const DEFAULT_MAX_TOKENS: u32 = 4096;
}

/// How a review ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewOutcome {
    /// The reviewer answered with a valid verdict.
    Verdict,
    /// The answer did not validate, nor did the one repair asked for.
    Unparseable,
    /// The reviewer did not answer (timeout, rate limit, server error, auth, …).
    ReviewerFailed,
    /// No provider of a family other than the session's is configured; nothing was asked.
    NoReviewer,
}

impl ReviewOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewOutcome::Verdict => "verdict",
            ReviewOutcome::Unparseable => "unparseable",
            ReviewOutcome::ReviewerFailed => "reviewer_failed",
            ReviewOutcome::NoReviewer => "no_reviewer",
        }
    }
}

/// Who reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reviewer {
    /// The provider's name in the pool.
    pub provider: String,
    /// The model that answered (as the provider says), else the one configured, else
    /// `default` (a CLI's own default).
    pub model: String,
    pub family: String,
}

/// The session reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewedSession {
    pub id: String,
    pub agent: Agent,
    /// The latest model name the transcript records.
    pub model: Option<String>,
    pub family: ModelFamily,
    /// The transcript read (a guard reads on from `reviewed_to` in it).
    pub path: PathBuf,
}

/// Tokens the reviewer's provider counted, over every request of the review (`None` when it
/// said nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: Option<u64>,
    pub output: Option<u64>,
}

/// What one review found: what `--json` prints and what is kept in the home.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewReport {
    /// `rv_` and a UUIDv7: unique, and in time order as text.
    pub id: String,
    /// When it finished (RFC 3339 UTC, milliseconds).
    pub at: String,
    pub outcome: ReviewOutcome,
    /// The verdict's fields, with outcome `verdict` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<VerdictKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction: Option<String>,
    /// `None` with outcome `no_reviewer`.
    pub reviewer: Option<Reviewer>,
    pub session: ReviewedSession,
    /// How far the transcript was read: a message a person wrote after it is newer than what
    /// the reviewer saw.
    pub reviewed_to: ReviewedPosition,
    /// The whole review, reading the transcript included.
    pub duration_ms: u64,
    pub tokens: Tokens,
    /// Requests made to the reviewer: 1, 2 with the repair, 0 with no reviewer (retries of one
    /// ask are the provider's and not counted here).
    pub requests: u32,
    /// Why there is no verdict: the validation error, the provider's failure (one line, never a
    /// key), or that no reviewer of another family is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The provider's failure kind, with outcome `reviewer_failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
}

impl ReviewReport {
    /// The verdict, with outcome `verdict`.
    pub fn verdict(&self) -> Option<Verdict> {
        Some(Verdict {
            verdict: self.verdict?,
            task: self.task.clone()?,
            gaps: self.gaps.clone().unwrap_or_default(),
            correction: self.correction.clone(),
        })
    }
}

/// The longest first answer quoted back in the repair request, in characters.
const QUOTED_ANSWER_CHARS: usize = 8_000;

/// Reviews session `id` (any agent whose transcript is read; see [`digest::digest_session`]).
/// Errors are what stops a review before any reviewer is chosen: the session is not found or
/// cannot be read, its family is unknown, `settings.reviewer` names no usable provider.
pub fn review(id: &str, pool: &Pool, settings: &ReviewSettings) -> Result<ReviewReport> {
    let started = Instant::now();
    let mut warnings = Warnings::default();
    let digest = digest::digest_session(
        &settings.roots,
        settings.cache_file.clone(),
        id,
        &settings.limits,
        &mut warnings,
    )?;
    let family = digest.model.family;
    if family == ModelFamily::Unknown {
        return Err(ReviewError::UnknownFamily {
            id: digest.session_id.clone(),
            agent: digest.agent,
            model: match &digest.model.model {
                Some(model) => format!("records model {model:?}"),
                None => "records no model".to_owned(),
            },
        });
    }
    let mut report = ReviewReport {
        id: new_id(),
        at: String::new(),
        outcome: ReviewOutcome::NoReviewer,
        verdict: None,
        task: None,
        gaps: None,
        correction: None,
        reviewer: None,
        session: ReviewedSession {
            id: digest.session_id.clone(),
            agent: digest.agent,
            model: digest.model.model.clone(),
            family,
            path: digest.path.clone(),
        },
        reviewed_to: digest.reviewed_to.clone(),
        duration_ms: 0,
        tokens: Tokens::default(),
        requests: 0,
        problem: None,
        failure: None,
    };
    match pick_reviewer(pool, family, settings.reviewer.as_deref())? {
        Some(provider) => ask(&mut report, pool, provider, &digest, settings),
        None => report.problem = Some(no_reviewer_problem(pool, family)),
    }
    report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    report.at = cross_agent_decisions::clock::now();
    Ok(report)
}

/// The reviewer: the named provider, else the first of the pool of another family. A provider
/// is of the session's family when its family says so *or* its model's name does (a local
/// proxy serving Claude is configured as `local`, but is still Claude).
pub fn pick_reviewer<'a>(
    pool: &'a Pool,
    session: ModelFamily,
    named: Option<&str>,
) -> Result<Option<&'a Provider>> {
    if let Some(name) = named {
        let Some(provider) = pool.get(name) else {
            let configured: Vec<String> = pool.providers().iter().map(|p| p.describe()).collect();
            return Err(ReviewError::UnknownProvider {
                name: name.to_owned(),
                configured: if configured.is_empty() {
                    "none".to_owned()
                } else {
                    configured.join(", ")
                },
            });
        };
        if same_family(provider, session) {
            return Err(ReviewError::SameFamily {
                name: provider.name.clone(),
                family: session.as_str().to_owned(),
            });
        }
        return Ok(Some(provider));
    }
    Ok(pool
        .providers()
        .iter()
        .find(|provider| !same_family(provider, session)))
}

/// Whether `provider` is a model of the session's family.
fn same_family(provider: &Provider, session: ModelFamily) -> bool {
    let by_family = review_family(&provider.family) == Some(session);
    let by_model = provider
        .model
        .as_deref()
        .map(family_of_model)
        .is_some_and(|f| f == session);
    by_family || by_model
}

/// A pool family as the digest names families (`meta-llama` is meta, `qwen` alibaba); `None`
/// for a family the digest has no name for (`local`, `cursor`), which no session is of.
fn review_family(family: &Family) -> Option<ModelFamily> {
    Some(match family {
        Family::Anthropic => ModelFamily::Anthropic,
        Family::Openai => ModelFamily::Openai,
        Family::Xai => ModelFamily::Xai,
        Family::Google => ModelFamily::Google,
        Family::Local => return None,
        Family::Other(name) => match name.as_str() {
            "meta" | "meta-llama" => ModelFamily::Meta,
            "mistral" | "mistralai" => ModelFamily::Mistral,
            "deepseek" => ModelFamily::Deepseek,
            "alibaba" | "qwen" => ModelFamily::Alibaba,
            _ => return None,
        },
    })
}

/// The `no_reviewer` outcome's words: the session's family, what is configured, how to add one.
fn no_reviewer_problem(pool: &Pool, family: ModelFamily) -> String {
    let configured: Vec<String> = pool
        .providers()
        .iter()
        .map(|p| format!("{} ({})", p.name, p.family))
        .collect();
    let configured = if configured.is_empty() {
        "no provider is configured".to_owned()
    } else {
        format!("configured: {}", configured.join(", "))
    };
    format!(
        "no provider of a family other than {family} (the session's) is configured ({configured}); \
         a review never falls back to the session's own family. Add one to providers.toml in \
         the state directory or to CROSS_AGENT_PROVIDERS, e.g. \
         CROSS_AGENT_PROVIDERS=\"{example}\" (see docs/providers.md)",
        example = match family {
            ModelFamily::Openai =>
                "anthropic https://api.anthropic.com ANTHROPIC_API_KEY claude-sonnet-4-5",
            _ => "openai https://api.openai.com/v1 OPENAI_API_KEY gpt-5",
        }
    )
}

/// Asks `provider`, repairs once, and fills the report's outcome.
fn ask(
    report: &mut ReviewReport,
    pool: &Pool,
    provider: &Provider,
    digest: &Digest,
    settings: &ReviewSettings,
) {
    let ReviewPrompt { system, user } = prompt::reviewer_prompt(digest);
    let request = Request {
        system: Some(system),
        prompt: user.clone(),
        json_schema: Some(verdict::schema()),
        max_tokens: settings.max_tokens,
        cwd: None,
    };
    report.reviewer = Some(Reviewer {
        provider: provider.name.clone(),
        model: provider
            .model
            .clone()
            .unwrap_or_else(|| "default".to_owned()),
        family: provider.family.as_str().to_owned(),
    });
    let first = match ask_once(report, pool, provider, &request) {
        Ok(text) => text,
        Err(()) => return,
    };
    let error = match verdict::parse_answer(&first) {
        Ok(verdict) => return accept(report, verdict),
        Err(error) => error,
    };
    // The one repair: the same question, the first answer quoted back, and what is wrong with
    // it. Providers are asked one prompt at a time, so the exchange is carried in the prompt.
    let repair = Request {
        prompt: repair_request(&user, &first, &error),
        ..request
    };
    let second = match ask_once(report, pool, provider, &repair) {
        Ok(text) => text,
        Err(()) => return,
    };
    match verdict::parse_answer(&second) {
        Ok(verdict) => accept(report, verdict),
        Err(again) => {
            report.outcome = ReviewOutcome::Unparseable;
            report.problem = Some(format!(
                "the answer was not a valid verdict ({error}), nor was the answer to the repair \
                 request ({again})"
            ));
        }
    }
}

/// One ask; a failure ends the review as `reviewer_failed`.
fn ask_once(
    report: &mut ReviewReport,
    pool: &Pool,
    provider: &Provider,
    request: &Request,
) -> std::result::Result<String, ()> {
    report.requests += 1;
    match pool.ask(provider, request) {
        Ok(answer) => {
            add(&mut report.tokens.input, answer.input_tokens);
            add(&mut report.tokens.output, answer.output_tokens);
            if let Some(reviewer) = &mut report.reviewer {
                reviewer.model = answer.model;
            }
            Ok(answer.text)
        }
        Err(failure) => {
            report.outcome = ReviewOutcome::ReviewerFailed;
            report.failure = Some(failure.kind);
            report.problem = Some(format!(
                "the reviewer {} did not answer ({} after {} request(s)): {}",
                provider.name,
                failure_name(failure.kind),
                failure.tries,
                failure.why
            ));
            Err(())
        }
    }
}

fn add(total: &mut Option<u64>, more: Option<u64>) {
    if let Some(more) = more {
        *total = Some(total.unwrap_or(0).saturating_add(more));
    }
}

fn accept(report: &mut ReviewReport, verdict: Verdict) {
    report.outcome = ReviewOutcome::Verdict;
    report.verdict = Some(verdict.verdict);
    report.task = Some(verdict.task);
    report.gaps = Some(verdict.gaps);
    report.correction = verdict.correction.filter(|c| !c.trim().is_empty());
}

/// The repair request's prompt: the question again, the answer given, the error.
pub fn repair_request(question: &str, answer: &str, error: &AnswerError) -> String {
    let quoted: String = answer.chars().take(QUOTED_ANSWER_CHARS).collect();
    let cut = if quoted.len() < answer.len() {
        "\n[… the rest of the answer is not repeated]"
    } else {
        ""
    };
    format!(
        "{question}\n## Your previous answer\n~~~~~~\n{quoted}{cut}\n~~~~~~\n\n{}\n",
        prompt::repair_prompt(error)
    )
}

/// A failure kind's wire name (`rate_limited`).
pub fn failure_name(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Timeout => "timeout",
        FailureKind::RateLimited => "rate_limited",
        FailureKind::Server => "server",
        FailureKind::Auth => "auth",
        FailureKind::Refused => "refused",
        FailureKind::Connect => "connect",
        FailureKind::Unavailable => "unavailable",
        FailureKind::Exited => "exited",
        FailureKind::BadAnswer => "bad_answer",
    }
}

/// A new review id.
fn new_id() -> String {
    format!("rv_{}", uuid::Uuid::now_v7().simple())
}
