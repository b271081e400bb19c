//! `cross-agent handoff`, driven through the built binary on a temporary `HOME` and
//! `CROSS_AGENT_HOME`: briefs of real Claude Code and Codex sessions (made through the scripted
//! model endpoint) and of Cursor and Antigravity stores written from their public descriptions;
//! the compact asked of the real `claude -p` and `codex exec`, and the provider fallback when
//! the CLI hangs; the launcher opened in a real xterm under Xvfb on a stand-in agent; the
//! receipt check.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, Codex, agent_binary};
use cross_agent_testkit::binaries::agent_standin_bin;
use cross_agent_testkit::desktop::Xvfb;
use cross_agent_testkit::foreign_stores::{antigravity_session, cursor_session};
use cross_agent_testkit::{Api, ModelEndpoint, Reply, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");

const GOAL: &str =
    "Fix the importer in src/import.rs and add a --dry-run flag; never touch Cargo.lock.";
const LATEST: &str = "Also keep the output under 200 lines.";
const COMPACT: &str = "### What the session was doing\nFixing the importer.\n### How it was approached\nRan it first.\n### Traps and dead ends\nIt exits 2.\n### Where it stands\nThe flag is not added yet.";

/// A temporary user: `HOME` is the agents' home, `state/` the bridge's.
pub(super) struct User {
    pub(super) home: AgentHome,
    pub(super) state: PathBuf,
}

/// A handoff may start the home's daemon (detached): it ends with the user, before the
/// temporary home goes.
impl Drop for User {
    fn drop(&mut self) {
        cross_agent_testkit::leaks::stop_daemons(&self.state, cross_agent_testkit::leaks::SETTLE);
    }
}

impl User {
    pub(super) fn new() -> User {
        let home = AgentHome::new().unwrap();
        let state = home.path().join("state");
        User { home, state }
    }

    pub(super) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("HOME", self.home.path())
            .env("CROSS_AGENT_HOME", &self.state)
            .env("TMPDIR", self.home.path().join("tmp"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("GROK_HOME")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("CROSS_AGENT_HANDOFF_PROVIDERS")
            // No family CLI unless a test names one: nothing real is asked by accident.
            .env("CROSS_AGENT_CLAUDE_BIN", "/nonexistent/claude")
            .env("CROSS_AGENT_CODEX_BIN", "/nonexistent/codex")
            .env("CROSS_AGENT_CURSOR_AGENT_BIN", "/nonexistent/cursor-agent")
            .env("CROSS_AGENT_AGY_BIN", "/nonexistent/agy");
        command
    }

    pub(super) fn decisions(&self) -> Vec<Value> {
        std::fs::read_to_string(self.state.join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The `handoff` decision lines, oldest first.
    fn handoffs(&self) -> Vec<Value> {
        self.decisions()
            .into_iter()
            .filter(|d| d["kind"] == "handoff")
            .collect()
    }
}

/// The stderr of a command that had to fail with exit code 1 (a refused or failed handoff).
pub(super) fn stderr_of_exit_1(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    err
}

/// A command that had to succeed did, or its stderr says why not.
pub(super) fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The JSON a command that had to succeed printed.
pub(super) fn json_of_success(output: &Output) -> Value {
    assert_success(output);
    json_of(output)
}

fn json_of(output: &Output) -> Value {
    assert!(
        !output.stdout.is_empty(),
        "no stdout; stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

pub(super) fn git_init(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A real Claude Code session: the goal (a Bash call that exits 2), then a second instruction.
fn claude_session(user: &User, endpoint: &ModelEndpoint) -> (String, PathBuf) {
    endpoint.script([
        Rule::on_user_text("Fix the importer")
            .tool_call(ToolCall::new(
                "Bash",
                json!({"command": "echo importing; exit 2", "description": "run the importer"}),
            ))
            .for_api(Api::Anthropic)
            .once(),
        Rule::on_any_tool_result().reply_text("The importer exits 2."),
        Rule::on_user_text("Also keep").reply_text("Noted."),
    ]);
    let project = user.home.project("shop").unwrap();
    let claude = Claude::new(&user.home, &endpoint.anthropic_base_url()).unwrap();
    let id = claude
        .session(&project, &["Bash"], &[GOAL, LATEST])
        .unwrap();
    (id, project.canonicalize().unwrap())
}

/// The environment `claude -p` needs to reach the scripted endpoint from the handoff.
fn with_claude(command: &mut Command, endpoint: &ModelEndpoint) {
    command
        .env(
            "CROSS_AGENT_CLAUDE_BIN",
            agent_binary(AgentKind::Claude).unwrap(),
        )
        .env("ANTHROPIC_BASE_URL", endpoint.anthropic_base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .env("DISABLE_AUTOUPDATER", "1");
}

/// The brief of a real Claude session quotes the contract, judges the command by its recorded
/// exit code; the handoff to a folder carries the compact the real `claude -p` wrote under
/// the quoted contract; a second handoff, whose `claude -p` hangs, falls back to the provider
/// and rotates the first brief.
#[test]
fn claude_session_brief_compact_and_provider_fallback() {
    let user = User::new();
    let endpoint = ModelEndpoint::start().unwrap();
    let (id, project) = claude_session(&user, &endpoint);

    let out = user
        .command(&["handoff", "brief", &id, "--json"])
        .output()
        .unwrap();
    let brief = json_of_success(&out);
    assert_eq!(brief["source"]["family"], "claude");
    assert_eq!(brief["source"]["cwd"], json!(project));
    assert_eq!(
        brief["contract"],
        json!({
            "opening_goal": GOAL,
            "latest_instruction": LATEST,
            "constraints": [GOAL, LATEST],
        })
    );
    assert_eq!(
        brief["commands"],
        json!([{"command": "echo importing; exit 2", "outcome": "failed", "exit_code": 2, "signal": "exit_code"}])
    );
    assert_eq!(brief["failures_total"], 1);
    assert_eq!(
        brief["standing"]["last_assistant_message"], "Noted.",
        "{brief:#}"
    );

    // The handoff to a folder, the compact from the real `claude -p`.
    endpoint.clear_rules();
    endpoint.script([Rule::on_user_text("handoff compact").reply_text(COMPACT)]);
    endpoint.clear_requests();
    let elsewhere = user.home.path().join("elsewhere");
    git_init(&elsewhere);
    let mut command = user.command(&["handoff", &id, elsewhere.to_str().unwrap(), "--json"]);
    with_claude(&mut command, &endpoint);
    let out = command.output().unwrap();
    let done = json_of_success(&out);
    assert_eq!(done["compact_by"], "claude -p", "{done:#}");
    let file = elsewhere.join("HANDOFF.md");
    let text = std::fs::read_to_string(&file).unwrap();
    let contract_at = text.find("## Contract").unwrap();
    let compact_at = text
        .find("## Narrative compact (context, not requirement)")
        .unwrap();
    assert!(
        contract_at < compact_at,
        "the compact comes after the contract"
    );
    assert!(text.contains("Fixing the importer."), "{text}");
    assert!(text.contains(&format!("> {GOAL}")), "{text}");
    // The compact was asked under the quoted contract, for the four headings.
    let asked = endpoint.model_requests();
    let asked = serde_json::to_string(&asked.last().unwrap().messages).unwrap();
    assert!(asked.contains(&format!("> {GOAL}")), "{asked}");
    assert!(asked.contains("### Traps and dead ends"), "{asked}");
    assert!(asked.contains("do not invent any"), "{asked}");
    let exclude = std::fs::read_to_string(elsewhere.join(".git/info/exclude")).unwrap();
    assert!(
        exclude.contains("/HANDOFF.md\n/HANDOFF.prev.md\n"),
        "{exclude}"
    );

    // Again, with `claude -p` hanging: the provider writes the compact, the first brief is
    // rotated.
    endpoint.clear_rules();
    endpoint.script([
        Rule::on_user_text("handoff compact")
            .reply(Reply::hang())
            .once(),
        Rule::on_user_text("handoff compact")
            .reply_text(COMPACT.replace("Fixing the importer.", "Fixing it (provider)."))
            // A tool-less, non-streaming request is what the endpoint calls a side request.
            .include_side_requests(),
    ]);
    let mut command = user.command(&["handoff", &id, elsewhere.to_str().unwrap(), "--json"]);
    with_claude(&mut command, &endpoint);
    command
        .env("CROSS_AGENT_HANDOFF_COMPACT_TIMEOUT", "4")
        .env(
            "CROSS_AGENT_HANDOFF_PROVIDERS",
            format!(
                "anthropic {} PROVIDER_KEY test-model",
                endpoint.anthropic_base_url()
            ),
        )
        .env("PROVIDER_KEY", "provider-key");
    let out = command.output().unwrap();
    let done = json_of_success(&out);
    assert_eq!(
        done["compact_by"], "provider anthropic (test-model)",
        "{done:#}"
    );
    assert_eq!(done["compact_attempts"][0]["by"], "claude -p");
    assert_eq!(done["compact_attempts"][0]["outcome"], "timed_out");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("Fixing it (provider)."), "{text}");
    assert!(
        std::fs::read_to_string(elsewhere.join("HANDOFF.prev.md"))
            .unwrap()
            .contains("Fixing the importer.")
    );
    let exclude_again = std::fs::read_to_string(elsewhere.join(".git/info/exclude")).unwrap();
    assert_eq!(exclude_again, exclude, "the names are added once");

    let handoffs = user.handoffs();
    assert_eq!(handoffs.len(), 2, "{handoffs:#?}");
    assert_eq!(handoffs[0]["outcome"], "delivered");
    assert_eq!(handoffs[0]["session"], json!(id));
    assert_eq!(handoffs[0]["details"]["destination"], "folder");
    assert_eq!(
        handoffs[1]["details"]["compact_by"],
        "provider anthropic (test-model)"
    );
    assert_eq!(
        handoffs[1]["details"]["compact_attempts"][0]["outcome"],
        "timed_out"
    );
}

/// A real Codex session: the exit code comes from Codex's exec metadata, and the compact from
/// the real `codex exec`.
#[test]
fn codex_session_brief_and_compact_from_codex_exec() {
    let user = User::new();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("handoff compact")
            .reply_text(COMPACT)
            .for_api(Api::Responses),
        Rule::on_user_text("Fix the importer")
            .tool_call(ToolCall::new(
                "exec_command",
                json!({"cmd": "echo importing; exit 3"}),
            ))
            .for_api(Api::Responses)
            .once(),
        Rule::on_any_tool_result().reply_text("The importer exits 3."),
    ]);
    let project = user.home.project("shop").unwrap();
    let codex = Codex::new(&user.home, &endpoint.openai_base_url()).unwrap();
    let thread = codex.session(&project, None, &[GOAL]).unwrap();

    let out = user
        .command(&["handoff", "brief", &thread, "--json"])
        .env("CODEX_HOME", codex.codex_home())
        .output()
        .unwrap();
    let brief = json_of(&out);
    assert_eq!(brief["source"]["family"], "codex");
    assert_eq!(brief["contract"]["opening_goal"], GOAL);
    assert_eq!(
        brief["commands"],
        json!([{"command": "echo importing; exit 3", "outcome": "failed", "exit_code": 3, "signal": "exit_code"}])
    );

    let target = user.home.path().join("target-dir");
    let out = user
        .command(&["handoff", &thread, target.to_str().unwrap(), "--json"])
        .env("CODEX_HOME", codex.codex_home())
        .env(
            "CROSS_AGENT_CODEX_BIN",
            agent_binary(AgentKind::Codex).unwrap(),
        )
        .env("SCRIPTED_KEY", "test-key")
        .output()
        .unwrap();
    let done = json_of_success(&out);
    assert_eq!(done["compact_by"], "codex exec", "{done:#}");
    assert_eq!(done["ignored_in"], Value::Null, "not a git repository");
    let text = std::fs::read_to_string(target.join("HANDOFF.md")).unwrap();
    assert!(text.contains("Fixing the importer."), "{text}");
    assert!(
        text.contains("`echo importing; exit 3` — exit 3 (exit code recorded)"),
        "{text}"
    );
}

/// Cursor, from a store written per the "Cursor Agent Database Format Guide": the exit code
/// Cursor writes in the shell result's text decides.
#[test]
fn cursor_session_brief_reads_the_exit_code_from_the_shell_result() {
    let user = User::new();
    let project = user.home.project("cursor-work").unwrap();
    cursor_session(
        user.home.path(),
        "e4e90b7bcae743c9a1a1a045a49e1b1d",
        "cur-1",
        &project,
        &[
            json!({"role": "user", "content": format!("<user_info>linux</user_info>\n<user_query>{GOAL}</user_query>")}),
            json!({"id": "1", "role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": "t1", "toolName": "run_terminal_cmd", "args": {"command": "cargo test"}},
                {"type": "tool-call", "toolCallId": "t2", "toolName": "edit_file", "args": {"target_file": project.join("src/import.rs")}}
            ]}),
            json!({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "t1", "toolName": "run_terminal_cmd", "result": "error: could not compile\nExit code: 0"},
                {"type": "tool-result", "toolCallId": "t2", "toolName": "edit_file", "result": "ok"}
            ]}),
        ],
    )
    .unwrap();
    let out = user
        .command(&["handoff", "brief", "cur-1", "--json"])
        .output()
        .unwrap();
    let brief = json_of(&out);
    assert_eq!(brief["source"]["family"], "cursor");
    assert_eq!(brief["contract"]["opening_goal"], GOAL);
    // "error:" in the output does not overrule the recorded exit code 0.
    assert_eq!(
        brief["commands"],
        json!([{"command": "cargo test", "outcome": "succeeded", "exit_code": 0, "signal": "exit_code"}])
    );
    assert_eq!(
        brief["files"],
        json!([{"path": "src/import.rs", "edited": true, "tools": ["edit_file"]}])
    );
}

/// Antigravity, from steps in the layout third-party reports show (no public document fixes
/// it): the step's `exit_code` decides; a command step without one is judged by its output,
/// and the brief says so; the working directory is labelled as derived.
#[test]
fn antigravity_session_brief_labels_the_derived_cwd_and_the_output_judgement() {
    let user = User::new();
    antigravity_session(
        user.home.path(),
        "agy-1",
        &[
            json!({"step_index": 0, "source": "USER_EXPLICIT", "type": "USER_INPUT", "content": GOAL}),
            json!({"step_index": 1, "source": "MODEL", "type": "RUN_COMMAND", "status": "DONE",
                   "content": "Exit code: 1", "exit_code": 1, "CommandLine": "make check", "Cwd": "/home/u/importer"}),
            json!({"step_index": 2, "source": "MODEL", "type": "RUN_COMMAND", "status": "DONE",
                   "content": "error: no rule to make target", "CommandLine": "make lint", "Cwd": "/home/u/importer"}),
        ],
        "",
    )
    .unwrap();
    let out = user
        .command(&["handoff", "brief", "agy-1"])
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Working directory: `/home/u/importer` (derived from the paths the session worked on; the session did not state it)."),
        "{text}"
    );
    assert!(
        text.contains("`make check` — exit 1 (exit code recorded)"),
        "{text}"
    );
    assert!(
        text.contains("Not asked for: a handoff asks the session's own CLI"),
        "{text}"
    );
    assert!(
        text.contains("`make lint` — failed (no exit code; judged by reading the output)"),
        "{text}"
    );
    // The derived directory is not here: the handoff refuses rather than create it.
    let out = user
        .command(&["handoff", "agy-1", "--to", "cli:claude"])
        .output()
        .unwrap();
    let err = stderr_of_exit_1(&out);
    assert!(
        err.contains("/home/u/importer, which is not a directory here"),
        "{err}"
    );
    assert!(!Path::new("/home/u/importer").exists());
    let refused = user.handoffs().remove(0);
    assert_eq!(refused["outcome"], "refused");
    assert_eq!(refused["details"]["destination"], "cli:claude");
}

/// A session id no store has is an error naming it.
#[test]
fn unknown_session_is_named() {
    let user = User::new();
    let out = user
        .command(&["handoff", "brief", "no-such-session"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no session \"no-such-session\""), "{err}");
}

/// A Cursor session in `project`, whose goal is `goal`; returns its id.
pub(super) fn small_cursor_session(user: &User, project: &Path, goal: &str) -> String {
    cursor_session(
        user.home.path(),
        "ws",
        "cur-small",
        project,
        &[json!({"role": "user", "content": format!("<user_query>{goal}</user_query>")})],
    )
    .unwrap();
    "cur-small".to_owned()
}

fn write_receipt(file: &Path, receipt: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let text = text.replace(
        "<!-- cross-agent receipt: begin -->\n",
        &format!("<!-- cross-agent receipt: begin -->\n{receipt}\n"),
    );
    std::fs::write(file, text).unwrap();
}

/// The receipt check names the anchor a receipt leaves out, passes a complete one, and reports
/// nothing for a contract without anchors; each check is a decision line.
#[test]
fn receipt_check_reports_missing_anchors_only() {
    let user = User::new();
    let project = user.home.project("r").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    let out = user
        .command(&["handoff", &id, project.to_str().unwrap()])
        .output()
        .unwrap();
    assert_success(&out);
    let file = project.join("HANDOFF.md");
    // No CLI (Cursor's is not installed) and no provider: the brief ships without a compact.
    let brief = std::fs::read_to_string(&file).unwrap();
    assert!(
        brief.contains("No compact: neither the session's own CLI nor a configured provider"),
        "{brief}"
    );

    let check = |user: &User| {
        user.command(&["handoff", "receipt", project.to_str().unwrap(), "--json"])
            .output()
            .unwrap()
    };
    let out = check(&user);
    assert_eq!(json_of(&out)["verdict"], "no_receipt");

    write_receipt(
        &file,
        "The importer (src/import.rs) needs a --dry-run flag.\nAlready true: it runs.\nFirst step: read it.",
    );
    let out = check(&user);
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    assert_eq!(report["verdict"], "missing");
    assert_eq!(
        report["missing"],
        json!([{"kind": "path", "text": "Cargo.lock"}])
    );
    let text = user
        .command(&["handoff", "receipt", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("never mentions 1 of the contract's 3 anchors:\n  Cargo.lock"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );

    write_receipt(&file, "And Cargo.lock stays untouched.");
    let out = check(&user);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json_of(&out)["verdict"], "complete");

    // A contract without anchors: nothing to report, not a pass.
    let plain = user.home.project("plain").unwrap();
    cursor_session(
        user.home.path(),
        "ws",
        "cur-plain",
        &plain,
        &[json!({"role": "user", "content": "<user_query>tidy things up please</user_query>"})],
    )
    .unwrap();
    let out = user
        .command(&["handoff", "cur-plain", plain.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    write_receipt(&plain.join("HANDOFF.md"), "I will tidy up.");
    let out = user
        .command(&["handoff", "receipt", plain.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report = json_of(&out);
    assert_eq!(report["verdict"], "no_anchors");
    assert_eq!(report["anchors"], json!([]));
    assert_eq!(report["missing"], json!([]));

    let checks: Vec<String> = user
        .decisions()
        .iter()
        .filter(|d| d["kind"] == "receipt_check")
        .map(|d| d["outcome"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        checks,
        ["no_receipt", "missing", "missing", "complete", "no_anchors"]
    );
}

/// Destinations: an editor found in a per-user folder though PATH is minimal, and the CLI
/// agents with their login state — the real `codex login status` (signed out in a fresh
/// home), nothing claimed for Claude.
#[test]
fn destinations_list_editors_and_cli_agents_with_login_state() {
    let user = User::new();
    let project = user.home.project("d").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    let local_bin = user.home.path().join(".local/bin");
    std::fs::create_dir_all(&local_bin).unwrap();
    let editor = local_bin.join("cursor");
    std::fs::write(&editor, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = user
        .command(&["handoff", "destinations", &id, "--json"])
        .env("PATH", "/nonexistent")
        .env("CROSS_AGENT_CLAUDE_BIN", agent_standin_bin().unwrap())
        .env(
            "CROSS_AGENT_CODEX_BIN",
            agent_binary(AgentKind::Codex).unwrap(),
        )
        .env("CODEX_HOME", user.home.codex_home())
        .output()
        .unwrap();
    let all = json_of_success(&out);
    let by_id = |id: &str| {
        all.as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no {id} in {all:#}"))
    };
    assert_eq!(by_id("app:Cursor")["location"], json!(editor));
    assert_eq!(
        by_id("cli:claude")["login"],
        json!({"state": "not_checked"})
    );
    let codex = by_id("cli:codex");
    assert_eq!(codex["login"]["state"], "signed_out", "{codex:#}");
    assert_eq!(codex["login"]["checked_with"], "codex login status");
}

/// The real `codex login status` is remembered (it is a Node start, ~270 ms) and said to be,
/// with its age, until something that could change it changes: a real `codex login
/// --with-api-key` writes `auth.json`, so the next listing asks again and sees the login; a
/// real `codex logout` removes it, and the next listing sees that.
#[test]
fn a_remembered_login_check_is_asked_again_after_a_login_and_a_logout() {
    let user = User::new();
    let project = user.home.project("d").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    let codex_bin = agent_binary(AgentKind::Codex).unwrap();
    let codex_home = user.home.codex_home();
    let destinations = || {
        let out = user
            .command(&["handoff", "destinations", &id, "--json"])
            .env("PATH", "/nonexistent")
            .env("CROSS_AGENT_CODEX_BIN", &codex_bin)
            .env("CODEX_HOME", &codex_home)
            .env_remove("CODEX_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let all = json_of_success(&out);
        all.as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == "cli:codex")
            .cloned()
            .unwrap_or_else(|| panic!("no cli:codex in {all:#}"))
    };
    let codex = |args: &[&str], stdin: &str| {
        let mut command = Command::new(&codex_bin);
        command
            .args(args)
            .env("HOME", user.home.path())
            .env("CODEX_HOME", &codex_home)
            .env_remove("CODEX_API_KEY")
            .env_remove("OPENAI_API_KEY");
        // The workspace's run-with-deadline feeds stdin and reaps the process group.
        let out =
            cross_agent_process::run::run(command, Some(stdin), Duration::from_secs(120)).unwrap();
        assert!(
            out.status.success(),
            "codex {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };

    let first = destinations();
    assert_eq!(first["login"]["state"], "signed_out", "{first:#}");
    assert_eq!(first.get("login_cached"), None, "{first:#}");
    let second = destinations();
    assert_eq!(second["login"], first["login"], "{second:#}");
    assert!(
        second["login_cached"]["age_seconds"].is_u64(),
        "the second listing answers from the cache and says so: {second:#}"
    );

    codex(&["login", "--with-api-key"], "sk-test-not-a-real-key\n");
    let after_login = destinations();
    assert_eq!(
        after_login["login"]["state"], "signed_in",
        "{after_login:#}"
    );
    assert_eq!(after_login.get("login_cached"), None, "{after_login:#}");
    assert!(destinations()["login_cached"].is_object());

    codex(&["logout"], "");
    let after_logout = destinations();
    assert_eq!(
        after_logout["login"]["state"], "signed_out",
        "{after_logout:#}"
    );
    assert_eq!(after_logout.get("login_cached"), None, "{after_logout:#}");
    // The cache file holds states and file stamps, never the key.
    let cache = std::fs::read_to_string(user.state.join("cache/logins.json")).unwrap();
    assert!(!cache.contains("sk-test"), "{cache}");
}

fn is_running(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Parent and state letter of a process, from `/proc/<pid>/stat`.
fn parent_and_state(pid: u64) -> Option<(u64, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((parent, state))
}

/// Whether the launcher in the terminal `terminal` sits at its `read`: a shell under the
/// terminal, asleep, with no child (while the agent runs, the shell waits on it as its child;
/// an exited agent not yet reaped still counts as one).
fn waits_for_enter(terminal: u64) -> bool {
    let processes: Vec<(u64, u64, char)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u64>().ok())
        .filter_map(|pid| parent_and_state(pid).map(|(parent, state)| (pid, parent, state)))
        .collect();
    let under_terminal = |mut pid: u64| {
        while let Some(&(_, parent, _)) = processes.iter().find(|(p, _, _)| *p == pid) {
            if parent == terminal {
                return true;
            }
            pid = parent;
        }
        false
    };
    processes.iter().any(|&(pid, _, state)| {
        state == 'S'
            && under_terminal(pid)
            && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sh")
            && !processes.iter().any(|&(_, parent, _)| parent == pid)
    })
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The launcher, opened in a real terminal (the first found: x-terminal-emulator, here xterm)
/// under Xvfb, starts the agent in the workspace with the multi-line prompt as its one argument
/// — no shell quoting on the way — and closes when the agent succeeds; when it fails, the
/// window stays open.
#[test]
fn cli_handoff_launches_the_agent_in_a_terminal() {
    let user = User::new();
    let project = user.home.project("launch").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    // testkit's display picking, shared with the desktop tests: `-displayfd` servers started
    // at once were seen to report the same display.
    let xvfb = Xvfb::start().expect("Xvfb (scripts/install-debian-packages installs it)");
    let standin = agent_standin_bin().unwrap();
    let record = user.home.path().join("standin.json");

    let launch = |exit: &str| {
        let _ = std::fs::remove_file(&record);
        let out = user
            .command(&["handoff", &id, "--to", "cli:claude", "--json"])
            .env("DISPLAY", xvfb.display())
            .env("CROSS_AGENT_CLAUDE_BIN", &standin)
            .env("STANDIN_RECORD", &record)
            .env("STANDIN_EXIT", exit)
            .output()
            .unwrap();
        let done = json_of_success(&out);
        wait_for(
            "the stand-in agent's record",
            Duration::from_secs(120),
            || record.exists(),
        );
        let seen: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
        (done, seen)
    };

    let (done, seen) = launch("0");
    assert_eq!(done["login"], json!({"state": "not_checked"}));
    assert_eq!(done["terminal"]["terminal"], "x-terminal-emulator");
    let prompt = done["prompt"].as_str().unwrap();
    assert!(prompt.contains("\n\n"), "a multi-line prompt: {prompt}");
    assert_eq!(seen["args"], json!([prompt]));
    assert_eq!(seen["cwd"], json!(project));
    assert!(seen["handoff_md"].as_str().unwrap().contains("## Contract"));
    let pid = done["terminal"]["pid"].as_u64().unwrap();
    wait_for(
        "the terminal to close after a clean exit",
        Duration::from_secs(120),
        || !is_running(pid),
    );

    let (done, _) = launch("3");
    let pid = done["terminal"]["pid"].as_u64().unwrap();
    // Not a pause but the state itself: the launcher's shell asleep with no child — the agent
    // gone, the shell at its `read`, waiting for Enter. After a clean exit it never gets there.
    wait_for(
        "the launcher to wait for Enter after the agent failed",
        Duration::from_secs(120),
        || waits_for_enter(pid),
    );
    let held = is_running(pid);
    // The test started this terminal: it ends it by its pid.
    let _ = Command::new("kill").arg(pid.to_string()).status();
    assert!(held, "a failed agent's window stays open");
}

/// Without a display the launch fails naming the script, which is there to run by hand; the
/// brief is written all the same, and the decision line says it failed.
#[test]
fn cli_handoff_without_a_display_names_the_script() {
    let user = User::new();
    let project = user.home.project("headless").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    let out = user
        .command(&["handoff", &id, "--to", "cli:claude"])
        .env("CROSS_AGENT_CLAUDE_BIN", agent_standin_bin().unwrap())
        .output()
        .unwrap();
    let err = stderr_of_exit_1(&out);
    let script = err
        .split("run the launcher by hand: sh ")
        .nth(1)
        .unwrap_or_else(|| panic!("{err}"))
        .trim();
    assert!(Path::new(script).is_file(), "{script}");
    assert!(project.join("HANDOFF.md").is_file());
    let decision = user.handoffs().remove(0);
    assert_eq!(decision["outcome"], "failed");
    assert_eq!(decision["details"]["destination"], "cli:claude");
}

/// `chat:ID`: the brief goes to the receiving chat's workspace and the prompt reaches that real
/// Claude Code session through the daemon (the headless route, against the scripted endpoint).
#[test]
fn chat_handoff_delivers_the_prompt_through_the_bridge() {
    let user = User::new();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("You are taking over work").reply_text("Reading HANDOFF.md now."),
        Rule::on_user_text("hello receiver").reply_text("Ready."),
    ]);
    let receiving = user.home.project("receiver").unwrap();
    let claude = Claude::new(&user.home, &endpoint.anthropic_base_url()).unwrap();
    let chat = claude
        .turn(&receiving, "hello receiver")
        .run()
        .unwrap()
        .expect_success()
        .unwrap()
        .session_id()
        .unwrap()
        .to_owned();
    let source_project = user.home.project("source").unwrap();
    let id = small_cursor_session(&user, &source_project, GOAL);

    let with_env = |command: &mut Command| {
        with_claude(command, &endpoint);
        command.env(
            "CROSS_AGENT_CHILD_ENV",
            "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,\
             DISABLE_AUTOUPDATER,CLAUDE_CODE_MAX_RETRIES",
        );
    };
    let mut command = user.command(&["handoff", &id, "--to", &format!("chat:{chat}"), "--json"]);
    with_env(&mut command);
    let out = command.output().unwrap();
    let stop = || {
        let mut command = user.command(&["daemon", "stop"]);
        with_env(&mut command);
        let _ = command.output();
    };
    if !out.status.success() {
        stop();
        panic!("{}", String::from_utf8_lossy(&out.stderr));
    }
    let done = json_of(&out);
    assert_eq!(done["send"]["outcome"], "accepted", "{done:#}");
    let root = receiving.canonicalize().unwrap();
    assert_eq!(done["file"], json!(root.join("HANDOFF.md")));
    let deadline = Instant::now() + Duration::from_secs(90);
    let reached = loop {
        let seen = endpoint.model_requests().iter().any(|r| {
            serde_json::to_string(&r.messages)
                .unwrap()
                .contains("You are taking over work")
        });
        if seen || Instant::now() > deadline {
            break seen;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    stop();
    assert!(reached, "the prompt never reached the chat's model");
}

/// A family CLI that is not installed (here Cursor's) goes straight to the providers, in
/// order: one that cannot be reached, then OpenAI Responses answering.
#[test]
fn missing_cli_falls_back_through_the_provider_list() {
    let user = User::new();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([Rule::on_user_text("handoff compact")
        .reply_text(COMPACT)
        .for_api(Api::Responses)
        .include_side_requests()]);
    let project = user.home.project("p").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    let out = user
        .command(&["handoff", &id, project.to_str().unwrap(), "--json"])
        .env(
            "CROSS_AGENT_HANDOFF_PROVIDERS",
            format!(
                "anthropic http://127.0.0.1:9 PROVIDER_KEY m1; openai {} PROVIDER_KEY m2",
                endpoint.openai_base_url()
            ),
        )
        .env("PROVIDER_KEY", "provider-key")
        .output()
        .unwrap();
    let done = json_of_success(&out);
    let attempts: Vec<(String, String)> = done["compact_attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["by"].as_str().unwrap().to_owned(),
                a["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            ("cursor-agent -p".to_owned(), "unavailable".to_owned()),
            ("provider anthropic (m1)".to_owned(), "failed".to_owned()),
            ("provider openai (m2)".to_owned(), "answered".to_owned()),
        ]
    );
    let request = endpoint.model_requests().pop().unwrap();
    assert_eq!(
        request.headers.get("authorization").map(String::as_str),
        Some("Bearer provider-key")
    );
    assert!(
        std::fs::read_to_string(project.join("HANDOFF.md"))
            .unwrap()
            .contains("Fixing the importer.")
    );
}

/// A destination that is not one, or not installed, is refused naming it, before anything is
/// written.
#[test]
fn bad_destinations_are_refused_before_anything_is_written() {
    let user = User::new();
    let project = user.home.project("bad").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    for (dest, says) in [
        (
            "cli:nope",
            "the CLI agents are claude, codex, cursor-agent, agy",
        ),
        ("cli:codex", "/nonexistent/codex is not installed"),
        ("app:Windsurf", "that editor is not installed"),
        (
            "chat:no-such-chat",
            "no active Claude, Codex or Grok session has that id",
        ),
        ("elsewhere", "expected chat:ID, app:NAME or cli:NAME"),
    ] {
        let out = user
            .command(&["handoff", &id, "--to", dest])
            .env("PATH", "/nonexistent")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{dest}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{dest:?} is not a destination: {says}")),
            "{err}"
        );
    }
    assert!(!project.join("HANDOFF.md").exists());
    let refused = user
        .handoffs()
        .iter()
        .filter(|d| d["outcome"] == "refused")
        .count();
    assert_eq!(refused, 5);
}
