//! The exact argv and environment of each agent's headless turn.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cross_agent_protocol::bridge::Agent;
use cross_agent_transports::Error;
use cross_agent_transports::headless::{CommandSpec, Target, TurnRequest, build};
use cross_agent_transports::settings::TurnSettings;
use pretty_assertions::assert_eq;

fn request(agent: Agent, target: Target, settings: &[(&str, &str)]) -> TurnRequest {
    let settings: BTreeMap<String, String> = settings
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    TurnRequest {
        agent,
        target,
        cwd: PathBuf::from("/work/proj"),
        message: "-starts with a dash".to_owned(),
        settings: TurnSettings::from_settings(&settings),
        child_env: BTreeMap::from([
            ("HOME".to_owned(), "/home/u".to_owned()),
            ("PATH".to_owned(), "/nonexistent".to_owned()),
            ("CROSS_AGENT_SELF".to_owned(), "claude".to_owned()),
        ]),
        bridge_env: BTreeMap::from([
            (
                "CROSS_AGENT_SELF_SESSION".to_owned(),
                "codex:t-1".to_owned(),
            ),
            (
                "CROSS_AGENT_CONVERSATION_ID".to_owned(),
                "conv_1".to_owned(),
            ),
        ]),
    }
}

fn args(spec: &CommandSpec) -> Vec<&str> {
    spec.args.iter().map(String::as_str).collect()
}

#[test]
fn claude_resume_and_new() {
    let spec = build(&request(
        Agent::Claude,
        Target::Resume {
            session_id: "s-1".into(),
        },
        &[
            ("CROSS_AGENT_CLAUDE_BIN", "/opt/claude"),
            ("CROSS_AGENT_CLAUDE_MODEL", "m1"),
            ("CROSS_AGENT_CLAUDE_PERMISSION_MODE", "acceptEdits"),
        ],
    ))
    .unwrap();
    assert_eq!(spec.program, PathBuf::from("/opt/claude"));
    assert_eq!(
        args(&spec),
        [
            "-p",
            "--output-format",
            "json",
            "--resume",
            "s-1",
            "--model",
            "m1",
            "--permission-mode",
            "acceptEdits",
            "--",
            "-starts with a dash"
        ]
    );
    assert_eq!(spec.cwd, PathBuf::from("/work/proj"));
    let new = build(&request(
        Agent::Claude,
        Target::New {
            session_id: Some("u-1".into()),
        },
        &[],
    ))
    .unwrap();
    assert_eq!(
        args(&new),
        [
            "-p",
            "--output-format",
            "json",
            "--session-id",
            "u-1",
            "--",
            "-starts with a dash"
        ]
    );
    assert_eq!(new.program, PathBuf::from("claude"));
}

#[test]
fn codex_resume_keeps_its_sandbox_and_new_gets_read_only() {
    let resume = build(&request(
        Agent::Codex,
        Target::Resume {
            session_id: "t-1".into(),
        },
        &[("CROSS_AGENT_CODEX_SANDBOX", "danger-full-access")],
    ))
    .unwrap();
    assert_eq!(
        args(&resume),
        [
            "exec",
            "resume",
            "--json",
            "--skip-git-repo-check",
            "t-1",
            "--",
            "-starts with a dash"
        ]
    );
    let new = build(&request(
        Agent::Codex,
        Target::New { session_id: None },
        &[("CROSS_AGENT_CODEX_MODEL", "gpt-x")],
    ))
    .unwrap();
    assert_eq!(
        args(&new),
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-C",
            "/work/proj",
            "--sandbox",
            "read-only",
            "--model",
            "gpt-x",
            "--",
            "-starts with a dash"
        ]
    );
}

/// Grok cannot run here; the argv follows docs/spec/cross-agent-mcp.md §3 and §5 rule 4 (`grok --single=<message>
/// --resume <id> --output-format streaming-json`, `--session-id <uuid>` for a new one,
/// `--permission-mode` from `CROSS_AGENT_GROK_PERMISSION_MODE`).
#[test]
fn grok_from_the_spec() {
    let spec = build(&request(
        Agent::Grok,
        Target::Resume {
            session_id: "g-1".into(),
        },
        &[("CROSS_AGENT_GROK_PERMISSION_MODE", "acceptEdits")],
    ))
    .unwrap();
    assert_eq!(
        args(&spec),
        [
            "--single=-starts with a dash",
            "--resume",
            "g-1",
            "--output-format",
            "streaming-json",
            "--permission-mode",
            "acceptEdits"
        ]
    );
    let new = build(&request(
        Agent::Grok,
        Target::New {
            session_id: Some("u-2".into()),
        },
        &[],
    ))
    .unwrap();
    assert_eq!(
        args(&new)[1..3],
        ["--session-id", "u-2"],
        "a new Grok session takes the bridge's uuid"
    );
}

#[test]
fn the_child_env_is_the_baseline_plus_the_bridge_and_never_self() {
    let spec = build(&request(
        Agent::Claude,
        Target::Resume {
            session_id: "s".into(),
        },
        &[],
    ))
    .unwrap();
    assert_eq!(
        spec.env,
        BTreeMap::from([
            (
                "CROSS_AGENT_CONVERSATION_ID".to_owned(),
                "conv_1".to_owned()
            ),
            (
                "CROSS_AGENT_SELF_SESSION".to_owned(),
                "codex:t-1".to_owned()
            ),
            ("HOME".to_owned(), "/home/u".to_owned()),
            ("PATH".to_owned(), "/nonexistent".to_owned()),
        ])
    );
}

#[test]
fn no_headless_is_enforced_where_the_command_is_made() {
    for value in ["1", "yes", "on"] {
        let error = build(&request(
            Agent::Codex,
            Target::Resume {
                session_id: "t-9".into(),
            },
            &[("CROSS_AGENT_DISABLE_HEADLESS", value)],
        ))
        .unwrap_err();
        assert!(matches!(error, Error::HeadlessDisabled { .. }), "{error}");
        assert!(error.to_string().contains("t-9"), "{error}");
    }
    for value in ["0", "false", "NO", "off", " "] {
        build(&request(
            Agent::Codex,
            Target::Resume {
                session_id: "t-9".into(),
            },
            &[("CROSS_AGENT_DISABLE_HEADLESS", value)],
        ))
        .unwrap();
    }
}

/// Linux holds one argument to 128 KiB: a longer message goes on standard input, where Claude
/// (no prompt argument) and Codex (prompt `-`) read it; Grok reads no standard input, so it is
/// refused naming the limit.
#[test]
fn a_message_past_the_argument_limit_goes_on_standard_input() {
    use cross_agent_transports::headless::MAX_ARGUMENT_BYTES;
    let long = "x".repeat(MAX_ARGUMENT_BYTES + 1);
    let resume = || Target::Resume {
        session_id: "s-1".into(),
    };

    let mut claude = request(Agent::Claude, resume(), &[]);
    claude.message = long.clone();
    let spec = build(&claude).unwrap();
    assert_eq!(
        args(&spec),
        ["-p", "--output-format", "json", "--resume", "s-1"]
    );
    assert_eq!(spec.stdin.as_deref(), Some(long.as_str()));

    let mut codex = request(Agent::Codex, resume(), &[]);
    codex.message = long.clone();
    let spec = build(&codex).unwrap();
    assert_eq!(
        args(&spec),
        [
            "exec",
            "resume",
            "--json",
            "--skip-git-repo-check",
            "s-1",
            "-"
        ]
    );
    assert_eq!(spec.stdin.as_deref(), Some(long.as_str()));
    let mut new_codex = request(Agent::Codex, Target::New { session_id: None }, &[]);
    new_codex.message = long.clone();
    assert_eq!(args(&build(&new_codex).unwrap()).last(), Some(&"-"));

    // At the limit it is still an argument.
    let mut at_limit = request(Agent::Claude, resume(), &[]);
    at_limit.message = "x".repeat(MAX_ARGUMENT_BYTES);
    let spec = build(&at_limit).unwrap();
    assert_eq!(spec.stdin, None);
    assert_eq!(spec.args.last().map(String::len), Some(MAX_ARGUMENT_BYTES));

    let mut grok = request(Agent::Grok, resume(), &[]);
    grok.message = long;
    match build(&grok) {
        Err(Error::MessageTooLong { bytes, limit, .. }) => {
            assert_eq!((bytes, limit), (MAX_ARGUMENT_BYTES + 1, MAX_ARGUMENT_BYTES));
        }
        other => panic!("{other:?}"),
    }
}
