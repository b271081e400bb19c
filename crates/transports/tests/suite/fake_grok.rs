//! Grok Build cannot run on these machines. A stand-in `grok` script checks that a run passes
//! the argv of docs/spec/cross-agent-mcp.md §3/§5, the directory and only the given environment, and reads the
//! answer. Its streaming-json lines follow the public recording of Grok Build 0.2.101 in
//! Anantys-oss/koan (`koan/tests/grok_samples.py`: `thought` / `text` deltas in `data`, a closing
//! `end` with `stopReason` and `sessionId`; `docs/providers/grok.md`: a permission cancel ends
//! `stopReason: Cancelled`). That recording shows no tool events; the line naming a tool below
//! is our assumption, kept to show such a line would start the answer afresh.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use cross_agent_protocol::bridge::Agent;
use cross_agent_transports::headless::{Target, TurnRequest, build};
use cross_agent_transports::run::{Ended, RunOptions, run_turn};
use cross_agent_transports::settings::TurnSettings;
use pretty_assertions::assert_eq;

fn write_script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn grok_request(bin: &Path, cwd: &Path) -> TurnRequest {
    let settings = BTreeMap::from([(
        "CROSS_AGENT_GROK_BIN".to_owned(),
        bin.to_string_lossy().into_owned(),
    )]);
    TurnRequest {
        agent: Agent::Grok,
        target: Target::Resume {
            session_id: "g-42".into(),
        },
        cwd: cwd.to_owned(),
        message: "hello grok".into(),
        settings: TurnSettings::from_settings(&settings),
        child_env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        bridge_env: BTreeMap::from([("CROSS_AGENT_CONVERSATION_ID".to_owned(), "c1".to_owned())]),
    }
}

fn options(inactivity: Duration) -> RunOptions {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    RunOptions {
        inactivity,
        transcript: None,
        stop: rx,
    }
}

#[tokio::test]
async fn a_fake_grok_run_passes_argv_cwd_and_env_and_cuts_at_the_last_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("seen");
    let script = write_script(
        tmp.path(),
        "grok",
        &format!(
            "printf '%s\\n' \"$@\" > {log}.args\npwd > {log}.cwd\nenv | sort > {log}.env\n\
             echo '{{\"type\":\"thought\",\"data\":\"Look first.\"}}'\n\
             echo '{{\"type\":\"text\",\"data\":\"let me look\"}}'\n\
             echo '{{\"type\":\"tool_call\",\"name\":\"read\"}}'\n\
             echo '{{\"type\":\"text\",\"data\":\"the \"}}'\n\
             echo '{{\"type\":\"text\",\"data\":\"answer\"}}'\n\
             echo '{{\"type\":\"end\",\"stopReason\":\"EndTurn\",\"sessionId\":\"g-42\",\"requestId\":\"r-1\",\"num_turns\":2}}'\n",
            log = log.display()
        ),
    );
    let spec = build(&grok_request(&script, tmp.path())).unwrap();
    let outcome = run_turn(
        Agent::Grok,
        &spec,
        options(Duration::from_secs(120)),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(outcome.ended, Ended::Exited(Some(0)));
    assert_eq!(outcome.parsed.answer.as_deref(), Some("the answer"));
    assert_eq!(outcome.parsed.session_id.as_deref(), Some("g-42"));
    let args = std::fs::read_to_string(format!("{}.args", log.display())).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "--single=hello grok",
            "--resume",
            "g-42",
            "--output-format",
            "streaming-json"
        ]
    );
    let cwd = std::fs::read_to_string(format!("{}.cwd", log.display())).unwrap();
    assert_eq!(
        Path::new(cwd.trim()).canonicalize().unwrap(),
        tmp.path().canonicalize().unwrap()
    );
    let env = std::fs::read_to_string(format!("{}.env", log.display())).unwrap();
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split('=').next())
        .filter(|n| !["PWD", "SHLVL", "_", "OLDPWD"].contains(n))
        .collect();
    assert_eq!(names, ["CROSS_AGENT_CONVERSATION_ID", "PATH"]);
}

#[tokio::test]
async fn a_cancelled_approval_and_a_silent_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let script = write_script(
        tmp.path(),
        "grok-cancelled",
        "echo '{\"type\":\"text\",\"data\":\"let me run that\"}'\n\
         echo '{\"type\":\"end\",\"stopReason\":\"Cancelled\",\"sessionId\":\"g-42\"}'\n",
    );
    let spec = build(&grok_request(&script, tmp.path())).unwrap();
    let outcome = run_turn(
        Agent::Grok,
        &spec,
        options(Duration::from_secs(120)),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        outcome.parsed.approval_blocked.as_deref(),
        Some("a tool call")
    );

    let silent = write_script(tmp.path(), "grok-silent", "sleep 30 &\nsleep 60\n");
    let spec = build(&grok_request(&silent, tmp.path())).unwrap();
    let mut pid = 0;
    let outcome = run_turn(Agent::Grok, &spec, options(Duration::from_secs(1)), |p| {
        pid = p
    })
    .await
    .unwrap();
    assert_eq!(outcome.ended, Ended::KilledByTimeout);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while cross_agent_transports::process::group_alive(pid) && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !cross_agent_transports::process::group_alive(pid),
        "the whole group is gone, the background sleep included"
    );
}
