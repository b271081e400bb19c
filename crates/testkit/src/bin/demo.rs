//! The README's main command (`scripts/demo`): a real Claude Code session hands a message to a
//! real Codex session through cross-agent, and the Codex thread answers.
//!
//! It starts the scripted model endpoint on loopback and, in a scratch HOME and project folder:
//! 1. creates a Codex session (`codex exec`; it runs one real shell command and answers);
//! 2. creates a Claude Code session (`claude -p`; likewise);
//! 3. resumes the Claude session with `cross-agent mcp` registered as its MCP server `cross-agent`
//!    (its own daemon home, the pinned Codex binary), and the scripted model has Claude call
//!    `send_to_codex` naming the Codex thread. The daemon resumes that thread headlessly and the
//!    Codex turn answers.
//!
//! 4. (step 8) runs Claude Code behind `cross-agent shim claude` as the VS Code extension does,
//!    playing the extension on its stdio: the panel's Claude calls `send_to_codex`, and the
//!    Codex answer comes back into that same panel as a `BRIDGE REPLY` turn.
//!
//! It prints the ids, the tool call Claude made, the receipt it got back, the envelope exactly as
//! Codex received it (from the endpoint's request log), the delivery record's final state with
//! the delivered answer (`cross-agent status <id> --json`), and the timing. No account, key or
//! network beyond loopback is needed. Any step that does not go as scripted ends the demo with a
//! message naming the step, and a non-zero exit. The daemon it started is stopped at the end.
//!
//! `--keep` leaves the scratch folder in place so the transcripts and the daemon's home can be
//! looked at afterwards. The receipt and the delivery record are read into the protocol's own
//! types (`SendResponse`, `BridgeStatusResponse`), so a change of the wire shows here as an
//! error naming the field.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use cross_agent_protocol::bridge::{
    BridgeStatusResponse, DeliveryRecord, DeliveryState, PeerTranscript, SendResponse,
};
use cross_agent_protocol::settings as var;
use cross_agent_testkit::agents::{
    AgentHome, AgentKind, Claude, Codex, McpServer, agent_binary, agent_version,
};
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::endpoint::{Api, ModelEndpoint, Reply, Rule, ToolCall};
use cross_agent_testkit::panel::{CLAUDE_SDK_ARGS, PanelDriver, claude_initialize, claude_user};
use serde::Serialize;
use serde_json::{Value, json};

const NOTES: &str = "cross-agent demo notes\nsecond line\nthird line\n";

const CODEX_PROMPT: &str = "What does the first line of notes.txt say?";
const CODEX_COMMAND: &str = "head -n 1 notes.txt";
const CODEX_ANSWER: &str = "The first line of notes.txt reads: cross-agent demo notes.";

const CLAUDE_PROMPT: &str = "What is in this project folder? Have a look with the shell.";
const CLAUDE_COMMAND: &str = "ls";
const CLAUDE_ANSWER: &str = "The folder holds one file, notes.txt.";

/// The prompt of the Claude turn that calls `send_to_codex`.
const BRIDGE_PROMPT: &str = "Ask Codex, in the session it already has open here, how many lines \
                             notes.txt has.";
/// The message Claude sends; the scripted Codex answers what carries [`BRIDGE_MARKER`].
const BRIDGE_MESSAGE: &str = "Hi Codex, Claude here. How many lines does notes.txt have?";
const BRIDGE_MARKER: &str = "Claude here";
/// Codex's scripted answer; the endpoint appends the request id the envelope asked for.
const BRIDGE_ANSWER: &str =
    "notes.txt has three lines; the first reads \"cross-agent demo notes\".";
/// What the scripted Claude says once it has the receipt.
const CLAUDE_AFTER_SEND: &str = "Sent to Codex; its answer will be on the delivery record.";

/// What the person types into the live panel in step 8, and the message its Claude sends.
const PANEL_PROMPT: &str = "From the panel: ask Codex again how many lines notes.txt has.";
const PANEL_MESSAGE: &str = "Claude here again, from a live panel. How many lines now?";
/// What the panel's scripted Claude says once the BRIDGE REPLY is in.
const PANEL_AFTER_REPLY: &str = "Codex answered here in the panel: three lines.";

/// What the scripted model says when a command's output is not what the script expects; the
/// demo then fails, showing the output.
const UNEXPECTED_OUTPUT: &str = "The command did not print what the script expected.";

/// The MCP server name `cross-agent mcp` is registered under in Claude.
const SERVER_NAME: &str = "cross-agent";
/// The dummy variable Codex's provider config reads its key from, forwarded to the peer.
const CODEX_KEY_VAR: &str = "SCRIPTED_KEY";

/// How long the delivery may take once the receipt is out.
const DELIVERY_LIMIT: Duration = Duration::from_secs(180);

/// A real Claude Code session calls send_to_codex through its cross-agent MCP registration and
/// a real Codex session answers, both against a scripted model on loopback.
#[derive(Debug, Parser)]
#[command(name = "demo")]
struct Args {
    /// Leave the scratch folder (transcripts, the daemon's home) in place for a look around.
    #[arg(long)]
    keep: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let started = Instant::now();
    match run(args.keep) {
        Ok(()) => {
            println!(
                "\nDone in {:.1}s: Claude handed a message to Codex's session through cross-agent, \
                 and Codex answered in it.",
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

/// The `cross-agent` binary run against the demo's own daemon home; stops that daemon when
/// dropped, so a failed step does not leave it running.
struct CrossAgent {
    bin: PathBuf,
    home: PathBuf,
    state: PathBuf,
    stopped: bool,
}

impl CrossAgent {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env(var::HOME, &self.state);
        command
    }

    fn run(&self, args: &[&str]) -> Result<Output> {
        self.command(args)
            .output()
            .with_context(|| format!("running {} {}", self.bin.display(), args.join(" ")))
    }

    /// `cross-agent mcp`, registered as [`SERVER_NAME`] on this daemon home.
    fn mcp_server(&self) -> McpServer {
        McpServer::new(SERVER_NAME, self.bin.clone())
            .arg("mcp")
            .env(var::HOME, self.state.to_string_lossy())
            .env("HOME", self.home.to_string_lossy())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
    }

    /// `cross-agent daemon stop`; what it printed.
    fn stop(&mut self) -> Result<String> {
        self.stopped = true;
        if !self.state.join("daemon.pid").exists() {
            return Ok("no daemon was running".to_owned());
        }
        let output = self.run(&["daemon", "stop"])?;
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
        if !output.status.success() {
            bail!(
                "`cross-agent daemon stop` failed ({}): {said}",
                output.status
            );
        }
        Ok(said)
    }
}

impl Drop for CrossAgent {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.stop();
        }
    }
}

fn run(keep: bool) -> Result<()> {
    let bin = cross_agent_bin().context(
        "step 0 (setup): finding the cross-agent binary (scripts/demo builds it and sets \
         CROSS_AGENT_TEST_BIN)",
    )?;
    // Claude starts the MCP server from the project folder: a relative path would not resolve.
    let bin = fs::canonicalize(&bin)
        .with_context(|| format!("step 0 (setup): resolving {}", bin.display()))?;
    let home = AgentHome::new().context("step 0 (setup): creating the scratch HOME")?;
    let mut cross_agent = CrossAgent {
        bin,
        home: home.path().to_path_buf(),
        state: home.path().join("cross-agent-state"),
        stopped: false,
    };
    let outcome = steps(&home, &cross_agent);

    heading("Cleaning up");
    println!(
        "  $ cross-agent daemon stop   (CROSS_AGENT_HOME={})",
        cross_agent.state.display()
    );
    let stopped = cross_agent.stop();
    match &stopped {
        Ok(said) => said.lines().for_each(|line| println!("    {line}")),
        Err(error) => println!("    failed: {error:#}"),
    }
    let path = home.path().to_path_buf();
    if keep {
        // Forgetting the handle skips the removal its drop would do; that is what --keep asks.
        std::mem::forget(home);
        println!("  The scratch folder is kept: {}", path.display());
    } else {
        drop(home);
        println!("  The scratch folder is removed (run with --keep to look around).");
    }
    outcome?;
    stopped
        .map(|_| ())
        .context("cleaning up: stopping the demo's daemon")
}

/// The steps, in the scratch HOME, with `cross-agent` on its own daemon home.
fn steps(home: &AgentHome, cross_agent: &CrossAgent) -> Result<()> {
    let endpoint = ModelEndpoint::start().context("step 0 (setup): starting the model endpoint")?;
    endpoint.script(script());
    let project = home.project("demo")?;
    let notes = project.join("notes.txt");
    fs::write(&notes, NOTES).with_context(|| format!("writing {}", notes.display()))?;

    println!("cross-agent demo: Claude Code → cross-agent → Codex, against a scripted model");
    println!();
    println!(
        "  model endpoint  {} (scripted, loopback only)",
        endpoint.base_url()
    );
    println!("  scratch HOME    {}", home.path().display());
    println!("  project folder  {} (holds notes.txt)", project.display());
    println!("  cross-agent     {}", cross_agent.bin.display());
    println!(
        "  daemon home     {} (CROSS_AGENT_HOME)",
        cross_agent.state.display()
    );

    let codex = Codex::new(home, &endpoint.openai_base_url())?;
    let (thread_id, codex_records) =
        codex_part(home, &codex, &project).context("step 1 (a Codex session exists) failed")?;
    let claude = Claude::new(home, &endpoint.anthropic_base_url())?;
    let session_id = claude_part(home, &claude, &project)
        .context("step 2 (a Claude Code session exists) failed")?;
    let bridge = Bridge {
        endpoint: &endpoint,
        cross_agent,
        codex: &codex,
        claude: &claude,
        project: &project,
        thread_id: &thread_id,
        session_id: &session_id,
        codex_records,
    };
    bridge_part(&bridge)?;
    panel_part(&bridge)
}

/// The setup exchanges (each agent runs one command and answers), the bridge turn's reply once
/// the receipt is in, and the Codex thread's answer to the bridge message. The `send_to_codex`
/// call itself is pushed once the Codex thread id is known.
fn script() -> Vec<Rule> {
    vec![
        Rule::on_user_text(BRIDGE_MARKER)
            .reply(Reply::echo_token(BRIDGE_ANSWER))
            .for_api(Api::Responses)
            .label("Codex: answer the bridge message"),
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
        Rule::on_user_text("What is in this project folder")
            .tool_call(ToolCall::new(
                "Bash",
                json!({ "command": CLAUDE_COMMAND, "description": "List the project folder" }),
            ))
            .for_api(Api::Anthropic)
            .label("Claude: run ls"),
        Rule::on_tool_result("delivery_id")
            .reply_text(CLAUDE_AFTER_SEND)
            .for_api(Api::Anthropic)
            .label("Claude: the receipt is in"),
        Rule::on_tool_result("notes.txt")
            .reply_text(CLAUDE_ANSWER)
            .for_api(Api::Anthropic)
            .label("Claude: answer from the listing"),
        Rule::on_any_tool_result()
            .reply_text(UNEXPECTED_OUTPUT)
            .label("unexpected tool output"),
    ]
}

/// Step 1: a Codex session in the project folder. Its thread id and how many records its
/// rollout held afterwards.
fn codex_part(home: &AgentHome, codex: &Codex, project: &Path) -> Result<(String, usize)> {
    let version = cli_version(AgentKind::Codex, home)?;
    heading(&format!("1. A Codex session exists (Codex {version})"));
    println!("  $ codex exec --json {CODEX_PROMPT:?}");
    let started = Instant::now();
    let run = codex
        .turn(project, CODEX_PROMPT)
        .run()?
        .expect_success()
        .context("Codex's turn did not complete")?;
    let thread_id = run
        .thread_id()
        .ok_or_else(|| anyhow!("Codex printed no thread id"))?
        .to_owned();
    let answer = run.final_message().unwrap_or_default().to_owned();
    println!("  thread id       {thread_id}");
    for item in run.items_of("command_execution") {
        println!(
            "  ran             {} → exit {}",
            item.get("command").and_then(Value::as_str).unwrap_or("?"),
            item.get("exit_code")
                .map_or("?".to_owned(), Value::to_string),
        );
    }
    println!("  answer          {answer:?}");
    println!("  took            {:.1}s", started.elapsed().as_secs_f64());
    let rollout = codex.rollout_of(&thread_id)?;
    let records = read_records(&rollout)?;
    println!(
        "  transcript      {} ({} records)",
        rollout.display(),
        records.len()
    );
    if answer != CODEX_ANSWER {
        bail!(
            "Codex answered {answer:?}, not the scripted {CODEX_ANSWER:?}: its `{CODEX_COMMAND}` \
             did not print the first line of notes.txt (a sandbox failure shows in {})",
            rollout.display()
        );
    }
    Ok((thread_id, records.len()))
}

/// Step 2: a Claude Code session in the project folder; its session id.
fn claude_part(home: &AgentHome, claude: &Claude, project: &Path) -> Result<String> {
    let version = cli_version(AgentKind::Claude, home)?;
    heading(&format!(
        "2. A Claude Code session exists (Claude Code {version})"
    ));
    println!("  $ claude -p {CLAUDE_PROMPT:?} --allowedTools Bash");
    let started = Instant::now();
    let run = claude
        .turn(project, CLAUDE_PROMPT)
        .allow_tool("Bash")
        .run()?
        .expect_success()
        .context("Claude Code's turn did not complete")?;
    let session_id = run
        .session_id()
        .ok_or_else(|| anyhow!("Claude Code printed no session id"))?
        .to_owned();
    let answer = run.result_text().unwrap_or_default().to_owned();
    println!("  session id      {session_id}");
    println!("  ran             {CLAUDE_COMMAND}");
    println!("  answer          {answer:?}");
    println!("  took            {:.1}s", started.elapsed().as_secs_f64());
    let transcript = claude.transcript_path(project, &session_id);
    println!("  transcript      {}", transcript.display());
    if answer != CLAUDE_ANSWER {
        bail!(
            "Claude Code answered {answer:?}, not the scripted {CLAUDE_ANSWER:?}: its \
             `{CLAUDE_COMMAND}` did not list notes.txt (see {})",
            transcript.display()
        );
    }
    Ok(session_id)
}

struct Bridge<'a> {
    endpoint: &'a ModelEndpoint,
    cross_agent: &'a CrossAgent,
    codex: &'a Codex,
    claude: &'a Claude,
    project: &'a Path,
    thread_id: &'a str,
    session_id: &'a str,
    codex_records: usize,
}

/// `cross-agent mcp` on the demo's daemon home, able to start the pinned Codex against the
/// scripted model.
fn codex_reaching_server(bridge: &Bridge<'_>) -> Result<McpServer> {
    let codex_bin = agent_binary(AgentKind::Codex)?;
    Ok(bridge
        .cross_agent
        .mcp_server()
        .env(var::CODEX_BIN, codex_bin.to_string_lossy())
        .env("CODEX_HOME", bridge.codex.codex_home().to_string_lossy())
        .env(CODEX_KEY_VAR, "scripted-dummy-key")
        .env(var::CHILD_ENV, CODEX_KEY_VAR))
}

/// Step 8: the same exchange from a live panel. Claude Code runs behind `cross-agent shim
/// claude` exactly as the VS Code extension starts it (`claudeCode.claudeProcessWrapper`), with
/// this program playing the extension on its stdio. The person types into the panel; the panel's
/// Claude calls `send_to_codex`; the answer comes back into that same panel as a `BRIDGE REPLY`
/// turn, on the panel's stdout — what the extension renders.
fn panel_part(bridge: &Bridge<'_>) -> Result<()> {
    heading("8. From a live panel: the answer comes back into the panel that asked");
    let server = codex_reaching_server(bridge)?;
    let config = json!({"mcpServers": {server.name.clone(): {
        "type": "stdio",
        "command": server.command,
        "args": server.args,
        "env": server.env,
    }}});
    let mut command = Command::new(&bridge.cross_agent.bin);
    command
        .arg("shim")
        .arg("claude")
        .arg(bridge.claude.binary())
        .args(CLAUDE_SDK_ARGS)
        .args(["--mcp-config", &config.to_string()])
        .args(["--allowedTools", &format!("mcp__{SERVER_NAME}")])
        .current_dir(bridge.project)
        .env_clear()
        .envs(bridge.claude.env())
        .env(var::HOME, &bridge.cross_agent.state);
    println!(
        "  $ cross-agent shim claude {} {} --mcp-config <{SERVER_NAME}: cross-agent mcp>",
        bridge.claude.binary().display(),
        CLAUDE_SDK_ARGS.join(" ")
    );
    let mut panel = PanelDriver::start(command).context("step 8 (the panel): starting the shim")?;
    panel.send(&claude_initialize("demo-init"))?;
    panel
        .next_line(DELIVERY_LIMIT, |l| l["type"] == "control_response")
        .context("step 8 (the panel): Claude Code did not answer the extension's initialize")?;
    bridge.endpoint.push(
        Rule::on_user_text(PANEL_PROMPT)
            .tool_call(ToolCall::mcp(
                SERVER_NAME,
                "send_to_codex",
                json!({ "message": PANEL_MESSAGE, "session_id": bridge.thread_id }),
            ))
            .for_api(Api::Anthropic)
            .label("Claude (panel): call send_to_codex"),
    );
    bridge.endpoint.push(
        Rule::on_user_text("=== BRIDGE REPLY ===")
            .reply_text(PANEL_AFTER_REPLY)
            .for_api(Api::Anthropic)
            .label("Claude (panel): read the BRIDGE REPLY"),
    );
    println!("  the person types into the panel: {PANEL_PROMPT:?}");
    panel.send(&claude_user(PANEL_PROMPT))?;
    let first = panel
        .next_line(DELIVERY_LIMIT, |l| l["type"] == "result")
        .context("step 8 (the panel): the panel's turn did not end")?;
    println!(
        "  panel ← result {:?}",
        first["result"].as_str().unwrap_or_default()
    );
    let second = panel
        .next_line(DELIVERY_LIMIT, |l| {
            l["type"] == "result" && l["result"] == PANEL_AFTER_REPLY
        })
        .context(
            "step 8 (the panel): no BRIDGE REPLY turn ran in the panel (the answer did not \
             come back into it)",
        )?;
    let reply = bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|request| request.api == Api::Anthropic)
        .filter_map(|request| request.last_user_text)
        .find(|text| text.contains("=== BRIDGE REPLY ==="))
        .ok_or_else(|| anyhow!("step 8 (the panel): the panel's model never read the reply"))?;
    println!("  the BRIDGE REPLY put into the panel's conversation (no CLI was started for it):");
    for line in reply.lines() {
        println!("  │ {line}");
    }
    println!(
        "  panel ← result {:?}",
        second["result"].as_str().unwrap_or_default()
    );
    if !reply.contains(BRIDGE_ANSWER) {
        bail!("step 8 (the panel): the reply is not Codex's answer: {reply:?}");
    }
    panel.close_stdin();
    let _ = panel.wait(DELIVERY_LIMIT);
    Ok(())
}

/// Step 3: the Claude session calls `send_to_codex`; the Codex thread answers.
fn bridge_part(bridge: &Bridge<'_>) -> Result<()> {
    heading("3. Claude calls send_to_codex through cross-agent mcp");
    let tool = format!("mcp__{SERVER_NAME}__send_to_codex");
    println!(
        "  $ claude -p {BRIDGE_PROMPT:?} --resume {} --mcp-config <{SERVER_NAME}: cross-agent mcp> \
         --allowedTools {tool}",
        bridge.session_id
    );
    bridge.endpoint.push(
        Rule::on_user_text("Ask Codex")
            .tool_call(ToolCall::mcp(
                SERVER_NAME,
                "send_to_codex",
                json!({ "message": BRIDGE_MESSAGE, "session_id": bridge.thread_id }),
            ))
            .for_api(Api::Anthropic)
            .label("Claude: call send_to_codex"),
    );
    let server = codex_reaching_server(bridge)?;

    let started = Instant::now();
    let run = bridge
        .claude
        .turn(bridge.project, BRIDGE_PROMPT)
        .resume(bridge.session_id)
        .mcp_server(server)
        .allow_tool(&tool)
        .run()
        .context("step 3 (Claude calls send_to_codex): running claude")?
        .expect_success()
        .context("step 3 (Claude calls send_to_codex): Claude Code's turn did not complete")?;
    let turn_took = started.elapsed();
    let receipt_at = Instant::now();
    let answer = run.result_text().unwrap_or_default().to_owned();
    if run.session_id() != Some(bridge.session_id) {
        bail!(
            "step 3 (Claude calls send_to_codex): the resumed turn ran in session {:?}, not {}",
            run.session_id(),
            bridge.session_id
        );
    }

    let transcript = bridge
        .claude
        .transcript_path(bridge.project, bridge.session_id);
    let call = send_call(&transcript, &tool).context(
        "step 3 (Claude calls send_to_codex): finding the tool call in Claude's transcript",
    )?;
    println!("  Claude session  {} (resumed)", bridge.session_id);
    println!("  tool call       {tool}");
    print_json_indented(&call, "                  ");

    let response = receipt(bridge.endpoint).context(
        "step 4 (the receipt): no send_to_codex result reached the model; Claude Code's MCP \
         server may have failed to start or refused the call",
    )?;
    heading("4. The receipt Claude got back (the tool result)");
    let receipt = match response {
        SendResponse::Accepted(receipt) => receipt,
        SendResponse::Refused(refusal) => bail!(
            "step 4 (the receipt): send_to_codex refused ({:?}): {}",
            refusal.reason,
            refusal.message
        ),
    };
    let fields: [(&str, String); 13] = [
        ("delivery_id", shown(&receipt.delivery_id)),
        ("accepted", shown(&receipt.accepted)),
        ("target_agent", shown(&receipt.target_agent)),
        ("target_session_id", shown(&receipt.target_session_id)),
        ("target_selected_by", shown(&receipt.target_selected_by)),
        (
            "reply_lands_in_session",
            shown(&receipt.reply_lands_in_session),
        ),
        (
            "return_panel_available_now",
            shown(&receipt.return_panel_available_now),
        ),
        ("conversation_id", shown(&receipt.conversation_id)),
        ("hop", shown(&receipt.hop)),
        ("max_hops", shown(&receipt.max_hops)),
        ("request_id", shown(&receipt.request_id)),
        ("warnings", shown(&receipt.warnings)),
        ("note", shown(&receipt.note)),
    ];
    for (key, value) in fields {
        println!("  {key:<27} {value}");
    }
    println!(
        "  Claude then said {answer:?} (its turn took {:.1}s)",
        turn_took.as_secs_f64()
    );
    if !receipt.accepted {
        bail!("step 4 (the receipt): the send was not accepted: {receipt:?}");
    }
    if receipt.target_session_id.as_deref() != Some(bridge.thread_id) {
        bail!(
            "step 4 (the receipt): the target is {:?}, not the Codex thread {}",
            receipt.target_session_id,
            bridge.thread_id
        );
    }
    let delivery_id = receipt.delivery_id.as_str();
    let request_id = receipt.request_id.as_str();

    heading("5. The delivery");
    println!("  $ cross-agent status {delivery_id} --json   (polled until it is finished)");
    let (delivery, peer) = wait_for_delivery(bridge.cross_agent, delivery_id)
        .context("step 5 (the delivery to Codex)")?;
    let delivered_after = receipt_at.elapsed();
    let fields: [(&str, String); 10] = [
        ("state", shown(&delivery.state)),
        ("from_agent", shown(&delivery.from_agent)),
        ("from_session", shown(&delivery.from_session)),
        ("target_session_id", shown(&delivery.target_session_id)),
        ("transport", shown(&delivery.transport)),
        ("created_at", shown(&delivery.created_at)),
        ("started_at", shown(&delivery.started_at)),
        ("finished_at", shown(&delivery.finished_at)),
        (
            "reply_carries_request_id",
            shown(&delivery.answer.reply_carries_request_id),
        ),
        ("error", shown(&delivery.error)),
    ];
    for (key, value) in fields {
        println!("  {key:<27} {value}");
    }
    if delivery.state != DeliveryState::Delivered {
        bail!(
            "step 5 (the delivery to Codex): it ended {}: {delivery:?}",
            shown(&delivery.state)
        );
    }

    let envelope = bridge
        .endpoint
        .model_requests()
        .into_iter()
        .filter(|request| request.api == Api::Responses)
        .filter_map(|request| request.last_user_text)
        .find(|text| text.contains(BRIDGE_MARKER))
        .ok_or_else(|| {
            anyhow!(
                "step 6 (the envelope): the delivery says delivered, yet no Codex request \
                 carried the message"
            )
        })?;
    heading("6. The envelope exactly as Codex received it (endpoint request log)");
    for line in envelope.lines() {
        println!("  │ {line}");
    }
    if !envelope.contains(request_id) {
        bail!("step 6 (the envelope): it does not carry the request id {request_id}");
    }

    heading("7. The delivered answer");
    let reply = delivery.reply_preview.as_deref().unwrap_or_default();
    println!("  reply_preview (the delivery record):");
    for line in reply.lines() {
        println!("  │ {line}");
    }
    if let Some(answer) = peer.and_then(|peer| peer.answer) {
        println!("  peer_transcript.answer (re-read from Codex's rollout):");
        for line in answer.lines() {
            println!("  │ {line}");
        }
    }
    if !reply.contains(BRIDGE_ANSWER) {
        bail!("step 7 (the delivered answer): the reply is not Codex's scripted answer: {reply:?}");
    }
    let rollout = bridge.codex.rollout_of(bridge.thread_id)?;
    let records = read_records(&rollout)?;
    println!(
        "  Codex's thread {} now holds {} records (it had {} before): the answer is in the \
         session Codex already had.",
        bridge.thread_id,
        records.len(),
        bridge.codex_records
    );

    heading("Timing");
    println!(
        "  Claude's turn, send_to_codex included   {:.1}s",
        turn_took.as_secs_f64()
    );
    println!(
        "  receipt → delivered (Codex's turn)      {:.1}s",
        delivered_after.as_secs_f64()
    );
    Ok(())
}

/// The `send_to_codex` call in Claude's transcript: its arguments.
fn send_call(transcript: &Path, tool: &str) -> Result<Value> {
    read_records(transcript)?
        .iter()
        .filter(|record| record.get("type").and_then(Value::as_str) == Some("assistant"))
        .filter_map(|record| record.pointer("/message/content").and_then(Value::as_array))
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .find(|block| block.get("name").and_then(Value::as_str) == Some(tool))
        .and_then(|block| block.get("input").cloned())
        .ok_or_else(|| anyhow!("no {tool} call in {}", transcript.display()))
}

/// The receipt: the `send_to_codex` result as the endpoint saw it handed back to the model. An
/// accepted send's result is the response as JSON; a refusal's is its message, a blank line,
/// then the JSON (what `cross-agent mcp` writes, so the agent reads the message first).
fn receipt(endpoint: &ModelEndpoint) -> Result<SendResponse> {
    let text = endpoint
        .model_requests()
        .into_iter()
        .filter(|request| request.api == Api::Anthropic)
        .filter_map(|request| request.last_tool_result)
        .find(|text| text.contains("delivery_id") || text.contains("\"reason\""))
        .ok_or_else(|| anyhow!("no tool result with a delivery_id"))?;
    send_result(&text)
}

/// A `send_to_*` tool result's text as the response it carries.
fn send_result(text: &str) -> Result<SendResponse> {
    let whole = serde_json::from_str::<SendResponse>(text.trim());
    let after_message = text
        .split_once("\n\n")
        .map(|(_, json)| serde_json::from_str::<SendResponse>(json.trim()));
    match (whole, after_message) {
        (Ok(response), _) | (Err(_), Some(Ok(response))) => Ok(response),
        (Err(error), _) => {
            Err(error).with_context(|| format!("the tool result is not a send response: {text}"))
        }
    }
}

/// Polls `cross-agent status <id> --json` until the delivery is finished: its record, and what
/// the peer's transcript says.
fn wait_for_delivery(
    cross_agent: &CrossAgent,
    delivery_id: &str,
) -> Result<(DeliveryRecord, Option<PeerTranscript>)> {
    let started = Instant::now();
    loop {
        let output = cross_agent.run(&["status", delivery_id, "--json"])?;
        if output.status.success() {
            let status: BridgeStatusResponse = serde_json::from_slice(&output.stdout)
                .context("`cross-agent status --json` printed something that is not a status")?;
            if let Some(delivery) = status.delivery.filter(|d| d.state.is_finished()) {
                return Ok((delivery, status.peer_transcript));
            }
        }
        if started.elapsed() > DELIVERY_LIMIT {
            bail!(
                "delivery {delivery_id} did not finish within {}s; last status: {}{}",
                DELIVERY_LIMIT.as_secs(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// A field as JSON shows it (`"dlv_…"`, `null`, `true`): the demo prints what went over the
/// wire.
fn shown(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| format!("<{error}>"))
}

fn heading(title: &str) {
    println!(
        "\n── {title} {}",
        "─".repeat(72usize.saturating_sub(title.chars().count()))
    );
}

fn print_json_indented(value: &Value, indent: &str) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    for line in text.lines() {
        println!("{indent}{line}");
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

/// `<cli> --version`'s number (`2.1.332 (Claude Code)` / `codex-cli 0.171.0`): what the
/// heading needs.
fn cli_version(kind: AgentKind, home: &AgentHome) -> Result<String> {
    let version = agent_version(kind, home)?;
    Ok(version
        .split_whitespace()
        .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or(&version)
        .to_owned())
}

#[cfg(test)]
mod tests {
    use super::send_result;
    use cross_agent_protocol::bridge::{RefusalReason, SendResponse};

    #[test]
    fn a_refusal_result_is_read_after_its_message() {
        let text = "no codex session has the id \"x\"\n\n{\"outcome\": \"refused\", \
                    \"reason\": \"no_such_session\", \"message\": \"no codex session has the id\"}";
        match send_result(text) {
            Ok(SendResponse::Refused(refusal)) => {
                assert_eq!(refusal.reason, RefusalReason::NoSuchSession);
            }
            other => panic!("not read as a refusal: {other:?}"),
        }
        assert!(send_result("{\"outcome\": \"error\", \"error\": \"internal\"}").is_err());
    }
}
