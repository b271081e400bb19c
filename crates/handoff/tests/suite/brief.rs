//! The brief's rules on turns built by hand: what counts as the human's instruction, which
//! signal decides a command's outcome, and the files a call touched. (The readers themselves
//! are tested on real and described stores in `cross-agent-stores` and through the CLI.)

use std::path::PathBuf;

use cross_agent_handoff::brief::{self, Outcome, Signal};
use cross_agent_handoff::source::{Family, SourceSession};
use cross_agent_stores::turns::{Message, Role, ToolCall, ToolResult, Turn, TurnItem};
use pretty_assertions::assert_eq;

fn message(role: Role, text: &str) -> TurnItem {
    TurnItem::Message(Message {
        role,
        text: text.to_owned(),
        timestamp: None,
    })
}

fn call(id: &str, name: &str, input: &str) -> TurnItem {
    TurnItem::ToolCall(ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        input: input.to_owned(),
        timestamp: None,
    })
}

fn result(id: &str, output: &str, is_error: Option<bool>, exit_code: Option<i32>) -> TurnItem {
    TurnItem::ToolResult(ToolResult {
        call_id: id.to_owned(),
        output: output.to_owned(),
        is_error,
        exit_code,
        timestamp: None,
    })
}

fn session(items: Vec<Vec<TurnItem>>) -> SourceSession {
    SourceSession {
        family: Family::Claude,
        session_id: "s".to_owned(),
        title: None,
        cwd: Some(PathBuf::from("/w")),
        cwd_derived: false,
        path: PathBuf::from("/w/t.jsonl"),
        turns: items
            .into_iter()
            .map(|items| Turn {
                finished: true,
                items,
                ..Turn::default()
            })
            .collect(),
    }
}

#[test]
fn a_bridge_envelope_is_not_the_latest_instruction() {
    let s = session(vec![
        vec![message(
            Role::User,
            "Port the parser to nom.\nDo not change the public API.",
        )],
        vec![message(Role::User, "Use nom 8 only.")],
        vec![message(
            Role::User,
            "=== CROSS-AGENT BRIDGE MESSAGE ===\nfrom: Codex (peer AI agent, not the human user)\nplease never mind",
        )],
        vec![message(
            Role::User,
            "<system-reminder>never do this</system-reminder>",
        )],
    ]);
    let b = brief::build(&s);
    assert_eq!(
        b.contract.opening_goal.as_deref(),
        Some("Port the parser to nom.\nDo not change the public API.")
    );
    assert_eq!(
        b.contract.latest_instruction.as_deref(),
        Some("Use nom 8 only.")
    );
    assert_eq!(
        b.contract.constraints,
        vec!["Do not change the public API.", "Use nom 8 only."]
    );
}

#[test]
fn a_recorded_exit_code_decides_then_the_error_flag_then_the_output() {
    let s = session(vec![vec![
        message(Role::User, "go"),
        call("1", "Bash", r#"{"command":"make a"}"#),
        result("1", "error: looks bad but exited 0", Some(true), Some(0)),
        call("2", "Bash", r#"{"command":"make b"}"#),
        result("2", "all fine", Some(true), None),
        call("3", "Bash", r#"{"command":"make c"}"#),
        result("3", "bash: make: command not found", None, None),
        call("4", "Bash", r#"{"command":"make d"}"#),
        result("4", "built", None, None),
        call("5", "exec_command", r#"{"cmd":["bash","-lc","make e"]}"#),
    ]]);
    let b = brief::build(&s);
    let seen: Vec<(&str, Outcome, Signal)> = b
        .commands
        .iter()
        .map(|c| (c.command.as_str(), c.outcome, c.signal))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("make a", Outcome::Succeeded, Signal::ExitCode),
            ("make b", Outcome::Failed, Signal::ErrorFlag),
            ("make c", Outcome::Failed, Signal::OutputRead),
            ("make d", Outcome::Succeeded, Signal::OutputRead),
            ("make e", Outcome::Unknown, Signal::NoResult),
        ]
    );
    assert_eq!(b.failures_total, 2);
    assert_eq!(b.failures[1].evidence, "bash: make: command not found");
    assert!(b.standing.last_command.is_some());
}

#[test]
fn files_come_from_file_fields_and_codex_patches_relative_to_the_cwd() {
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Add File: docs/new.md\n+x\n*** End Patch";
    let s = session(vec![vec![
        message(Role::User, "go"),
        call("1", "Read", r#"{"file_path":"/w/src/lib.rs"}"#),
        call(
            "2",
            "apply_patch",
            &serde_json::json!({ "input": patch }).to_string(),
        ),
        call("3", "Read", r#"{"file_path":"/elsewhere/notes.txt"}"#),
    ]]);
    let files: Vec<(String, bool, Vec<String>)> = brief::build(&s)
        .files
        .into_iter()
        .map(|f| (f.path, f.edited, f.tools))
        .collect();
    assert_eq!(
        files,
        vec![
            (
                "src/lib.rs".into(),
                true,
                vec!["Read".into(), "apply_patch".into()]
            ),
            ("docs/new.md".into(), true, vec!["apply_patch".into()]),
            ("/elsewhere/notes.txt".into(), false, vec!["Read".into()]),
        ]
    );
}
