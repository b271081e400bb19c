//! The CLI kinds: an agent's own CLI asked headless, the prompt on stdin (Cursor's and
//! Antigravity's take it as an argument), under the provider's timeout, its whole process
//! group killed after. Checked against the pinned Claude Code 2.1.332 and Codex 0.171.0:
//! - `claude -p --no-session-persistence --output-format json [--model M] [--system-prompt S]
//!   [--json-schema SCHEMA]`: one `result` object (`result`, `usage`, `modelUsage`, and
//!   `structured_output` when a schema was given);
//! - `codex exec --ephemeral --skip-git-repo-check --sandbox read-only --json [-m M]
//!   [--output-schema FILE] -`: JSONL events, the answer in the last `agent_message`, the
//!   usage in `turn.completed`;
//! - `cursor-agent -p --output-format text [--model M] PROMPT` and `agy -p PROMPT` (not
//!   runnable here; as the handoff has always run them): the schema goes in the prompt.
//!
//! The child's environment is cleaned: the baseline every spawned agent CLI gets (crate
//! `caller`: PATH, HOME, locale, proxies without credentials, the agents' state roots,
//! `CROSS_AGENT_*`, and what `CROSS_AGENT_CHILD_ENV` names), plus its own agent's variables
//! (Claude: `ANTHROPIC_*`, `CLAUDE_*`, `DISABLE_AUTOUPDATER`; Codex: `OPENAI_*`, `CODEX_*` and
//! the `env_key` of the provider its `config.toml` selects; Cursor: `CURSOR_*`; Antigravity:
//! `GEMINI_*`, `GOOGLE_*`, `ANTIGRAVITY_*`), plus the entry's `env` list. The keys of other
//! providers in the pool never reach it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cross_agent_process::run::{RunError, run};
use serde_json::Value;

use crate::ask::{Answer, Failure, FailureKind, Request, one_line};
use crate::config::Provider;
use crate::env::Env;
use crate::family::CliAgent;

pub(crate) fn ask(
    agent: CliAgent,
    provider: &Provider,
    request: &Request,
    env: &Env,
) -> Result<Answer, Failure> {
    let started = Instant::now();
    let fail = |kind, why: String| Failure {
        kind,
        why,
        millis: started.elapsed().as_millis() as u64,
        tries: 1,
    };
    let program = program(agent, provider, env);
    let shown = program.display().to_string();
    let workdir = request
        .cwd
        .clone()
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    // Kept until the CLI is done: `codex exec --output-schema` reads the schema from a file.
    let mut schema_file = None;
    let mut command = Command::new(&program);
    let mut stdin = None;
    let with_system = || match &request.system {
        Some(system) => format!("{system}\n\n{}", request.prompt),
        None => request.prompt.clone(),
    };
    let in_prompt = |prompt: String| match &request.json_schema {
        Some(schema) => format!(
            "{prompt}\n\nAnswer with one JSON object only, no other text, matching this JSON \
             Schema:\n{schema}"
        ),
        None => prompt,
    };
    match agent {
        CliAgent::Claude => {
            command.args(["-p", "--no-session-persistence", "--output-format", "json"]);
            if let Some(model) = &provider.model {
                command.args(["--model", model]);
            }
            if let Some(system) = &request.system {
                command.args(["--system-prompt", system]);
            }
            if let Some(schema) = &request.json_schema {
                command.args(["--json-schema", &schema.to_string()]);
            }
            stdin = Some(request.prompt.clone());
        }
        CliAgent::Codex => {
            command.args([
                "exec",
                "--ephemeral",
                "--skip-git-repo-check",
                "--sandbox",
                "read-only",
                "--json",
            ]);
            if let Some(model) = &provider.model {
                command.args(["-m", model]);
            }
            if let Some(schema) = &request.json_schema {
                let file = tempfile::Builder::new()
                    .prefix("cross-agent-schema-")
                    .suffix(".json")
                    .tempfile()
                    .and_then(|mut f| {
                        use std::io::Write as _;
                        f.write_all(schema.to_string().as_bytes())?;
                        Ok(f)
                    })
                    .map_err(|e| {
                        fail(
                            FailureKind::Unavailable,
                            format!("cannot write the schema file for {shown}: {e}"),
                        )
                    })?;
                command.arg("--output-schema").arg(file.path());
                schema_file = Some(file);
            }
            command.arg("-");
            stdin = Some(with_system());
        }
        CliAgent::Cursor => {
            command.args(["-p", "--output-format", "text"]);
            if let Some(model) = &provider.model {
                command.args(["--model", model]);
            }
            command.arg(in_prompt(with_system()));
        }
        CliAgent::Antigravity => {
            command.args(["-p"]).arg(in_prompt(with_system()));
        }
    }
    command
        .current_dir(&workdir)
        .env_clear()
        .envs(child_env(agent, provider, env));
    let result = run(command, stdin.as_deref(), provider.timeout);
    drop(schema_file);
    let done = match result {
        Ok(done) => done,
        Err(RunError::Spawn(e)) => {
            return Err(fail(
                FailureKind::Unavailable,
                format!("cannot start {shown}: {e}"),
            ));
        }
        Err(RunError::TimedOut) => {
            return Err(fail(
                FailureKind::Timeout,
                format!("{shown} did not answer within {:?}", provider.timeout),
            ));
        }
        Err(RunError::Wait(e)) => {
            return Err(fail(
                FailureKind::Exited,
                format!("waiting for {shown}: {e}"),
            ));
        }
    };
    let stdout = String::from_utf8_lossy(&done.stdout);
    if !done.status.success() {
        let err = String::from_utf8_lossy(&done.stderr);
        // Claude's JSON result says what went wrong on stdout.
        let said = serde_json::from_str::<Value>(stdout.trim())
            .ok()
            .and_then(|v| v.get("result").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| err.trim().to_owned());
        return Err(fail(
            FailureKind::Exited,
            format!(
                "{shown} exited with {}: {}",
                done.status,
                one_line(&said, 200, None)
            ),
        ));
    }
    let parsed = match agent {
        CliAgent::Claude => claude_answer(&stdout, request.json_schema.is_some()),
        CliAgent::Codex => codex_answer(&stdout),
        CliAgent::Cursor | CliAgent::Antigravity => Ok(Parsed {
            text: stdout.trim().to_owned(),
            ..Parsed::default()
        }),
    }
    .map_err(|why| fail(FailureKind::BadAnswer, format!("{shown}: {why}")))?;
    if parsed.text.trim().is_empty() {
        return Err(fail(
            FailureKind::BadAnswer,
            format!("{shown} answered with no text"),
        ));
    }
    Ok(Answer {
        text: parsed.text.trim().to_owned(),
        model: parsed
            .model
            .or_else(|| provider.model.clone())
            .unwrap_or_else(|| "default".to_owned()),
        input_tokens: parsed.input_tokens,
        output_tokens: parsed.output_tokens,
        millis: started.elapsed().as_millis() as u64,
        tries: 1,
    })
}

/// The provider's program, else `CROSS_AGENT_<AGENT>_BIN`, else the bare name.
fn program(agent: CliAgent, provider: &Provider, env: &Env) -> PathBuf {
    let (var, bare) = agent.program_var();
    provider
        .program
        .clone()
        .or_else(|| env.get(var).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(bare))
}

/// The cleaned environment of a CLI child (see the module's header).
pub(crate) fn child_env(
    agent: CliAgent,
    provider: &Provider,
    env: &Env,
) -> BTreeMap<String, String> {
    let all = env.all();
    let mut vars = cross_agent_caller::env::child_env(&all).vars;
    let (prefixes, names): (&[&str], &[&str]) = match agent {
        CliAgent::Claude => (&["ANTHROPIC_", "CLAUDE_"], &["DISABLE_AUTOUPDATER"]),
        CliAgent::Codex => (&["OPENAI_", "CODEX_"], &[]),
        CliAgent::Cursor => (&["CURSOR_"], &[]),
        CliAgent::Antigravity => (&["GEMINI_", "GOOGLE_", "ANTIGRAVITY_"], &[]),
    };
    let mut wanted: Vec<String> = provider.env.clone();
    wanted.extend(names.iter().map(|n| (*n).to_owned()));
    if agent == CliAgent::Codex {
        let codex_home = all
            .get("CODEX_HOME")
            .map(PathBuf::from)
            .or_else(|| all.get("HOME").map(|h| Path::new(h).join(".codex")));
        if let Some(key) = codex_home
            .as_deref()
            .and_then(cross_agent_stores::codex_config::provider_key)
        {
            wanted.push(key.env_key);
        }
    }
    for (name, value) in &all {
        if prefixes.iter().any(|p| name.starts_with(p)) || wanted.contains(name) {
            vars.insert(name.clone(), value.clone());
        }
    }
    vars
}

#[derive(Debug, Default)]
struct Parsed {
    text: String,
    model: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

/// Claude's `--output-format json` result: `result` (or `structured_output`, serialised, when
/// a schema was given), `usage`, and the model from `modelUsage`.
fn claude_answer(stdout: &str, schema: bool) -> Result<Parsed, String> {
    let result: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .ok_or_else(|| "printed no JSON result".to_owned())?;
    if result.get("is_error").and_then(Value::as_bool) == Some(true) {
        let said = result.get("result").and_then(Value::as_str).unwrap_or("");
        return Err(format!("reported an error: {}", one_line(said, 200, None)));
    }
    let structured = result.get("structured_output").filter(|v| !v.is_null());
    let text = match (schema, structured) {
        (true, Some(value)) => value.to_string(),
        _ => result
            .get("result")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    };
    let count = |name: &str| {
        result
            .pointer(&format!("/usage/{name}"))
            .and_then(Value::as_u64)
    };
    Ok(Parsed {
        text,
        model: result
            .get("modelUsage")
            .and_then(Value::as_object)
            .and_then(|m| m.keys().next().cloned()),
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
    })
}

/// Codex's `--json` events: the last `agent_message`, and `turn.completed`'s usage.
fn codex_answer(stdout: &str) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    // Codex prints `error` events while it reconnects and may still answer; only a turn that
    // failed, or no answer at all, makes one the reason.
    let mut last_error = None;
    for event in stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        match event.get("type").and_then(Value::as_str) {
            Some("item.completed") => {
                let item = event.get("item");
                if item.and_then(|i| i.get("type")).and_then(Value::as_str) == Some("agent_message")
                    && let Some(text) = item.and_then(|i| i.get("text")).and_then(Value::as_str)
                {
                    parsed.text = text.to_owned();
                }
            }
            Some("turn.completed") => {
                parsed.input_tokens = event.pointer("/usage/input_tokens").and_then(Value::as_u64);
                parsed.output_tokens = event
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64);
            }
            Some(kind @ ("turn.failed" | "error")) => {
                let said = event
                    .pointer("/error/message")
                    .or_else(|| event.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                if kind == "turn.failed" {
                    return Err(format!("the turn failed: {}", one_line(&said, 200, None)));
                }
                last_error = Some(said);
            }
            _ => {}
        }
    }
    match last_error {
        Some(said) if parsed.text.trim().is_empty() => {
            Err(format!("no answer: {}", one_line(&said, 200, None)))
        }
        _ => Ok(parsed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::fixed(
            vars.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn a_cli_child_gets_the_baseline_and_its_own_agents_variables_only() {
        let codex_home = tempfile::tempdir().unwrap();
        std::fs::write(
            codex_home.path().join("config.toml"),
            "model_provider = \"p\"\n[model_providers.p]\nenv_key = \"P_KEY\"\n",
        )
        .unwrap();
        let vars = env(&[
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("CODEX_HOME", codex_home.path().to_str().unwrap()),
            ("ANTHROPIC_API_KEY", "a-key"),
            ("OPENAI_API_KEY", "o-key"),
            ("P_KEY", "p-key"),
            ("XAI_API_KEY", "x-key"),
            ("NAMED", "named"),
            ("OPTED", "opted"),
            ("CROSS_AGENT_CHILD_ENV", "OPTED"),
        ]);
        let mut claude = Provider::cli(CliAgent::Claude, None, std::time::Duration::from_secs(1));
        claude.env = vec!["NAMED".to_owned()];
        let names = |m: BTreeMap<String, String>| m.into_keys().collect::<Vec<_>>();
        assert_eq!(
            names(child_env(CliAgent::Claude, &claude, &vars)),
            [
                "ANTHROPIC_API_KEY",
                "CODEX_HOME",
                "CROSS_AGENT_CHILD_ENV",
                "HOME",
                "NAMED",
                "OPTED",
                "PATH"
            ]
        );
        let codex = Provider::cli(CliAgent::Codex, None, std::time::Duration::from_secs(1));
        assert_eq!(
            names(child_env(CliAgent::Codex, &codex, &vars)),
            [
                "CODEX_HOME",
                "CROSS_AGENT_CHILD_ENV",
                "HOME",
                "OPENAI_API_KEY",
                "OPTED",
                "PATH",
                "P_KEY"
            ]
        );
    }
}
