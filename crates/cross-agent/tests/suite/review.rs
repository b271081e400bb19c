//! `cross-agent review`, driven through the built binary on a temporary `HOME` and
//! `CROSS_AGENT_HOME`: a real Claude Code session (written through the scripted model endpoint)
//! reviewed by the endpoint playing an xAI model over Chat Completions, configured with
//! `CROSS_AGENT_PROVIDERS`; the `--json` report, the human rendering with the reviewer's control
//! characters escaped, `review list` / `review show`, the decision lines without text, no
//! reviewer of another family, and `--send` asking the daemon's escalation guard.

use std::path::Path;
use std::process::Command;

use cross_agent_testkit::agents::Claude;
use cross_agent_testkit::{Api, ModelEndpoint, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::handoff::{User, assert_success, json_of_success, stderr_of_exit_1};

const GOAL: &str = "Port the importer to the csv crate; never touch Cargo.lock.";
const LATEST: &str = "Also keep the public API unchanged.";
const KEY: &str = "sk-review-cli-0123456789";
/// The reviewer's task, with a terminal escape a person's terminal must not act on.
const TASK: &str = "Port the importer \u{1b}]0;PWNED\u{7}to csv";
const GAP: &str = "Cargo.lock was edited";
const CORRECTION: &str = "Revert Cargo.lock;\nthe person said never to touch it.";

/// A real Claude Code session of two turns; its id.
fn claude_session(user: &User) -> String {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_user_text("Port the importer")
            .tool_call(ToolCall::new(
                "Bash",
                json!({"command": "cargo build", "description": "build"}),
            ))
            .for_api(Api::Anthropic)
            .once(),
        Rule::on_any_tool_result().reply_text("The build fails on the old import."),
        Rule::on_user_text("Also keep").reply_text("Done."),
    ]);
    let project = user.home.project("shop").unwrap();
    let claude = Claude::new(&user.home, &endpoint.anthropic_base_url()).unwrap();
    claude
        .session(&project, &["Bash"], &[GOAL, LATEST])
        .unwrap()
}

fn review(user: &User, providers: &str, args: &[&str]) -> Command {
    let mut command = user.command(args);
    command
        .env("CROSS_AGENT_PROVIDERS", providers)
        .env("TEST_KEY", KEY);
    command
}

fn reviews_in(state: &Path) -> Vec<Value> {
    std::fs::read_to_string(state.join("decisions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["kind"].as_str().is_some_and(|k| k.starts_with("review_")))
        .collect()
}

#[test]
fn a_review_is_printed_kept_listed_shown_and_logged_without_its_text() {
    let user = User::new();
    let id = claude_session(&user);
    let endpoint = ModelEndpoint::start().unwrap();
    let answer =
        json!({"verdict": "drifting", "task": TASK, "gaps": [GAP], "correction": CORRECTION});
    endpoint.push(
        Rule::on_any()
            .reply_text(answer.to_string())
            .include_side_requests(),
    );
    let providers = format!(
        "chat {} TEST_KEY grok-reviewer xai",
        endpoint.openai_base_url()
    );

    let report = json_of_success(
        &review(&user, &providers, &["review", &id, "--json"])
            .output()
            .unwrap(),
    );
    let rv = report["id"].as_str().unwrap().to_owned();
    assert!(rv.starts_with("rv_"), "{report}");
    let mut keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        vec![
            "at",
            "correction",
            "duration_ms",
            "gaps",
            "id",
            "outcome",
            "requests",
            "reviewed_to",
            "reviewer",
            "session",
            "task",
            "tokens",
            "verdict"
        ]
    );
    assert_eq!(
        (
            &report["outcome"],
            &report["verdict"],
            &report["task"],
            &report["gaps"],
            &report["correction"]
        ),
        (
            &json!("verdict"),
            &json!("drifting"),
            &json!(TASK),
            &json!([GAP]),
            &json!(CORRECTION)
        )
    );
    assert_eq!(
        report["reviewer"],
        json!({"provider": "chat:grok-reviewer", "model": "grok-reviewer", "family": "xai"})
    );
    assert_eq!(report["session"]["id"], json!(id));
    assert_eq!(report["session"]["agent"], "claude");
    assert_eq!(report["session"]["family"], "anthropic");
    assert!(report["reviewed_to"]["offset"].as_u64().unwrap() > 0);
    let request = endpoint.model_requests().remove(0);
    assert_eq!(request.api, Api::Chat);
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    // The human rendering: the escape shows as text, the correction keeps its line break.
    let out = review(&user, &providers, &["review", &id])
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    for line in [
        "verdict: drifting",
        "task: Port the importer \\x1b]0;PWNED\\x07to csv",
        "  - Cargo.lock was edited",
        "correction: Revert Cargo.lock;\nthe person said never to touch it.",
        "reviewer: chat:grok-reviewer (xai, grok-reviewer); 1 request(s)",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }

    // Both reviews are kept and read back.
    let listed = json_of_success(
        &user
            .command(&["review", "list", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[0], report);
    let shown = json_of_success(
        &user
            .command(&["review", "show", &rv, "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(shown, report);
    let out = user.command(&["review", "show", &rv]).output().unwrap();
    assert_success(&out);
    let shown_text = String::from_utf8(out.stdout).unwrap();
    assert!(shown_text.contains("\\x1b]0;PWNED"), "{shown_text}");

    let out = user
        .command(&["review", "list", "--session", &id, "--since", "1h"])
        .output()
        .unwrap();
    assert_success(&out);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("ID "), "{table}");
    assert_eq!(table.matches(" drifting ").count(), 2, "{table}");
    let none = json_of_success(
        &user
            .command(&[
                "review",
                "list",
                "--since",
                "2099-01-01T00:00:00Z",
                "--json",
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(none, json!([]));
    let other = json_of_success(
        &user
            .command(&["review", "list", "--session", "no-such", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(other, json!([]));

    // The decision lines: one per review, with the counts and no text.
    let lines = reviews_in(&user.state);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(lines[0]["kind"], "review_verdict");
    assert_eq!(lines[0]["details"]["review_id"], json!(rv));
    assert_eq!(lines[0]["details"]["gap_count"], 1);
    assert_eq!(lines[0]["details"]["verdict"], "drifting");
    let log = std::fs::read_to_string(user.state.join("decisions.jsonl")).unwrap();
    for text in [
        "Port the importer",
        GAP,
        "Revert Cargo.lock",
        "never to touch",
        KEY,
    ] {
        assert!(!log.contains(text), "{text:?} in decisions.jsonl: {log}");
    }

    // An unknown id is an error naming it.
    let err = stderr_of_exit_1(
        &user
            .command(&["review", "show", "rv_nothere"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("rv_nothere"), "{err}");
}

#[test]
fn with_no_reviewer_of_another_family_nothing_is_asked_and_it_says_how_to_add_one() {
    let user = User::new();
    let id = claude_session(&user);
    let endpoint = ModelEndpoint::start().unwrap();
    let providers = format!(
        "anthropic {} TEST_KEY claude-sonnet",
        endpoint.anthropic_base_url()
    );
    let out = review(&user, &providers, &["review", &id, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["outcome"], "no_reviewer");
    assert_eq!(report["reviewer"], Value::Null);
    assert!(report.get("verdict").is_none());
    assert!(
        report["problem"]
            .as_str()
            .unwrap()
            .contains("no provider of a family other than anthropic"),
        "{report}"
    );
    assert!(endpoint.requests().is_empty());
    let lines = reviews_in(&user.state);
    assert_eq!(
        (&lines[0]["kind"], &lines[0]["outcome"]),
        (&json!("review_failed"), &json!("no_reviewer"))
    );

    // The person's view says so too.
    let out = review(&user, &providers, &["review", &id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("no verdict: no_reviewer"), "{text}");
    assert!(text.contains("providers.toml"), "{text}");
}

/// Stops the daemon `--send` started, even when an assertion fails.
struct StopDaemons<'a>(&'a Path);

impl Drop for StopDaemons<'_> {
    fn drop(&mut self) {
        cross_agent_testkit::leaks::stop_daemons(self.0, cross_agent_testkit::leaks::SETTLE);
    }
}

/// A reviewer answering every request with `verdict`.
fn reviewer_answering(verdict: Value) -> (ModelEndpoint, String) {
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply_text(verdict.to_string())
            .include_side_requests(),
    );
    let providers = format!(
        "openai {} TEST_KEY gpt-reviewer",
        endpoint.openai_base_url()
    );
    (endpoint, providers)
}

#[test]
fn send_asks_the_daemons_guard_and_prints_the_rule_that_refused() {
    let user = User::new();
    let _stop = StopDaemons(&user.state);
    let id = claude_session(&user);

    // A verdict without a correction: nothing to send, the daemon is not asked.
    let (_endpoint, providers) =
        reviewer_answering(json!({"verdict": "drifting", "task": "t", "gaps": ["g"]}));
    let out = review(&user, &providers, &["review", &id, "--send"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "no correction to send: the review's outcome is verdict without a correction"
        ),
        "{text}"
    );

    // An on-track verdict carrying a correction: the daemon's guard refuses it by its verdict
    // rule, the CLI says so and exits 1, and the refusal is a decision line naming the rule.
    let (_endpoint, providers) = reviewer_answering(
        json!({"verdict": "on_track", "task": "t", "gaps": [], "correction": CORRECTION}),
    );
    let out = review(&user, &providers, &["review", &id, "--send"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("correction not sent, refused by the guard's verdict rule"),
        "{text}"
    );
    let refused: Vec<Value> = reviews_in(&user.state)
        .into_iter()
        .filter(|d| d["kind"] == "review_correction_refused")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["details"]["rule"], "verdict");
    assert_eq!(refused[0]["details"]["requested_by"], "cli");
    // Both reviews were made and kept, and no correction text reached the log.
    let log = std::fs::read_to_string(user.state.join("decisions.jsonl")).unwrap();
    assert!(!log.contains("Revert Cargo.lock"), "{log}");
}
