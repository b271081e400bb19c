//! `cross-agent usage` over a temporary HOME holding a Claude transcript and a Codex rollout:
//! the JSON and table totals (hand-computed), an unknown model's cost shown as unknown,
//! `--prices`, the override file's refusal, and argument errors; the daemon's report equal to the
//! direct read's on files the real Claude Code and Codex wrote, as they grow.

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

/// A temporary HOME; `usage` starts the daemon of its `CROSS_AGENT_HOME` when none answers, and
/// it ends with the test.
struct Store(TempDir);

impl Store {
    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        cross_agent_testkit::leaks::stop_daemons(
            &self.path().join("xa"),
            cross_agent_testkit::leaks::SETTLE,
        );
    }
}

fn store() -> Store {
    let dir = Store(TempDir::new().unwrap());
    let project = dir.path().join(".claude/projects/-work-shop");
    std::fs::create_dir_all(&project).unwrap();
    let assistant = |msg: &str, model: &str, input: u64, output: u64| {
        json!({"type": "assistant", "sessionId": "c1", "requestId": format!("r-{msg}"),
            "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/work/shop",
            "message": {"id": msg, "model": model, "usage": {"input_tokens": input, "output_tokens": output}}})
        .to_string()
    };
    // A user line too, so `sessions` lists it (it carries no usage).
    let user = json!({"type": "user", "sessionId": "c1", "timestamp": "2026-12-01T09:59:00.000Z",
        "cwd": "/work/shop", "uuid": "u0", "message": {"role": "user", "content": "count me"}})
    .to_string();
    let lines = [
        user,
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
        line(
            "event_msg",
            json!({"type": "user_message", "message": "count me"}),
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

/// `usage` read directly (no daemon can start) and through the daemon's live index.
fn both_ways(home: &Path, env: &[(&str, &Path)], args: &[&str]) -> (String, String) {
    let with = |daemon_bin: Option<&Path>| {
        let mut cmd = cmd(home, args);
        if daemon_bin.is_some() {
            // A state home of its own, where no daemon ever runs to be asked.
            cmd.env("CROSS_AGENT_HOME", home.join("xa-direct"));
        }
        for (name, value) in env {
            cmd.env(name, value);
        }
        if let Some(bin) = daemon_bin {
            cmd.env("CROSS_AGENT_DAEMON_BIN", bin);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            stderr.contains("reading the stores directly"),
            daemon_bin.is_some(),
            "{stderr}"
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let cannot_start = home.join("no-such-daemon");
    let direct = with(Some(&cannot_start));
    let daemon = with(None);
    (direct, daemon)
}

/// The daemon's report equals the direct read's — for every grouping, table and JSON — on the
/// files the real pinned Claude Code and Codex write (a resumed Codex thread included), and
/// again after each grows by another turn: the daemon then reads only what was appended.
#[test]
fn the_daemon_and_the_direct_read_give_the_same_report_on_a_real_store() {
    use cross_agent_testkit::agents::{AgentHome, Claude, Codex};
    use cross_agent_testkit::{ModelEndpoint, Reply, Rule, ScriptedUsage};

    let endpoint = ModelEndpoint::start().unwrap();
    let usage = |input, output, cache_read| ScriptedUsage {
        input,
        output,
        cache_read,
        cache_write_5m: 30,
        ..ScriptedUsage::default()
    };
    endpoint.script([
        Rule::on_user_text("turn one").reply(Reply::text("One.").usage(usage(100, 10, 1000))),
        Rule::on_user_text("turn two").reply(Reply::text("Two.").usage(usage(200, 20, 2000))),
    ]);
    let agents = AgentHome::new().unwrap();
    let project = agents.project("shop").unwrap();
    let claude = Claude::new(&agents, &endpoint.anthropic_base_url()).unwrap();
    let codex = Codex::new(&agents, &endpoint.openai_base_url()).unwrap();
    let claude_run = claude
        .turn(&project, "turn one")
        .arg("--model")
        .arg("claude-sonnet-4-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let session = claude_run.session_id().unwrap().to_owned();
    let codex_run = codex
        .turn(&project, "turn one")
        .arg("-m")
        .arg("gpt-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let thread = codex_run.thread_id().unwrap().to_owned();

    let home = Store(TempDir::new().unwrap());
    let config = agents.claude_config();
    let codex_home = agents.codex_home();
    let env = [
        ("CLAUDE_CONFIG_DIR", config.as_path()),
        ("CODEX_HOME", codex_home.as_path()),
    ];
    let compare = |when: &str| {
        for by in ["session", "agent", "model", "day", "cwd"] {
            for json in [false, true] {
                let mut args = vec!["--by", by];
                if json {
                    args.push("--json");
                }
                let (direct, daemon) = both_ways(home.path(), &env, &args);
                assert_eq!(daemon, direct, "{when}: {args:?}");
            }
        }
        let (direct, _) = both_ways(home.path(), &env, &["--json", "--by", "agent"]);
        serde_json::from_str::<Value>(&direct).unwrap()
    };
    let first = compare("after one turn each");
    assert_eq!(first["total"]["calls"], json!(2), "{first}");

    // Both grow by a turn: the Claude session resumed, the Codex thread resumed.
    claude
        .turn(&project, "turn two")
        .resume(&session)
        .arg("--model")
        .arg("claude-sonnet-4-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    codex
        .turn(&project, "turn two")
        .resume(&thread)
        .arg("-m")
        .arg("gpt-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let second = compare("after a second turn each");
    assert_eq!(second["total"]["calls"], json!(4), "{second}");
    // Codex: input net of cached, per call; Claude: as the endpoint reported it.
    assert_eq!(
        second["total"]["tokens"]["output"],
        json!(2 * (10 + 20)),
        "{second}"
    );
}

/// `cross-agent sessions` (`--json` or not) over `dir`, through its daemon (started by the first).
fn sessions(dir: &Store, json: bool) -> String {
    let mut cmd = Command::cargo_bin("cross-agent").unwrap();
    cmd.env_clear()
        .env("HOME", dir.path())
        .env("CROSS_AGENT_HOME", dir.path().join("xa"))
        .arg("sessions");
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `sessions` shows what each session cost so far: a column in the table and `cost_usd` /
/// `usage_tokens` in `--json` — `null` for a session with an unpriced call, never 0.
#[test]
fn sessions_show_each_sessions_cost_so_far() {
    let dir = store();
    let sessions = |json: bool| sessions(&dir, json);
    let listing: Value = serde_json::from_str(&sessions(true)).unwrap();
    let c1 = &listing["claude"][0];
    assert_eq!(c1["session_id"], json!("c1"));
    // m1 is priced, m2 (claude-mystery-1) is not: the session's cost is unknown.
    assert_eq!(c1["cost_usd"], Value::Null, "{c1}");
    assert_eq!(c1["usage_tokens"], json!(1000 + 100 + 5 + 5), "{c1}");
    let x1 = &listing["codex"][0];
    assert_eq!(x1["cost_usd"], json!("0.003625"), "{x1}");
    assert_eq!(x1["usage_tokens"], json!(1000 + 3000 + 200), "{x1}");

    let table = sessions(false);
    assert!(table.lines().next().unwrap().ends_with("COST"), "{table}");
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("{id} in {table}"))
            .to_owned()
    };
    assert!(row("c1").ends_with("unknown"), "{table}");
    assert!(row("x1").ends_with("$0.00"), "{table}");
}

/// The daemon keeps the price table it read (and each session's cost priced with it) while
/// nothing moved: `prices.toml` written, then changed, between two listings through the same
/// daemon is priced by the next listing each time, with no transcript touched.
#[test]
fn sessions_price_an_edited_prices_toml_on_the_next_listing() {
    let dir = store();
    let costs = || {
        let listing: Value = serde_json::from_str(&sessions(&dir, true)).unwrap();
        (
            listing["claude"][0]["cost_usd"].clone(),
            listing["codex"][0]["cost_usd"].clone(),
        )
    };
    assert_eq!(costs(), (Value::Null, json!("0.003625")));
    assert_eq!(costs(), (Value::Null, json!("0.003625")), "warm, unchanged");

    let xa = dir.path().join("xa");
    // The unknown model priced, Codex's input twice the shipped price: 1000 × 2.5 + 3000 ×
    // 0.125 + 200 × 10 per million.
    let prices = xa.join("prices.toml");
    std::fs::write(
        &prices,
        "[models.\"claude-mystery-1\"]\ninput = \"1\"\noutput = \"1\"\n\n\
         [models.\"gpt-5-codex\"]\ninput = \"2.5\"\noutput = \"10\"\ncache_read = \"0.125\"\n",
    )
    .unwrap();
    // Writable by its owner only, or it is refused.
    std::fs::set_permissions(&prices, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (claude, codex) = costs();
    assert!(
        claude.is_string(),
        "the mystery model is priced now: {claude}"
    );
    assert_eq!(codex, json!("0.004875"));

    // Changed again (same length: only its bytes and times tell).
    std::fs::write(
        &prices,
        "[models.\"claude-mystery-1\"]\ninput = \"1\"\noutput = \"1\"\n\n\
         [models.\"gpt-5-codex\"]\ninput = \"5.0\"\noutput = \"10\"\ncache_read = \"0.125\"\n",
    )
    .unwrap();
    assert_eq!(costs().1, json!("0.007375"));

    std::fs::remove_file(&prices).unwrap();
    assert_eq!(costs(), (Value::Null, json!("0.003625")), "the file gone");
}

/// Each session's `(cost_usd, usage_tokens)` in a `sessions --json` listing, by agent and id.
fn listed_costs(listing: &str) -> std::collections::BTreeMap<String, (Value, Value)> {
    let listing: Value = serde_json::from_str(listing).unwrap();
    let mut costs = std::collections::BTreeMap::new();
    for (agent, sessions) in listing.as_object().unwrap() {
        for s in sessions.as_array().unwrap() {
            costs.insert(
                format!("{agent}/{}", s["session_id"].as_str().unwrap()),
                (s["cost_usd"].clone(), s["usage_tokens"].clone()),
            );
        }
    }
    costs
}

/// The listing's costs through the daemon stay exact as the stores change under it — a reply
/// appended, a transcript rewritten shorter, a new rollout, a rollout removed — each in one
/// agent's store while the other's costs stay as they were: after each, the daemon's listing
/// (its usage table made again, only the texts of sessions that moved made again) is the
/// direct read's.
#[test]
fn the_listing_costs_stay_exact_as_the_stores_change() {
    let dir = store();
    let direct = || {
        let out = Command::cargo_bin("cross-agent")
            .unwrap()
            .env_clear()
            .env("HOME", dir.path())
            .env("CROSS_AGENT_HOME", dir.path().join("xa-direct"))
            .env("CROSS_AGENT_DAEMON_BIN", dir.path().join("no-such-daemon"))
            .args(["sessions", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        listed_costs(&String::from_utf8(out.stdout).unwrap())
    };
    // The daemon learns of a change by a notification: asked until it agrees, for a while.
    let agree = |when: &str| {
        let want = direct();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            let got = listed_costs(&sessions(&dir, true));
            if got == want {
                return want;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{when}: the daemon's costs {got:?}, the direct read's {want:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    let codex_line = |kind: &str, payload: Value| {
        json!({"timestamp": "2026-12-01T12:00:00.000Z", "type": kind, "payload": payload})
            .to_string()
    };
    let token_count = |input: u64, output: u64| {
        let usage = json!({"input_tokens": input, "cached_input_tokens": 0,
            "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output});
        codex_line(
            "event_msg",
            json!({"type": "token_count",
                "info": {"total_token_usage": usage, "last_token_usage": usage}}),
        )
    };
    let first = agree("at first");
    assert_eq!(first["codex/x1"].0, json!("0.003625"));

    // A reply appended to the Codex rollout: its cost moves, the Claude session's does not.
    let rollouts = dir.path().join(".codex/sessions/2026/12/01");
    let x1 = rollouts.join("rollout-2026-12-01T11-00-00-x1.jsonl");
    let mut file = std::fs::OpenOptions::new().append(true).open(&x1).unwrap();
    std::io::Write::write_all(&mut file, (token_count(9000, 700) + "\n").as_bytes()).unwrap();
    drop(file);
    let appended = agree("after an append to x1");
    assert_ne!(appended["codex/x1"], first["codex/x1"]);
    assert_eq!(appended["claude/c1"], first["claude/c1"]);

    // The Claude transcript rewritten shorter: the unpriced call gone, so it has a cost now.
    let c1 = dir.path().join(".claude/projects/-work-shop/c1.jsonl");
    let text = std::fs::read_to_string(&c1).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("claude-mystery-1"))
        .collect();
    std::fs::write(&c1, kept.join("\n") + "\n").unwrap();
    let rewritten = agree("after c1 was rewritten");
    assert!(rewritten["claude/c1"].0.is_string(), "{rewritten:?}");
    assert_eq!(rewritten["codex/x1"], appended["codex/x1"]);

    // A new rollout, then the first one removed.
    let lines = [
        codex_line(
            "session_meta",
            json!({"id": "x2", "cwd": "/work/shop", "source": "exec"}),
        ),
        codex_line(
            "event_msg",
            json!({"type": "user_message", "message": "count me too"}),
        ),
        codex_line("turn_context", json!({"model": "gpt-5-codex"})),
        token_count(500, 50),
    ];
    std::fs::write(
        rollouts.join("rollout-2026-12-01T12-00-00-x2.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let added = agree("after x2 was written");
    assert!(added["codex/x2"].0.is_string(), "{added:?}");
    std::fs::remove_file(&x1).unwrap();
    let removed = agree("after x1 was removed");
    assert!(!removed.contains_key("codex/x1"), "{removed:?}");
    assert_eq!(removed["codex/x2"], added["codex/x2"]);
    assert_eq!(removed["claude/c1"], rewritten["claude/c1"]);
}
