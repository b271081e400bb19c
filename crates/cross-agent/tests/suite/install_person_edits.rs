//! What the person adds inside cross-agent's own entries — a `startup_timeout_sec` and a
//! comment under `[mcp_servers.cross-agent]`, a variable in `mcpServers["cross-agent"].env`, a
//! `timeout` on one of its hooks — stays when `install` runs again (with other options too),
//! and `uninstall`, which takes those entries out whole, names each one it takes with them
//! (its dry run too), without printing a value, and still leaves every file as before install.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::install_home::{CLAUDE_JSON, CLAUDE_SETTINGS, CODEX_TOML, Person, bin};

/// The explanation `uninstall` prints before the list.
const WHY: &str = "cross-agent's own entries out whole (an entry left with only your keys could \
not start), so these you added or changed inside them";

#[test]
fn what_the_person_added_inside_the_codex_entry_stays_and_uninstall_names_it() {
    let person = Person::with_configs();
    person.ok(&["install", "--agents", "codex"]);
    let installed = person.read(".codex/config.toml");
    let edited = installed.replace(
        "[mcp_servers.cross-agent]\n",
        "[mcp_servers.cross-agent]\n# slow machine\nstartup_timeout_sec = 30\n",
    );
    assert_ne!(edited, installed);
    person.write(".codex/config.toml", &edited);

    let again = person.ok(&["install", "--agents", "codex"]);
    assert!(again.contains("nothing to change"), "{again}");
    assert_eq!(person.read(".codex/config.toml"), edited);
    // Another registration (--unattended's env) and back: their lines stay all along.
    person.ok(&["install", "--agents", "codex", "--unattended"]);
    let unattended = person.read(".codex/config.toml");
    assert!(
        unattended.contains("# slow machine\nstartup_timeout_sec = 30\n"),
        "{unattended}"
    );
    assert!(unattended.contains("bypassPermissions"), "{unattended}");
    person.ok(&["install", "--agents", "codex"]);
    assert_eq!(person.read(".codex/config.toml"), edited);

    let listed = format!(
        "  {}:\n    mcp_servers.cross-agent.startup_timeout_sec (you added it)\n    your \
         comment `# slow machine` at mcp_servers.cross-agent.startup_timeout_sec\n",
        person.path(".codex/config.toml").display()
    );
    let dry = person.ok(&["uninstall", "--dry-run"]);
    assert!(dry.contains("-startup_timeout_sec = 30\n"), "{dry}");
    assert!(dry.contains(WHY), "{dry}");
    assert!(dry.contains(&listed), "{dry}");
    assert_eq!(
        person.read(".codex/config.toml"),
        edited,
        "a dry run writes nothing"
    );

    let out = person.ok(&["uninstall"]);
    assert!(out.contains(WHY), "{out}");
    assert!(out.contains(&listed), "{out}");
    assert_eq!(person.read(".codex/config.toml"), CODEX_TOML);
}

#[test]
fn what_the_person_added_inside_the_claude_entries_stays_and_uninstall_names_it() {
    let person = Person::with_configs();
    person.ok(&["install", "--agents", "claude", "--hooks"]);
    let claude = person.read(".claude.json");
    let (head, ours) = claude.split_at(claude.find("\"cross-agent\"").unwrap());
    let with_variable = format!(
        "{head}{}",
        ours.replacen(
            "\"env\": {}",
            "\"env\": {\n        \"MY_TOKEN\": \"secret-value\"\n      }",
            1
        )
    );
    assert_ne!(with_variable, claude, "{claude}");
    person.write(".claude.json", &with_variable);
    let pre_tool_use = format!("\"command\": \"{} hook PreToolUse\"", bin().display());
    let settings = person.read(".claude/settings.json");
    let with_timeout = settings.replace(&pre_tool_use, &format!("{pre_tool_use}, \"timeout\": 10"));
    assert_ne!(with_timeout, settings, "{settings}");
    person.write(".claude/settings.json", &with_timeout);

    let again = person.ok(&["install", "--agents", "claude", "--hooks"]);
    assert!(again.contains("nothing to change"), "{again}");
    assert_eq!(person.read(".claude.json"), with_variable);
    assert_eq!(person.read(".claude/settings.json"), with_timeout);

    let dry: Value =
        serde_json::from_str(&person.ok(&["uninstall", "--dry-run", "--json"])).unwrap();
    let dropped = |report: &Value, file: &str| {
        report["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == person.path(file).display().to_string())
            .unwrap_or_else(|| panic!("{file}: {report:#}"))["dropped"]
            .clone()
    };
    assert_eq!(
        dropped(&dry, ".claude.json"),
        json!([{"key": "mcpServers.cross-agent.env.MY_TOKEN", "edit": "added"}])
    );
    assert_eq!(
        dropped(&dry, ".claude/settings.json"),
        json!([{"key": "hooks.PreToolUse[0].hooks[0].timeout", "edit": "added"}])
    );

    let out = person.ok(&["uninstall"]);
    assert!(out.contains(WHY), "{out}");
    assert!(
        out.contains(&format!(
            "  {}:\n    mcpServers.cross-agent.env.MY_TOKEN (you added it)\n",
            person.path(".claude.json").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  {}:\n    hooks.PreToolUse[0].hooks[0].timeout (you added it)\n",
            person.path(".claude/settings.json").display()
        )),
        "{out}"
    );
    assert!(!out.contains("secret-value"), "no value is printed: {out}");
    assert_eq!(person.read(".claude.json"), CLAUDE_JSON);
    assert_eq!(person.read(".claude/settings.json"), CLAUDE_SETTINGS);
}
