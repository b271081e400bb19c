//! One headless turn's command line and environment (docs/spec/cross-agent-mcp.md §3 table, §5 rule 4):
//!
//! | | resume | new session |
//! |---|---|---|
//! | Claude | `claude -p --output-format json --resume <id> -- <msg>` | `… --session-id <uuid> -- <msg>` |
//! | Codex | `codex exec resume --json --skip-git-repo-check <id> -- <msg>` | `codex exec --json --skip-git-repo-check -C <cwd> --sandbox <mode> -- <msg>` |
//! | Grok | `grok --single=<msg> --resume <id> --output-format streaming-json` | `… --session-id <uuid> …` |
//!
//! The message goes after `--` (Grok: inside `--single=`), so a raw message that starts with a
//! dash is never read as an option. Linux refuses a single argument over 128 KiB, so a message
//! longer than [`MAX_ARGUMENT_BYTES`] goes on standard input instead: Claude reads its prompt
//! there when none is given, and Codex when the prompt is `-`. Grok takes its prompt only as an
//! argument (it does not read standard input; public provider notes for Grok Build 0.2.101), so
//! a longer message to Grok is refused with the limit named. `--skip-git-repo-check` is passed because Codex refuses to
//! run outside a git repository otherwise, and a session's directory need not be one. The
//! command runs from the session's own directory: Claude finds a transcript only under its
//! project folder, so a resume from anywhere else answers `No conversation found`.
//!
//! The child's environment is exactly the caller's filtered baseline (`child_env`, already
//! holding the `CROSS_AGENT_CHILD_ENV` opt-ins) plus what the bridge sets (`bridge_env`:
//! `CROSS_AGENT_SELF_SESSION`, `CROSS_AGENT_CONVERSATION_ID`, the caller's settings). Nothing of
//! the daemon's own environment is inherited, and `CROSS_AGENT_SELF` and Copilot's caller
//! binding never pass: a child works out its own identity.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cross_agent_protocol::bridge::Agent;
use cross_agent_protocol::settings as var;

use crate::error::{Error, Result};
use crate::settings::{DEFAULT_CODEX_SANDBOX, TurnSettings, resolve_binary};

/// Variables a child never gets, whatever the caller's environment or settings say.
pub const NEVER_INHERITED: &[&str] = &[var::SELF, "COPILOT_AGENT_SESSION_ID"];

/// Which session the turn runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Continue this existing session.
    Resume { session_id: String },
    /// Create a session. Claude and Grok take the id the bridge chose (`--session-id`); Codex
    /// chooses its own and reports it in `thread.started`, so `session_id` is `None` for it.
    New { session_id: Option<String> },
}

/// Everything needed to start one headless turn.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    pub agent: Agent,
    pub target: Target,
    /// The session's own directory.
    pub cwd: PathBuf,
    /// The text handed to the peer (the envelope, or the raw message).
    pub message: String,
    pub settings: TurnSettings,
    /// The caller's filtered environment baseline.
    pub child_env: BTreeMap<String, String>,
    /// What the bridge adds on top.
    pub bridge_env: BTreeMap<String, String>,
}

/// The longest message passed as an argument; Linux's limit on one argument is 128 KiB, and the
/// rest of the line needs some room.
pub const MAX_ARGUMENT_BYTES: usize = 100 * 1024;

/// A command line ready to run, kept as data so tests compare it whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The child's whole environment.
    pub env: BTreeMap<String, String>,
    /// The message, when it goes on standard input rather than in `args`.
    pub stdin: Option<String>,
}

/// Builds the command of one turn. This is the one place a peer CLI's command is made, so the
/// no-headless switch is enforced here again (docs/spec/cross-agent-mcp.md "Never starting a headless CLI"): no
/// route — a pin, discovery, a stale resolution — can step around the check made at `send`.
pub fn build(request: &TurnRequest) -> Result<CommandSpec> {
    if request.settings.disable_headless {
        return Err(Error::HeadlessDisabled {
            agent: request.agent.as_str(),
            session: match &request.target {
                Target::Resume { session_id } => session_id.clone(),
                Target::New { .. } => "a new session".to_owned(),
            },
        });
    }
    if request.agent == Agent::Copilot {
        return Err(Error::NoCli {
            agent: request.agent.as_str(),
            session: match &request.target {
                Target::Resume { session_id } => session_id.clone(),
                Target::New { .. } => "a new session".to_owned(),
            },
        });
    }
    let settings = &request.settings;
    let model = settings.model(request.agent);
    let on_stdin = request.message.len() > MAX_ARGUMENT_BYTES;
    if on_stdin && request.agent == Agent::Grok {
        return Err(Error::MessageTooLong {
            agent: request.agent.as_str(),
            bytes: request.message.len(),
            limit: MAX_ARGUMENT_BYTES,
        });
    }
    // Claude: no prompt argument reads standard input; Codex: `-` does.
    let prompt: &[&str] = match (request.agent, on_stdin) {
        (_, false) => &["--", &request.message],
        (Agent::Codex, true) => &["-"],
        (Agent::Claude | Agent::Grok, true) => &[],
        // Refused above; no arguments are made for it.
        (Agent::Copilot, true) => &[],
    };
    let mut args: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
    match request.agent {
        Agent::Claude => {
            push(&["-p", "--output-format", "json"]);
            match &request.target {
                Target::Resume { session_id } => push(&["--resume", session_id]),
                Target::New {
                    session_id: Some(id),
                } => push(&["--session-id", id]),
                Target::New { session_id: None } => {}
            }
            if let Some(model) = model {
                push(&["--model", model]);
            }
            if let Some(mode) = &settings.claude_permission_mode {
                push(&["--permission-mode", mode]);
            }
            push(prompt);
        }
        Agent::Codex => match &request.target {
            Target::Resume { session_id } => {
                // `codex exec resume` has no sandbox argument: a resumed session keeps the
                // sandbox it was started with (docs/spec/cross-agent-mcp.md §7).
                push(&["exec", "resume", "--json", "--skip-git-repo-check"]);
                if let Some(model) = model {
                    push(&["--model", model]);
                }
                push(&[session_id]);
                push(prompt);
            }
            Target::New { .. } => {
                let cwd = request.cwd.to_string_lossy();
                let sandbox = settings
                    .codex_sandbox
                    .as_deref()
                    .unwrap_or(DEFAULT_CODEX_SANDBOX);
                push(&["exec", "--json", "--skip-git-repo-check", "-C", &cwd]);
                push(&["--sandbox", sandbox]);
                if let Some(model) = model {
                    push(&["--model", model]);
                }
                push(prompt);
            }
        },
        Agent::Grok => {
            push(&[&format!("--single={}", request.message)]);
            match &request.target {
                Target::Resume { session_id } => push(&["--resume", session_id]),
                Target::New {
                    session_id: Some(id),
                } => push(&["--session-id", id]),
                Target::New { session_id: None } => {}
            }
            push(&["--output-format", "streaming-json"]);
            if let Some(model) = model {
                push(&["--model", model]);
            }
            if let Some(mode) = &settings.grok_permission_mode {
                push(&["--permission-mode", mode]);
            }
        }
        // Refused above: Copilot has no CLI to run.
        Agent::Copilot => {}
    }
    let mut env = request.child_env.clone();
    env.extend(
        request
            .bridge_env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    for name in NEVER_INHERITED {
        env.remove(*name);
    }
    Ok(CommandSpec {
        program: resolve_binary(request.agent, settings, &request.child_env),
        args,
        cwd: request.cwd.clone(),
        env,
        stdin: on_stdin.then(|| request.message.clone()),
    })
}
