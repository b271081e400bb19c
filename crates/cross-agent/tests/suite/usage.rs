//! `cross-agent usage` over a temporary HOME holding a Claude transcript and a Codex rollout:
//! the JSON and table totals (hand-computed), an unknown model's cost shown as unknown,
//! `--prices`, the override file's refusal, and argument errors.

use std::path::Path;

use assert_cmd::Command;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

fn cmd(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("cross-agent").unwrap();
    cmd.env_clear()
        .env("HOME", home)
        .env("CROSS_AGENT_HOME", home.join("xa"))
        .arg("usage")
        .args(args);
    cmd
}

fn run(home: &Path, args: &[&str]) -> String {
    let out = cmd(home, args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn store() -> TempDir {
    let dir = TempDir::new().unwrap();
    let project = dir.path().join(".claude/projects/-work-shop");
    std::fs::create_dir_all(&project).unwrap();
    let assistant = |msg: &str, model: &str, input: u64, output: u64| {
        json!({"type": "assistant", "sessionId": "c1", "requestId": format!("r-{msg}"),
            "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/work/shop",
            "message": {"id": msg, "model": model, "usage": {"input_tokens": input, "output_tokens": output}}})
        .to_string()
    };
    let lines = [
        assistant("m1", "claude-haiku-4-5-20251001", 1000, 100),
        assistant("m1", "claude-haiku-4-5-20251001", 1000, 100),
        assistant("m2", "claude-mystery-1", 5, 5),
    ];
    std::fs::write(project.join("c1.jsonl"), lines.join("\n") + "\n").unwrap();

    let rollouts = dir.path().join(".codex/sessions/2026/12/01");
    std::fs::create_dir_all(&rollouts).unwrap();
    let line = |kind: &str, payload: Value| {
        json!({"timestamp": "2026-12-01T11:00:00.000Z", "type": kind, "payload": payload})
            .to_string()
    };
    let usage = json!({"input_tokens": 4000, "cached_input_tokens": 3000, "output_tokens": 200,
        "reasoning_output_tokens": 50, "total_tokens": 4200});
    let lines = [
        line(
            "session_meta",
            json!({"id": "x1", "cwd": "/work/shop", "source": "exec"}),
        ),
        line("turn_context", json!({"model": "gpt-5-codex"})),
        line(
            "event_msg",
            json!({"type": "token_count",
            "info": {"total_token_usage": usage, "last_token_usage": usage}}),
        ),
    ];
    std::fs::write(
        rollouts.join("rollout-2026-12-01T11-00-00-x1.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    dir
}

#[test]
fn usage_by_agent_totals_and_unknown_cost() {
    let dir = store();
    let out: Value = serde_json::from_str(&run(dir.path(), &["--by", "agent", "--json"])).unwrap();
    let rows: Vec<(Value, Value, Value, Value)> = out["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["key"].clone(),
                r["calls"].clone(),
                r["cost_usd"].clone(),
                r["priced_cost_usd"].clone(),
            )
        })
        .collect();
    // Codex (gpt-5-codex): 1000×1.25 + 3000×0.125 + 200×10 = 1250 + 375 + 2000 = 3625 µ$.
    // Claude: m1 once (Haiku 4.5: 1000×1 + 100×5 = 1500 µ$) and m2 of an unpriced model.
    assert_eq!(
        rows,
        vec![
            (
                json!("codex"),
                json!(1),
                json!("0.003625"),
                json!("0.003625")
            ),
            (json!("claude"), json!(2), Value::Null, json!("0.001500")),
        ]
    );
    assert_eq!(out["total"]["unpriced_models"], json!(["claude-mystery-1"]));

    let table = run(dir.path(), &["--by", "model"]);
    assert!(table.contains("unknown"), "{table}");
    assert!(table.contains("no price for: claude-mystery-1"), "{table}");
    assert!(table.contains("$0.01 + unknown (1)"), "{table}");
}

#[test]
fn usage_since_leaves_older_calls_out() {
    let dir = store();
    let out: Value = serde_json::from_str(&run(
        dir.path(),
        &["--since", "2026-12-01T10:30:00Z", "--json"],
    ))
    .unwrap();
    assert_eq!(out["total"]["calls"], json!(1));
    let err = cmd(dir.path(), &["--since", "yesterday-ish"])
        .output()
        .unwrap();
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("`yesterday-ish` is not a time"));
    let err = cmd(dir.path(), &["--by", "colour"]).output().unwrap();
    assert!(String::from_utf8_lossy(&err.stderr).contains("`colour` is not a grouping"));
}

#[test]
fn usage_prices_and_a_linked_override_is_refused() {
    let dir = store();
    let prices: Value = serde_json::from_str(&run(dir.path(), &["--prices", "--json"])).unwrap();
    assert_eq!(
        prices["models"]["claude-sonnet-4-5"]["tier"]["above"],
        json!(200000)
    );
    assert_eq!(prices["models"]["gpt-5"]["input"], json!("1.25"));
    // Each model says where its price was read and when.
    assert_eq!(
        prices["models"]["claude-opus-5-5"]["source"],
        json!("https://platform.claude.com/docs/en/models/opus-5-5/overview")
    );
    assert_eq!(
        prices["models"]["claude-opus-5-5"]["checked"],
        json!("2026-12-06")
    );
    let text = run(dir.path(), &["--prices"]);
    let row = text
        .lines()
        .find(|l| l.starts_with("claude-opus-5-5 "))
        .unwrap();
    assert!(row.contains("2026-12-06"), "{row}");
    let number = row.split_whitespace().last().unwrap();
    assert!(
        text.contains(&format!(
            "{number} https://platform.claude.com/docs/en/models/opus-5-5/overview"
        )),
        "{text}"
    );

    let xa = dir.path().join("xa");
    std::fs::create_dir_all(&xa).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", xa.join("prices.toml")).unwrap();
    let out = cmd(dir.path(), &["--prices"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("prices.toml: it is a symbolic link"), "{err}");
}

/// `--limits`: Codex's latest windows, the reset as a time and "in 2h 10m" from now; none
/// recorded said so plainly.
#[test]
fn usage_limits_shows_the_latest_codex_windows() {
    let dir = store();
    assert_eq!(
        run(dir.path(), &["--limits"]),
        "codex: no rate limits recorded yet\n"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&run(dir.path(), &["--limits", "--json"])).unwrap(),
        json!({"codex": null})
    );

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let event = |at: &str, used: f64, resets_at: i64| {
        json!({"timestamp": at, "type": "event_msg", "payload": {"type": "token_count", "info": null,
            "rate_limits": {
                "primary": {"used_percent": used, "window_minutes": 300, "resets_at": resets_at},
                "secondary": {"used_percent": 12.0, "window_minutes": 10080,
                    "resets_at": now + 3 * 86_400 + 4 * 3600 + 1800}}}})
        .to_string()
    };
    let lines = [
        json!({"timestamp": "2026-12-02T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": "x2", "cwd": "/work/shop", "source": "exec"}})
        .to_string(),
        event("2026-12-02T09:00:01.000Z", 40.0, now + 60),
        // The latest event wins; 30 s of slack so the minutes hold while the test runs.
        event(
            "2026-12-02T09:05:00.000Z",
            42.5,
            now + 2 * 3600 + 10 * 60 + 30,
        ),
    ];
    std::fs::write(
        dir.path()
            .join(".codex/sessions/2026/12/01/rollout-2026-12-02T09-00-00-x2.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let table = run(dir.path(), &["--limits"]);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().filter(|w| !w.ends_with('Z')).collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["CODEX", "USED", "WINDOW", "RESETS"],
            vec!["primary", "42.5%", "5h", "(in", "2h", "10m)"],
            vec!["secondary", "12.0%", "7d", "(in", "3d", "4h)"],
            vec!["as", "Codex", "reported", "at"],
        ],
        "{table}"
    );
    let json: Value = serde_json::from_str(&run(dir.path(), &["--limits", "--json"])).unwrap();
    let primary = &json["codex"]["windows"][0];
    assert_eq!(
        (
            &primary["name"],
            &primary["used_percent"],
            &primary["window_minutes"]
        ),
        (&json!("primary"), &json!(42.5), &json!(300))
    );
    let secs = primary["resets_in_seconds"].as_u64().unwrap();
    assert!((7_770..=7_830).contains(&secs), "{secs}");
    assert_eq!(json["codex"]["observed_at"], "2026-12-02T09:05:00.000Z");
}
