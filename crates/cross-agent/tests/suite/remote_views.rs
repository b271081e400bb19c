//! The views over several machines (docs/remote.md), against real sshd rigs on loopback: the
//! decisions logs of this machine and a host asked where each lies and merged (`decisions
//! --host`, `--hosts all`), and `doctor`'s lines for a good host, an unreachable one and one
//! running an older cross-agent.

use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_protocol::rpc::PROTOCOL_VERSION;
use cross_agent_testkit::sshd::Sshd;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::remote::{BIN, Here, OLDER_REMOTE, text};

fn add(here: &Here, name: &str) {
    let out = here.run(&["hosts", "add", name]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Polls `hosts status --json` until `done` holds for its hosts.
fn wait_for_hosts(here: &Here, what: &str, done: impl Fn(&[Value]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let out = here.run(&["hosts", "status", "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let status: Value = serde_json::from_slice(&out.stdout).unwrap();
        let hosts = status["hosts"].as_array().cloned().unwrap_or_default();
        if done(&hosts) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {status:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn state_of<'a>(hosts: &'a [Value], name: &str) -> &'a Value {
    &hosts.iter().find(|h| h["name"] == name).unwrap()["state"]
}

fn has_error(hosts: &[Value], name: &str) -> bool {
    hosts
        .iter()
        .any(|h| h["name"] == name && h["last_error"].is_string())
}

/// Approvals in `home`'s decisions log, written by the daemons' own writer: `(minute, outcome)`.
fn approvals(home: &Path, at: &[(u32, &'static str)]) {
    let log = DecisionLog::new(home);
    for (minute, outcome) in at {
        log.try_record(
            Decision::new(DecisionKind::new("approval"), Outcome::new(*outcome))
                .at(format!("2026-01-01T00:{minute:02}:00.000Z"))
                .detail("tool", "Bash"),
        )
        .unwrap();
    }
}

#[test]
fn decisions_are_asked_where_each_log_lies_and_merged_naming_each_host() {
    if !Sshd::available() {
        eprintln!("skipped: no /usr/sbin/sshd");
        return;
    }
    let there = Sshd::start(Path::new(BIN)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ssh = Sshd::ssh_program_for(dir.path(), &[("there", &there)], &["down"]).unwrap();
    let here = Here::new(Some(ssh));
    add(&here, "there");
    wait_for_hosts(&here, "there connected", |h| {
        state_of(h, "there") == "connected"
    });

    approvals(
        &here.state,
        &[(1, "approved"), (3, "approved"), (5, "denied")],
    );
    approvals(
        &there.remote_state(),
        &[(2, "approved"), (4, "approved"), (6, "approved")],
    );

    // Counts: per host, largest first, each naming its host (null for this machine).
    let out = here.run(&[
        "decisions",
        "--hosts",
        "all",
        "--kind",
        "approval",
        "--by",
        "outcome",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        counts["groups"],
        json!([
            {"host": "there", "key": {"outcome": "approved"}, "count": 3},
            {"host": null, "key": {"outcome": "approved"}, "count": 2},
            {"host": null, "key": {"outcome": "denied"}, "count": 1},
        ])
    );
    assert_eq!(counts["total"], 6);
    assert_eq!(counts["hosts"], json!([null, "there"]));
    assert_eq!(counts["unreachable"], json!([]));

    // The table has a HOST column when more than one machine is shown.
    let out = here.run(&[
        "decisions",
        "--hosts",
        "all",
        "--kind",
        "approval",
        "--by",
        "outcome",
    ]);
    let table = text(&out.stdout);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["HOST", "COUNT", "SHARE", "OUTCOME"], "{table}");
    assert_eq!(rows[1], ["there", "3", "50.0%", "approved"], "{table}");
    assert_eq!(rows[2], ["(here)", "2", "33.3%", "approved"], "{table}");

    // Records: interleaved by time, each naming its host, the rest as written.
    let out = here.run(&[
        "decisions",
        "--hosts",
        "all",
        "--kind",
        "approval",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let records: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<(Value, Value)> = records
        .iter()
        .map(|r| (r["host"].clone(), r["outcome"].clone()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (Value::Null, json!("approved")),
            (json!("there"), json!("approved")),
            (Value::Null, json!("approved")),
            (json!("there"), json!("approved")),
            (Value::Null, json!("denied")),
            (json!("there"), json!("approved")),
        ]
    );
    assert!(text(&out.stdout).starts_with("{\"host\":null,"));

    // One host: its rows name it; one machine shown, so no HOST column.
    let out = here.run(&[
        "decisions",
        "--host",
        "there",
        "--kind",
        "approval",
        "--by",
        "outcome",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.starts_with("COUNT"), "{table}");
    assert!(
        table.contains("3 decision(s) in 1 group(s) on 1 machine(s)"),
        "{table}"
    );

    // A host that is down is named, and the answer says it is partial.
    add(&here, "down");
    wait_for_hosts(&here, "down failing", |h| has_error(h, "down"));
    let out = here.run(&[
        "decisions",
        "--hosts",
        "all",
        "--kind",
        "approval",
        "--by",
        "outcome",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(counts["total"], 6, "{counts:#}");
    assert_eq!(counts["unreachable"][0]["host"], "down");
    let reason = counts["unreachable"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("Connection refused"), "{reason}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("host `down` could not be asked") && stderr.contains("Connection refused"),
        "{stderr}"
    );
    // Asked alone, it fails naming it.
    let out = here.run(&["decisions", "--host", "down", "--by", "outcome"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("host `down` is not connected"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn doctor_checks_each_host_ssh_the_remote_version_and_its_daemon() {
    if !Sshd::available() {
        eprintln!("skipped: no /usr/sbin/sshd");
        return;
    }
    let good = Sshd::start(Path::new(BIN)).unwrap();
    let old = Sshd::start(Path::new(BIN)).unwrap();
    old.replace_remote_program(OLDER_REMOTE).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ssh =
        Sshd::ssh_program_for(dir.path(), &[("good", &good), ("old", &old)], &["down"]).unwrap();
    let here = Here::new(Some(ssh));
    for name in ["good", "old", "down"] {
        add(&here, name);
    }
    wait_for_hosts(&here, "each link settled", |h| {
        state_of(h, "good") == "connected"
            && state_of(h, "old") == "refused"
            && has_error(h, "down")
    });

    let out = here
        .command(&["doctor", "--json"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = |what: &str| -> (String, String) {
        let found = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["what"] == what)
            .unwrap_or_else(|| panic!("no check {what:?} in {report:#}"));
        (
            found["status"].as_str().unwrap().to_owned(),
            found["detail"].as_str().unwrap().to_owned(),
        )
    };
    let ours = format!(
        "{} (protocol {PROTOCOL_VERSION}) here",
        env!("CARGO_PKG_VERSION")
    );

    let (status, detail) = check("host good: ssh");
    assert_eq!(status, "ok", "{detail}");
    assert!(detail.starts_with("reaches good (round trip "), "{detail}");
    let (status, detail) = check("host good: cross-agent");
    assert_eq!(status, "ok", "{detail}");
    assert_eq!(
        detail,
        format!(
            "{} (protocol {PROTOCOL_VERSION}) there, {ours}: compatible",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(check("host good: daemon").0, "ok");

    let (status, detail) = check("host down: ssh");
    assert_eq!(status, "broken");
    assert!(
        detail.starts_with("cannot reach down: ssh: connect to host 127.0.0.1 port ")
            && detail.contains("Connection refused"),
        "{detail}"
    );

    assert_eq!(check("host old: ssh").0, "ok");
    let (status, detail) = check("host old: cross-agent");
    assert_eq!(status, "broken");
    assert_eq!(
        detail,
        format!("0.0.1 (protocol 1) there, {ours}: not compatible, the link is refused")
    );

    assert_eq!(report["ok"], false);
    assert!(!out.status.success());
}
