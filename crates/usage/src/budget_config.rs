//! The files of the budgets: the `[usage.budget]` table of `CROSS_AGENT_HOME/config.toml`, read
//! the way the `[review]` table is (docs/review.md), and `usage-budget-state.json`, what the
//! daemon's budget watcher announced today, kept across restarts.
//!
//! ```toml
//! [usage.budget]
//! daily = "20.00"    # dollars per UTC day, all agents together
//! claude = "15"      # one agent's: claude, codex, grok or copilot
//! codex = "5.50"
//! ```
//!
//! Amounts are dollars, as decimal text read exactly (up to six decimals) or a TOML number.
//! A missing file or table is no budget. A key that is not a budget, an amount that is not
//! one, or a budget of 0 is an error naming the key: a misspelt `daily` must not quietly leave
//! the spending unwatched. The file is read only when it is safe (not a link, this user's, a
//! regular file, not writable by group or others); other tables are other parts' and are not
//! read here.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use cross_agent_protocol::Agent;
use serde::Deserialize;

use crate::budget::{Announced, Budgets};
use crate::error::{Error, Result};
use crate::money::Money;
use crate::prices::Rate;

/// The file, in `CROSS_AGENT_HOME`.
pub const CONFIG_FILE: &str = "config.toml";
/// What the watcher announced today, in `CROSS_AGENT_HOME`.
pub const STATE_FILE: &str = "usage-budget-state.json";
/// A config file is a few hundred bytes; this keeps a wrong file from being read whole.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(default)]
    usage: UsageTable,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageTable {
    #[serde(default)]
    budget: toml::Table,
}

fn settings_error(path: &Path, problem: String) -> Error {
    Error::Settings {
        path: path.to_owned(),
        problem,
        fix: "Fix the key named (docs/usage.md, \"Budgets\", lists the [usage.budget] keys)"
            .to_owned(),
    }
}

/// `home`'s budgets (none when there is no file or no `[usage.budget]`).
pub fn load(home: &Path) -> Result<Budgets> {
    let path = home.join(CONFIG_FILE);
    match read_safely(&path)? {
        None => Ok(Budgets::default()),
        Some(text) => parse(&text, &path),
    }
}

/// The budgets of `text`, read from `path` (named in errors).
pub fn parse(text: &str, path: &Path) -> Result<Budgets> {
    let file: File = toml::from_str(text).map_err(|error| {
        settings_error(
            path,
            format!("it is not valid: {}", error.to_string().trim_end()),
        )
    })?;
    let mut budgets = Budgets::default();
    for (key, value) in &file.usage.budget {
        let amount = dollars(value)
            .map_err(|problem| settings_error(path, format!("usage.budget.{key}: {problem}")))?;
        if amount == Money::ZERO {
            return Err(settings_error(
                path,
                format!("usage.budget.{key} is 0; remove the key to set no budget"),
            ));
        }
        if key == "daily" {
            budgets.daily = Some(amount);
            continue;
        }
        match Agent::ALL.into_iter().find(|a| a.as_str() == key) {
            Some(agent) => {
                budgets.agents.insert(agent, amount);
            }
            None => {
                return Err(settings_error(
                    path,
                    format!(
                        "usage.budget.{key} is not a budget: the keys are daily, claude, codex, \
                         grok and copilot"
                    ),
                ));
            }
        }
    }
    Ok(budgets)
}

/// An amount of dollars: `"20.00"` (exact), `20` or `20.5`.
fn dollars(value: &toml::Value) -> std::result::Result<Money, String> {
    let micro = match value {
        toml::Value::String(text) => crate::prices::parse_decimal(text)
            .map_err(|_| format!("`{text}` is not an amount of dollars (like \"20.00\")"))?,
        toml::Value::Integer(n) => u64::try_from(*n)
            .ok()
            .and_then(|n| n.checked_mul(1_000_000))
            .map(Rate)
            .ok_or_else(|| format!("{n} is not an amount of dollars"))?,
        // Rounded to the micro-dollar, as prices are.
        toml::Value::Float(f) if f.is_finite() && *f >= 0.0 && *f < 1e12 => {
            Rate((f * 1_000_000.0).round() as u64)
        }
        other => {
            return Err(format!(
                "a {} is not an amount of dollars (write it like \"20.00\")",
                other.type_str()
            ));
        }
    };
    // Micro-dollars to picodollars.
    Ok(Money(u128::from(micro.0) * 1_000_000))
}

/// The file's text, or `None` when there is none; refused when it is a link, someone else's,
/// not a regular file, or writable by group or others.
fn read_safely(path: &Path) -> Result<Option<String>> {
    use cross_agent_home::safety::{SettingsFileRefusal as Refusal, read_settings_file};
    let settings = |problem: String, fix: String| Error::Settings {
        path: path.to_owned(),
        problem,
        fix,
    };
    read_settings_file(path, MAX_FILE_BYTES).map_err(|refusal| match refusal {
        Refusal::Entry(e) => settings(
            e.to_string(),
            "Replace it with a regular file of your own".to_owned(),
        ),
        Refusal::NotRegular => settings(
            "it is not a regular file".to_owned(),
            "Remove it and write config.toml as a plain file".to_owned(),
        ),
        Refusal::GroupWritable { mode } => settings(
            format!("it is writable by group or others (mode {mode:o})"),
            format!("Check it, then `chmod go-w {}`", path.display()),
        ),
        Refusal::Io(source) => Error::Io {
            path: path.to_owned(),
            source,
        },
    })
}

/// The state as read, and where a damaged file was moved.
#[derive(Debug, Default)]
pub struct LoadedState {
    pub announced: Announced,
    pub quarantined: Option<PathBuf>,
}

/// Reads `home`'s budget state (empty when there is none). A damaged file is moved aside to
/// `<file>.damaged-<ms>` and read as empty; a link is refused.
pub fn load_state(home: &Path) -> Result<LoadedState> {
    let path = home.join(STATE_FILE);
    let io = |source| Error::Io {
        path: path.clone(),
        source,
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(cross_agent_home::home::no_follow_flag())
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LoadedState::default()),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(Error::BudgetState {
                path: path.clone(),
                problem: "it is a symbolic link; remove it (the watcher writes it itself)"
                    .to_owned(),
            });
        }
        Err(e) => return Err(io(e)),
    };
    let mut text = String::new();
    file.take(MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(io)?;
    match serde_json::from_str::<Announced>(&text) {
        Ok(announced) => Ok(LoadedState {
            announced,
            quarantined: None,
        }),
        Err(_) => {
            let mut aside = path.as_os_str().to_owned();
            aside.push(format!(
                ".damaged-{}",
                cross_agent_protocol::timestamp::UnixMillis::now().0
            ));
            let aside = PathBuf::from(aside);
            std::fs::rename(&path, &aside).map_err(io)?;
            Ok(LoadedState {
                announced: Announced::default(),
                quarantined: Some(aside),
            })
        }
    }
}

/// Replaces `home`'s budget state whole, owner-only (never written through a link).
pub fn save_state(home: &Path, announced: &Announced) -> Result<()> {
    let path = home.join(STATE_FILE);
    let bytes = serde_json::to_vec_pretty(announced).map_err(|e| Error::BudgetState {
        path: path.clone(),
        problem: e.to_string(),
    })?;
    cross_agent_home::atomic::write_private(&path, &bytes).map_err(|e| Error::BudgetState {
        path,
        problem: e.to_string(),
    })
}

#[cfg(test)]
// Amounts are written dollars_cents (`8_10` is $8.10).
#[allow(clippy::inconsistent_digit_grouping)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use pretty_assertions::assert_eq;

    use super::*;
    use crate::budget::{AnnouncedBudget, Threshold};

    fn dollars(cents: u128) -> Money {
        Money(cents * 10_000_000_000)
    }

    fn error_of(text: &str) -> String {
        parse(text, Path::new("/h/config.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn no_file_or_table_is_no_budget() {
        let home = tempfile::tempdir().unwrap();
        assert!(load(home.path()).unwrap().is_empty());
        let budgets = parse("[review]\nsteer = true\n", Path::new("/h/c")).unwrap();
        assert!(budgets.is_empty());
    }

    #[test]
    fn the_daily_and_agent_budgets_are_read_exactly() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(CONFIG_FILE);
        std::fs::write(
            &path,
            "[review]\nsteer = false\n\n[usage.budget]\ndaily = \"20.00\"\nclaude = 15\n\
             codex = 5.5\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let budgets = load(home.path()).unwrap();
        assert_eq!(
            budgets,
            Budgets {
                daily: Some(dollars(20_00)),
                agents: [
                    (Agent::Claude, dollars(15_00)),
                    (Agent::Codex, dollars(5_50))
                ]
                .into(),
            }
        );
    }

    #[test]
    fn a_bad_key_or_amount_is_named() {
        let error = error_of("[usage.budget]\ndialy = \"20\"\n");
        assert!(error.starts_with("/h/config.toml: "), "{error}");
        assert!(
            error.contains("usage.budget.dialy is not a budget"),
            "{error}"
        );
        let error = error_of("[usage.budget]\ndaily = \"twenty\"\n");
        assert!(
            error.contains("usage.budget.daily: `twenty` is not an amount"),
            "{error}"
        );
        let error = error_of("[usage.budget]\ncodex = -3\n");
        assert!(error.contains("usage.budget.codex: -3 is not"), "{error}");
        let error = error_of("[usage.budget]\ndaily = \"0\"\n");
        assert!(error.contains("usage.budget.daily is 0"), "{error}");
        let error = error_of("[usage]\nbudgets = 1\n");
        assert!(error.contains("budgets"), "{error}");
        let error = error_of("[usage.budget]\ndaily = true\n");
        assert!(
            error.contains("usage.budget.daily: a boolean is not"),
            "{error}"
        );
    }

    #[test]
    fn a_linked_or_writable_config_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let real = home.path().join("real.toml");
        std::fs::write(&real, "[usage.budget]\ndaily = 1\n").unwrap();
        let path = home.path().join(CONFIG_FILE);
        std::os::unix::fs::symlink(&real, &path).unwrap();
        let error = load(home.path()).unwrap_err().to_string();
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains("link"), "{error}");
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "[usage.budget]\ndaily = 1\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let error = load(home.path()).unwrap_err().to_string();
        assert!(error.contains("chmod go-w"), "{error}");
    }

    #[test]
    fn the_state_is_kept_and_a_damaged_one_moved_aside() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(
            load_state(home.path()).unwrap().announced,
            Announced::default()
        );
        let state = Announced {
            day: "2026-12-06".into(),
            budgets: vec![AnnouncedBudget {
                budget: "daily".into(),
                limit_usd: "20.000000".into(),
                threshold: Threshold::Most,
                notice: "80%".into(),
                notified: true,
            }],
        };
        save_state(home.path(), &state).unwrap();
        assert_eq!(load_state(home.path()).unwrap().announced, state);
        std::fs::write(home.path().join(STATE_FILE), "{not json").unwrap();
        let loaded = load_state(home.path()).unwrap();
        assert_eq!(loaded.announced, Announced::default());
        assert!(loaded.quarantined.unwrap().exists());
    }
}
