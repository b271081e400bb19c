//! `cross-agent windows` over a temporary HOME: VS Code's window state naming a real git
//! repository, a Claude session working in it; the row with its git state and the session, and
//! the same session's window and branch in `sessions` (`desktop` in `--json`, PLACE in the
//! table).

use std::path::Path;
use std::process::Command as Std;

use assert_cmd::Command;
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;

fn git(dir: &Path, args: &[&str]) {
    let out = Std::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

struct Desk {
    home: TempDir,
}

impl Desk {
    fn new() -> Desk {
        let home = TempDir::new().unwrap();
        let h = home.path();
        let api = h.join("src/api");
        std::fs::create_dir_all(&api).unwrap();
        git(&api, &["init", "-q", "-b", "main"]);
        std::fs::write(api.join("a.txt"), "a\n").unwrap();
        git(&api, &["add", "a.txt"]);
        git(&api, &["commit", "-q", "-m", "one"]);
        std::fs::write(api.join("a.txt"), "changed\n").unwrap();
        std::fs::write(api.join("new.txt"), "new\n").unwrap();
        let storage = h.join(".config/Code/User/globalStorage");
        std::fs::create_dir_all(&storage).unwrap();
        std::fs::write(
            storage.join("storage.json"),
            format!(
                r#"{{"windowsState": {{"lastActiveWindow": {{"folder": "file://{}", "uiState": {{}}}}, "openedWindows": []}}}}"#,
                api.display()
            ),
        )
        .unwrap();
        let now = now_millis();
        let cwd = api.join("crates");
        let mut t = ClaudeTranscript::new(h, cwd.to_str().unwrap(), "c-api");
        t.user("fix it", now - 60_000)
            .assistant_text("Fixed.", now - 50_000);
        t.write().unwrap();
        let mut far = ClaudeTranscript::new(h, "/elsewhere", "c-far");
        far.user("old", now - 3 * 86_400_000)
            .assistant_text("Done.", now - 3 * 86_400_000 + 1_000);
        far.write().unwrap();
        Desk { home }
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("cross-agent").unwrap();
        cmd.env("HOME", self.home.path())
            .env("CROSS_AGENT_HOME", self.home.path().join("xa"))
            .env_remove("DISPLAY")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("VSCODE_PORTABLE")
            .env_remove("VSCODE_APPDATA")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("GROK_HOME")
            .env_remove("COPILOT_HOME")
            .env_remove("CROSS_AGENT_ACTIVE_WINDOW_MIN")
            .env_remove("CROSS_AGENT_GIT_DEADLINE_MS")
            .current_dir(self.home.path());
        cmd
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.cmd().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Desk {
    fn drop(&mut self) {
        cross_agent_testkit::leaks::stop_daemons(
            &self.home.path().join("xa"),
            cross_agent_testkit::leaks::SETTLE,
        );
    }
}

#[test]
fn windows_lists_the_workspace_with_its_git_state_and_sessions() {
    let desk = Desk::new();
    let api = desk.home.path().join("src/api");
    let listed = desk.json(&["windows", "--json"]);
    assert_eq!(listed["display"], json!("no X display"));
    assert_eq!(listed["warnings"], json!([]));
    let rows = listed["workspaces"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{listed:#}");
    let row = &rows[0];
    assert_eq!(row["editor"], json!("VS Code"));
    assert_eq!(row["folder"], json!(api.display().to_string()));
    assert_eq!(row["last_active"], json!(true));
    assert_eq!(row["window"], Value::Null);
    let git = &row["git"];
    assert_eq!(git["state"], json!("repository"));
    assert_eq!(git["head"], json!({"kind": "branch", "name": "main"}));
    assert_eq!(git["dirty"], json!({"count": 1, "complete": true}));
    assert_eq!(git["untracked"], json!({"count": 1, "complete": true}));
    assert_eq!(git["upstream"], Value::Null);
    let sessions: Vec<&str> = row["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, vec!["c-api"]);

    let out = desk.cmd().arg("windows").output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("VS Code") && table.contains("main @"),
        "{table}"
    );
    assert!(table.contains("claude:c-api"), "{table}");
    assert!(table.contains("display: no X display"), "{table}");
}

#[test]
fn sessions_show_the_window_and_branch() {
    let desk = Desk::new();
    let api = desk.home.path().join("src/api");
    let listing = desk.json(&["sessions", "--json"]);
    let claude = listing["claude"].as_array().unwrap();
    let by_id = |id: &str| {
        claude
            .iter()
            .find(|e| e["session_id"] == json!(id))
            .unwrap()
    };
    assert_eq!(
        by_id("c-api")["desktop"],
        json!({
            "editor": "VS Code",
            "folder": api.display().to_string(),
            "window": null,
            "branch": "main"
        })
    );
    // Not in an open workspace, not active: no field.
    assert!(by_id("c-far").get("desktop").is_none(), "{listing:#}");

    let out = desk.cmd().arg("sessions").output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("PLACE"), "{table}");
    assert!(table.contains("main · VS Code"), "{table}");
}
