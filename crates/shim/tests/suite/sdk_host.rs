//! The official Claude Agent SDK for TypeScript (`testkit::agent_sdk`, pinned) as the host in
//! front of the shim, real Claude Code behind it: `query()` in streaming-input mode keeps the
//! session open as a panel does and `canUseTool` answers the approval (`tests/sdk/host.mjs`,
//! steered by these tests). Both ways an SDK host starts the shim — the link as the executable
//! itself (`pathToClaudeCodeExecutable` alone) and the link given the real binary first
//! (`executableArgs`, what `claudeCode.claudeProcessWrapper` makes the VS Code extension do) —
//! and the prompt lines in both spellings the SDK writes (`type` first, or the host's own key
//! order). The registration says the human's turn runs and the approval is matched, and a
//! bridged message sent meanwhile is queued behind the human's turn and answered.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use cross_agent_protocol::panel::{PanelRegistration, PanelSessionState, ShimEvent};
use cross_agent_testkit::agent_sdk;
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::panel::PanelDriver;
use cross_agent_testkit::{Reply, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{Bench, Connection, TURN, request};

/// How the SDK host starts the shim.
#[derive(Debug, Clone, Copy)]
enum StartForm {
    /// `pathToClaudeCodeExecutable` = the link, nothing else: the shim finds claude on PATH.
    Link,
    /// The link, given the real claude as its first argument (`executableArgs`).
    Wrapper,
}

/// The prompt's key order the host gives the SDK, which writes it as given.
#[derive(Debug, Clone, Copy)]
enum Spelling {
    TypeFirst,
    OtherKeyFirst,
}

impl Spelling {
    fn as_str(self) -> &'static str {
        match self {
            Spelling::TypeFirst => "type-first",
            Spelling::OtherKeyFirst => "other-key-first",
        }
    }
}

/// The SDK host script, run by `node`.
struct SdkHost {
    driver: PanelDriver,
}

impl SdkHost {
    fn start(bench: &Bench, form: StartForm) -> Result<SdkHost> {
        let claude = bench.claude()?;
        let links = bench.home.path().join("links");
        let made = Command::new(cross_agent_bin()?)
            .args(["shim", "links"])
            .arg(&links)
            .output()?;
        assert!(made.status.success(), "{made:?}");
        let real = claude.binary().to_path_buf();
        let config = json!({
            "sdk": agent_sdk::entry()?,
            "shim": links.join("cross-agent-claude-shim"),
            "form": match form {
                StartForm::Link => "link",
                StartForm::Wrapper => "wrapper",
            },
            "realClaude": real,
            "cwd": bench.project,
        });
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/host.mjs");
        let mut command = Command::new("node");
        command
            .arg(&script)
            .arg(config.to_string())
            .current_dir(&bench.project)
            .env_clear()
            .envs(claude.env())
            .env("CROSS_AGENT_HOME", &bench.state);
        if let StartForm::Link = form {
            // As a user has it: the real claude on PATH, where the shim finds it.
            let dir = real.parent().context("the real claude has no folder")?;
            let path = std::env::var_os("PATH").unwrap_or_default();
            let path = std::env::join_paths(
                std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&path)),
            )?;
            command.env("PATH", path);
        }
        Ok(SdkHost {
            driver: PanelDriver::start(command)?,
        })
    }

    fn send(&mut self, command: Value) -> Result<()> {
        self.driver.send(&command.to_string())
    }

    fn user(&mut self, text: &str, spelling: Spelling) -> Result<()> {
        self.send(json!({"cmd": "user", "text": text, "spelling": spelling.as_str()}))
    }

    /// The next event the host prints that `wanted` accepts; an `error` event fails at once.
    fn next(&mut self, wanted: impl Fn(&Value) -> bool) -> Result<Value> {
        let event = self
            .driver
            .next_line(TURN, |e| e["event"] == "error" || wanted(e))?;
        if event["event"] == "error" {
            bail!("the SDK host failed: {}", event["error"]);
        }
        Ok(event)
    }

    fn result(&mut self, text: &str) -> Result<Value> {
        self.next(|e| e["message"]["type"] == "result" && e["message"]["result"] == text)
    }

    /// The text of every `result` the SDK handed the host, in order.
    fn results(&self) -> Vec<String> {
        self.driver
            .lines()
            .iter()
            .filter(|e| e["event"] == "message" && e["message"]["type"] == "result")
            .map(|e| e["message"]["result"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

/// The one panel registration of the bench's home (the SDK started the shim, so the test does
/// not know its pid): its pid and contents once `wanted` holds.
fn registration_when(
    bench: &Bench,
    wanted: impl Fn(&PanelRegistration) -> bool,
) -> Result<(u32, PanelRegistration)> {
    let pid = loop_until(bench, |names| match names {
        [only] => only
            .strip_prefix("claude-")
            .and_then(|rest| rest.strip_suffix(".json"))
            .and_then(|pid| pid.parse().ok()),
        _ => None,
    })?;
    Ok((pid, bench.registration_when(pid, wanted)?))
}

/// Waits until the names in the panels folder give `found` what it looks for.
fn loop_until(bench: &Bench, found: impl Fn(&[String]) -> Option<u32>) -> Result<u32> {
    let deadline = std::time::Instant::now() + TURN;
    loop {
        let names: Vec<String> = std::fs::read_dir(bench.panels())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".json"))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(pid) = found(&names) {
            return Ok(pid);
        }
        if std::time::Instant::now() > deadline {
            bail!("no single panel registration: {names:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn socket(bench: &Bench, pid: u32) -> PathBuf {
    bench.panels().join(format!("claude-{pid}.sock"))
}

/// One SDK-hosted session through the shim, the prompts spelt `first` then `second`:
/// 1. the human's turn (`first`) runs a tool that needs approval: the registration says
///    awaiting approval with the human's prompt unanswered; a bridged question sent then is
///    queued; the host's `canUseTool` allows, and the registration says the approval was
///    matched (none pending, still working: the human's answer is held by a gate);
/// 2. the gate opens: the human's answer, then the bridged question's, each to its own turn;
/// 3. a second human turn (`second`) is seen while it runs, and answered;
/// 4. the input ends, the shim exits and its registration goes.
fn sdk_session(form: StartForm, first: Spelling, second: Spelling) -> Result<()> {
    let bench = Bench::new()?;
    let marker = bench.project.join("approved.txt");
    let release_first = bench.state.with_file_name("release-the-human-answer");
    let release_second = bench.state.with_file_name("release-the-second-answer");
    let command = format!("echo approved > {}", marker.display());
    bench.script([
        Rule::on_user_text("human question")
            .tool_call(ToolCall::new(
                "Bash",
                json!({"command": command, "description": "write"}),
            ))
            .once(),
        Rule::on_any_tool_result()
            .reply(Reply::text("human answer").after_file(&release_first))
            .once(),
        Rule::on_user_text("bridged question")
            .reply_text("bridged answer")
            .once(),
        Rule::on_user_text("second human")
            .reply(Reply::text("second answer").after_file(&release_second))
            .once(),
    ]);
    let mut host = SdkHost::start(&bench, form)?;
    let (pid, registration) = registration_when(&bench, |r| r.agent_pid.is_some())?;
    assert!(registration.intercepting, "{registration:?}");
    assert_eq!(registration.sessions[0].state, PanelSessionState::Idle);

    host.user("human question", first)?;
    let asked = host.next(|e| e["event"] == "can_use_tool")?;
    assert_eq!(asked["tool"], "Bash");
    let (_, registration) = registration_when(&bench, |r| {
        r.sessions[0].state == PanelSessionState::AwaitingApproval
    })?;
    let session = &registration.sessions[0];
    assert_eq!(session.unanswered_human_prompts, 1, "{session:?}");
    assert!(session.last_human_input_ms.is_some(), "the human's turn");
    let [pending] = &session.pending_approvals[..] else {
        panic!("{session:?}")
    };
    assert_eq!(pending.tool.as_deref(), Some("Bash"));
    assert_eq!(
        pending.delivery_id, None,
        "the human's turn asks, not a bridged one"
    );
    assert!(
        pending
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("echo approved")),
        "{pending:?}"
    );

    let mut bridged = Connection::open(&socket(&bench, pid), &request("d1", "bridged question"))?;
    let accepted = bridged.next()?;
    assert!(
        matches!(accepted, Some(ShimEvent::Accepted { queued: true, .. })),
        "queued behind the human's turn: {accepted:?}"
    );
    host.send(json!({"cmd": "approve", "allow": true}))?;
    // The SDK's answer was matched: nothing pending, and the human's turn still runs.
    let (_, registration) =
        registration_when(&bench, |r| r.sessions[0].pending_approvals.is_empty())?;
    let session = &registration.sessions[0];
    assert_eq!(
        (session.state, session.unanswered_human_prompts),
        (PanelSessionState::Working, 1),
        "{session:?}"
    );

    std::fs::write(&release_first, "")?;
    let events = bridged.rest()?;
    let Some(ShimEvent::TurnEnded { answer, .. }) = events
        .iter()
        .find(|e| matches!(e, ShimEvent::TurnEnded { .. }))
    else {
        panic!("{events:?}")
    };
    assert_eq!(answer.as_deref(), Some("bridged answer"));
    host.result("bridged answer")?;
    assert_eq!(
        host.results(),
        vec!["human answer".to_owned(), "bridged answer".to_owned()]
    );
    assert_eq!(std::fs::read_to_string(&marker)?, "approved\n");
    registration_when(&bench, |r| r.sessions[0].state == PanelSessionState::Idle)?;

    host.user("second human", second)?;
    let (_, registration) = registration_when(&bench, |r| {
        r.sessions[0].state == PanelSessionState::Working
    })?;
    assert_eq!(registration.sessions[0].unanswered_human_prompts, 1);
    std::fs::write(&release_second, "")?;
    host.result("second answer")?;

    host.send(json!({"cmd": "end"}))?;
    host.next(|e| e["event"] == "done")?;
    assert!(host.driver.wait(TURN)?.success());
    let path = bench.registration_path(pid);
    loop_until(&bench, |names| names.is_empty().then_some(0))
        .with_context(|| format!("{} still there after the session ended", path.display()))?;
    Ok(())
}

#[test]
fn an_sdk_host_starting_the_link_as_claude_itself() -> Result<()> {
    sdk_session(
        StartForm::Link,
        Spelling::OtherKeyFirst,
        Spelling::TypeFirst,
    )
}

#[test]
fn an_sdk_host_starting_the_link_as_a_wrapper_of_the_real_claude() -> Result<()> {
    sdk_session(
        StartForm::Wrapper,
        Spelling::TypeFirst,
        Spelling::OtherKeyFirst,
    )
}
