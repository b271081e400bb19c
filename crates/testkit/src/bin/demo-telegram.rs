//! `scripts/demo --telegram`: the Telegram bot, as a person on their phone would see it, against
//! the fake Bot API (testkit `telegram`) and the scripted model, on loopback only.
//!
//! In a scratch HOME it sets the bot up (`cross-agent telegram setup`, token from stdin), starts
//! the daemon, pairs "the phone" (`cross-agent telegram pair`, then `/pair CODE` from the chat),
//! and runs a real Claude Code turn whose `PreToolUse` and `Stop` hooks are `cross-agent hook`.
//! The scripted model asks for `rm -rf build`; the gate's danger pattern sends it to the phone,
//! which taps Allow; the tool runs, and the turn's end arrives as a notification. The chat is
//! printed as it unfolds, then the decision lines of the approval. Any step that does not go as
//! scripted ends the demo with a message naming it and a non-zero exit. `--keep` leaves the
//! scratch folder.

use std::io::Write;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use cross_agent_testkit::agents::{AgentHome, Claude};
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::endpoint::{ModelEndpoint, Rule, ToolCall};
use cross_agent_testkit::telegram::{FakeBotApi, RecordedCall};
use serde_json::{Value, json};

const TOKEN: &str = "123456:DEMO-not-a-real-token";
const PHONE: i64 = 5001;
const PROMPT: &str = "Clean the build folder, please.";
const ANSWER: &str = "Done: the build folder is gone. Nothing else was touched.";

#[derive(Parser)]
#[command(about = "The Telegram bot demo: pair, approve a real Claude tool call from the phone")]
struct Args {
    /// Leave the scratch folder in place.
    #[arg(long)]
    keep: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args.keep) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("demo --telegram: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The daemon, stopped (and reaped) whatever happens.
struct Daemon {
    child: Option<Child>,
    bin: std::path::PathBuf,
    env: Vec<(String, String)>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new(&self.bin)
            .args(["daemon", "stop"])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Prints the bot's calls after `seen` as the chat shows them; returns the new count.
fn show_new(api: &FakeBotApi, seen: usize) -> usize {
    let calls = api.calls();
    for call in calls.iter().skip(seen) {
        if let Some(line) = as_chat(call) {
            println!("{line}");
        }
    }
    calls.len()
}

/// HTML as the app renders it: tags gone, entities read.
fn rendered(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn indented(text: &str) -> String {
    text.lines()
        .map(|line| format!("   │ {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn as_chat(call: &RecordedCall) -> Option<String> {
    if call.failed_with.is_some() {
        return None;
    }
    let body = &call.body;
    let text = |key: &str| rendered(body[key].as_str().unwrap_or(""));
    match call.method.as_str() {
        "sendMessage" => {
            let mut out = format!("🤖 bot:\n{}", indented(&text("text")));
            if let Some(row) = body["reply_markup"]["inline_keyboard"][0].as_array() {
                let buttons: Vec<String> = row
                    .iter()
                    .map(|b| format!("[ {} ]", b["text"].as_str().unwrap_or("")))
                    .collect();
                out.push_str(&format!("\n   {}", buttons.join(" ")));
            }
            Some(out)
        }
        "sendDocument" => Some(format!(
            "🤖 bot sends a file {}:\n{}",
            body["document"]["file_name"].as_str().unwrap_or("?"),
            indented(&text("caption"))
        )),
        "editMessageText" => Some(format!(
            "🤖 bot edits its card (the buttons are gone):\n{}",
            indented(&text("text"))
        )),
        "answerCallbackQuery" => body["text"]
            .as_str()
            .map(|t| format!("   (the app flashes: {t})")),
        _ => None,
    }
}

fn wait_for<T>(what: &str, limit: Duration, mut find: impl FnMut() -> Option<T>) -> Result<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = find() {
            return Ok(found);
        }
        if Instant::now() >= deadline {
            bail!("{what}: not seen within {} s", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run(keep: bool) -> Result<()> {
    let bin = cross_agent_bin()?;
    let scratch = tempfile::Builder::new()
        .prefix("cross-agent-telegram-demo-")
        .tempdir()
        .context("making the scratch folder")?;
    let state = scratch.path().join("state");
    let user = scratch.path().join("user");
    std::fs::create_dir_all(&user)?;
    let api = FakeBotApi::start(TOKEN, "cross_agent_demo_bot")?;
    let env: Vec<(String, String)> = vec![
        ("HOME".into(), user.display().to_string()),
        ("CROSS_AGENT_HOME".into(), state.display().to_string()),
        ("CROSS_AGENT_TELEGRAM_API".into(), api.base_url().to_owned()),
        ("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT".into(), "1".into()),
        ("CROSS_AGENT_APPROVAL_WAIT".into(), "60".into()),
    ];
    let command = |args: &[&str]| {
        let mut command = Command::new(&bin);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env_remove("CROSS_AGENT_DAEMON_BIN");
        command
    };
    println!(
        "cross-agent · Telegram demo (fake Bot API at {}, scripted model; loopback only)\n",
        api.base_url()
    );

    // 1. Setup: the token from stdin, checked with getMe.
    let mut setup = command(&["telegram", "setup", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running `cross-agent telegram setup`")?;
    setup
        .stdin
        .take()
        .context("setup's stdin")?
        .write_all(format!("{TOKEN}\n").as_bytes())?;
    let out = setup.wait_with_output()?;
    if !out.status.success() {
        bail!("telegram setup: {}", String::from_utf8_lossy(&out.stderr));
    }
    let me: Value = serde_json::from_slice(&out.stdout).context("setup --json")?;
    println!("$ cross-agent telegram setup   (token pasted on stdin, never shown)");
    println!("  bot @{}\n", me["username"].as_str().unwrap_or("?"));

    // 2. The daemon, which polls the bot.
    let daemon = Daemon {
        child: Some(
            command(&["daemon", "run"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting the daemon")?,
        ),
        bin: bin.clone(),
        env: env.clone(),
    };
    wait_for("the daemon's poller", Duration::from_secs(30), || {
        std::fs::read(state.join("telegram/status.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .filter(|s| s["state"] == "polling")
    })?;

    // 3. Pairing.
    let out = command(&["telegram", "pair", "--json"]).output()?;
    if !out.status.success() {
        bail!("telegram pair: {}", String::from_utf8_lossy(&out.stderr));
    }
    let pair: Value = serde_json::from_slice(&out.stdout).context("pair --json")?;
    let code = pair["code"].as_str().context("no pairing code")?.to_owned();
    println!("$ cross-agent telegram pair\n  code {code} (good for 10 minutes)\n");
    println!(
        "──────── the chat with @{} ────────",
        me["username"].as_str().unwrap_or("?")
    );
    let mut seen = api.calls().len();
    println!("👤 you: /pair {code}");
    api.push_message(PHONE, PHONE, &format!("/pair {code}"));
    wait_for("the pairing answer", Duration::from_secs(20), || {
        api.calls_to("sendMessage")
            .into_iter()
            .find(|c| c.body["chat_id"] == PHONE)
    })?;
    seen = show_new(&api, seen);

    // 4. A real Claude Code turn whose hooks ask the daemon.
    let agents = AgentHome::new()?;
    let project = agents.project("shop")?;
    std::fs::create_dir_all(project.join("build/cache"))?;
    let endpoint = ModelEndpoint::start()?;
    endpoint.push(Rule::on_user_text(PROMPT).tool_call(ToolCall::new(
        "Bash",
        json!({"command": "rm -rf build", "description": "Remove the build folder"}),
    )));
    endpoint.push(Rule::on_any_tool_result().reply_text(ANSWER));
    let claude = Claude::new(&agents, &endpoint.anthropic_base_url())?
        .with_env("CROSS_AGENT_HOME", state.as_os_str());
    let hook = |event: &str| {
        json!([{"matcher": "*", "hooks": [{"type": "command",
            "command": format!("'{}' hook {event}", bin.display()), "timeout": 90}]}])
    };
    let settings =
        json!({"hooks": {"PreToolUse": hook("PreToolUse"), "Stop": hook("Stop")}}).to_string();
    println!("\n   (in the terminal, Claude Code is asked: \"{PROMPT}\")");
    let turn = claude
        .turn(&project, PROMPT)
        .arg("--settings")
        .arg(&settings)
        .timeout(Duration::from_secs(180));
    let running = std::thread::spawn(move || turn.run());
    let card = wait_for("the approval card", Duration::from_secs(120), || {
        api.calls_to("sendMessage")
            .into_iter()
            .find(|c| c.body.get("reply_markup").is_some())
    })?;
    seen = show_new(&api, seen);
    let allow = card.body["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .context("the card's Allow button")?
        .to_owned();
    println!("👤 you tap [ ✅ Allow ]");
    api.push_callback(PHONE, PHONE, 1, &allow);
    running
        .join()
        .map_err(|_| anyhow::anyhow!("the Claude turn's thread panicked"))??
        .expect_success()
        .context("the Claude turn")?;
    wait_for(
        "the turn-ended notification",
        Duration::from_secs(30),
        || {
            api.calls_to("sendMessage")
                .into_iter()
                .find(|c| c.body["text"].as_str().unwrap_or("").contains("finished"))
        },
    )?;
    // The card's edit is paced; let it land before the chat is printed.
    wait_for("the card's edit", Duration::from_secs(10), || {
        api.calls_to("editMessageText").into_iter().next()
    })?;
    show_new(&api, seen);
    println!("──────────────────────────────────────────\n");
    if project.join("build").exists() {
        bail!("allowed from the phone, yet the build folder is still there");
    }
    println!("The tool ran: {} is gone.", project.join("build").display());

    // 5. What was decided.
    println!("\nDecision lines (decisions.jsonl) of the approval:");
    let decisions = std::fs::read_to_string(state.join("decisions.jsonl")).unwrap_or_default();
    for line in decisions.lines() {
        let Ok(decision) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if matches!(
            decision["kind"].as_str(),
            Some("gate_verdict" | "danger_match" | "approval")
        ) {
            println!("  {line}");
        }
    }
    drop(daemon);
    if keep {
        println!("\nThe scratch folder is kept: {}", scratch.path().display());
        // Forgetting the handle skips the removal its drop would do; that is what --keep asks.
        std::mem::forget(scratch);
        std::mem::forget(agents);
    }
    Ok(())
}
