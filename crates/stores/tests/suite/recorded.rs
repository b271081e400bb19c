//! The readers on the recorded real fixtures (`crates/testkit/fixtures/`, transcripts Claude
//! Code 2.1.332 and Codex 0.171.0 wrote through the test bench; see its README): each lists as
//! one session with the right id, cwd and generated title, none working, and the turns reader
//! finds the prompts, the tool calls and results with their exit codes, the answers, and both
//! turns of a resumed session.
//!
//! The fixture folders keep each store's layout, so the readers run on them in place (they only
//! ever read).

use std::fs;
use std::path::{Path, PathBuf};

use cross_agent_stores::scan::{ScanOptions, list_sessions};
use cross_agent_stores::turns::{Role, Transcript, Turn, TurnItem, read_turns};
use cross_agent_stores::{Agent, Session, StoreRoots, Warnings};
use pretty_assertions::assert_eq;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testkit/fixtures");

/// The id `record-fixtures` creates the explicit-id Claude session with.
const EXPLICIT_SESSION_ID: &str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

fn roots() -> StoreRoots {
    let fixtures = Path::new(FIXTURES);
    StoreRoots {
        claude_config: Some(fixtures.join("claude")),
        codex_home: Some(fixtures.join("codex")),
        ..StoreRoots::default()
    }
}

/// The folder a scenario ran in: the cwd its transcripts record.
fn workdir(scenario: &str) -> PathBuf {
    PathBuf::from(format!("/tmp/cross-agent-fixtures/work/{scenario}"))
}

/// Every session of the fixture stores, listed the way the `sessions` command lists them (no
/// cache file, so nothing is written).
fn listing() -> Vec<Session> {
    let listing = list_sessions(&roots(), &ScanOptions::default());
    assert!(listing.warnings.is_empty(), "{:#?}", listing.warnings);
    listing.sessions
}

/// The one listed session of `agent` working in the scenario's folder.
fn session(sessions: &[Session], agent: Agent, scenario: &str) -> Session {
    let found: Vec<&Session> = sessions
        .iter()
        .filter(|s| s.agent == agent && s.cwd.as_deref() == Some(workdir(scenario).as_path()))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {agent} session for {scenario}: {found:#?}"
    );
    found[0].clone()
}

/// The session id a transcript's file name carries: Claude `<id>.jsonl`, Codex
/// `rollout-<time>-<id>.jsonl` (the id is the last five `-`-separated parts, a UUID).
fn id_from_file_name(agent: Agent, path: &Path) -> String {
    let stem = path.file_stem().unwrap().to_str().unwrap();
    match agent {
        Agent::Claude => stem.to_owned(),
        _ => {
            let parts: Vec<&str> = stem.split('-').collect();
            parts[parts.len() - 5..].join("-")
        }
    }
}

fn transcript(agent: Agent, session: &Session) -> Transcript {
    let mut warnings = Warnings::default();
    let transcript = read_turns(agent, &session.path, &mut warnings).unwrap();
    assert!(warnings.items.is_empty(), "{:#?}", warnings.items);
    transcript
}

/// A turn as readable lines, for comparing whole turns without their timestamps.
fn shape(turn: &Turn) -> Vec<String> {
    let mut lines: Vec<String> = turn
        .items
        .iter()
        .map(|item| match item {
            TurnItem::Message(m) => format!("{:?}: {}", m.role, m.text),
            TurnItem::ToolCall(c) => format!("call {} {}", c.name, c.input),
            TurnItem::ToolResult(r) => format!(
                "result exit={:?} error={:?}: {}",
                r.exit_code, r.is_error, r.output
            ),
        })
        .collect();
    lines.push(format!("finished={}", turn.finished));
    lines
}

/// Codex's tool output opens with a chunk id and a wall time that change on every recording.
fn without_codex_preamble(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|line| match line.find("Process exited") {
            Some(at) if line.starts_with("result ") => {
                let head = &line[..line.find(": ").unwrap() + 2];
                format!("{head}{}", &line[at..])
            }
            _ => line,
        })
        .collect()
}

#[test]
fn every_recorded_transcript_lists_as_one_idle_session_with_its_id_cwd_and_prompt_title() {
    let sessions = listing();
    let expected = [
        (Agent::Claude, "plain", "Say hello to the fixture recorder."),
        (Agent::Claude, "tool-ok", "Run the listing check."),
        (Agent::Claude, "tool-fail", "Run the failing check."),
        (Agent::Claude, "resumed", "Remember the word pineapple."),
        (
            Agent::Claude,
            "explicit-id",
            "Start the session with the given id.",
        ),
        (Agent::Codex, "plain", "Say hello to the fixture recorder."),
        (Agent::Codex, "tool-ok", "Run the listing check."),
        (Agent::Codex, "tool-fail", "Run the failing check."),
        (Agent::Codex, "resumed", "Remember the word pineapple."),
    ];
    assert_eq!(sessions.len(), expected.len(), "{sessions:#?}");
    for (agent, scenario, title) in expected {
        let s = session(&sessions, agent, scenario);
        assert_eq!(
            s.session_id,
            id_from_file_name(agent, &s.path),
            "{agent} {scenario}"
        );
        assert_eq!(s.title.as_deref(), Some(title), "{agent} {scenario}");
        assert!(
            !s.title_is_assigned,
            "{agent} {scenario}: a generated title"
        );
        assert!(!s.is_working, "{agent} {scenario}: every turn finished");
        let (first, last) = (s.first_activity.unwrap(), s.last_activity.unwrap());
        assert!(first <= last, "{agent} {scenario}");
        // The id the listing reports is the one the records carry.
        let text = fs::read_to_string(&s.path).unwrap();
        let id_field = match agent {
            Agent::Claude => format!("\"sessionId\":\"{}\"", s.session_id),
            _ => format!("\"id\":\"{}\"", s.session_id),
        };
        assert!(text.contains(&id_field), "{agent} {scenario}");
    }
    assert_eq!(
        session(&sessions, Agent::Claude, "explicit-id").session_id,
        EXPLICIT_SESSION_ID
    );
}

#[test]
fn plain_exchanges_read_as_one_finished_turn() {
    let sessions = listing();
    for agent in [Agent::Claude, Agent::Codex] {
        let t = transcript(agent, &session(&sessions, agent, "plain"));
        assert_eq!(t.turns.len(), 1, "{agent}");
        assert_eq!(
            shape(&t.turns[0]),
            vec![
                "User: Say hello to the fixture recorder.",
                "Assistant: Hello from the scripted model.",
                "finished=true",
            ],
            "{agent}"
        );
        assert!(t.is_idle());
    }
}

#[test]
fn claude_bash_calls_read_back_with_their_exit_codes() {
    let sessions = listing();
    let ok = transcript(Agent::Claude, &session(&sessions, Agent::Claude, "tool-ok"));
    assert_eq!(ok.turns.len(), 1);
    assert_eq!(
        shape(&ok.turns[0]),
        vec![
            "User: Run the listing check.",
            r#"call Bash {"command":"echo listing-ok && ls","description":"List the folder"}"#,
            // A successful Bash result carries no code; its stdout/stderr shape means exit 0.
            "result exit=Some(0) error=Some(false): listing-ok\nnotes.txt",
            "Assistant: The listing check passed.",
            "finished=true",
        ]
    );

    let failed = transcript(
        Agent::Claude,
        &session(&sessions, Agent::Claude, "tool-fail"),
    );
    assert_eq!(failed.turns.len(), 1);
    let turn = &failed.turns[0];
    assert_eq!(
        shape(turn),
        vec![
            "User: Run the failing check.",
            r#"call Bash {"command":"echo failing-check; exit 3","description":"Run the check"}"#,
            "result exit=Some(3) error=Some(true): Exit code 3\nfailing-check",
            "Assistant: The failing check exited with code 3.",
            "finished=true",
        ]
    );
    // The result answers the call by id.
    let (TurnItem::ToolCall(call), TurnItem::ToolResult(result)) = (&turn.items[1], &turn.items[2])
    else {
        panic!("{turn:#?}")
    };
    assert_eq!(result.call_id, call.id);
    assert!(call.id.starts_with("toolu_"));
}

#[test]
fn codex_exec_commands_read_back_with_their_exit_codes() {
    let sessions = listing();
    for (scenario, command, exit, output, answer) in [
        (
            "tool-ok",
            "echo listing-ok && ls",
            0,
            "listing-ok\nnotes.txt\n",
            "The listing check passed.",
        ),
        (
            "tool-fail",
            "echo failing-check; exit 3",
            3,
            "failing-check\n",
            "The failing check exited with code 3.",
        ),
    ] {
        let t = transcript(Agent::Codex, &session(&sessions, Agent::Codex, scenario));
        assert_eq!(t.turns.len(), 1, "{scenario}");
        let turn = &t.turns[0];
        let prompt = if scenario == "tool-ok" {
            "User: Run the listing check."
        } else {
            "User: Run the failing check."
        };
        assert_eq!(
            without_codex_preamble(shape(turn)),
            vec![
                prompt.to_owned(),
                format!(r#"call exec_command {{"cmd":"{command}"}}"#),
                // Codex's output is text for the model; only the exit code line is parsed.
                format!(
                    "result exit=Some({exit}) error=None: Process exited with code {exit}\n\
                     Original token count: {}\nOutput:\n{output}",
                    original_token_count(turn)
                ),
                format!("Assistant: {answer}"),
                "finished=true".to_owned(),
            ],
            "{scenario}"
        );
        let (TurnItem::ToolCall(call), TurnItem::ToolResult(result)) =
            (&turn.items[1], &turn.items[2])
        else {
            panic!("{turn:#?}")
        };
        assert_eq!(result.call_id, call.id, "{scenario}");
        assert!(call.id.starts_with("call_"), "{scenario}");
    }
}

/// The `Original token count: N` line of a Codex tool output (N is the endpoint's estimate).
fn original_token_count(turn: &Turn) -> String {
    turn.items
        .iter()
        .find_map(|item| match item {
            TurnItem::ToolResult(r) => r
                .output
                .lines()
                .find_map(|l| l.strip_prefix("Original token count: "))
                .map(str::to_owned),
            _ => None,
        })
        .unwrap()
}

#[test]
fn resumed_sessions_read_as_two_finished_turns() {
    let sessions = listing();
    for agent in [Agent::Claude, Agent::Codex] {
        let t = transcript(agent, &session(&sessions, agent, "resumed"));
        let shapes: Vec<Vec<String>> = t.turns.iter().map(shape).collect();
        assert_eq!(
            shapes,
            vec![
                vec![
                    "User: Remember the word pineapple.",
                    "Assistant: Noted: pineapple.",
                    "finished=true",
                ],
                vec![
                    "User: Which word did I ask you to remember?",
                    "Assistant: You asked me to remember pineapple.",
                    "finished=true",
                ],
            ],
            "{agent}"
        );
        assert!(t.turns[0].ended_at <= t.turns[1].started_at, "{agent}");
    }
}

#[test]
fn the_last_assistant_message_is_the_newest_answer() {
    let sessions = listing();
    for agent in [Agent::Claude, Agent::Codex] {
        let t = transcript(agent, &session(&sessions, agent, "resumed"));
        let second_prompt = t.turns[1].items[0].clone();
        let TurnItem::Message(prompt) = second_prompt else {
            panic!("{:#?}", t.turns[1])
        };
        assert_eq!(prompt.role, Role::User);
        let asked = prompt.timestamp.unwrap();
        let last = t.last_assistant_message_after(asked).unwrap();
        assert_eq!(last.text, "You asked me to remember pineapple.", "{agent}");
        let end = t.turns[1].ended_at.unwrap();
        assert_eq!(t.last_assistant_message_after(end), None, "{agent}");
    }
}

#[test]
fn the_explicit_id_session_reads_back() {
    let sessions = listing();
    let s = session(&sessions, Agent::Claude, "explicit-id");
    assert_eq!(
        s.path.file_name().unwrap().to_str().unwrap(),
        format!("{EXPLICIT_SESSION_ID}.jsonl")
    );
    let t = transcript(Agent::Claude, &s);
    assert_eq!(
        t.turns.iter().map(shape).collect::<Vec<_>>(),
        vec![vec![
            "User: Start the session with the given id.",
            "Assistant: Started with the given id.",
            "finished=true",
        ]]
    );
}
