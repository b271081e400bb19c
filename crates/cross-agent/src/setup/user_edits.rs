//! What the person added or changed inside cross-agent's own entries: a key beside the ones
//! `install` writes in `mcpServers["cross-agent"]`, VS Code's `servers["cross-agent"]` or
//! `[mcp_servers.cross-agent]` (a
//! `startup_timeout_sec`), a variable in their `env`, a key or matcher of one of cross-agent's
//! hooks, a comment in them. `install` keeps these; `uninstall` takes cross-agent's entries out
//! whole — what would be left of one (a server with a timeout but no command) stops the agent
//! from reading its configuration — so these go with them, and this module finds them so that
//! `uninstall` and its dry run name each one.

use std::path::Path;

use serde_json::{Value, json};

use super::{FileKind, HOOK_EVENTS, UNATTENDED_ENV};

/// One thing of the person's that goes with cross-agent's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Where, as a dotted path: `mcp_servers.cross-agent.startup_timeout_sec`.
    pub key: String,
    pub edit: Edit,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// A key `install` does not write.
    Added,
    /// A key `install` writes, holding another value.
    Changed,
    /// A comment (its text) at or inside `key`.
    Comment(String),
}

impl Dropped {
    fn new(key: String, edit: Edit) -> Dropped {
        Dropped { key, edit }
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        match &self.edit {
            Edit::Added => format!("{} (you added it)", self.key),
            Edit::Changed => format!("{} (you changed what install wrote)", self.key),
            Edit::Comment(text) => format!("your comment `{text}` at {}", self.key),
        }
    }

    pub fn to_json(&self) -> Value {
        match &self.edit {
            Edit::Added => json!({"key": self.key, "edit": "added"}),
            Edit::Changed => json!({"key": self.key, "edit": "changed"}),
            Edit::Comment(text) => json!({"key": self.key, "edit": "comment", "comment": text}),
        }
    }
}

/// The person's keys and values in the server entry `entry` (found at `at`) of a file of
/// `kind`. `original` is the entry as it was before cross-agent first changed the file:
/// uninstall puts that back, so what it holds is not listed.
pub fn in_server_entry(
    kind: FileKind,
    at: &str,
    entry: &Value,
    original: Option<&Value>,
) -> Vec<Dropped> {
    let mut out = Vec::new();
    let Some(object) = entry.as_object() else {
        if original != Some(entry) {
            out.push(Dropped::new(at.to_owned(), Edit::Changed));
        }
        return out;
    };
    for (key, value) in object {
        let was = original.and_then(|o| o.get(key));
        if was == Some(value) {
            continue;
        }
        let path = format!("{at}.{key}");
        if key == "env" {
            env_edits(&path, value, was, &mut out);
            continue;
        }
        match install_writes(kind, key, value) {
            Some(true) => {}
            Some(false) => out.push(Dropped::new(path, Edit::Changed)),
            None => out.push(Dropped::new(path, Edit::Added)),
        }
    }
    out
}

/// Whether `key` is one `install` writes in a server entry of `kind` (`None`: it is not) and
/// holds a value install writes there.
fn install_writes(kind: FileKind, key: &str, value: &Value) -> Option<bool> {
    match (kind, key) {
        (_, "command") => Some(
            value
                .as_str()
                .and_then(|command| Path::new(command).file_name())
                .is_some_and(|name| name == "cross-agent"),
        ),
        (_, "args") => Some(*value == json!(["mcp"])),
        (FileKind::ClaudeJson | FileKind::CopilotMcp | FileKind::CopilotHostConfig, "type") => {
            Some(*value == json!("stdio"))
        }
        (FileKind::CodexConfig, "required") => Some(*value == json!(true)),
        (FileKind::CodexConfig, "default_tools_approval_mode") => Some(*value == json!("approve")),
        _ => None,
    }
}

/// The variables install writes in an entry's `env`, and the value each must hold (`None`:
/// any text, as `CROSS_AGENT_HOME`).
pub fn install_env(name: &str) -> Option<Option<&'static str>> {
    if name == cross_agent_protocol::settings::HOME {
        return Some(None);
    }
    UNATTENDED_ENV
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| Some(*value))
}

fn env_edits(at: &str, env: &Value, original: Option<&Value>, out: &mut Vec<Dropped>) {
    let Some(variables) = env.as_object() else {
        out.push(Dropped::new(at.to_owned(), Edit::Changed));
        return;
    };
    for (name, value) in variables {
        if original.and_then(|o| o.get(name)) == Some(value) {
            continue;
        }
        let path = format!("{at}.{name}");
        match install_env(name) {
            Some(None) if value.is_string() => {}
            Some(Some(wanted)) if value.as_str() == Some(wanted) => {}
            Some(_) => out.push(Dropped::new(path, Edit::Changed)),
            None => out.push(Dropped::new(path, Edit::Added)),
        }
    }
}

/// The person's keys in cross-agent's hooks in Claude Code's `settings` (a hook whose command
/// `is_ours`), and in a hook group uninstall removes because only cross-agent's hooks are in it.
pub fn in_hooks(settings: &Value, is_ours: impl Fn(&str) -> bool) -> Vec<Dropped> {
    let mut out = Vec::new();
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in events {
        let Some(groups) = groups.as_array() else {
            continue;
        };
        for (index, group) in groups.iter().enumerate() {
            let Some(hooks) = group.get("hooks").and_then(Value::as_array) else {
                continue;
            };
            let ours = |hook: &Value| {
                hook.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(&is_ours)
            };
            let group_at = format!("hooks.{event}[{index}]");
            for (position, hook) in hooks.iter().enumerate().filter(|(_, h)| ours(h)) {
                let Some(hook) = hook.as_object() else {
                    continue;
                };
                for (key, value) in hook {
                    let path = format!("{group_at}.hooks[{position}].{key}");
                    match key.as_str() {
                        "command" => {}
                        "type" if *value == json!("command") => {}
                        "type" => out.push(Dropped::new(path, Edit::Changed)),
                        _ => out.push(Dropped::new(path, Edit::Added)),
                    }
                }
            }
            if hooks.is_empty() || !hooks.iter().all(ours) {
                continue;
            }
            // The group goes too: what the person set on it goes with it.
            let matcher = HOOK_EVENTS
                .iter()
                .find(|(name, _)| name == event)
                .and_then(|(_, matcher)| *matcher);
            for (key, value) in group.as_object().into_iter().flatten() {
                let path = format!("{group_at}.{key}");
                match (key.as_str(), matcher) {
                    ("hooks", _) => {}
                    ("matcher", Some(wanted)) if value.as_str() == Some(wanted) => {}
                    ("matcher", Some(_)) => out.push(Dropped::new(path, Edit::Changed)),
                    _ => out.push(Dropped::new(path, Edit::Added)),
                }
            }
        }
    }
    out
}

/// The comments in a stretch of a file's whitespace and comments (`# …` or `// …` lines).
pub fn comments_in(trivia: &str, at: &str) -> Vec<Dropped> {
    trivia
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with('#') || line.starts_with("//") || line.starts_with("/*"))
        .map(|line| Dropped::new(at.to_owned(), Edit::Comment(line.to_owned())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::json_config::JsonDoc;
    use pretty_assertions::assert_eq;

    fn dropped(edits: &[Dropped]) -> Vec<String> {
        edits.iter().map(Dropped::describe).collect()
    }

    #[test]
    fn a_changed_value_and_an_added_variable_are_named_and_what_was_there_before_is_not() {
        let entry = json!({
            "command": "/opt/bin/cross-agent",
            "args": ["mcp"],
            "required": false,
            "default_tools_approval_mode": "approve",
            "startup_timeout_sec": 30,
            "env": {
                "CROSS_AGENT_HOME": "/somewhere",
                "CROSS_AGENT_CODEX_SANDBOX": "read-only",
                "MINE": "1",
                "THEIRS_BEFORE": "2",
            },
        });
        let original = json!({"startup_timeout_sec": 30, "env": {"THEIRS_BEFORE": "2"}});
        let edits = in_server_entry(FileKind::CodexConfig, "s", &entry, Some(&original));
        assert_eq!(
            dropped(&edits),
            [
                "s.env.CROSS_AGENT_CODEX_SANDBOX (you changed what install wrote)",
                "s.env.MINE (you added it)",
                "s.required (you changed what install wrote)",
            ]
        );
        let moved = json!({"command": "/usr/local/bin/my-wrapper", "args": ["mcp"]});
        assert_eq!(
            dropped(&in_server_entry(FileKind::GrokConfig, "g", &moved, None)),
            ["g.command (you changed what install wrote)"]
        );
    }

    #[test]
    fn a_hook_group_that_goes_names_its_changed_matcher_and_added_keys() {
        let settings = json!({"hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "ours"}]},
                {"matcher": "*", "hooks": [
                    {"type": "command", "command": "ours", "timeout": 5},
                    {"type": "command", "command": "theirs"},
                ], "note": "kept: the group stays"},
            ],
            "Stop": [{"description": "mine", "hooks": [{"type": "command", "command": "ours"}]}],
        }});
        let edits = in_hooks(&settings, |command| command == "ours");
        assert_eq!(
            dropped(&edits),
            [
                "hooks.PreToolUse[0].matcher (you changed what install wrote)",
                "hooks.PreToolUse[1].hooks[0].timeout (you added it)",
                "hooks.Stop[0].description (you added it)",
            ]
        );
    }

    #[test]
    fn comments_inside_an_entry_are_found_in_order() {
        let doc = JsonDoc::parse(
            "f",
            Some(
                "{\"mcpServers\": {\"cross-agent\": { // mine\n \"env\": {/* a */ \"A\": \"1\"}}}}",
            ),
        )
        .unwrap();
        assert_eq!(
            doc.comments_in_entry(&["mcpServers"], "cross-agent"),
            ["// mine", "/* a */"]
        );
    }
}
