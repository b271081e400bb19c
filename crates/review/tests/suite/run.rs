//! One review end to end: sessions the real Claude Code and Codex wrote (offline, against the
//! scripted model endpoint) reviewed by the scripted endpoint playing a reviewer of another
//! family over Anthropic Messages, OpenAI Responses and Chat Completions, on loopback: each
//! verdict, the one repair, unparseable, a 429 storm and a timeout, no reviewer of another
//! family, and what is recorded (the decision line without text, the kept report read back).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use cross_agent_decisions::DecisionLog;
use cross_agent_providers::config::parse_shorthand;
use cross_agent_providers::{Env, FailureKind, Pool, Provider};
use cross_agent_review::digest::ModelFamily;
use cross_agent_review::run::{ReviewOutcome, ReviewSettings, Reviewer, review};
use cross_agent_review::verdict::VerdictKind;
use cross_agent_review::{ReviewError, record};
use cross_agent_stores::{Agent, StoreRoots};
use cross_agent_testkit::agents::{AgentHome, Claude, Codex};
use cross_agent_testkit::{Api, ModelEndpoint, Reply, Rule, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const GOAL: &str = "Port the importer in src/import.rs to the csv crate; never touch Cargo.lock.";
const LATEST: &str = "Also keep the public API unchanged.";
const KEY: &str = "sk-review-test-0123456789";
const TASK: &str = "Port the importer to the csv crate without touching Cargo.lock";
const GAP: &str = "Cargo.lock was edited by cargo build";
const CORRECTION: &str = "Revert Cargo.lock; the person said never to touch it.";

/// The real sessions every test reviews, written once per run of this binary.
struct Sessions {
    home: AgentHome,
    claude: String,
    codex: String,
}

/// Both sessions: goal → a shell call → text, then a second instruction. Kept in cargo's
/// per-target temporary folder, not in /tmp, in a folder of this process's own: nextest runs
/// every test in a process of its own, at the same time, and each wipes its folder first.
fn sessions() -> &'static Sessions {
    static SESSIONS: OnceLock<Sessions> = OnceLock::new();
    SESSIONS.get_or_init(|| {
        let home = AgentHome::at_fixed_path(
            &Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("review-run-sessions-{}", std::process::id())),
        )
        .unwrap();
        let endpoint = ModelEndpoint::start().unwrap();
        endpoint.script([
            Rule::on_user_text("Port the importer")
                .tool_call(ToolCall::new(
                    "Bash",
                    json!({"command": "cargo build", "description": "build"}),
                ))
                .for_api(Api::Anthropic)
                .once(),
            Rule::on_user_text("Port the importer")
                .tool_call(ToolCall::new("exec_command", json!({"cmd": "cargo build"})))
                .for_api(Api::Responses)
                .once(),
            Rule::on_any_tool_result().reply_text("The build fails on the old import."),
            Rule::on_user_text("Also keep").reply_text("Done: csv 1.3, API unchanged."),
        ]);
        let project = home.project("shop").unwrap();
        let claude = Claude::new(&home, &endpoint.anthropic_base_url()).unwrap();
        let claude_id = claude
            .session(&project, &["Bash"], &[GOAL, LATEST])
            .unwrap();
        let codex = Codex::new(&home, &endpoint.openai_base_url()).unwrap();
        let thread = codex
            .session(&project, Some("gpt-5.1-codex"), &[GOAL, LATEST])
            .unwrap();
        Sessions {
            home,
            claude: claude_id,
            codex: thread,
        }
    })
}

fn settings(home: &Path) -> ReviewSettings {
    ReviewSettings::new(StoreRoots::under_home(home))
}

fn provider(line: &str, timeout: Duration) -> Provider {
    parse_shorthand("CROSS_AGENT_PROVIDERS", line, timeout)
        .unwrap()
        .remove(0)
}

fn pool(providers: Vec<Provider>) -> Pool {
    Pool::new(
        providers,
        Env::fixed(BTreeMap::from([("TEST_KEY".to_owned(), KEY.to_owned())])),
    )
}

/// A reviewer over Anthropic Messages (for the Codex session, of the OpenAI family).
fn anthropic(endpoint: &ModelEndpoint) -> Provider {
    provider(
        &format!(
            "anthropic {} TEST_KEY claude-reviewer",
            endpoint.anthropic_base_url()
        ),
        Duration::from_secs(20),
    )
}

/// A reviewer over OpenAI Responses (for the Claude session).
fn responses(endpoint: &ModelEndpoint) -> Provider {
    provider(
        &format!(
            "openai {} TEST_KEY gpt-reviewer",
            endpoint.openai_base_url()
        ),
        Duration::from_secs(20),
    )
}

/// A reviewer over Chat Completions, of the xAI family (for the Claude session).
fn chat(endpoint: &ModelEndpoint, timeout: Duration) -> Provider {
    provider(
        &format!(
            "chat {} TEST_KEY grok-reviewer xai",
            endpoint.openai_base_url()
        ),
        timeout,
    )
}

fn answer(verdict: &str, gaps: &[&str], correction: Option<&str>) -> String {
    let mut v = json!({"verdict": verdict, "task": TASK, "gaps": gaps});
    if let Some(c) = correction {
        v["correction"] = json!(c);
    }
    v.to_string()
}

/// The one request the reviewer got, with what every review request must carry.
fn the_request(endpoint: &ModelEndpoint) -> cross_agent_testkit::RecordedRequest {
    let requests = endpoint.model_requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let request = requests.into_iter().next().unwrap();
    let prompt = request.last_user_text.clone().unwrap_or_default();
    assert!(prompt.contains(GOAL), "{prompt}");
    assert!(prompt.contains(LATEST), "{prompt}");
    let schema = serde_json::to_string(&cross_agent_review::verdict::schema()).unwrap();
    assert!(
        request.body.to_string().contains(&schema),
        "the verdict schema was not sent: {}",
        request.body
    );
    request
}

#[test]
fn drifting_with_a_correction_over_anthropic_messages_for_a_codex_session() {
    let s = sessions();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply_text(answer("drifting", &[GAP], Some(CORRECTION)))
            .include_side_requests(),
    );
    let report = review(
        &s.codex,
        &pool(vec![anthropic(&endpoint)]),
        &settings(s.home.path()),
    )
    .unwrap();
    let request = the_request(&endpoint);
    assert_eq!(request.api, Api::Anthropic);
    assert_eq!(report.outcome, ReviewOutcome::Verdict);
    assert_eq!(report.verdict, Some(VerdictKind::Drifting));
    assert_eq!(report.task.as_deref(), Some(TASK));
    assert_eq!(report.gaps, Some(vec![GAP.to_owned()]));
    assert_eq!(report.correction.as_deref(), Some(CORRECTION));
    assert_eq!(
        report.reviewer,
        Some(Reviewer {
            provider: "anthropic:claude-reviewer".to_owned(),
            model: "claude-reviewer".to_owned(),
            family: "anthropic".to_owned(),
        })
    );
    assert_eq!(
        (
            &report.session.id,
            report.session.agent,
            report.session.family
        ),
        (&s.codex, Agent::Codex, ModelFamily::Openai)
    );
    assert_eq!(report.requests, 1);
    assert!(report.tokens.input.is_some() && report.tokens.output.is_some());
    assert_eq!(
        report.reviewed_to.offset,
        std::fs::metadata(&report.session.path).unwrap().len()
    );
    assert!(report.id.starts_with("rv_"), "{}", report.id);
    assert_eq!(report.problem, None);
}

#[test]
fn on_track_over_responses_and_off_track_and_blocked_over_chat_for_a_claude_session() {
    let s = sessions();
    for (verdict, kind, api) in [
        ("on_track", VerdictKind::OnTrack, Api::Responses),
        ("off_track", VerdictKind::OffTrack, Api::Chat),
        ("blocked", VerdictKind::Blocked, Api::Chat),
    ] {
        let endpoint = ModelEndpoint::start().unwrap();
        let gaps: &[&str] = if verdict == "on_track" { &[] } else { &[GAP] };
        endpoint.push(
            Rule::on_any()
                .reply_text(answer(verdict, gaps, None))
                .include_side_requests(),
        );
        let reviewer = match api {
            Api::Responses => responses(&endpoint),
            _ => chat(&endpoint, Duration::from_secs(20)),
        };
        let family = reviewer.family.as_str().to_owned();
        let report = review(&s.claude, &pool(vec![reviewer]), &settings(s.home.path())).unwrap();
        assert_eq!(the_request(&endpoint).api, api, "{verdict}");
        assert_eq!(
            (report.outcome, report.verdict),
            (ReviewOutcome::Verdict, Some(kind))
        );
        assert_eq!(report.session.family, ModelFamily::Anthropic);
        assert_eq!(report.reviewer.unwrap().family, family);
        assert_eq!(report.gaps.unwrap().len(), gaps.len());
        assert_eq!(report.correction, None);
    }
}

#[test]
fn a_malformed_answer_is_sent_back_once_with_the_error_and_the_repair_is_accepted() {
    let s = sessions();
    let endpoint = ModelEndpoint::start().unwrap();
    const PROSE: &str = "The session looks fine to me.";
    endpoint.script([
        Rule::on_any()
            .reply_text(PROSE)
            .include_side_requests()
            .once(),
        Rule::on_any()
            .reply_text(answer("on_track", &[], None))
            .include_side_requests(),
    ]);
    let report = review(
        &s.claude,
        &pool(vec![chat(&endpoint, Duration::from_secs(20))]),
        &settings(s.home.path()),
    )
    .unwrap();
    assert_eq!(
        (report.outcome, report.verdict, report.requests),
        (ReviewOutcome::Verdict, Some(VerdictKind::OnTrack), 2)
    );
    let requests = endpoint.model_requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].last_user_text.clone().unwrap_or_default();
    // The first answer, quoted back, and the validator's error naming the field.
    assert!(second.contains(PROSE), "{second}");
    assert!(
        second
            .contains("Your answer is not a valid verdict: `$` the answer is not one JSON object"),
        "{second}"
    );
    assert!(second.contains(GOAL), "{second}");
    // Both requests' tokens are counted.
    let first_only = requests[0].body.to_string().len();
    assert!(first_only > 0);
    assert!(report.tokens.output.unwrap() >= 2, "{:?}", report.tokens);
}

#[test]
fn malformed_twice_is_unparseable_and_recorded_without_a_verdict() {
    let s = sessions();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.script([
        Rule::on_any()
            .reply_text("not json")
            .include_side_requests()
            .once(),
        Rule::on_any()
            .reply_text(json!({"verdict": "great", "task": TASK, "gaps": []}).to_string())
            .include_side_requests(),
    ]);
    let report = review(
        &s.codex,
        &pool(vec![anthropic(&endpoint)]),
        &settings(s.home.path()),
    )
    .unwrap();
    assert_eq!(report.outcome, ReviewOutcome::Unparseable);
    assert_eq!(report.requests, 2);
    assert_eq!(endpoint.model_requests().len(), 2);
    assert_eq!((report.verdict, &report.task), (None, &None));
    assert_eq!(report.correction, None);
    let problem = report.problem.clone().unwrap();
    assert!(problem.contains(r#"verdict: is "great""#), "{problem}");

    let state = tempfile::tempdir().unwrap();
    record::record(&report, state.path(), &DecisionLog::new(state.path())).unwrap();
    let line = only_decision(state.path());
    assert_eq!(
        (&line["kind"], &line["outcome"], &line["guard"]),
        (
            &json!("review_failed"),
            &json!("unparseable"),
            &json!("invalid_answer")
        )
    );
    assert_eq!(line["details"].get("verdict"), None);
}

#[test]
fn a_429_storm_is_a_reviewer_failure_recorded_with_no_verdict() {
    let s = sessions();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply(Reply::http_error(429, "storm").header("retry-after", "0"))
            .include_side_requests(),
    );
    let report = review(
        &s.claude,
        &pool(vec![chat(&endpoint, Duration::from_secs(20))]),
        &settings(s.home.path()),
    )
    .unwrap();
    assert_eq!(report.outcome, ReviewOutcome::ReviewerFailed);
    assert_eq!(report.failure, Some(FailureKind::RateLimited));
    // One ask (the provider retried it within itself); no repair after a failure.
    assert_eq!(report.requests, 1);
    assert_eq!(
        endpoint.model_requests().len(),
        cross_agent_providers::retry::MAX_TRIES as usize
    );
    assert_eq!(
        (report.verdict, &report.correction, &report.gaps),
        (None, &None, &None)
    );
    assert!(report.problem.as_deref().unwrap().contains("429"));

    let state = tempfile::tempdir().unwrap();
    record::record(&report, state.path(), &DecisionLog::new(state.path())).unwrap();
    let line = only_decision(state.path());
    assert_eq!(
        (&line["kind"], &line["outcome"], &line["guard"]),
        (
            &json!("review_failed"),
            &json!("reviewer_failed"),
            &json!("rate_limited")
        )
    );
    assert_eq!(line["details"]["reviewer_family"], "xai");
    assert_eq!(line["details"].get("verdict"), None);
    assert_eq!(line["details"].get("has_correction"), None);
}

#[test]
fn a_reviewer_that_does_not_answer_in_time_is_a_reviewer_failure() {
    let s = sessions();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_any().reply(Reply::hang()).include_side_requests());
    let report = review(
        &s.claude,
        &pool(vec![chat(&endpoint, Duration::from_secs(1))]),
        &settings(s.home.path()),
    )
    .unwrap();
    assert_eq!(
        (report.outcome, report.failure, report.requests),
        (ReviewOutcome::ReviewerFailed, Some(FailureKind::Timeout), 1)
    );
    assert_eq!(report.verdict, None);
    assert!(report.duration_ms < 5_000, "{}", report.duration_ms);
}

#[test]
fn no_provider_of_another_family_is_no_reviewer_and_nothing_is_asked() {
    let s = sessions();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply_text(answer("on_track", &[], None))
            .include_side_requests(),
    );
    let same = pool(vec![
        provider(
            &format!(
                "anthropic {} TEST_KEY claude-sonnet",
                endpoint.anthropic_base_url()
            ),
            Duration::from_secs(5),
        ),
        // A local server (family `local`) serving a Claude model is still Claude.
        provider(
            &format!("chat {} - claude-proxy", endpoint.openai_base_url()),
            Duration::from_secs(5),
        ),
    ]);
    assert_eq!(same.providers()[1].family.as_str(), "local");
    let report = review(&s.claude, &same, &settings(s.home.path())).unwrap();
    assert_eq!(report.outcome, ReviewOutcome::NoReviewer);
    assert_eq!((report.reviewer.as_ref(), report.requests), (None, 0));
    let problem = report.problem.clone().unwrap();
    for said in ["anthropic", "providers.toml", "CROSS_AGENT_PROVIDERS"] {
        assert!(problem.contains(said), "{said}: {problem}");
    }
    assert!(endpoint.requests().is_empty(), "{:?}", endpoint.requests());

    // Naming a provider of the session's own family is refused, not obeyed.
    let named = ReviewSettings {
        reviewer: Some("anthropic:claude-sonnet".to_owned()),
        ..settings(s.home.path())
    };
    let error = review(&s.claude, &same, &named).unwrap_err();
    assert!(matches!(error, ReviewError::SameFamily { .. }), "{error:?}");

    let state = tempfile::tempdir().unwrap();
    record::record(&report, state.path(), &DecisionLog::new(state.path())).unwrap();
    let line = only_decision(state.path());
    assert_eq!(
        (&line["kind"], &line["outcome"]),
        (&json!("review_failed"), &json!("no_reviewer"))
    );
}

#[test]
fn a_session_of_an_unknown_family_is_refused_rather_than_guessed() {
    let s = sessions();
    // The real Claude transcript, its model renamed to one no family is known for.
    let home = tempfile::tempdir().unwrap();
    let from = s.home.claude_config().join("projects");
    let name = format!("{}.jsonl", s.claude);
    let project = std::fs::read_dir(&from)
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.path().join(&name).is_file())
        .unwrap();
    let to = home
        .path()
        .join(".claude/projects")
        .join(project.file_name());
    std::fs::create_dir_all(&to).unwrap();
    let text = std::fs::read_to_string(project.path().join(&name)).unwrap();
    let model = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| {
            v["message"]["model"]
                .as_str()
                .filter(|m| m.starts_with("claude"))
                .map(str::to_owned)
        })
        .unwrap();
    std::fs::write(to.join(&name), text.replace(&model, "mystery-1")).unwrap();

    let endpoint = ModelEndpoint::start().unwrap();
    let error = review(
        &s.claude,
        &pool(vec![responses(&endpoint)]),
        &settings(home.path()),
    )
    .unwrap_err();
    assert!(
        matches!(error, ReviewError::UnknownFamily { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("mystery-1"), "{error}");
    assert!(endpoint.requests().is_empty());
}

#[test]
fn a_recorded_review_is_read_back_and_its_decision_line_holds_no_text() {
    let s = sessions();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_any()
            .reply_text(answer("off_track", &[GAP], Some(CORRECTION)))
            .include_side_requests(),
    );
    let report = review(
        &s.codex,
        &pool(vec![anthropic(&endpoint)]),
        &settings(s.home.path()),
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let path = record::record(&report, state.path(), &DecisionLog::new(state.path())).unwrap();
    assert_eq!(
        path,
        record::dir(state.path()).join(format!("{}.json", report.id))
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        (mode(&path), mode(&record::dir(state.path()))),
        (0o600, 0o700)
    );
    assert_eq!(record::load(state.path(), &report.id).unwrap(), report);
    let (listed, problems) = record::list(state.path()).unwrap();
    assert_eq!((listed, problems), (vec![report.clone()], vec![]));

    let line = only_decision(state.path());
    assert_eq!(
        line["details"],
        json!({
            "review_id": report.id,
            "session_family": "openai",
            "session_model": "gpt-5.1-codex",
            "duration_ms": report.duration_ms,
            "requests": 1,
            "reviewed_to_offset": report.reviewed_to.offset,
            "reviewer_provider": "anthropic:claude-reviewer",
            "reviewer_model": "claude-reviewer",
            "reviewer_family": "anthropic",
            "input_tokens": report.tokens.input.unwrap(),
            "output_tokens": report.tokens.output.unwrap(),
            "verdict": "off_track",
            "gap_count": 1,
            "has_correction": true,
        })
    );
    assert_eq!(
        (
            &line["kind"],
            &line["outcome"],
            &line["session"],
            &line["agent"]
        ),
        (
            &json!("review_verdict"),
            &json!("verdict"),
            &json!(s.codex),
            &json!("codex")
        )
    );
    let log = std::fs::read_to_string(state.path().join("decisions.jsonl")).unwrap();
    for text in [TASK, GAP, CORRECTION, GOAL, LATEST, "withheld"] {
        assert!(!log.contains(text), "{text:?} in the log: {log}");
    }

    // A link where a report should be is refused, naming it.
    let other = tempfile::tempdir().unwrap();
    let planted = other.path().join("planted.json");
    std::fs::copy(&path, &planted).unwrap();
    let link = record::dir(state.path()).join("rv_link.json");
    std::os::unix::fs::symlink(&planted, &link).unwrap();
    let error = record::load(state.path(), "rv_link")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("rv_link.json") && error.contains("symbolic link"),
        "{error}"
    );
    // And an id that is not one never becomes a path.
    assert!(matches!(
        record::load(state.path(), "../../etc/passwd"),
        Err(ReviewError::BadId { .. })
    ));
}

/// The one decision line written in `home`.
fn only_decision(home: &Path) -> Value {
    let log = std::fs::read_to_string(home.join("decisions.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    lines.into_iter().next().unwrap()
}
