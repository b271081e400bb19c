//! The `[control]` table of `CROSS_AGENT_HOME/config.toml` and `CROSS_AGENT_GUI_FALLBACK`
//! (docs/desktop.md "Focus and GUI fallback"):
//!
//! ```toml
//! [control]
//! gui_fallback = false            # type prompts through the GUI where no door is left
//! prefer_gui = false              # with it on: the GUI before a headless resume
//! idle_seconds = 5                # never while there was input in the last N seconds
//! claude_open_keys = "ctrl+Escape"  # Claude Code's "Focus input" (claude-vscode.focus)
//! codex_open_keys = ""            # no default: bind a key to chatgpt.openSidebar and set it
//! paste_keys = "ctrl+v"
//! submit_keys = "Return"
//! ```
//!
//! A missing file or table is every default; `CROSS_AGENT_GUI_FALLBACK` (`1`/`0`) wins over
//! `gui_fallback`. The file is read only when safe — not a link, this user's, a regular file,
//! not writable by group or others — since it decides whether cross-agent types into the
//! person's editor. An unknown key in `[control]` is an error naming it; other tables are other
//! parts' and are not read here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cross_agent_protocol::settings as var;
use cross_agent_protocol::vocabulary::Agent;
use serde::Deserialize;

use crate::error::{ControlError, Result};
use crate::keys::Chord;

/// The file, in `CROSS_AGENT_HOME`.
pub const FILE_NAME: &str = "config.toml";
/// `idle_seconds` when not set.
pub const DEFAULT_IDLE_SECONDS: u64 = 5;
/// Claude Code's keybinding for "Focus input" (`claude-vscode.focus`), Ctrl+Esc on Linux.
pub const DEFAULT_CLAUDE_OPEN_KEYS: &str = "ctrl+Escape";
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Where the GUI fallback's switch came from, for its refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    /// `CROSS_AGENT_GUI_FALLBACK`.
    Env,
    /// `gui_fallback` in the file.
    File,
    /// Neither: off.
    Default,
}

/// The `[control]` table, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlConfig {
    pub gui_fallback: bool,
    pub gui_fallback_from: Switch,
    /// The person prefers the GUI to a headless resume for a session no shim or native door
    /// holds (it counts only while the fallback is on).
    pub prefer_gui: bool,
    /// Input within this long before stops the fallback.
    pub idle: Duration,
    /// The chord that puts the keyboard focus in Claude Code's chat input.
    pub claude_open: Option<Chord>,
    /// The same for Codex's panel (none by default: its extension binds no key to its sidebar).
    pub codex_open: Option<Chord>,
    pub paste: Chord,
    pub submit: Chord,
    /// Where they were read from (the file may not exist).
    pub path: PathBuf,
}

impl ControlConfig {
    /// How the fallback is switched on, for a refusal that names the setting.
    pub fn how_to_turn_on(&self) -> String {
        format!(
            "CROSS_AGENT_GUI_FALLBACK=1 in the daemon's environment, or gui_fallback = true \
             under [control] in {}",
            self.path.display()
        )
    }

    /// The chord that opens `agent`'s chat input, when one is set.
    pub fn open_keys(&self, agent: Agent) -> Option<&Chord> {
        match agent {
            Agent::Claude => self.claude_open.as_ref(),
            Agent::Codex => self.codex_open.as_ref(),
            Agent::Grok | Agent::Copilot => None,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(default)]
    control: Table,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    gui_fallback: Option<bool>,
    prefer_gui: Option<bool>,
    idle_seconds: Option<u64>,
    claude_open_keys: Option<String>,
    codex_open_keys: Option<String>,
    paste_keys: Option<String>,
    submit_keys: Option<String>,
}

/// `home`'s `[control]` table with `CROSS_AGENT_GUI_FALLBACK` over it.
pub fn load(home: &Path) -> Result<ControlConfig> {
    let path = home.join(FILE_NAME);
    let text = read_safely(&path)?.unwrap_or_default();
    let env = std::env::var(var::GUI_FALLBACK).ok();
    parse(&text, path, env.as_deref())
}

/// The `[control]` table of `text` (read from `path`, named in errors), with the variable's
/// value `env` over `gui_fallback`.
pub fn parse(text: &str, path: PathBuf, env: Option<&str>) -> Result<ControlConfig> {
    let wrong = |problem: String, fix: &str| ControlError::Settings {
        path: path.clone(),
        problem,
        fix: fix.to_owned(),
    };
    let file: File = toml::from_str(text).map_err(|e| {
        wrong(
            format!("it is not valid: {}", e.to_string().trim_end()),
            "Fix the key named (docs/desktop.md lists the [control] keys)",
        )
    })?;
    let table = file.control;
    let chord = |key: &str, value: Option<&str>| -> Result<Option<Chord>> {
        match value.map(str::trim) {
            None | Some("") => Ok(None),
            Some(v) => Chord::parse(v).map(Some).map_err(|e| {
                wrong(
                    format!("control.{key}: {e}"),
                    "Write a chord such as \"ctrl+shift+Escape\"",
                )
            }),
        }
    };
    let (gui_fallback, gui_fallback_from) = match env.map(str::trim) {
        Some("1" | "true") => (true, Switch::Env),
        Some("0" | "false") => (false, Switch::Env),
        Some("") | None => match table.gui_fallback {
            Some(on) => (on, Switch::File),
            None => (false, Switch::Default),
        },
        Some(other) => {
            return Err(ControlError::Settings {
                path: PathBuf::from(var::GUI_FALLBACK),
                problem: format!("the value {other:?} is neither 1 nor 0"),
                fix: "Set it to 1 (on) or 0 (off), or unset it".to_owned(),
            });
        }
    };
    let claude_open = match table.claude_open_keys {
        // Set but empty: the person turned Claude's key off.
        Some(keys) => chord("claude_open_keys", Some(&keys))?,
        None => chord("claude_open_keys", Some(DEFAULT_CLAUDE_OPEN_KEYS))?,
    };
    let required = |key: &str, value: Option<String>, default: &str| -> Result<Chord> {
        chord(key, value.as_deref())?.map_or_else(|| Chord::parse(default), Ok)
    };
    Ok(ControlConfig {
        gui_fallback,
        gui_fallback_from,
        prefer_gui: table.prefer_gui.unwrap_or(false),
        idle: Duration::from_secs(table.idle_seconds.unwrap_or(DEFAULT_IDLE_SECONDS)),
        claude_open,
        codex_open: chord("codex_open_keys", table.codex_open_keys.as_deref())?,
        paste: required("paste_keys", table.paste_keys, "ctrl+v")?,
        submit: required("submit_keys", table.submit_keys, "Return")?,
        path,
    })
}

/// The file's text, or `None` when there is none; refused when it is a link, someone else's,
/// not a regular file, or writable by group or others.
fn read_safely(path: &Path) -> Result<Option<String>> {
    use cross_agent_home::safety::{SettingsFileRefusal as Refusal, read_settings_file};
    let wrong = |problem: String, fix: String| ControlError::Settings {
        path: path.to_owned(),
        problem,
        fix,
    };
    read_settings_file(path, MAX_FILE_BYTES).map_err(|refusal| match refusal {
        Refusal::Entry(e) => e.into(),
        Refusal::NotRegular => wrong(
            "it is not a regular file".to_owned(),
            "Remove it and write config.toml as a plain file (docs/desktop.md)".to_owned(),
        ),
        Refusal::GroupWritable { mode } => wrong(
            format!(
                "it is writable by group or others (mode {mode:o}), and it decides whether \
                 cross-agent types into your editor"
            ),
            format!(
                "Check its [control] table, then `chmod go-w {}`",
                path.display()
            ),
        ),
        Refusal::Io(source) => ControlError::Io {
            path: path.to_owned(),
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn parsed(text: &str, env: Option<&str>) -> Result<ControlConfig> {
        parse(text, PathBuf::from("/h/config.toml"), env)
    }

    #[test]
    fn no_table_is_off_with_five_seconds_and_claudes_key() {
        let c = parsed("[review]\nsteer = true\n", None).unwrap();
        assert_eq!(
            (c.gui_fallback, c.gui_fallback_from.clone(), c.idle),
            (false, Switch::Default, Duration::from_secs(5))
        );
        assert_eq!(
            c.open_keys(Agent::Claude).map(|k| k.text.as_str()),
            Some("ctrl+Escape")
        );
        assert_eq!(c.open_keys(Agent::Codex), None);
    }

    #[test]
    fn the_variable_wins_over_the_file() {
        let on = "[control]\ngui_fallback = true\nidle_seconds = 30\n";
        let c = parsed(on, None).unwrap();
        assert_eq!((c.gui_fallback, c.idle), (true, Duration::from_secs(30)));
        assert!(!parsed(on, Some("0")).unwrap().gui_fallback);
        assert!(parsed("", Some("1")).unwrap().gui_fallback);
        let e = parsed("", Some("yes")).unwrap_err().to_string();
        assert!(e.contains("CROSS_AGENT_GUI_FALLBACK"), "{e}");
    }

    #[test]
    fn a_misspelt_key_or_chord_is_named() {
        let e = parsed("[control]\ngui_fallbak = true\n", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("gui_fallbak"), "{e}");
        let e = parsed("[control]\ncodex_open_keys = \"ctl+k\"\n", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("control.codex_open_keys"), "{e}");
    }
}
