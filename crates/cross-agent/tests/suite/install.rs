//! `cross-agent install` / `uninstall` / `doctor` / `service` on the files of a temporary HOME,
//! through the built binary: realistic configurations a person already has (comments, other
//! servers, their own hooks and allow rules, a JSONC settings file without a final newline)
//! survive install + uninstall byte for byte; a dry run writes nothing; a second install
//! changes nothing; links are refused; doctor tells broken from not set up.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::install_home::{BIN, CLAUDE_SETTINGS, CODEX_TOML, EVERYTHING, Person, bin};

#[test]
fn pre_existing_configs_survive_install_and_uninstall_byte_identical() {
    let person = Person::with_configs();
    let before = person.tree();

    person.ok(EVERYTHING);
    let binary = bin().display().to_string();

    let claude: Value = serde_json::from_str(&person.read(".claude.json")).unwrap();
    assert_eq!(
        claude["mcpServers"]["cross-agent"]["command"],
        binary.as_str()
    );
    assert_eq!(
        claude["mcpServers"]["cross-agent"]["args"],
        serde_json::json!(["mcp"])
    );
    assert_eq!(
        claude["mcpServers"]["github"]["command"], "npx",
        "the other server stays"
    );
    assert!(
        person
            .read(".claude.json")
            .starts_with("{\n  \"numStartups\": 12,")
    );
    let settings = person.read(".claude/settings.json");
    assert!(settings.contains("// My own settings: keep these comments."));
    assert!(settings.contains("\"Bash(git status)\", // read-only git is fine"));
    assert!(settings.contains("\"mcp__cross-agent\""));
    assert!(
        settings.contains("notify-send 'Claude is done'"),
        "the person's hook stays"
    );
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Notification",
        "Stop",
    ] {
        assert!(
            settings.contains(&format!("{binary} hook {event}")),
            "{event}: {settings}"
        );
    }
    let codex = person.read(".codex/config.toml");
    assert!(codex.starts_with("# Codex, my way.\nmodel = \"gpt-5-codex\"   # the default model\n"));
    assert!(codex.contains("[mcp_servers.cross-agent]"));
    assert!(codex.contains("required = true"));
    assert!(codex.contains("default_tools_approval_mode = \"approve\""));
    assert!(codex.contains("env = {}"));
    assert!(codex.contains("# A profile for quick questions.\n[profiles.quick]"));
    assert!(
        person
            .read(".grok/config.toml")
            .contains("[mcp_servers.cross-agent]")
    );
    let vscode = person.read(".config/Code/User/settings.json");
    assert!(vscode.starts_with("{\n\t// editor\n\t\"editor.fontSize\": 14,"));
    let shim_dir = person.path(".local/bin");
    for (key, link) in [
        ("claudeCode.claudeProcessWrapper", "cross-agent-claude-shim"),
        ("chatgpt.cliExecutable", "cross-agent-codex-shim"),
        ("grok.cliPath", "cross-agent-grok-shim"),
    ] {
        let path = shim_dir.join(link);
        assert!(
            vscode.contains(&format!("\"{key}\": \"{}\"", path.display())),
            "{vscode}"
        );
        assert_eq!(std::fs::read_link(&path).unwrap(), bin());
    }
    for file in [
        ".claude.json",
        ".claude/settings.json",
        ".codex/config.toml",
        ".grok/config.toml",
    ] {
        assert_eq!(
            std::fs::read_to_string(person.path(&format!("{file}.cross-agent.bak"))).unwrap(),
            before[file],
            "{file} backed up as it was"
        );
    }

    // A second install changes nothing.
    let installed = person.tree();
    let again = person.ok(EVERYTHING);
    assert!(again.contains("nothing to change"), "{again}");
    assert_eq!(person.tree(), installed);

    person.ok(&["uninstall"]);
    assert_eq!(
        person.tree(),
        before,
        "every file byte-identical, backups and links gone"
    );
}

#[test]
fn a_dry_run_prints_the_diff_and_writes_nothing() {
    let person = Person::with_configs();
    let before = person.tree();
    let out = person.ok(&[
        "install",
        "--dry-run",
        "--agents",
        "claude,codex",
        "--hooks",
        "--panels",
    ]);
    assert_eq!(person.tree(), before, "install --dry-run wrote nothing");
    let codex = person.path(".codex/config.toml").display().to_string();
    assert!(
        out.contains(&format!("--- a{codex}\n+++ b{codex}\n")),
        "{out}"
    );
    assert!(out.contains("+[mcp_servers.cross-agent]\n"), "{out}");
    assert!(out.contains("+    \"cross-agent\": {\n"), "{out}");
    assert!(out.contains("link "), "{out}");
    assert!(out.contains("dry run: nothing was written"), "{out}");

    let out = person.ok(&["install", "--dry-run", "--json", "--agents", "codex"]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["files"][0]["action"], "modify", "{report:#}");
    assert_eq!(report["files"][0]["for"], "Codex");
    assert!(
        report["diff"]
            .as_str()
            .unwrap()
            .contains("+required = true\n"),
        "{report:#}"
    );
    assert_eq!(
        person.tree(),
        before,
        "install --dry-run --json wrote nothing"
    );

    person.ok(&["install", "--agents", "claude,codex"]);
    let installed = person.tree();
    let out = person.ok(&["uninstall", "--dry-run"]);
    assert_eq!(
        person.tree(),
        installed,
        "uninstall --dry-run wrote nothing"
    );
    assert!(out.contains("-[mcp_servers.cross-agent]\n"), "{out}");
}

#[test]
fn uninstall_keeps_what_the_person_added_since_and_had_before() {
    let person = Person::with_configs();
    // The person had the allow rule already: it is theirs, and stays.
    let settings = CLAUDE_SETTINGS.replace("\"Read\"\n", "\"Read\",\n      \"mcp__cross-agent\"\n");
    person.write(".claude/settings.json", &settings);
    person.ok(&["install", "--agents", "claude,codex"]);
    // Afterwards they add a server of their own and a comment.
    let claude = person.read(".claude.json").replace(
        "\"mcpServers\": {\n",
        "\"mcpServers\": {\n    \"mine\": { \"command\": \"mine\" },\n",
    );
    person.write(".claude.json", &claude);
    let codex = format!("{}# added later\n", person.read(".codex/config.toml"));
    person.write(".codex/config.toml", &codex);

    person.ok(&["uninstall"]);
    let claude: Value = serde_json::from_str(&person.read(".claude.json")).unwrap();
    assert!(claude["mcpServers"].get("cross-agent").is_none());
    assert_eq!(claude["mcpServers"]["mine"]["command"], "mine");
    assert_eq!(claude["mcpServers"]["github"]["command"], "npx");
    let codex = person.read(".codex/config.toml");
    assert!(!codex.contains("cross-agent"), "{codex}");
    assert!(codex.starts_with(CODEX_TOML), "{codex}");
    assert!(codex.ends_with("# added later\n"), "{codex}");
    assert_eq!(
        person.read(".claude/settings.json"),
        settings,
        "their own allow rule stays"
    );
}

#[test]
fn with_no_agent_found_install_says_so_and_writes_nothing() {
    let person = Person::empty();
    let out = person.ok(&["install"]);
    assert!(out.contains("no agent found"), "{out}");
    assert!(out.contains("name one with --agents"), "{out}");
    assert_eq!(person.tree(), BTreeMap::new());
}

#[test]
fn files_install_created_are_removed_again() {
    let person = Person::empty();
    let out = person.ok(&["install", "--agents", "claude,codex,grok"]);
    assert!(out.contains("create"), "{out}");
    // Run again: a file holding only cross-agent's entries is not backed up as if it were
    // the person's, which would have uninstall put the entries back. Its backup is the empty
    // one install took when it created the file: nothing in it was the person's.
    let again = person.ok(&["install", "--agents", "claude,codex,grok"]);
    assert!(again.contains("nothing to change"), "{again}");
    assert_eq!(person.read(".claude.json.cross-agent.bak"), "");
    assert!(person.path(".claude.json").is_file());
    assert!(person.path(".codex/config.toml").is_file());
    let created = person.read(".claude/settings.json");
    assert_eq!(
        created,
        "{\n  \"permissions\": {\n    \"allow\": [\"mcp__cross-agent\"]\n  }\n}\n"
    );
    person.ok(&["uninstall"]);
    assert_eq!(
        person.tree(),
        BTreeMap::new(),
        "no file is left where there was none"
    );
}

#[test]
fn in_a_file_install_created_what_the_person_added_since_stays_and_ours_goes_after_another_install()
{
    let person = Person::empty();
    person.ok(&["install", "--agents", "claude,codex"]);
    // The person adds their own entries to the files install created...
    let claude = person.read(".claude.json").replacen(
        "\"mcpServers\": {\n",
        "\"theme\": \"dark\",\n  \"mcpServers\": {\n    \"mine\": { \"command\": \"mine\" },\n",
        1,
    );
    person.write(".claude.json", &claude);
    let settings = person
        .read(".claude/settings.json")
        .replace("[\"mcp__cross-agent\"]", "[\"mcp__cross-agent\", \"Read\"]");
    person.write(".claude/settings.json", &settings);
    let mine = "\n# my own server\n[mcp_servers.mine]\ncommand = \"mine\"\n";
    let codex = format!("{}{mine}", person.read(".codex/config.toml"));
    person.write(".codex/config.toml", &codex);
    // ...and install runs again: these files are not the person's as they were before
    // cross-agent, so no backup of them may bring cross-agent's entries back.
    let again = person.ok(&["install", "--agents", "claude,codex"]);
    assert!(again.contains("nothing to change"), "{again}");

    person.ok(&["uninstall"]);
    let claude = person.read(".claude.json");
    let value: Value = serde_json::from_str(&claude).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"theme": "dark", "mcpServers": {"mine": {"command": "mine"}}}),
        "{claude}"
    );
    assert!(
        claude.contains("    \"mine\": { \"command\": \"mine\" }"),
        "{claude}"
    );
    let settings = person.read(".claude/settings.json");
    assert!(!settings.contains("cross-agent"), "{settings}");
    assert!(settings.contains("\"Read\""), "{settings}");
    assert_eq!(
        person.read(".codex/config.toml").trim_start(),
        mine.trim_start(),
        "only the person's bytes are left"
    );
    assert_eq!(
        person.tree().keys().collect::<Vec<_>>(),
        [
            ".claude.json",
            ".claude/settings.json",
            ".codex/config.toml"
        ],
        "no backup is left"
    );
}

#[test]
fn a_config_that_is_a_link_is_refused_naming_it() {
    let person = Person::with_configs();
    let elsewhere = person.path("dotfiles/codex.toml");
    person.write("dotfiles/codex.toml", CODEX_TOML);
    std::fs::remove_file(person.path(".codex/config.toml")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, person.path(".codex/config.toml")).unwrap();
    let before = person.tree();
    let out = person.run(&["install", "--agents", "claude,codex"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} is a symbolic link",
            person.path(".codex/config.toml").display()
        )),
        "{stderr}"
    );
    assert_eq!(
        person.tree(),
        before,
        "nothing written, not even the other agents' files"
    );
}

#[test]
fn the_backup_is_taken_once_and_unattended_adds_the_spec_variables_with_its_warning() {
    let person = Person::with_configs();
    person.ok(&["install", "--agents", "codex"]);
    let out = person.ok(&["install", "--agents", "codex", "--unattended"]);
    assert!(
        out.contains("turn off the safety rails for an agent reached through the bridge"),
        "{out}"
    );
    assert_eq!(
        person.read(".codex/config.toml.cross-agent.bak"),
        CODEX_TOML,
        "the first backup stays"
    );
    let codex = person.read(".codex/config.toml");
    assert!(
        codex.contains(
            "env = { CROSS_AGENT_CLAUDE_PERMISSION_MODE = \"bypassPermissions\", \
             CROSS_AGENT_CODEX_SANDBOX = \"danger-full-access\" }"
        ),
        "{codex}"
    );
    // Back without it: the registration loses the variables again.
    person.ok(&["install", "--agents", "codex"]);
    assert!(person.read(".codex/config.toml").contains("env = {}"));
    person.ok(&["uninstall"]);
    assert_eq!(person.read(".codex/config.toml"), CODEX_TOML);
}

#[test]
fn doctor_says_what_is_not_set_up_and_exits_zero() {
    let person = Person::with_configs();
    let out = person.run(&["doctor"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("not set up Codex registration"), "{stdout}");
    assert!(
        stdout.contains("cross-agent is not registered — fix: cross-agent install --agents codex"),
        "{stdout}"
    );
    assert!(stdout.contains("not set up Claude Code hooks"), "{stdout}");
    assert!(
        stdout.contains("not set up VS Code panel shims"),
        "{stdout}"
    );
    assert!(stdout.contains("not set up Telegram"), "{stdout}");
    assert!(!stdout.contains("BROKEN"), "{stdout}");
    let _ = person.run(&["daemon", "stop"]);
}

#[test]
fn doctor_fails_on_a_broken_registration_naming_it() {
    let person = Person::with_configs();
    person.ok(&["install", "--agents", "grok", "--hooks", "--panels"]);
    let out = person.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = |what: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["what"].as_str().unwrap().starts_with(what))
            .unwrap_or_else(|| panic!("{what}: {report:#}"))["status"]
            .clone()
    };
    assert!(out.status.success(), "{report:#}");
    assert_eq!(status("Grok Build registration"), "ok");
    assert_eq!(
        status("Grok Build connects"),
        "ok",
        "the registered command answers MCP"
    );
    assert_eq!(status("VS Code panel shims"), "ok");

    // The registration now points at a binary that is gone.
    let grok = person.read(".grok/config.toml");
    let gone = person.path("old/cross-agent");
    person.write(
        ".grok/config.toml",
        &grok.replace(&bin().display().to_string(), &gone.display().to_string()),
    );
    let out = person.run(&["doctor"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "BROKEN     Grok Build registration ({}): its command {} does not exist or cannot be run — fix: cross-agent install --agents grok",
            person.path(".grok/config.toml").display(),
            gone.display()
        )),
        "{stdout}"
    );
    let _ = person.run(&["daemon", "stop"]);
}

#[test]
fn doctor_reports_hooks_installed_or_half_installed() {
    let person = Person::with_configs();
    person.ok(&["install", "--agents", "claude", "--hooks"]);
    let stdout = String::from_utf8(person.run(&["doctor"]).stdout).unwrap();
    assert!(
        stdout.contains("ok         Claude Code hooks: installed"),
        "{stdout}"
    );
    let settings = person.read(".claude/settings.json");
    let without_stop = settings.replace(&format!("{} hook Stop", bin().display()), "true");
    person.write(".claude/settings.json", &without_stop);
    let out = person.run(&["doctor"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("BROKEN     Claude Code hooks: missing for Stop"),
        "{stdout}"
    );
    let _ = person.run(&["daemon", "stop"]);
}

#[test]
fn service_install_writes_the_unit_and_says_what_to_run_without_systemd() {
    let person = Person::empty();
    // No systemctl on PATH: no user service manager answers.
    let out = person
        .command(&["service", "install"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("no user service manager answers here"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  systemctl --user enable --now cross-agent.service\n"),
        "{stdout}"
    );
    let unit = person.read(".config/systemd/user/cross-agent.service");
    assert!(
        unit.contains(&format!("ExecStart=\"{}\" daemon run\n", bin().display())),
        "{unit}"
    );
    assert!(unit.contains("Restart=on-failure\n"), "{unit}");
    // The daemon raises its soft descriptor limit to the hard one: this is what it gets.
    assert!(unit.contains("\nLimitNOFILE=65536\n"), "{unit}");
    assert!(unit.contains("WantedBy=default.target\n"), "{unit}");
    let path_line = unit
        .lines()
        .find(|l| l.starts_with("Environment=\"PATH="))
        .unwrap();
    assert!(path_line.contains("/usr/bin"), "{path_line}");

    let out = person
        .command(&["service", "uninstall"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        !person
            .path(".config/systemd/user/cross-agent.service")
            .exists()
    );
}

#[test]
fn the_service_path_reaches_the_agents_cli_directories() {
    let person = Person::empty();
    person.write(".grok/bin/grok", "#!/bin/sh\n");
    std::fs::set_permissions(
        person.path(".grok/bin/grok"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = person.ok(&["service", "install", "--dry-run"]);
    assert!(
        out.contains(&format!(
            "+Environment=\"PATH=/usr/bin:/bin:{}:/usr/local/bin\"\n",
            person.path(".grok/bin").display()
        )),
        "{out}"
    );
    assert!(
        !person.path(".config/systemd").exists(),
        "a dry run writes nothing"
    );
}

#[test]
fn the_install_script_copies_the_binary_and_shows_the_dry_run() {
    let person = Person::with_configs();
    let before = person.tree();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env_clear()
        .env("HOME", person.home())
        .env("PATH", "/usr/bin:/bin")
        .env("CROSS_AGENT_BIN", BIN)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied = person.path(".local/bin/cross-agent");
    assert_eq!(std::fs::read(&copied).unwrap(), std::fs::read(BIN).unwrap());
    assert!(stdout.contains("+[mcp_servers.cross-agent]"), "{stdout}");
    assert!(
        stdout.contains(&format!("command = \"{}\"", copied.display())),
        "{stdout}"
    );
    assert!(stdout.contains("dry run: nothing was written"), "{stdout}");
    let mut after = person.tree();
    after.remove(".local/bin/cross-agent");
    assert_eq!(after, before, "only the binary was copied");
}

#[test]
fn doctor_tells_a_bot_nobody_paired_from_a_paired_one() {
    use std::os::unix::fs::DirBuilderExt as _;
    let person = Person::with_configs();
    let home = person.home().join(".cross-agent");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&home)
        .unwrap();
    cross_agent_telegram::store::write_token(&home, "123:secret-token").unwrap();
    let stdout = |out: Output| String::from_utf8_lossy(&out.stdout).into_owned();
    let unpaired = stdout(person.run(&["doctor"]));
    assert!(
        unpaired.contains("not set up Telegram") && unpaired.contains("nobody paired"),
        "{unpaired}"
    );
    let access = cross_agent_telegram::store::Access {
        paired: vec![cross_agent_telegram::store::Paired {
            user_id: 42,
            chat_id: 42,
            name: "me".into(),
            paired_at: "2026-12-01T00:00:00Z".into(),
        }],
        pending: None,
    };
    cross_agent_telegram::store::write_access(&home, &access).unwrap();
    let paired = stdout(person.run(&["doctor"]));
    assert!(paired.contains("paired with 1 user(s)"), "{paired}");
    assert!(!paired.contains("secret-token"), "{paired}");
    let _ = person.run(&["daemon", "stop"]);
}

#[test]
fn a_link_where_a_backup_should_be_stops_uninstall_naming_it_and_its_target_is_untouched() {
    let person = Person::empty();
    person.ok(&["install", "--agents", "claude"]);
    // Someone puts a link where install's backup of `.claude.json` is.
    let elsewhere = person.path("elsewhere.json");
    std::fs::write(&elsewhere, "{\"not\": \"a backup\"}\n").unwrap();
    let backup = person.path(".claude.json.cross-agent.bak");
    std::fs::remove_file(&backup).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &backup).unwrap();
    let out = person.run(&["uninstall"]);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".claude.json.cross-agent.bak"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&elsewhere).unwrap(),
        "{\"not\": \"a backup\"}\n"
    );
    assert!(
        std::fs::symlink_metadata(&backup)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
