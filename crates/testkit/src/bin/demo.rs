//! The bench's own demo, and the README's main command (`scripts/demo`): a real Claude Code
//! session and a real Codex session, each answering a scripted model on loopback.
//!
//! It starts the scripted model endpoint, scripts a small exchange (each agent runs one real
//! shell command in a scratch project folder and answers), runs the pinned CLIs in a temporary
//! HOME, and prints what happened: each CLI's version, the session or thread id, the answer, the
//! requests the endpoint received, and where the transcript landed with the conversation read
//! back from it. No account, key or network beyond loopback is needed. Any step that does not go
//! as scripted ends the demo with a message saying which, and a non-zero exit.
//!
//! `--keep` leaves the scratch folder in place so the transcripts can be looked at afterwards.

use std::fs;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use cross_agent_testkit::agents::{
    AgentHome, AgentKind, Claude, Codex, agent_binary, run_with_timeout,
};
use cross_agent_testkit::endpoint::{
    Api, InputKind, ModelEndpoint, RecordedRequest, Rule, ToolCall,
};
use serde_json::{Value, json};

const NOTES: &str = "cross-agent demo notes\nsecond line\nthird line\n";

const CLAUDE_PROMPT: &str = "What is in this project folder? Have a look with the shell.";
const CLAUDE_COMMAND: &str = "ls";
const CLAUDE_ANSWER: &str = "The folder holds one file, notes.txt.";

const CODEX_PROMPT: &str = "What does the first line of notes.txt say?";
const CODEX_COMMAND: &str = "head -n 1 notes.txt";
const CODEX_ANSWER: &str = "The first line of notes.txt reads: cross-agent demo notes.";

/// What the scripted model says when a command's output is not what the script expects; the
/// demo then fails, showing the output.
const UNEXPECTED_OUTPUT: &str = "The command did not print what the script expected.";

/// Longest excerpt of a transcript record printed, in characters.
const EXCERPT_CHARS: usize = 90;

fn main() -> ExitCode {
    let mut keep = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--keep" => keep = true,
            "-h" | "--help" => {
                println!(
                    "usage: demo [--keep]\n\n\
                     Runs a real Claude Code session and a real Codex session against a scripted\n\
                     model on loopback and shows what they did. --keep leaves the scratch folder."
                );
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("demo: unknown argument {other:?} (try --help)");
                return ExitCode::from(2);
            }
        }
    }
    let started = Instant::now();
    match run(keep) {
        Ok(()) => {
            println!(
                "\nDone in {:.1}s: both agents answered the scripted model for real.",
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("\ndemo failed: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(keep: bool) -> Result<()> {
    let endpoint = ModelEndpoint::start()?;
    endpoint.script(script());
    let home = AgentHome::new()?;
    let project = home.project("demo")?;
    let notes = project.join("notes.txt");
    fs::write(&notes, NOTES).with_context(|| format!("writing {}", notes.display()))?;

    println!("cross-agent demo: real Claude Code and Codex sessions against a scripted model");
    println!();
    println!(
        "  model endpoint  {} (scripted, loopback only)",
        endpoint.base_url()
    );
    println!("  scratch HOME    {}", home.path().display());
    println!("  project folder  {} (holds notes.txt)", project.display());

    claude_part(&home, &endpoint, &project)?;
    codex_part(&home, &endpoint, &project)?;

    if keep {
        let path = home.path().to_path_buf();
        // Forgetting the handle skips the removal its drop would do; that is what --keep asks.
        std::mem::forget(home);
        println!("\nThe scratch folder is kept: {}", path.display());
    } else {
        println!("\nThe scratch folder is removed now (run with --keep to look around).");
    }
    Ok(())
}

/// The exchange: each agent is asked about the folder, runs one command, and answers.
fn script() -> Vec<Rule> {
    vec![
        Rule::on_user_text("What is in this project folder")
            .tool_call(ToolCall::new(
                "Bash",
                json!({ "command": CLAUDE_COMMAND, "description": "List the project folder" }),
            ))
            .for_api(Api::Anthropic)
            .label("Claude: run ls"),
        Rule::on_tool_result("notes.txt")
            .reply_text(CLAUDE_ANSWER)
            .for_api(Api::Anthropic)
            .label("Claude: answer from the listing"),
        Rule::on_user_text("first line of notes.txt")
            .tool_call(ToolCall::new(
                "exec_command",
                json!({ "cmd": CODEX_COMMAND }),
            ))
            .for_api(Api::Responses)
            .label("Codex: run head"),
        Rule::on_tool_result("cross-agent demo notes")
            .reply_text(CODEX_ANSWER)
            .for_api(Api::Responses)
            .label("Codex: answer from the file"),
        Rule::on_any_tool_result()
            .reply_text(UNEXPECTED_OUTPUT)
            .label("unexpected command output"),
    ]
}

fn claude_part(home: &AgentHome, endpoint: &ModelEndpoint, project: &Path) -> Result<()> {
    let version = cli_version(AgentKind::Claude, home)?;
    heading(&format!("Claude Code {version}"));
    println!("  $ claude -p {CLAUDE_PROMPT:?} --allowedTools Bash");
    let first_request = endpoint.requests().len();
    let claude = Claude::new(home, &endpoint.anthropic_base_url())?;
    let started = Instant::now();
    let run = claude
        .turn(project, CLAUDE_PROMPT)
        .allow_tool("Bash")
        .run()?
        .expect_success()
        .context("Claude Code's turn did not complete")?;
    let took = started.elapsed();
    let session_id = run
        .session_id()
        .ok_or_else(|| anyhow!("Claude Code printed no session id"))?
        .to_owned();
    let answer = run.result_text().unwrap_or_default().to_owned();

    println!("  session id      {session_id}");
    println!("  answer          {answer:?}");
    println!("  took            {:.1}s", took.as_secs_f64());
    print_requests(&endpoint.requests()[first_request..]);

    let transcript = claude.transcript_path(project, &session_id);
    let records = read_records(&transcript)?;
    print_transcript(&transcript, &records, claude_excerpt(&records));
    if answer != CLAUDE_ANSWER {
        bail!(
            "Claude Code answered {answer:?}, not the scripted {CLAUDE_ANSWER:?}: its `{CLAUDE_COMMAND}` \
             did not print notes.txt (see the transcript above)"
        );
    }
    Ok(())
}

fn codex_part(home: &AgentHome, endpoint: &ModelEndpoint, project: &Path) -> Result<()> {
    let version = cli_version(AgentKind::Codex, home)?;
    heading(&format!("Codex {version}"));
    println!("  $ codex exec --json {CODEX_PROMPT:?}");
    let first_request = endpoint.requests().len();
    let codex = Codex::new(home, &endpoint.openai_base_url())?;
    let started = Instant::now();
    let run = codex
        .turn(project, CODEX_PROMPT)
        .run()?
        .expect_success()
        .context("Codex's turn did not complete")?;
    let took = started.elapsed();
    let thread_id = run
        .thread_id()
        .ok_or_else(|| anyhow!("Codex printed no thread id"))?
        .to_owned();
    let answer = run.final_message().unwrap_or_default().to_owned();

    println!("  thread id       {thread_id}");
    println!("  answer          {answer:?}");
    for item in run.items_of("command_execution") {
        println!(
            "  ran             {} → exit {}",
            item.get("command").and_then(Value::as_str).unwrap_or("?"),
            item.get("exit_code")
                .map_or("?".to_owned(), Value::to_string),
        );
    }
    println!("  took            {:.1}s", took.as_secs_f64());
    print_requests(&endpoint.requests()[first_request..]);

    let rollout = codex.rollout_of(&thread_id)?;
    let records = read_records(&rollout)?;
    print_transcript(&rollout, &records, codex_excerpt(&records));
    if answer != CODEX_ANSWER {
        bail!(
            "Codex answered {answer:?}, not the scripted {CODEX_ANSWER:?}: its `{CODEX_COMMAND}` \
             did not print the first line of notes.txt (see the transcript above; a sandbox \
             failure shows there)"
        );
    }
    Ok(())
}

fn heading(title: &str) {
    println!(
        "\n── {title} {}",
        "─".repeat(60usize.saturating_sub(title.len()))
    );
}

/// One line per request the endpoint received during an agent's turn.
fn print_requests(requests: &[RecordedRequest]) {
    println!("  model endpoint received {} request(s):", requests.len());
    for request in requests {
        let path = match &request.query {
            Some(query) => format!("{}?{query}", request.path),
            None => request.path.clone(),
        };
        let input = match request.newest_input {
            InputKind::UserText => "the prompt",
            InputKind::ToolResult => "a tool result",
            InputKind::None => "no input",
        };
        println!(
            "    {}. {} {path}  model {}{}, carrying {input} → {}",
            request.seq + 1,
            request.method,
            request.model.as_deref().unwrap_or("-"),
            if request.stream { ", streamed" } else { "" },
            request.answered_by.as_deref().unwrap_or("not answered"),
        );
    }
}

fn print_transcript(path: &Path, records: &[Value], excerpt: Vec<(usize, String)>) {
    let size = fs::metadata(path).map(|m| m.len()).unwrap_or_default();
    println!("  transcript      {}", path.display());
    println!(
        "                  {} records, {:.1} KB; the conversation in it:",
        records.len(),
        size as f64 / 1024.0
    );
    for (line, text) in excerpt {
        println!("    line {line:>3}  {text}");
    }
}

/// Every line of a JSONL transcript, parsed; a line that is not JSON is an error naming it.
fn read_records(path: &Path) -> Result<Vec<Value>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{}:{} is not JSON", path.display(), n + 1))
        })
        .collect()
}

/// The conversation of a Claude transcript: prompts, replies, tool calls and results, each with
/// the line it is on.
fn claude_excerpt(records: &[Value]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (index, record) in records.iter().enumerate() {
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "user" | "assistant") || record.get("isMeta") == Some(&json!(true)) {
            continue;
        }
        let content = record.pointer("/message/content");
        if let Some(text) = content.and_then(Value::as_str) {
            out.push((index + 1, format!("{kind:<10} {}", short(text))));
            continue;
        }
        for block in content.and_then(Value::as_array).into_iter().flatten() {
            let line = match block.get("type").and_then(Value::as_str) {
                Some("text") => format!("{kind:<10} {}", short(str_of(block, "text"))),
                Some("tool_use") => format!(
                    "tool call  {} {}",
                    str_of(block, "name"),
                    block.get("input").map(Value::to_string).unwrap_or_default()
                ),
                Some("tool_result") => format!(
                    "result     {}{}",
                    short(&content_text(block.get("content"))),
                    if block.get("is_error") == Some(&json!(true)) {
                        " (error)"
                    } else {
                        ""
                    }
                ),
                _ => continue,
            };
            out.push((index + 1, line));
        }
    }
    out
}

/// The conversation of a Codex rollout, without the context Codex injects as user messages.
fn codex_excerpt(records: &[Value]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (index, record) in records.iter().enumerate() {
        if record.get("type").and_then(Value::as_str) != Some("response_item") {
            continue;
        }
        let Some(payload) = record.get("payload") else {
            continue;
        };
        let line = match payload.get("type").and_then(Value::as_str) {
            Some("message") => {
                let role = str_of(payload, "role");
                let text = content_text(payload.get("content"));
                if !matches!(role, "user" | "assistant") || text.trim_start().starts_with('<') {
                    continue;
                }
                format!("{role:<10} {}", short(&text))
            }
            Some("function_call") => format!(
                "tool call  {} {}",
                str_of(payload, "name"),
                str_of(payload, "arguments")
            ),
            Some("function_call_output") => {
                // The output opens with bookkeeping (chunk id, wall time); the exit code line
                // and what the command printed are what matter.
                let output = content_text(payload.get("output"));
                let useful: Vec<&str> = output
                    .lines()
                    .filter(|l| !l.starts_with("Chunk ID") && !l.starts_with("Wall time"))
                    .filter(|l| !l.starts_with("Original token count") && *l != "Output:")
                    .collect();
                format!("result     {}", short(&useful.join("\n")))
            }
            _ => continue,
        };
        out.push((index + 1, line));
    }
    out
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The text of a string or of an array of text blocks.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A quoted one-line excerpt, cut to [`EXCERPT_CHARS`].
fn short(text: &str) -> String {
    let quoted = format!("{text:?}");
    if quoted.chars().count() <= EXCERPT_CHARS {
        return quoted;
    }
    let cut: String = quoted.chars().take(EXCERPT_CHARS - 1).collect();
    format!("{cut}…")
}

/// `<cli> --version`, run in the scratch HOME so nothing touches the user's own.
fn cli_version(kind: AgentKind, home: &AgentHome) -> Result<String> {
    let binary = agent_binary(kind)?;
    let mut command = Command::new(&binary);
    command
        .arg("--version")
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODEX_HOME", home.codex_home());
    let output = run_with_timeout(command, Duration::from_secs(60))?;
    let version = output.stdout.trim();
    if !output.status.success() || version.is_empty() {
        bail!(
            "`{} --version` failed ({}){}",
            binary.display(),
            output.status,
            match output.stderr.trim() {
                "" => String::new(),
                stderr => format!(": {stderr}"),
            }
        );
    }
    // `2.1.332 (Claude Code)` / `codex-cli 0.171.0`: the number is what the heading needs.
    Ok(version
        .split_whitespace()
        .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or(version)
        .to_owned())
}
