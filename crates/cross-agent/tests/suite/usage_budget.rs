//! Budgets and `/limits` through the built binary: a daemon polling the fake Bot API, a paired
//! person, a Claude transcript of today whose spend crosses `usage.budget.daily` at 80 % and at
//! 100 % — exactly one Telegram notice and one `usage_budget` decision line each, none again
//! on later passes or after the daemon is killed and started again. `/limits` answers with
//! Codex's windows from a rollout. `cross-agent usage` shows today's share and refuses a
//! malformed budget by its key.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::telegram::{Env, WAIT, bot, text, wait_until, wait_within};

const PERSON: i64 = 5001;
const SONNET: &str = "claude-sonnet-4-5-20250929";

/// An assistant reply of today, `output` tokens of `model` (Sonnet 4.5: $15 per million).
fn reply(id: &str, model: &str, output: u64) -> String {
    json!({"type": "assistant", "sessionId": "c1", "requestId": format!("r-{id}"),
        "timestamp": cross_agent_protocol::timestamp::now_rfc3339(), "cwd": "/work/shop",
        "message": {"id": id, "model": model, "role": "assistant",
            "content": [{"type": "text", "text": "x"}],
            "usage": {"input_tokens": 0, "output_tokens": output}}})
    .to_string()
}

fn append(path: &Path, line: &str) {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "{line}").unwrap();
}

fn write_config(state: &Path, text: &str) {
    let path = state.join("config.toml");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A daemon polling the fake bot, its passes every second, and a paired person.
fn paired() -> (Env, cross_agent_testkit::telegram::FakeBotApi) {
    let (token, api) = bot();
    let mut env = Env::new(&api);
    env.extra_env
        .push(("CROSS_AGENT_USAGE_BUDGET_PASS_SECONDS".into(), "1".into()));
    env.set_up_and_poll(&token);
    let code = env.pair_code();
    api.push_message(PERSON, PERSON, &format!("/pair {code}"));
    assert!(wait_until(|| env.decisions().iter().any(|d| d["kind"]
        == "telegram_pair"
        && d["outcome"] == "paired")));
    (env, api)
}

fn budget_notices(api: &cross_agent_testkit::telegram::FakeBotApi) -> Vec<String> {
    api.calls_to("sendMessage")
        .into_iter()
        .filter_map(|c| c.body["text"].as_str().map(str::to_owned))
        .filter(|t| t.contains("daily budget"))
        .collect()
}

fn budget_lines(env: &Env) -> Vec<Value> {
    env.decisions()
        .into_iter()
        .filter(|d| d["kind"] == "usage_budget")
        .collect()
}

#[test]
fn a_budget_is_announced_once_at_80_and_once_at_100_and_not_again_after_a_restart() {
    let (mut env, api) = paired();
    let project = env.user.join(".claude/projects/-work-shop");
    std::fs::create_dir_all(&project).unwrap();
    let transcript = project.join("c1.jsonl");
    // $0.825 of a $1.00 budget (82 %), and one call of a model with no price.
    append(&transcript, &reply("m1", SONNET, 55_000));
    append(&transcript, &reply("m2", "claude-mystery-1", 10));
    write_config(&env.state, "[usage.budget]\ndaily = \"1.00\"\n");

    assert!(
        wait_within(WAIT, || budget_notices(&api).len() == 1),
        "{:#?}",
        api.sent()
    );
    let today = &cross_agent_protocol::timestamp::now_rfc3339()[..10];
    assert_eq!(
        budget_notices(&api),
        [format!(
            "⚠️ 80% of the daily budget (all agents) is spent: $0.83 + unknown for 1 call of \
             $1.00 on {today} (UTC, 82%; only priced calls count)."
        )]
    );
    // More spend inside the same threshold, several passes: nothing more.
    append(&transcript, &reply("m3", SONNET, 1_000));
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(budget_notices(&api).len(), 1);

    // Past 100 % ($1.005): one more.
    append(&transcript, &reply("m4", SONNET, 11_000));
    assert!(wait_within(WAIT, || budget_notices(&api).len() == 2));
    assert!(
        budget_notices(&api)[1].starts_with(
            "🛑 The daily budget (all agents) is used up: $1.01 + unknown for 1 call of $1.00"
        ),
        "{:?}",
        budget_notices(&api)
    );
    let lines: Vec<(Value, Value, Value, Value, Value)> = budget_lines(&env)
        .iter()
        .map(|d| {
            (
                d["outcome"].clone(),
                d["details"]["budget"].clone(),
                d["details"]["spent_usd"].clone(),
                d["details"]["limit_usd"].clone(),
                d["details"]["unpriced_calls"].clone(),
            )
        })
        .collect();
    let spent = |s: &str| json!(s);
    assert_eq!(
        lines,
        [
            (
                json!("reached_80"),
                json!("daily"),
                spent("0.825000"),
                json!("1.000000"),
                json!(1)
            ),
            (
                json!("reached_100"),
                json!("daily"),
                spent("1.005000"),
                json!("1.000000"),
                json!(1)
            ),
        ],
        "{:#?}",
        budget_lines(&env)
    );
    assert!(
        budget_lines(&env)
            .iter()
            .all(|d| d["details"]["day"] == today)
    );

    // Killed and started again: the state file says both were announced.
    env.kill_daemon();
    env.start_daemon();
    assert!(wait_until(|| env.status()["poller"]["state"] == "polling"));
    append(&transcript, &reply("m5", SONNET, 1_000));
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(budget_notices(&api).len(), 2, "{:#?}", budget_notices(&api));
    assert_eq!(budget_lines(&env).len(), 2);

    // `cross-agent usage` shows today's share.
    let out = env.run(&["usage", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["budgets"],
        json!({"day": today, "budgets": [{"budget": "daily", "limit_usd": "1.000000",
            "spent_usd": "1.020000", "unpriced_calls": 1, "percent": 102}]})
    );
    let table = text(&env.run(&["usage"]).stdout);
    assert!(
        table.contains(&format!(
            "budgets today ({today} UTC):\n  daily: $1.02 + unknown for 1 call of $1.00 (102%)"
        )),
        "{table}"
    );
}

#[test]
fn limits_on_the_phone_show_codexs_windows() {
    let (env, api) = paired();
    let rollouts = env.user.join(".codex/sessions/2026/12/01");
    std::fs::create_dir_all(&rollouts).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let lines = [
        json!({"timestamp": "2026-12-02T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": "x2", "cwd": "/work/shop", "source": "exec"}}),
        json!({"timestamp": "2026-12-02T09:05:00.000Z", "type": "event_msg",
            "payload": {"type": "token_count", "info": null, "rate_limits": {
                "primary": {"used_percent": 42.5, "window_minutes": 300,
                    "resets_at": now + 2 * 3600 + 10 * 60 + 30},
                "secondary": {"used_percent": 12.0, "window_minutes": 10080,
                    "resets_at": now + 3 * 86_400 + 4 * 3600 + 1800}}}}),
    ]
    .map(|l| l.to_string());
    std::fs::write(
        rollouts.join("rollout-2026-12-02T09-00-00-x2.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    api.push_message(PERSON, PERSON, "/limits");
    let answer = api
        .wait_for_call("sendMessage", WAIT, |b| {
            b["text"]
                .as_str()
                .unwrap_or("")
                .contains("Codex rate limits")
        })
        .expect("an answer to /limits");
    let answer = answer.body["text"].as_str().unwrap().to_owned();
    assert!(
        answer.contains("• primary (5h window): 42.5% used, resets ")
            && answer.contains("(in 2h 10m)"),
        "{answer}"
    );
    assert!(
        answer.contains("• secondary (7d window): 12.0% used, resets ")
            && answer.contains("(in 3d 4h)"),
        "{answer}"
    );
}

#[test]
fn usage_refuses_a_malformed_budget_naming_its_key() {
    let (_, api) = bot();
    let env = Env::new(&api);
    std::fs::create_dir_all(&env.state).unwrap();
    std::fs::set_permissions(&env.state, std::fs::Permissions::from_mode(0o700)).unwrap();
    write_config(&env.state, "[usage.budget]\ndialy = \"20\"\n");
    let out = env.run(&["usage"]);
    assert!(!out.status.success());
    let error = text(&out.stderr);
    assert!(
        error.contains("config.toml: usage.budget.dialy is not a budget"),
        "{error}"
    );
    write_config(&env.state, "[usage.budget]\ncodex = \"five\"\n");
    let error = text(&env.run(&["usage"]).stderr);
    assert!(
        error.contains("usage.budget.codex: `five` is not an amount of dollars"),
        "{error}"
    );
}
