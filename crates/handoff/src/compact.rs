//! The narrative compact: the session's own family of CLI asked, headless, to compact its own
//! recent work under the quoted contract into four fixed headings, told not to invent files,
//! commands or results. When that CLI is missing, fails or does not answer in time, the
//! configured providers are asked in order; when none answers, the brief ships without it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cross_agent_stores::turns::{Role, TurnItem};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::brief::Brief;
use crate::error::{HandoffError, Result};
use crate::run::RunError;
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

/// A provider asked when the family's CLI does not answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provider {
    pub kind: ProviderKind,
    /// `https://api.anthropic.com` (Messages at `/v1/messages`) or an OpenAI base URL ending in
    /// `/v1` (Responses at `/responses`).
    pub base_url: String,
    /// The environment variable holding the key (the key itself is never stored or logged).
    pub key_var: String,
    pub model: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Anthropic,
    Openai,
}

/// What the compact step may use.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long the CLI, then each provider, is given.
    pub timeout: Duration,
    pub providers: Vec<Provider>,
    /// The family CLIs' programs (`CROSS_AGENT_CLAUDE_BIN`, …).
    pub programs: Programs,
}

/// The setting naming the timeout, in seconds.
pub const TIMEOUT_VAR: &str = "CROSS_AGENT_HANDOFF_COMPACT_TIMEOUT";
/// The setting listing providers.
pub const PROVIDERS_VAR: &str = "CROSS_AGENT_HANDOFF_PROVIDERS";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

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
        let var = |name: &str, default: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from(default), PathBuf::from)
        };
        Programs {
            claude: var("CROSS_AGENT_CLAUDE_BIN", "claude"),
            codex: var("CROSS_AGENT_CODEX_BIN", "codex"),
            cursor_agent: var("CROSS_AGENT_CURSOR_AGENT_BIN", "cursor-agent"),
            agy: var("CROSS_AGENT_AGY_BIN", "agy"),
        }
    }
}

impl Settings {
    /// From the environment: [`TIMEOUT_VAR`] (seconds), [`PROVIDERS_VAR`] (entries separated
    /// by `;`, each `anthropic|openai BASE_URL KEY_VARIABLE MODEL`).
    pub fn from_env() -> Result<Settings> {
        let timeout = match std::env::var(TIMEOUT_VAR) {
            Ok(v) if !v.trim().is_empty() => {
                let secs: f64 = v.trim().parse().ok().filter(|s: &f64| *s > 0.0).ok_or(
                    HandoffError::InvalidSetting {
                        name: TIMEOUT_VAR,
                        value: v.clone(),
                        expected: "a positive number of seconds",
                    },
                )?;
                Duration::from_secs_f64(secs)
            }
            _ => DEFAULT_TIMEOUT,
        };
        let providers = match std::env::var(PROVIDERS_VAR) {
            Ok(v) => parse_providers(&v)?,
            Err(_) => Vec::new(),
        };
        Ok(Settings {
            timeout,
            providers,
            programs: Programs::from_env(),
        })
    }
}

/// Parses [`PROVIDERS_VAR`].
pub fn parse_providers(text: &str) -> Result<Vec<Provider>> {
    let mut out = Vec::new();
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = || HandoffError::InvalidSetting {
            name: PROVIDERS_VAR,
            value: entry.to_owned(),
            expected: "`anthropic|openai BASE_URL KEY_VARIABLE MODEL` entries separated by `;`",
        };
        let parts: Vec<&str> = entry.split_whitespace().collect();
        let [kind, base_url, key_var, model] = parts.as_slice() else {
            return Err(bad());
        };
        let kind = match *kind {
            "anthropic" => ProviderKind::Anthropic,
            "openai" => ProviderKind::Openai,
            _ => return Err(bad()),
        };
        out.push(Provider {
            kind,
            base_url: base_url.trim_end_matches('/').to_owned(),
            key_var: (*key_var).to_owned(),
            model: (*model).to_owned(),
        });
    }
    Ok(out)
}

/// What came of asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactResult {
    pub compact: Option<Compact>,
    pub attempts: Vec<Attempt>,
}

/// Asks for the compact: the family's CLI, then each provider.
pub fn ask(session: &SourceSession, brief: &Brief, settings: &Settings) -> CompactResult {
    type Try<'a> = Box<dyn FnOnce() -> std::result::Result<String, AttemptFailure> + 'a>;
    let prompt = prompt(session, brief);
    let workdir = session
        .cwd
        .as_deref()
        .filter(|d| d.is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let timeout = settings.timeout;
    let mut tries: Vec<(String, Try<'_>)> = Vec::new();
    if let Some((by, command)) = family_command(session.family, &settings.programs, &prompt) {
        let (prompt, workdir) = (&prompt, &workdir);
        tries.push((
            by,
            Box::new(move || {
                run_cli(command, workdir, prompt, timeout)
                    .and_then(|out| parse_cli_output(session.family, &out))
            }),
        ));
    }
    for provider in &settings.providers {
        let kind = match provider.kind {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai => "openai",
        };
        let prompt = &prompt;
        tries.push((
            format!("provider {kind} ({})", provider.model),
            Box::new(move || ask_provider(provider, prompt, timeout)),
        ));
    }
    let mut attempts = Vec::new();
    for (by, attempt) in tries {
        let started = Instant::now();
        let result = attempt();
        let millis = started.elapsed().as_millis() as u64;
        match result {
            Ok(text) => {
                attempts.push(Attempt {
                    by: by.clone(),
                    outcome: AttemptOutcome::Answered,
                    why: None,
                    millis,
                });
                return CompactResult {
                    compact: Some(Compact { author: by, text }),
                    attempts,
                };
            }
            Err(failure) => attempts.push(Attempt {
                by,
                outcome: failure.outcome,
                why: Some(failure.why),
                millis,
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

/// The family's headless command and how it is named, or `None` for a family without one.
fn family_command(family: Family, programs: &Programs, prompt: &str) -> Option<(String, Command)> {
    match family {
        Family::Claude => {
            let mut c = Command::new(&programs.claude);
            // The prompt goes on stdin; the compact is not a session of its own to keep.
            c.args(["-p", "--no-session-persistence", "--output-format", "text"]);
            Some(("claude -p".to_owned(), c))
        }
        Family::Codex => {
            let mut c = Command::new(&programs.codex);
            c.args([
                "exec",
                "--ephemeral",
                "--skip-git-repo-check",
                "--sandbox",
                "read-only",
                "--json",
                "-",
            ]);
            Some(("codex exec".to_owned(), c))
        }
        Family::Cursor => {
            let mut c = Command::new(&programs.cursor_agent);
            c.args(["-p", "--output-format", "text", prompt]);
            Some(("cursor-agent -p".to_owned(), c))
        }
        Family::Antigravity => {
            let mut c = Command::new(&programs.agy);
            c.args(["-p", prompt]);
            Some(("agy -p".to_owned(), c))
        }
        Family::Grok => None,
    }
}

struct AttemptFailure {
    outcome: AttemptOutcome,
    why: String,
}

/// Runs a CLI with the prompt on stdin until the deadline.
fn run_cli(
    mut command: Command,
    workdir: &Path,
    prompt: &str,
    timeout: Duration,
) -> std::result::Result<Vec<u8>, AttemptFailure> {
    command.current_dir(workdir);
    let program = command.get_program().to_string_lossy().into_owned();
    // Cursor's and Antigravity's CLIs take the prompt as an argument; stdin is then unused.
    match crate::run::run(command, Some(prompt), timeout) {
        Ok(done) if done.status.success() => Ok(done.stdout),
        Ok(done) => {
            let err = String::from_utf8_lossy(&done.stderr);
            Err(AttemptFailure {
                outcome: AttemptOutcome::Failed,
                why: format!(
                    "{program} exited with {}: {}",
                    done.status,
                    crate::brief::one_line(err.trim(), 200)
                ),
            })
        }
        Err(RunError::Spawn(e)) => Err(AttemptFailure {
            outcome: AttemptOutcome::Unavailable,
            why: format!("cannot start {program}: {e}"),
        }),
        Err(RunError::TimedOut) => Err(AttemptFailure {
            outcome: AttemptOutcome::TimedOut,
            why: format!("{program} did not answer within {timeout:?}"),
        }),
        Err(RunError::Wait(e)) => Err(AttemptFailure {
            outcome: AttemptOutcome::Failed,
            why: format!("waiting for {program}: {e}"),
        }),
    }
}

/// The compact's text from the CLI's stdout: Codex's `--json` events (its last agent message),
/// the others' plain text.
fn parse_cli_output(family: Family, out: &[u8]) -> std::result::Result<String, AttemptFailure> {
    let text = String::from_utf8_lossy(out);
    let answer = match family {
        Family::Codex => text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("type").and_then(Value::as_str) == Some("item.completed"))
            .filter_map(|v| {
                let item = v.get("item")?;
                (item.get("type").and_then(Value::as_str) == Some("agent_message"))
                    .then(|| item.get("text").and_then(Value::as_str).map(str::to_owned))
                    .flatten()
            })
            .next_back()
            .unwrap_or_default(),
        Family::Claude | Family::Cursor | Family::Antigravity | Family::Grok => {
            text.trim().to_owned()
        }
    };
    if answer.trim().is_empty() {
        return Err(AttemptFailure {
            outcome: AttemptOutcome::Failed,
            why: "the CLI answered with no text".to_owned(),
        });
    }
    Ok(answer.trim().to_owned())
}

/// One provider call (non-streaming).
fn ask_provider(
    provider: &Provider,
    prompt: &str,
    timeout: Duration,
) -> std::result::Result<String, AttemptFailure> {
    let failed = |why: String| AttemptFailure {
        outcome: AttemptOutcome::Failed,
        why,
    };
    let key = std::env::var(&provider.key_var).map_err(|_| AttemptFailure {
        outcome: AttemptOutcome::Unavailable,
        why: format!("{} is not set", provider.key_var),
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(format!("cannot start an HTTP client: {e}")))?;
    let request = async {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| failed(format!("cannot build an HTTP client: {e}")))?;
        let builder = match provider.kind {
            ProviderKind::Anthropic => client
                .post(format!("{}/v1/messages", provider.base_url))
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01")
                .json(&json!({
                    "model": provider.model,
                    "max_tokens": 2048,
                    "messages": [{"role": "user", "content": prompt}],
                })),
            ProviderKind::Openai => client
                .post(format!("{}/responses", provider.base_url))
                .bearer_auth(key)
                .json(&json!({"model": provider.model, "input": prompt})),
        };
        let response = builder.send().await.map_err(|e| AttemptFailure {
            outcome: if e.is_timeout() {
                AttemptOutcome::TimedOut
            } else {
                AttemptOutcome::Failed
            },
            why: format!("{}: {e}", provider.base_url),
        })?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| failed(format!("{}: not a JSON answer: {e}", provider.base_url)))?;
        if !status.is_success() {
            return Err(failed(format!("{}: HTTP {status}", provider.base_url)));
        }
        Ok(body)
    };
    let body = runtime.block_on(async {
        tokio::time::timeout(timeout, request)
            .await
            .map_err(|_| AttemptFailure {
                outcome: AttemptOutcome::TimedOut,
                why: format!("{} did not answer within {timeout:?}", provider.base_url),
            })?
    })?;
    let text = match provider.kind {
        ProviderKind::Anthropic => texts(body.get("content")),
        ProviderKind::Openai => body
            .get("output")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|i| texts(i.get("content")))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default(),
    };
    if text.trim().is_empty() {
        return Err(failed(format!(
            "{}: the answer has no text",
            provider.base_url
        )));
    }
    Ok(text.trim().to_owned())
}

/// The `text` of every block in a content array.
fn texts(content: Option<&Value>) -> String {
    content
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
