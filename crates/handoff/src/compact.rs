//! The narrative compact: the session's own family of CLI asked, headless, to compact its own
//! recent work under the quoted contract into four fixed headings, told not to invent files,
//! commands or results. When that CLI is missing, fails or does not answer in time, the
//! providers of the pool (crate `providers`, docs/providers.md) are asked in order; when none
//! answers, the brief ships without it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cross_agent_providers::{CliAgent, FailureKind, Kind, Pool, Provider, Request};
use cross_agent_stores::turns::{Role, TurnItem};
use serde::{Deserialize, Serialize};

use crate::brief::Brief;
use crate::error::{HandoffError, Result};
use crate::source::{Family, SourceSession};

/// The four headings, in order.
pub const HEADINGS: [&str; 4] = [
    "What the session was doing",
    "How it was approached",
    "Traps and dead ends",
    "Where it stands",
];

/// How much of the conversation's end the prompt carries.
const RECENT_CHARS: usize = 24_000;

/// A compact someone wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compact {
    /// Who wrote it: `claude -p`, `codex exec`, or `provider anthropic (<model>)`.
    pub author: String,
    pub text: String,
}

/// One try at getting a compact, for the decision lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub by: String,
    pub outcome: AttemptOutcome,
    /// Why it did not answer, in a line.
    pub why: Option<String>,
    pub millis: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    Answered,
    TimedOut,
    Failed,
    Unavailable,
}

/// What the compact step may use.
#[derive(Debug, Clone)]
pub struct Settings {
    /// [`TIMEOUT_VAR`] when set: how long the CLI, then each provider, is given (else the
    /// CLI gets [`DEFAULT_TIMEOUT`] and each provider its own timeout).
    pub timeout: Option<Duration>,
    /// The provider pool (crate `providers`): `providers.toml` or `CROSS_AGENT_PROVIDERS`
    /// (the old `CROSS_AGENT_HANDOFF_PROVIDERS` still read).
    pub pool: Pool,
    /// The family CLIs' programs (`CROSS_AGENT_CLAUDE_BIN`, …).
    pub programs: Programs,
}

/// The setting naming the timeout, in seconds.
pub const TIMEOUT_VAR: &str = "CROSS_AGENT_HANDOFF_COMPACT_TIMEOUT";
/// The family CLI's time when [`TIMEOUT_VAR`] is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The program of each family's CLI.
#[derive(Debug, Clone)]
pub struct Programs {
    pub claude: PathBuf,
    pub codex: PathBuf,
    pub cursor_agent: PathBuf,
    pub agy: PathBuf,
}

impl Programs {
    /// From `CROSS_AGENT_CLAUDE_BIN`, `_CODEX_BIN`, `_CURSOR_AGENT_BIN`, `_AGY_BIN`, else the
    /// bare names (resolved on the search path by whoever starts them).
    pub fn from_env() -> Programs {
        let var = |agent: CliAgent| {
            let (name, default) = agent.program_var();
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from(default), PathBuf::from)
        };
        Programs {
            claude: var(CliAgent::Claude),
            codex: var(CliAgent::Codex),
            cursor_agent: var(CliAgent::Cursor),
            agy: var(CliAgent::Antigravity),
        }
    }

    fn of(&self, agent: CliAgent) -> &Path {
        match agent {
            CliAgent::Claude => &self.claude,
            CliAgent::Codex => &self.codex,
            CliAgent::Cursor => &self.cursor_agent,
            CliAgent::Antigravity => &self.agy,
        }
    }
}

impl Settings {
    /// From the environment: [`TIMEOUT_VAR`] (seconds) and the provider pool of `home` (the
    /// state directory, when there is one).
    pub fn from_env(home: Option<&Path>) -> Result<Settings> {
        let timeout = match std::env::var(TIMEOUT_VAR) {
            Ok(v) if !v.trim().is_empty() => {
                let secs: f64 = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s < 1e9)
                    .ok_or(HandoffError::InvalidSetting {
                        name: TIMEOUT_VAR,
                        value: v.clone(),
                        expected: "a positive number of seconds",
                    })?;
                Some(Duration::from_secs_f64(secs))
            }
            _ => None,
        };
        Ok(Settings {
            timeout,
            pool: Pool::from_env(home)?,
            programs: Programs::from_env(),
        })
    }
}

/// The CLI of a session's family, if it has one that answers headless.
fn family_cli(family: Family) -> Option<CliAgent> {
    match family {
        Family::Claude => Some(CliAgent::Claude),
        Family::Codex => Some(CliAgent::Codex),
        Family::Cursor => Some(CliAgent::Cursor),
        Family::Antigravity => Some(CliAgent::Antigravity),
        Family::Grok => None,
    }
}

/// What came of asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactResult {
    pub compact: Option<Compact>,
    pub attempts: Vec<Attempt>,
}

/// Asks for the compact: the family's CLI, then each provider of the pool (a CLI of the
/// session's own family, already asked, is not asked twice).
pub fn ask(session: &SourceSession, brief: &Brief, settings: &Settings) -> CompactResult {
    let mut request = Request::new(prompt(session, brief));
    request.cwd = session.cwd.clone().filter(|d| d.is_dir());
    let own = family_cli(session.family);
    let mut tries: Vec<Provider> = Vec::new();
    if let Some(agent) = own {
        tries.push(Provider::cli(
            agent,
            Some(settings.programs.of(agent).to_path_buf()),
            settings.timeout.unwrap_or(DEFAULT_TIMEOUT),
        ));
    }
    for provider in settings.pool.providers() {
        if own.is_some_and(|agent| provider.kind == Kind::Cli(agent)) {
            continue;
        }
        let mut provider = provider.clone();
        if let Some(timeout) = settings.timeout {
            provider.timeout = timeout;
        }
        tries.push(provider);
    }
    let mut attempts = Vec::new();
    for provider in tries {
        let by = provider.describe();
        match settings.pool.ask(&provider, &request) {
            Ok(answer) => {
                attempts.push(Attempt {
                    by: by.clone(),
                    outcome: AttemptOutcome::Answered,
                    why: None,
                    millis: answer.millis,
                });
                return CompactResult {
                    compact: Some(Compact {
                        author: by,
                        text: answer.text,
                    }),
                    attempts,
                };
            }
            Err(failure) => attempts.push(Attempt {
                by,
                outcome: match failure.kind {
                    FailureKind::Timeout => AttemptOutcome::TimedOut,
                    FailureKind::Unavailable => AttemptOutcome::Unavailable,
                    FailureKind::RateLimited
                    | FailureKind::Server
                    | FailureKind::Auth
                    | FailureKind::Refused
                    | FailureKind::Connect
                    | FailureKind::Exited
                    | FailureKind::BadAnswer => AttemptOutcome::Failed,
                },
                why: Some(failure.why),
                millis: failure.millis,
            }),
        }
    }
    CompactResult {
        compact: None,
        attempts,
    }
}

/// The request: the quoted contract, the deterministic record, the conversation's end, and the
/// four headings.
pub fn prompt(session: &SourceSession, brief: &Brief) -> String {
    let mut p = String::new();
    p.push_str(
        "You are writing a handoff compact of your own recent work in this session, for another \
         agent that will continue it. Do not use any tools; answer with text only.\n\n",
    );
    p.push_str("The contract the session worked under, quoted from the human:\n");
    let c = &brief.contract;
    for (label, text) in [
        ("Opening goal", c.opening_goal.as_deref()),
        ("Latest instruction", c.latest_instruction.as_deref()),
    ] {
        if let Some(t) = text {
            p.push_str(&format!("{label}:\n"));
            for line in t.lines() {
                p.push_str(&format!("> {line}\n"));
            }
        }
    }
    for line in &c.constraints {
        p.push_str(&format!("Constraint: > {line}\n"));
    }
    p.push_str("\nWhat the transcript records (read without a model):\n");
    for f in &brief.files {
        p.push_str(&format!(
            "- file {} ({})\n",
            f.path,
            if f.edited { "edited" } else { "read" }
        ));
    }
    for cmd in &brief.commands {
        p.push_str(&format!(
            "- command `{}`: {:?}{}\n",
            crate::brief::one_line(&cmd.command, 200),
            cmd.outcome,
            cmd.exit_code
                .map(|c| format!(" (exit {c})"))
                .unwrap_or_default()
        ));
    }
    p.push_str("\nThe end of the conversation:\n");
    p.push_str(&recent_conversation(session));
    p.push_str("\n\nWrite exactly these four sections, each under its own `### ` heading:\n");
    for h in HEADINGS {
        p.push_str(&format!("### {h}\n"));
    }
    p.push_str(
        "\nMention only files, commands and results that appear above; do not invent any. \
         Where you are unsure, say so.\n",
    );
    p
}

fn recent_conversation(session: &SourceSession) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut size = 0;
    'outer: for turn in session.turns.iter().rev() {
        for item in turn.items.iter().rev() {
            if let TurnItem::Message(m) = item {
                let who = match m.role {
                    Role::User => "Human",
                    Role::Assistant => "Agent",
                };
                let text = crate::brief::one_line(m.text.trim(), 2000);
                size += text.len();
                if size > RECENT_CHARS {
                    break 'outer;
                }
                parts.push(format!("{who}: {text}"));
            }
        }
    }
    parts.reverse();
    parts.join("\n")
}
