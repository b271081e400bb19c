//! `cross-agent install --agents copilot` / `uninstall` for GitHub Copilot in VS Code (the Agent
//! Host), through the built binary with a temporary HOME and no VS Code: the server goes into
//! `<user data>/User/mcp.json` (`servers`) and `<user data>/User/globalStorage/
//! agent-host-config.json` (`mcpServers`) of Stable and Insiders alike, the person's JSONC and
//! other keys survive byte for byte, the restart is said, `chat.tools.global.autoApprove` is set
//! only with `--copilot-auto-approve` (with the spec's warning) and taken out by `uninstall`
//! only when install put it there, and a link where a file should be stops every agent's change.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::install_home::{CODEX_TOML, Person, bin};

const STABLE: &str = ".config/Code";
const INSIDERS: &str = ".config/Code - Insiders";
const MCP: &str = "User/mcp.json";
const HOST: &str = "User/globalStorage/agent-host-config.json";
const SETTINGS: &str = "User/settings.json";

/// A user `mcp.json` as a person keeps it: comments, another server, `inputs`, tabs, a
/// trailing comma and no final newline.
const MCP_JSON: &str = "{\n\t// My servers: keep this.\n\t\"servers\": {\n\t\t\"github\": {\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"https://api.githubcopilot.com/mcp/\" // remote\n\t\t},\n\t},\n\t\"inputs\": [],\n}";

/// The Agent Host's own file as the host writes it, with keys of its own and no servers.
const HOST_CONFIG: &str = r#"{
  "claudeMultiRootEnabled": true,
  "showExternalSessions": false,
  "customizations": {
    "instructions": []
  }
}
"#;

const SETTINGS_JSON: &str = "{\n\t// editor\n\t\"editor.fontSize\": 14,\n}";

const RESTART: &str = "Copilot: quit VS Code fully and reopen it once. The Agent Host reads \
agent-host-config.json only when it starts; Reload Window keeps the same host running.";

const WARNING: &str = "WARNING: chat.tools.global.autoApprove applies to all tools; it is not a \
cross-agent-only permission. This includes file edits, terminal commands and other tools, as \
well as cross-agent. It also affects existing Manual-permissions Copilot Agent Host sessions.";

fn at(editor: &str, file: &str) -> String {
    format!("{editor}/{file}")
}

/// The entry install writes, as a value.
fn entry() -> Value {
    json!({"type": "stdio", "command": bin(), "args": ["mcp"]})
}

fn parsed(person: &Person, relative: &str) -> Value {
    let text = person.read(relative);
    let doc = jsonc_parser::parse_to_serde_value(&text, &Default::default()).unwrap();
    doc.unwrap_or_else(|| panic!("{relative} is empty"))
}

/// A person who has run VS Code Stable (with a JSONC mcp.json and the host's file) and
/// Insiders (never configured: only its user-data folder).
fn person_with_vscode() -> Person {
    let person = Person::empty();
    person.write(&at(STABLE, MCP), MCP_JSON);
    person.write(&at(STABLE, HOST), HOST_CONFIG);
    person.write(&at(STABLE, SETTINGS), SETTINGS_JSON);
    std::fs::create_dir_all(person.path(INSIDERS)).unwrap();
    person
}

#[test]
fn both_files_of_stable_and_insiders_are_set_up_and_given_back_byte_for_byte() {
    let person = person_with_vscode();
    let before = person.tree();

    // The default, "every agent found": both user-data folders are found.
    let out = person.ok(&["install"]);
    assert!(
        out.contains(&format!(
            "copilot  found ({}, {})",
            person.path(STABLE).display(),
            person.path(INSIDERS).display()
        )),
        "{out}"
    );
    assert!(out.ends_with(&format!("{RESTART}\n")), "{out}");

    for editor in [STABLE, INSIDERS] {
        assert_eq!(
            parsed(&person, &at(editor, MCP))["servers"]["cross-agent"],
            entry(),
            "{editor}"
        );
        assert_eq!(
            parsed(&person, &at(editor, HOST))["mcpServers"]["cross-agent"],
            entry(),
            "{editor}"
        );
    }
    // The person's JSONC is as it was around the new entry.
    let mcp = person.read(&at(STABLE, MCP));
    assert!(
        mcp.starts_with(
            "{\n\t// My servers: keep this.\n\t\"servers\": {\n\t\t\"github\": {\n\t\t\t\"type\": \"http\",\n\t\t\t\"url\": \"https://api.githubcopilot.com/mcp/\" // remote\n\t\t},\n\t\t\"cross-agent\": {\n"
        ),
        "{mcp}"
    );
    assert!(mcp.ends_with("\t},\n\t\"inputs\": [],\n}"), "{mcp}");
    let host = parsed(&person, &at(STABLE, HOST));
    assert_eq!(host["claudeMultiRootEnabled"], true);
    assert_eq!(host["customizations"], json!({"instructions": []}));
    assert!(
        person.read(&at(STABLE, HOST)).starts_with(
            "{\n  \"claudeMultiRootEnabled\": true,\n  \"showExternalSessions\": false,"
        ),
    );
    for file in [MCP, HOST] {
        assert_eq!(
            person.read(&format!("{}.cross-agent.bak", at(STABLE, file))),
            before[&at(STABLE, file)],
            "{file} backed up as it was"
        );
    }
    assert_eq!(
        person.read(&at(STABLE, SETTINGS)),
        SETTINGS_JSON,
        "no setting is touched without --copilot-auto-approve"
    );
    assert!(!person.path(&at(INSIDERS, SETTINGS)).exists());

    // Idempotent: nothing to change, and no restart to do.
    let installed = person.tree();
    let again = person.ok(&["install", "--agents", "copilot"]);
    assert!(again.contains("nothing to change"), "{again}");
    assert!(!again.contains(RESTART), "{again}");
    assert_eq!(person.tree(), installed);

    person.ok(&["uninstall"]);
    assert_eq!(
        person.tree(),
        before,
        "every file byte-identical, the ones install made and the backups gone"
    );
}

#[test]
fn on_an_empty_home_copilot_is_not_found_unless_named_and_then_stable_is_set_up() {
    let person = Person::empty();
    let out = person.ok(&["install"]);
    assert!(out.contains("copilot  not installed, skipped"), "{out}");
    assert!(
        out.contains(&format!(
            "and for VS Code's user data ({}, {})",
            person.path(STABLE).display(),
            person.path(INSIDERS).display()
        )),
        "{out}"
    );
    assert_eq!(person.tree(), BTreeMap::new());

    let out = person.ok(&["install", "--agents", "copilot"]);
    assert!(
        out.contains("copilot  not found, set up because --agents names it"),
        "{out}"
    );
    let created = person.tree();
    assert_eq!(
        created.keys().collect::<Vec<_>>(),
        [
            &at(STABLE, HOST),
            &format!("{}.cross-agent.bak", at(STABLE, HOST)),
            &at(STABLE, MCP),
            &format!("{}.cross-agent.bak", at(STABLE, MCP)),
        ],
        "Stable's two files with their empty backups (there was nothing), nothing for Insiders"
    );
    assert_eq!(created[&format!("{}.cross-agent.bak", at(STABLE, MCP))], "");
    let expected = format!(
        "{{\n  \"servers\": {{\n    \"cross-agent\": {{\n      \"type\": \"stdio\",\n      \"command\": \"{}\",\n      \"args\": [\"mcp\"]\n    }}\n  }}\n}}\n",
        bin().display()
    );
    assert_eq!(created[&at(STABLE, MCP)], expected);
    assert_eq!(
        created[&at(STABLE, HOST)],
        expected.replace("\"servers\"", "\"mcpServers\"")
    );
    person.ok(&["uninstall"]);
    assert_eq!(person.tree(), BTreeMap::new(), "the files it made are gone");
}

#[test]
fn xdg_config_home_moves_the_linux_user_data() {
    let person = Person::empty();
    std::fs::create_dir_all(person.path("xdg/Code")).unwrap();
    let out = person
        .command(&["install", "--agents", "copilot"])
        .env("XDG_CONFIG_HOME", person.path("xdg"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(person.path(&format!("xdg/Code/{MCP}")).is_file());
    assert!(!person.path(&at(STABLE, MCP)).exists());
}

/// A portable VS Code keeps its user data in `$VSCODE_PORTABLE/user-data`, and `VSCODE_APPDATA`
/// moves the base of Stable and Insiders: install follows the same rule as the listing.
#[test]
fn a_portable_vs_code_and_vscode_appdata_are_where_install_writes() {
    let person = Person::empty();
    std::fs::create_dir_all(person.path("portable/data/user-data")).unwrap();
    // Stable's default folder exists too, but VSCODE_APPDATA says Stable lives elsewhere.
    std::fs::create_dir_all(person.path(STABLE)).unwrap();
    let run = |args: &[&str]| {
        let out = person
            .command(args)
            .env("VSCODE_PORTABLE", person.path("portable/data"))
            .env("VSCODE_APPDATA", person.path("appdata"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let out = run(&["install", "--agents", "copilot"]);
    assert!(out.contains("Copilot (VS Code (portable))"), "{out}");
    let created = person.tree();
    let expected = format!(
        "{{\n  \"servers\": {{\n    \"cross-agent\": {{\n      \"type\": \"stdio\",\n      \"command\": \"{}\",\n      \"args\": [\"mcp\"]\n    }}\n  }}\n}}\n",
        bin().display()
    );
    let portable = "portable/data/user-data";
    // Each file it made has its empty backup beside it (nothing in it was the person's).
    let host_backup = format!("{}.cross-agent.bak", at(portable, HOST));
    let mcp_backup = format!("{}.cross-agent.bak", at(portable, MCP));
    assert_eq!(
        created.keys().collect::<Vec<_>>(),
        [
            &at(portable, HOST),
            &host_backup,
            &at(portable, MCP),
            &mcp_backup
        ],
        "only the portable VS Code's files: the folder at ~/.config/Code is not Stable's here"
    );
    assert_eq!(created[&mcp_backup], "");
    assert_eq!(created[&at(portable, MCP)], expected);
    run(&["uninstall"]);
    assert_eq!(person.tree(), BTreeMap::new(), "the files it made are gone");
}

#[test]
fn a_dry_run_shows_both_diffs_and_the_restart_and_writes_nothing() {
    let person = person_with_vscode();
    let before = person.tree();
    let out = person.ok(&["install", "--dry-run", "--agents", "copilot"]);
    assert_eq!(person.tree(), before, "install --dry-run wrote nothing");
    let mcp = person.path(&at(STABLE, MCP)).display().to_string();
    assert!(out.contains(&format!("--- a{mcp}\n+++ b{mcp}\n")), "{out}");
    assert!(out.contains("+\t\t\"cross-agent\": {\n"), "{out}");
    let host = person.path(&at(STABLE, HOST)).display().to_string();
    assert!(
        out.contains(&format!("--- a{host}\n+++ b{host}\n")),
        "{out}"
    );
    assert!(out.contains("+  \"mcpServers\": {\n"), "{out}");
    let insiders = person.path(&at(INSIDERS, MCP)).display().to_string();
    assert!(
        out.contains(&format!("--- /dev/null\n+++ b{insiders}\n")),
        "{out}"
    );
    assert!(
        out.contains("dry run: nothing was written (4 change(s)"),
        "{out}"
    );
    assert!(out.contains(&format!("afterwards: {RESTART}")), "{out}");

    let out = person.ok(&["install", "--dry-run", "--json", "--agents", "copilot"]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["files"][0]["for"], "Copilot (VS Code)", "{report:#}");
    assert_eq!(report["notes"], json!([RESTART]));
    assert_eq!(person.tree(), before, "--json --dry-run wrote nothing");

    person.ok(&["install", "--agents", "copilot"]);
    let installed = person.tree();
    let out = person.ok(&["uninstall", "--dry-run"]);
    assert_eq!(
        person.tree(),
        installed,
        "uninstall --dry-run wrote nothing"
    );
    assert!(out.contains("-\t\t\"cross-agent\": {\n"), "{out}");
}

#[test]
fn auto_approve_only_with_its_flag_with_the_warning_and_uninstall_takes_it_out() {
    let person = person_with_vscode();
    let before = person.tree();
    let out = person.ok(&["install", "--agents", "copilot"]);
    assert!(!out.contains("autoApprove"), "{out}");
    assert_eq!(person.read(&at(STABLE, SETTINGS)), SETTINGS_JSON);

    let out = person.ok(&["install", "--agents", "copilot", "--copilot-auto-approve"]);
    assert!(out.contains(WARNING), "{out}");
    for editor in [STABLE, INSIDERS] {
        assert_eq!(
            parsed(&person, &at(editor, SETTINGS))["chat.tools.global.autoApprove"],
            true,
            "{editor}"
        );
    }
    let settings = person.read(&at(STABLE, SETTINGS));
    assert!(
        settings.starts_with("{\n\t// editor\n\t\"editor.fontSize\": 14,\n"),
        "{settings}"
    );
    assert_eq!(
        person.read(&format!("{}.cross-agent.bak", at(STABLE, SETTINGS))),
        SETTINGS_JSON
    );

    // With --panels too, one change of each settings.json holds both.
    let out = person.ok(&[
        "install",
        "--agents",
        "copilot",
        "--copilot-auto-approve",
        "--panels",
    ]);
    let settings_path = person.path(&at(STABLE, SETTINGS)).display().to_string();
    assert_eq!(
        out.matches(&format!("{settings_path} ")).count(),
        1,
        "{out}"
    );
    let settings = parsed(&person, &at(STABLE, SETTINGS));
    assert_eq!(settings["chat.tools.global.autoApprove"], true);
    assert!(
        settings["chatgpt.cliExecutable"].is_string(),
        "{settings:#}"
    );

    // The flag without Copilot says so and sets nothing.
    let other = Person::empty();
    std::fs::create_dir_all(other.path(STABLE)).unwrap();
    let out = other.ok(&["install", "--agents", "codex", "--copilot-auto-approve"]);
    assert!(
        out.contains(
            "--copilot-auto-approve: Copilot is not being set up, so \
             chat.tools.global.autoApprove was not set"
        ),
        "{out}"
    );
    assert!(!other.path(&at(STABLE, SETTINGS)).exists());

    person.ok(&["uninstall"]);
    assert_eq!(person.tree(), before, "settings.json as it was");
}

#[test]
fn uninstall_leaves_an_auto_approve_the_person_set_themselves() {
    let person = Person::empty();
    let own = "{\n  \"chat.tools.global.autoApprove\": true\n}\n";
    person.write(&at(STABLE, SETTINGS), own);
    let with_others = "{\n  \"chat.tools.global.autoApprove\": true,\n  \"a\": 1\n}\n";
    person.write(&at(INSIDERS, SETTINGS), with_others);
    person.ok(&["install", "--agents", "copilot"]);
    let out = person.ok(&["uninstall"]);
    for editor in [STABLE, INSIDERS] {
        let settings = person.path(&at(editor, SETTINGS)).display().to_string();
        assert!(out.contains(&format!("unchanged {settings} ")), "{out}");
    }
    assert_eq!(person.read(&at(STABLE, SETTINGS)), own);
    assert_eq!(person.read(&at(INSIDERS, SETTINGS)), with_others);

    // Had it as `false`: the flag sets it, uninstall puts `false` back.
    let person = Person::empty();
    let off = "{\n  \"chat.tools.global.autoApprove\": false // not yet\n}\n";
    person.write(&at(STABLE, SETTINGS), off);
    person.ok(&["install", "--agents", "copilot", "--copilot-auto-approve"]);
    assert_eq!(
        parsed(&person, &at(STABLE, SETTINGS))["chat.tools.global.autoApprove"],
        true
    );
    person.ok(&["uninstall"]);
    assert_eq!(person.read(&at(STABLE, SETTINGS)), off);
}

#[test]
fn a_linked_mcp_json_stops_every_agent_and_is_named() {
    let person = person_with_vscode();
    person.write(".codex/config.toml", CODEX_TOML);
    let elsewhere = person.path("dotfiles/mcp.json");
    person.write("dotfiles/mcp.json", MCP_JSON);
    std::fs::remove_file(person.path(&at(STABLE, MCP))).unwrap();
    std::os::unix::fs::symlink(&elsewhere, person.path(&at(STABLE, MCP))).unwrap();
    let before = person.tree();

    let out = person.run(&["install", "--agents", "codex,copilot"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} is a symbolic link (to {}); cross-agent does not write through links",
            person.path(&at(STABLE, MCP)).display(),
            elsewhere.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        person.tree(),
        before,
        "nothing written: not Codex's file, not Insiders', no backup"
    );
}

#[test]
fn a_read_only_host_config_is_refused_with_the_copilot_fix_and_nothing_is_written() {
    use std::os::unix::fs::PermissionsExt;
    let person = person_with_vscode();
    person.write(".codex/config.toml", CODEX_TOML);
    let host = person.path(&at(STABLE, HOST));
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = person.tree();
    let out = person.run(&["install", "--agents", "codex,copilot"]);
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} is read-only (mode 0444): cross-agent does not change a file its owner may not \
             write — make it writable (`chmod u+w {}`), or leave Copilot out with --agents",
            host.display(),
            host.display()
        )),
        "{stderr}"
    );
    assert_eq!(person.tree(), before);
}

#[test]
fn keys_the_person_added_inside_the_entry_stay_and_uninstall_names_them() {
    let person = person_with_vscode();
    person.ok(&["install", "--agents", "copilot"]);
    let mcp = person.read(&at(STABLE, MCP));
    let edited = mcp.replacen(
        "\"args\": [\"mcp\"],",
        "\"args\": [\"mcp\"],\n\t\t\t\"sandboxEnabled\": true, // mine",
        1,
    );
    assert_ne!(edited, mcp);
    person.write(&at(STABLE, MCP), &edited);

    let again = person.ok(&["install", "--agents", "copilot"]);
    assert!(again.contains("nothing to change"), "{again}");
    assert_eq!(person.read(&at(STABLE, MCP)), edited);

    let out = person.ok(&["uninstall"]);
    assert!(
        out.contains(&format!(
            "  {}:\n    servers.cross-agent.sandboxEnabled (you added it)\n    your comment \
             `// mine` at servers.cross-agent\n",
            person.path(&at(STABLE, MCP)).display()
        )),
        "{out}"
    );
    assert_eq!(person.read(&at(STABLE, MCP)), MCP_JSON);
}

#[test]
fn doctor_says_whether_both_files_hold_the_entry() {
    let person = person_with_vscode();
    let stdout = |person: &Person| {
        let out = person.run(&["doctor"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let before = stdout(&person);
    let mcp = person.path(&at(STABLE, MCP)).display().to_string();
    assert!(
        before.contains(&format!(
            "not set up Copilot (VS Code) registration ({mcp}): cross-agent is not registered \
             — fix: cross-agent install --agents copilot"
        )),
        "{before}"
    );
    assert!(!before.contains("BROKEN"), "{before}");

    person.ok(&["install", "--agents", "copilot"]);
    let after = stdout(&person);
    let host = person.path(&at(INSIDERS, HOST)).display().to_string();
    assert!(
        after.contains(&format!(
            "ok         Copilot (VS Code Insiders) registration ({host}): runs {} mcp",
            bin().display()
        )),
        "{after}"
    );
    let _ = person.run(&["daemon", "stop"]);
}
