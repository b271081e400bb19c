//! Records the fixtures in `crates/testkit/fixtures/`: real transcripts the pinned Claude Code and
//! Codex CLIs write when they answer the scripted model endpoint.
//!
//! `cargo run -p cross-agent-testkit --bin record-fixtures` drives each CLI through a handful of
//! small sessions (a plain exchange, a shell command that succeeds, one that exits 3, a resumed
//! session, and — Claude only — a session created with an explicit id), then copies the
//! transcripts they wrote, byte for byte, into `fixtures/claude/` and `fixtures/codex/` in the
//! stores' own layout, and writes `fixtures/README.md` describing every file.
//!
//! Everything runs under the fixed folder `/tmp/cross-agent-fixtures` (wiped first) and every
//! session works in `/tmp/cross-agent-fixtures/work/<scenario>`, so the `cwd` the transcripts
//! record is the same on every machine and every run; only ids and timestamps change.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, Codex, agent_version};
use cross_agent_testkit::endpoint::{Api, ModelEndpoint, Rule, ToolCall};
use serde_json::json;

/// The fixed root every recorded session runs under (see the module docs).
const FIXED_ROOT: &str = "/tmp/cross-agent-fixtures";

/// The id the explicit-id Claude session is created with (`--session-id`).
const EXPLICIT_SESSION_ID: &str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

/// One recorded session: what ran, and where its transcript landed.
struct Recorded {
    agent: AgentKind,
    scenario: &'static Scenario,
    /// Claude's session id or Codex's thread id.
    id: String,
    /// The transcript's path relative to the agent's store root (`~/.claude`, `CODEX_HOME`).
    relative: PathBuf,
}

/// A session shape the fixtures cover.
struct Scenario {
    /// Also the name of the folder the session works in.
    name: &'static str,
    what: &'static str,
    /// The prompts, in order; a second one is sent with resume.
    prompts: &'static [&'static str],
    /// What the scripted model does for Claude Code, in words, for the README.
    claude_script: &'static str,
    /// The same for Codex, whose shell tool has another name and arguments.
    codex_script: &'static str,
}

const PLAIN_SCRIPT: &str =
    "user text `Say hello to the fixture recorder` → text `Hello from the scripted model.`";

const RESUMED_SCRIPT: &str = "user text `Remember the word pineapple` → text `Noted: pineapple.`; \
     user text `Which word did I ask you to remember` → text `You asked me to remember pineapple.`";

const PLAIN: Scenario = Scenario {
    name: "plain",
    what: "a plain exchange: one prompt, one text answer",
    prompts: &["Say hello to the fixture recorder."],
    claude_script: PLAIN_SCRIPT,
    codex_script: PLAIN_SCRIPT,
};

const TOOL_OK: Scenario = Scenario {
    name: "tool-ok",
    what: "a shell command that succeeds (exit 0), then an answer",
    prompts: &["Run the listing check."],
    claude_script: "user text `Run the listing check` → `Bash` \
                    `{\"command\": \"echo listing-ok && ls\", \"description\": \"List the folder\"}`; \
                    tool result containing `listing-ok` → text `The listing check passed.`",
    codex_script: "user text `Run the listing check` → `exec_command` \
                   `{\"cmd\": \"echo listing-ok && ls\"}`; \
                   tool result containing `listing-ok` → text `The listing check passed.`",
};

const TOOL_FAIL: Scenario = Scenario {
    name: "tool-fail",
    what: "a shell command that fails with exit code 3, then an answer",
    prompts: &["Run the failing check."],
    claude_script: "user text `Run the failing check` → `Bash` \
                    `{\"command\": \"echo failing-check; exit 3\", \"description\": \"Run the check\"}`; \
                    tool result containing `failing-check` → text `The failing check exited with code 3.`",
    codex_script: "user text `Run the failing check` → `exec_command` \
                   `{\"cmd\": \"echo failing-check; exit 3\"}`; \
                   tool result containing `failing-check` → text `The failing check exited with code 3.`",
};

const RESUMED: Scenario = Scenario {
    name: "resumed",
    what: "two turns of one session: the second resumes the first",
    prompts: &[
        "Remember the word pineapple.",
        "Which word did I ask you to remember?",
    ],
    claude_script: RESUMED_SCRIPT,
    codex_script: RESUMED_SCRIPT,
};

const EXPLICIT_ID: Scenario = Scenario {
    name: "explicit-id",
    what: "a session created with an explicit id (`--session-id 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9`)",
    prompts: &["Start the session with the given id."],
    claude_script: "user text `Start the session with the given id` → text `Started with the given id.`",
    codex_script: "(not recorded: Codex cannot create a thread with a given id)",
};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("record-fixtures: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let root = Path::new(FIXED_ROOT);
    let home = AgentHome::at_fixed_path(root)?;
    let endpoint = ModelEndpoint::start()?;
    endpoint.script(rules());

    let claude_version = agent_version(AgentKind::Claude, &home)?;
    let codex_version = agent_version(AgentKind::Codex, &home)?;
    eprintln!("record-fixtures: {claude_version} and {codex_version} under {FIXED_ROOT}");

    let mut recorded = record_claude(&home, &endpoint, root)?;
    recorded.extend(record_codex(&home, &endpoint, root)?);

    let fallbacks: Vec<_> = endpoint
        .model_requests()
        .into_iter()
        .filter(|request| request.answered_by.as_deref() == Some("fallback"))
        .collect();
    if !fallbacks.is_empty() {
        bail!(
            "{} model request(s) matched no scripted rule; the fixtures would not be what they claim",
            fallbacks.len()
        );
    }

    for dir in ["claude", "codex"] {
        let dir = fixtures.join(dir);
        if dir.exists() {
            fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
    }
    let mut sizes = Vec::new();
    for session in &recorded {
        let (store, store_dir) = match session.agent {
            AgentKind::Claude => (home.claude_config(), "claude"),
            AgentKind::Codex => (home.codex_home(), "codex"),
        };
        let from = store.join(&session.relative);
        let to = fixtures.join(store_dir).join(&session.relative);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        let bytes = fs::copy(&from, &to)
            .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        sizes.push(bytes);
    }
    let readme = readme(&recorded, &sizes, &claude_version, &codex_version);
    let readme_path = fixtures.join("README.md");
    fs::write(&readme_path, readme)
        .with_context(|| format!("writing {}", readme_path.display()))?;

    for (session, size) in recorded.iter().zip(&sizes) {
        eprintln!(
            "record-fixtures: {:<6} {:<11} {:>7} bytes  {}",
            agent_name(session.agent),
            session.scenario.name,
            size,
            session.relative.display()
        );
    }
    eprintln!(
        "record-fixtures: {} files, {} bytes in {}",
        sizes.len(),
        sizes.iter().sum::<u64>(),
        fixtures.display()
    );
    Ok(())
}

/// The script of every scenario. Text rules serve both CLIs; tool calls are named per API.
fn rules() -> Vec<Rule> {
    let listing = "echo listing-ok && ls";
    let failing = "echo failing-check; exit 3";
    vec![
        Rule::on_user_text("Say hello to the fixture recorder")
            .reply_text("Hello from the scripted model."),
        Rule::on_user_text("Run the listing check")
            .tool_call(ToolCall::new(
                "Bash",
                json!({ "command": listing, "description": "List the folder" }),
            ))
            .for_api(Api::Anthropic),
        Rule::on_user_text("Run the listing check")
            .tool_call(ToolCall::new("exec_command", json!({ "cmd": listing })))
            .for_api(Api::Responses),
        Rule::on_tool_result("listing-ok").reply_text("The listing check passed."),
        Rule::on_user_text("Run the failing check")
            .tool_call(ToolCall::new(
                "Bash",
                json!({ "command": failing, "description": "Run the check" }),
            ))
            .for_api(Api::Anthropic),
        Rule::on_user_text("Run the failing check")
            .tool_call(ToolCall::new("exec_command", json!({ "cmd": failing })))
            .for_api(Api::Responses),
        Rule::on_tool_result("failing-check").reply_text("The failing check exited with code 3."),
        Rule::on_user_text("Remember the word pineapple").reply_text("Noted: pineapple."),
        Rule::on_user_text("Which word did I ask you to remember")
            .reply_text("You asked me to remember pineapple."),
        Rule::on_user_text("Start the session with the given id")
            .reply_text("Started with the given id."),
    ]
}

/// `/tmp/cross-agent-fixtures/work/<scenario>`: outside the HOME, whose folder name is random.
/// It holds one file, `notes.txt`, so the listing command has something to list.
fn workdir(root: &Path, scenario: &Scenario) -> Result<PathBuf> {
    let dir = root.join("work").join(scenario.name);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let notes = dir.join("notes.txt");
    fs::write(&notes, "fixture notes\n").with_context(|| format!("writing {}", notes.display()))?;
    Ok(dir)
}

fn record_claude(home: &AgentHome, endpoint: &ModelEndpoint, root: &Path) -> Result<Vec<Recorded>> {
    let claude = Claude::new(home, &endpoint.anthropic_base_url())?;
    let mut out = Vec::new();
    for scenario in [&PLAIN, &TOOL_OK, &TOOL_FAIL, &RESUMED, &EXPLICIT_ID] {
        let cwd = workdir(root, scenario)?;
        let mut session_id: Option<String> = None;
        for prompt in scenario.prompts {
            let mut turn = claude.turn(&cwd, prompt).allow_tool("Bash");
            if let Some(id) = &session_id {
                turn = turn.resume(id);
            } else if scenario.name == EXPLICIT_ID.name {
                turn = turn.session_id(EXPLICIT_SESSION_ID);
            }
            let run = turn
                .run()?
                .expect_success()
                .with_context(|| format!("claude, scenario {}", scenario.name))?;
            let id = run
                .session_id()
                .ok_or_else(|| anyhow!("claude printed no session id ({})", scenario.name))?
                .to_owned();
            session_id = Some(id);
        }
        let id = session_id.ok_or_else(|| anyhow!("scenario {} has no prompt", scenario.name))?;
        let path = claude.transcript_path(&cwd, &id);
        let relative = path
            .strip_prefix(home.claude_config())
            .with_context(|| format!("{} is outside ~/.claude", path.display()))?
            .to_path_buf();
        out.push(Recorded {
            agent: AgentKind::Claude,
            scenario,
            id,
            relative,
        });
    }
    Ok(out)
}

fn record_codex(home: &AgentHome, endpoint: &ModelEndpoint, root: &Path) -> Result<Vec<Recorded>> {
    let codex = Codex::new(home, &endpoint.openai_base_url())?;
    let mut out = Vec::new();
    // Codex has no flag that creates a thread with a given id, so there is no explicit-id
    // rollout (the README says so).
    for scenario in [&PLAIN, &TOOL_OK, &TOOL_FAIL, &RESUMED] {
        let cwd = workdir(root, scenario)?;
        let mut thread_id: Option<String> = None;
        for prompt in scenario.prompts {
            let mut turn = codex.turn(&cwd, prompt).timeout(Duration::from_secs(120));
            if let Some(id) = &thread_id {
                turn = turn.resume(id);
            }
            let run = turn
                .run()?
                .expect_success()
                .with_context(|| format!("codex, scenario {}", scenario.name))?;
            let id = run
                .thread_id()
                .ok_or_else(|| anyhow!("codex printed no thread id ({})", scenario.name))?
                .to_owned();
            thread_id = Some(id);
        }
        let id = thread_id.ok_or_else(|| anyhow!("scenario {} has no prompt", scenario.name))?;
        let path = codex.rollout_of(&id)?;
        let relative = path
            .strip_prefix(home.codex_home())
            .with_context(|| format!("{} is outside CODEX_HOME", path.display()))?
            .to_path_buf();
        out.push(Recorded {
            agent: AgentKind::Codex,
            scenario,
            id,
            relative,
        });
    }
    let rollouts = codex.rollouts()?;
    if rollouts.len() != out.len() {
        bail!(
            "codex wrote {} rollouts for {} sessions: {rollouts:?}",
            rollouts.len(),
            out.len()
        );
    }
    Ok(out)
}

fn agent_name(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Claude => "claude",
        AgentKind::Codex => "codex",
    }
}

fn readme(recorded: &[Recorded], sizes: &[u64], claude: &str, codex: &str) -> String {
    let mut text = String::new();
    let total: u64 = sizes.iter().sum();
    let _ = write!(
        text,
        "# Recorded fixtures\n\
         \n\
         Real transcripts written by the pinned agent CLIs through the test bench: each CLI ran\n\
         offline against the scripted model endpoint (`cross_agent_testkit::endpoint`) in a\n\
         temporary HOME under `{FIXED_ROOT}`, and every file here is the transcript it wrote,\n\
         copied byte for byte (no hand edits). Ids and timestamps differ on every recording;\n\
         the working folders do not: scenario `<name>` ran in `{FIXED_ROOT}/work/<name>`,\n\
         which holds one file, `notes.txt`. The HOME itself is a fresh `{FIXED_ROOT}/home-<random>`\n\
         (`AgentHome::at_fixed_path`), and a few records name paths under it (Claude's memory\n\
         folder, Codex's skills folder and writable roots).\n\
         \n\
         Regenerate (this file included) with:\n\
         \n\
         ```bash\n\
         scripts/install-agents\n\
         cargo run -p cross-agent-testkit --bin record-fixtures\n\
         ```\n\
         \n\
         - Claude Code: `{claude}` (`claude -p <prompt> --output-format json --allowedTools Bash`,\n\
         \x20 `--resume <id>` for a second turn, `--session-id <uuid>` for an explicit id).\n\
         - Codex: `{codex}` (`codex exec --json --skip-git-repo-check <prompt>`, `codex exec\n\
         \x20 resume <thread>` for a second turn; `config.toml` sets `approval_policy = \"never\"`,\n\
         \x20 `sandbox_mode = \"workspace-write\"` and the scripted provider).\n\
         \n\
         The folders keep each store's own layout, so a reader can be pointed at them as they\n\
         are: `claude/` is a Claude config folder (`projects/<cwd slug>/<session>.jsonl`) and\n\
         `codex/` a `CODEX_HOME` (`sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`).\n\
         \n\
         Not recorded, because the CLIs cannot produce them this way:\n\
         \n\
         - a Codex thread created with an explicit id: Codex has no flag like Claude's\n\
         \x20 `--session-id` (a thread's id is always generated);\n\
         - a Codex `session_index.jsonl`: it is written when a person renames a thread, which\n\
         \x20 `codex exec` cannot do.\n\
         \n\
         ## Files ({} files, {total} bytes)\n",
        recorded.len()
    );
    for (session, size) in recorded.iter().zip(sizes) {
        let (store_dir, id_kind, script) = match session.agent {
            AgentKind::Claude => ("claude", "Session", session.scenario.claude_script),
            AgentKind::Codex => ("codex", "Thread", session.scenario.codex_script),
        };
        let prompts = session
            .scenario
            .prompts
            .iter()
            .map(|prompt| format!("`{prompt}`"))
            .collect::<Vec<_>>()
            .join(", then ");
        let _ = write!(
            text,
            "\n### {} `{}`\n\
             \n\
             - File: `{store_dir}/{}` ({size} bytes)\n\
             - What: {}\n\
             - {id_kind} id `{}`, cwd `{FIXED_ROOT}/work/{}`\n\
             - Prompts: {prompts}\n\
             - Scripted model: {}\n",
            agent_name(session.agent),
            session.scenario.name,
            session.relative.display(),
            session.scenario.what,
            session.id,
            session.scenario.name,
            script,
        );
    }
    text
}
