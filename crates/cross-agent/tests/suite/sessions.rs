//! `cross-agent sessions` over a temporary HOME holding all three agents' stores: the table, the
//! `--json` shape, the filters, and `resolve` with its exit codes.
//!
//! The stores are written with the testkit builders in the shapes the real programs write
//! (Claude Code 2.1.332 and Codex 0.171.0 as recorded in `shared/observed/`; Grok Build from its
//! public descriptions, as `stores::grok` documents).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use cross_agent_testkit::synthetic_stores::{
    ClaudeTranscript, CodexRollout, GrokSession, codex_thread_name, now_millis, rfc3339,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use unicode_width::UnicodeWidthStr;

const MINUTE: i64 = 60_000;

const CODEX_NAMED: &str = "019a0000-0000-7000-8000-00000000c0de";
const CODEX_PLAIN: &str = "019a0000-0000-7000-8000-00000000c0df";

/// A HOME with sessions of every agent, and "now" as the fixture saw it.
struct Store {
    home: TempDir,
    now: i64,
}

impl Store {
    fn new() -> Store {
        let home = TempDir::new().unwrap();
        let now = now_millis();
        let h = home.path();

        // Claude: a named session 10 minutes ago, a generated-title one 2 days ago, and two
        // sessions that share a name.
        let mut named = ClaudeTranscript::new(h, "/work/api", "c-named");
        named
            .user("fix the failing tests", now - 11 * MINUTE)
            .tool_use("cargo test", now - 10 * MINUTE - 2_000)
            .tool_result("ok", now - 10 * MINUTE - 1_000)
            .custom_title("billing-api")
            .assistant_text("Fixed.", now - 10 * MINUTE);
        named.write().unwrap();
        let mut plain = ClaudeTranscript::new(h, "/work/web", "c-plain");
        plain
            .user("explain what this function does", now - 2 * 1440 * MINUTE)
            .assistant_text("It parses.", now - 2 * 1440 * MINUTE + 1_000);
        plain.write().unwrap();
        for (id, cwd, ago) in [("c-dup-1", "/work/a", 30), ("c-dup-2", "/work/b", 60)] {
            let mut t = ClaudeTranscript::new(h, cwd, id);
            t.user("hello", now - ago * MINUTE)
                .custom_title("dup")
                .assistant_text("Hi.", now - ago * MINUTE + 1_000);
            t.write().unwrap();
        }

        // Codex: one thread named in session_index.jsonl, one mid-turn (a tool call, no answer).
        let mut r = CodexRollout::new(h, "/work/api", CODEX_NAMED, now - 300 * MINUTE);
        r.user("port the parser", now - 299 * MINUTE)
            .answer("Ported.", now - 298 * MINUTE);
        r.write().unwrap();
        codex_thread_name(h, CODEX_NAMED, "parser-port", now - 297 * MINUTE).unwrap();
        let mut busy = CodexRollout::new(h, "/work/web", CODEX_PLAIN, now - 5 * MINUTE);
        busy.user("profile the listing", now - 4 * MINUTE)
            .tool_call("cargo bench", "running", now - 3 * MINUTE);
        busy.write().unwrap();

        // Grok: renamed with /rename.
        let mut g = GrokSession::new(h, "/work/api", "grok-1", now - 20 * MINUTE);
        g.user("review the diff", now - 19 * MINUTE)
            .agent_chunk("Looks fine.", now - 18 * MINUTE)
            .turn_completed(now - 18 * MINUTE)
            .rename("reviewer");
        g.write().unwrap();

        Store { home, now }
    }

    fn path(&self) -> &Path {
        self.home.path()
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("cross-agent").unwrap();
        cmd.env("HOME", self.path())
            .env("CROSS_AGENT_HOME", self.path().join("xa"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("GROK_HOME")
            .env_remove("CROSS_AGENT_GROK_NAMES_DB")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("COPILOT_HOME")
            .env_remove("CROSS_AGENT_COPILOT_HOST_DB")
            .env_remove("CROSS_AGENT_COPILOT_SESSION_DIR")
            .env_remove("CROSS_AGENT_COPILOT_SDK_SESSION_DIR")
            .env_remove("CROSS_AGENT_COPILOT_ENDPOINT_DIR")
            .env_remove("CROSS_AGENT_ACTIVE_WINDOW_MIN")
            .env_remove("CROSS_AGENT_NAME_SCAN_LIMIT")
            .env_remove("CROSS_AGENT_CODEX_SCAN_LIMIT")
            .env_remove("CROSS_AGENT_SCOPE")
            .current_dir(self.path());
        cmd
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.cmd().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn claude_path(&self, cwd: &str, id: &str) -> PathBuf {
        ClaudeTranscript::new(self.path(), cwd, id).path
    }
}

impl Drop for Store {
    /// `sessions` starts the daemon of its home when none answers: it ends with the test.
    fn drop(&mut self) {
        cross_agent_testkit::leaks::stop_daemons(
            &self.path().join("xa"),
            cross_agent_testkit::leaks::SETTLE,
        );
    }
}

fn ids(entries: &Value) -> Vec<&str> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["session_id"].as_str().unwrap())
        .collect()
}

#[test]
fn json_lists_every_agent_newest_first_with_the_documented_fields() {
    let store = Store::new();
    let listing = store.json(&["sessions", "--json"]);

    let keys: Vec<&String> = listing.as_object().unwrap().keys().collect();
    // Copilot has no session in this home: listed, empty. (The map read back sorts its keys.)
    assert_eq!(keys, vec!["claude", "codex", "copilot", "grok"]);
    assert_eq!(listing["copilot"], json!([]));
    assert_eq!(
        ids(&listing["claude"]),
        vec!["c-named", "c-dup-1", "c-dup-2", "c-plain"]
    );
    assert_eq!(ids(&listing["codex"]), vec![CODEX_PLAIN, CODEX_NAMED]);

    // What each cost so far ends every element (the usage suite checks the figures): the
    // builder's Claude replies are priced; the Codex builder's `token_count` has no per-call
    // usage, so no usage is recorded and both are null, never 0.
    let mut listing = listing;
    let mut spent = Vec::new();
    for (agent, i) in [("claude", 0), ("claude", 3), ("codex", 0)] {
        let entry = listing[agent][i].as_object_mut().unwrap();
        let keys: Vec<&String> = entry.keys().collect();
        assert!(keys.contains(&&"cost_usd".to_owned()), "{entry:?}");
        spent.push((
            entry.remove("cost_usd").unwrap().is_string(),
            entry.remove("usage_tokens").unwrap().as_u64().is_some(),
        ));
    }
    assert_eq!(spent, vec![(true, true), (true, true), (false, false)]);

    assert_eq!(
        listing["claude"][0],
        json!({
            "session_id": "c-named",
            "title": "billing-api",
            "title_is_assigned": true,
            "cwd": "/work/api",
            "last_activity": rfc3339(store.now - 10 * MINUTE),
            "is_active": true,
            "is_working": false,
            "path": store.claude_path("/work/api", "c-named").display().to_string(),
        })
    );
    assert_eq!(
        listing["claude"][3],
        json!({
            "session_id": "c-plain",
            "title": "explain what this function does",
            "title_is_assigned": false,
            "cwd": "/work/web",
            "last_activity": rfc3339(store.now - 2 * 1440 * MINUTE + 1_000),
            "is_active": false,
            "is_working": false,
            "path": store.claude_path("/work/web", "c-plain").display().to_string(),
        })
    );
    let codex_named = &listing["codex"][1];
    assert_eq!(codex_named["title"], "parser-port");
    assert_eq!(codex_named["title_is_assigned"], true);
    // 298 minutes ago is outside the 240-minute window.
    assert_eq!(codex_named["is_active"], false);
    let busy = &listing["codex"][0];
    assert_eq!(
        (&busy["is_working"], &busy["is_active"]),
        (&json!(true), &json!(true))
    );

    let grok = &listing["grok"][0];
    assert_eq!(grok["session_id"], "grok-1");
    assert_eq!(grok["title"], "reviewer");
    assert_eq!(grok["title_is_assigned"], true);
    assert_eq!(
        grok["path"],
        store
            .path()
            .join(".grok/sessions/%2Fwork%2Fapi/grok-1")
            .display()
            .to_string()
    );
}

#[test]
fn the_table_is_readable_and_marks_title_kinds() {
    let store = Store::new();
    let out = store.cmd().args(["sessions"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("AGENT"), "{text}");
    for needle in [
        "[name] billing-api",
        "[gen] explain what this function does",
        "[name] parser-port",
        "[name] reviewer",
        "10m ago",
        "1day ago",
        "active,working",
        "7 session(s)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // Newest first across agents: the busy Codex thread (3 min ago) leads.
    assert!(
        lines[1].starts_with("codex") && lines[1].contains(CODEX_PLAIN),
        "{text}"
    );
}

#[test]
fn a_cjk_title_lines_up_with_the_others_by_display_width() {
    let home = TempDir::new().unwrap();
    let now = now_millis();
    for (id, cwd, title, ago) in [
        ("c-cjk", "/work/cjk", "請求書の計算を直す", 5),
        ("c-ascii", "/work/ascii", "fix the invoice sums", 6),
        ("c-mixed", "/work/mixed", "レビュー review", 7),
    ] {
        let mut t = ClaudeTranscript::new(home.path(), cwd, id);
        t.user(title, now - (ago + 1) * MINUTE)
            .assistant_text("Done.", now - ago * MINUTE);
        t.write().unwrap();
    }
    let store = Store { home, now };
    let out = store.cmd().args(["sessions"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();

    // Where each row's CWD cell starts, in terminal columns: the same on every row.
    let column_of = |line: &str, cell: &str| {
        let at = line
            .find(cell)
            .unwrap_or_else(|| panic!("no {cell:?} in {line:?}"));
        UnicodeWidthStr::width(&line[..at])
    };
    let header = column_of(lines[0], "CWD");
    let rows = [
        column_of(lines[1], "/work/cjk"),
        column_of(lines[2], "/work/ascii"),
        column_of(lines[3], "/work/mixed"),
    ];
    assert_eq!(rows, [header; 3], "misaligned:\n{text}");
    let ago = column_of(lines[0], "LAST ACTIVE");
    assert_eq!(column_of(lines[1], "5m ago"), ago, "misaligned:\n{text}");
    assert_eq!(column_of(lines[2], "6m ago"), ago, "misaligned:\n{text}");
}

#[test]
fn agent_scope_cwd_and_limit_filter_the_listing() {
    let store = Store::new();
    let codex = store.json(&["sessions", "--agent", "codex", "--json"]);
    assert_eq!(
        codex.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["codex"]
    );

    let here = store.json(&["sessions", "--scope", "cwd", "--cwd", "/work/api", "--json"]);
    assert_eq!(ids(&here["claude"]), vec!["c-named"]);
    assert_eq!(ids(&here["codex"]), vec![CODEX_NAMED]);
    assert_eq!(ids(&here["grok"]), vec!["grok-1"]);

    // From a subdirectory of /work/api, `tree` admits /work/api as a parent; `cwd` does not.
    let below = store.json(&[
        "sessions",
        "--scope",
        "tree",
        "--cwd",
        "/work/api/src",
        "--json",
    ]);
    assert_eq!(ids(&below["claude"]), vec!["c-named"]);
    let below_cwd = store.json(&[
        "sessions",
        "--scope",
        "cwd",
        "--cwd",
        "/work/api/src",
        "--json",
    ]);
    assert!(ids(&below_cwd["claude"]).is_empty());

    let limited = store.json(&["sessions", "--limit", "1", "--json"]);
    assert_eq!(ids(&limited["claude"]), vec!["c-named"]);
    assert_eq!(ids(&limited["codex"]), vec![CODEX_PLAIN]);
}

/// docs/spec/cross-agent-mcp.md §4: "`cwd` = same directory and its subdirectories". Every agent's sessions in
/// `/work/api/src` are listed from `/work/api`; `/work/api2` is beside it, not below it.
#[test]
fn scope_cwd_takes_in_subdirectories_by_whole_components() {
    let store = Store::new();
    let h = store.path();
    let now = store.now;
    let mut below = ClaudeTranscript::new(h, "/work/api/src", "c-below");
    below
        .user("tidy the module", now - 3 * MINUTE)
        .assistant_text("Tidied.", now - 2 * MINUTE);
    below.write().unwrap();
    let mut beside = ClaudeTranscript::new(h, "/work/api2", "c-beside");
    beside
        .user("unrelated", now - MINUTE)
        .assistant_text("Yes.", now - MINUTE + 1_000);
    beside.write().unwrap();
    const CODEX_BELOW: &str = "019a0000-0000-7000-8000-00000000b10e";
    const CODEX_BESIDE: &str = "019a0000-0000-7000-8000-00000000b35e";
    for (id, cwd) in [(CODEX_BELOW, "/work/api/src"), (CODEX_BESIDE, "/work/api2")] {
        let mut r = CodexRollout::new(h, cwd, id, now - 8 * MINUTE);
        r.user("look", now - 7 * MINUTE)
            .answer("Looked.", now - 6 * MINUTE);
        r.write().unwrap();
    }
    for (id, cwd) in [
        ("grok-below", "/work/api/src"),
        ("grok-beside", "/work/api2"),
    ] {
        let mut g = GrokSession::new(h, cwd, id, now - 9 * MINUTE);
        g.user("check", now - 9 * MINUTE)
            .agent_chunk("Checked.", now - 8 * MINUTE)
            .turn_completed(now - 8 * MINUTE);
        g.write().unwrap();
    }

    let here = store.json(&["sessions", "--scope", "cwd", "--cwd", "/work/api", "--json"]);
    assert_eq!(ids(&here["claude"]), vec!["c-below", "c-named"]);
    assert_eq!(ids(&here["codex"]), vec![CODEX_BELOW, CODEX_NAMED]);
    assert_eq!(ids(&here["grok"]), vec!["grok-below", "grok-1"]);

    // A trailing slash names the same folder.
    let slash = store.json(&[
        "sessions",
        "--scope",
        "cwd",
        "--cwd",
        "/work/api/",
        "--json",
    ]);
    assert_eq!(slash, here);

    let beside_only = store.json(&[
        "sessions",
        "--scope",
        "cwd",
        "--cwd",
        "/work/api2",
        "--json",
    ]);
    assert_eq!(ids(&beside_only["claude"]), vec!["c-beside"]);
    assert_eq!(ids(&beside_only["codex"]), vec![CODEX_BESIDE]);
    assert_eq!(ids(&beside_only["grok"]), vec!["grok-beside"]);

    // `/work/ap` is a string prefix of `/work/api`, not a folder above it.
    let partial = store.json(&["sessions", "--scope", "cwd", "--cwd", "/work/ap", "--json"]);
    for agent in ["claude", "codex", "grok"] {
        assert!(ids(&partial[agent]).is_empty(), "{agent}: {partial}");
    }
}

#[test]
fn the_active_window_comes_from_the_environment() {
    let store = Store::new();
    let out = store
        .cmd()
        .env("CROSS_AGENT_ACTIVE_WINDOW_MIN", "5")
        .args(["sessions", "--agent", "claude", "--json"])
        .output()
        .unwrap();
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 10 minutes ago is outside a 5-minute window.
    assert_eq!(listing["claude"][0]["is_active"], false);

    let out = store
        .cmd()
        .env("CROSS_AGENT_ACTIVE_WINDOW_MIN", "a while")
        .args(["sessions"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("CROSS_AGENT_ACTIVE_WINDOW_MIN"), "{stderr}");
}

#[test]
fn resolve_prints_the_one_session_a_name_means() {
    let store = Store::new();
    let out = store
        .cmd()
        .args(["sessions", "resolve", "claude", "billing-api"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("claude c-named (matched by its assigned name)"),
        "{text}"
    );

    let found = store.json(&["sessions", "resolve", "codex", "parser-port", "--json"]);
    assert_eq!(found["session_id"], CODEX_NAMED);
    assert_eq!(found["matched_by"], "assigned_name");
    let by_id = store.json(&["sessions", "resolve", "grok", "grok-1", "--json"]);
    assert_eq!(by_id["matched_by"], "session_id");
}

#[test]
fn resolve_refuses_a_shared_name_listing_every_candidate() {
    let store = Store::new();
    let out = store
        .cmd()
        .args(["sessions", "resolve", "claude", "dup"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("2 claude sessions answer to the name \"dup\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("c-dup-1") && stderr.contains("c-dup-2"),
        "{stderr}"
    );

    let out = store
        .cmd()
        .args(["sessions", "resolve", "claude", "dup", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let refusal: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(refusal["error"], "ambiguous_name");
    assert_eq!(ids(&refusal["candidates"]), vec!["c-dup-1", "c-dup-2"]);
    assert_eq!(refusal["candidates"][0]["title_is_assigned"], true);
    assert_eq!(
        refusal["candidates"][0]["last_activity"],
        rfc3339(store.now - 30 * MINUTE + 1_000)
    );
}

#[test]
fn resolve_fails_on_no_match_and_lists_similar_titles() {
    let store = Store::new();
    for query in ["billing", "Billing-API", "billing-ap*", ".*"] {
        let out = store
            .cmd()
            .args(["sessions", "resolve", "claude", query, "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{query}");
        let refusal: Value = serde_json::from_slice(&out.stdout).unwrap();
        // The protocol's code, the same as the daemon's (it once said `not_found`).
        assert_eq!(refusal["error"], "no_such_session", "{query}");
        if query != ".*" {
            assert_eq!(
                refusal["similar_titles"][0]["title"], "billing-api",
                "{query}"
            );
        }
    }
}

#[test]
fn resolve_honours_a_configured_bound() {
    let store = Store::new();
    // A bound of 1 reaches only the newest Claude session, c-named: its name matches, but
    // nothing shows the other three sessions do not answer to it too.
    let out = store
        .cmd()
        .env("CROSS_AGENT_NAME_SCAN_LIMIT", "1")
        .args(["sessions", "resolve", "claude", "billing-api"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("among the 1 most recently active"),
        "{stderr}"
    );
    assert!(stderr.contains("4 sessions in all"), "{stderr}");
    assert!(stderr.contains("CROSS_AGENT_NAME_SCAN_LIMIT"), "{stderr}");

    // The refusal has the name the bridge gives it (`RefusalReason::ScanBoundReached`).
    let out = store
        .cmd()
        .env("CROSS_AGENT_NAME_SCAN_LIMIT", "1")
        .args(["sessions", "resolve", "claude", "billing-api", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let refusal: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(refusal["error"], "scan_bound_reached");
    assert_eq!(refusal["bound_setting"], "CROSS_AGENT_NAME_SCAN_LIMIT");
    assert_eq!(refusal["reached"], 1);
}

#[test]
fn the_codex_rollout_bound_applies_only_to_scope_any() {
    let store = Store::new();
    let resolve = |scope: &str| {
        store
            .cmd()
            .env("CROSS_AGENT_CODEX_SCAN_LIMIT", "1")
            .args([
                "sessions",
                "resolve",
                "codex",
                "parser-port",
                "--scope",
                scope,
                "--cwd",
                "/work/api",
            ])
            .output()
            .unwrap()
    };
    // Under `any` the bound of 1 reaches only the newest thread, which is not parser-port.
    let any = resolve("any");
    assert_eq!(any.status.code(), Some(1));
    let stderr = String::from_utf8(any.stderr).unwrap();
    assert!(stderr.contains("CROSS_AGENT_CODEX_SCAN_LIMIT"), "{stderr}");
    // Under `cwd` the spec does not apply it: the name resolves.
    let cwd = resolve("cwd");
    assert!(
        cwd.status.success(),
        "{}",
        String::from_utf8_lossy(&cwd.stderr)
    );
    assert!(
        String::from_utf8(cwd.stdout).unwrap().contains(CODEX_NAMED),
        "the named thread is printed"
    );
}

#[test]
fn skipped_files_are_warnings_on_stderr_naming_the_file() {
    let store = Store::new();
    let bad = store.path().join(".claude/projects/-work-bad/bad.jsonl");
    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
    std::fs::write(&bad, b"\x00\x01 not json\n{\"type\":\n").unwrap();
    let out = store.cmd().args(["sessions", "--json"]).output().unwrap();
    assert!(out.status.success());
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ids(&listing["claude"]).len(), 4);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains(&bad.display().to_string())),
        "{stderr}"
    );
}

/// 17 lines of garbage in one transcript (among good records, which are all kept) are one line
/// on stderr naming the file and counting them — through the daemon, and read directly when the
/// daemon cannot start.
#[test]
fn a_damaged_transcript_is_one_warning_counting_its_lines() {
    let store = Store::new();
    let junk = store.claude_path("/work/junk", "c-junk");
    let mut t = ClaudeTranscript::new(store.path(), "/work/junk", "c-junk");
    t.user("still readable", store.now - 90 * MINUTE);
    t.write().unwrap();
    let mut bytes = std::fs::read(&junk).unwrap();
    let first_garbage = bytes.iter().filter(|b| **b == b'\n').count() + 1;
    for n in 0..17 {
        bytes.extend_from_slice(format!("garbage {n} \x1b[31m\n").as_bytes());
    }
    std::fs::write(&junk, bytes).unwrap();

    let cannot_start = store.path().join("no-such-daemon");
    for (how, daemon_bin) in [("daemon", None), ("direct", Some(&cannot_start))] {
        let mut cmd = store.cmd();
        if let Some(bin) = daemon_bin {
            cmd.env("CROSS_AGENT_DAEMON_BIN", bin);
        }
        let out = cmd.args(["sessions", "--json"]).output().unwrap();
        assert!(out.status.success(), "{how}: {out:?}");
        let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            ids(&listing["claude"]).contains(&"c-junk"),
            "{how}: the readable records are kept"
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .collect();
        assert_eq!(
            warnings,
            vec![format!(
                "warning: {}: 17 lines are not JSON records (first at line {first_garbage}), \
                 skipped",
                junk.display()
            )],
            "{how}: {stderr}"
        );
        assert!(!stderr.contains('\x1b'), "{how}: {stderr:?}");
        let direct = stderr.contains("reading the stores directly");
        assert_eq!(direct, daemon_bin.is_some(), "{how}: {stderr}");
        // Cold again for the direct read: no cache, no daemon.
        std::fs::remove_dir_all(store.path().join("xa/cache")).ok();
        cross_agent_testkit::leaks::stop_daemons(
            &store.path().join("xa"),
            cross_agent_testkit::leaks::SETTLE,
        );
    }
}

#[test]
fn a_second_run_is_served_from_the_cache() {
    let store = Store::new();
    let first = store.json(&["sessions", "--json"]);
    let cache = store.path().join("xa/cache/sessions-index.bin");
    assert!(cache.exists());
    let second = store.json(&["sessions", "--json"]);
    assert_eq!(first, second);
}

#[test]
fn an_unsafe_state_directory_is_refused_and_the_listing_goes_on_uncached() {
    let store = Store::new();
    // CROSS_AGENT_HOME inside Claude's own store: nothing may be written there.
    let inside = store.path().join(".claude/xa");
    let out = store
        .cmd()
        .env("CROSS_AGENT_HOME", &inside)
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ids(&listing["claude"]).len(), 4);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("listing without the session cache"),
        "{stderr}"
    );
    assert!(!inside.exists());
}
