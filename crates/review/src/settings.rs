//! The `[review]` table of `CROSS_AGENT_HOME/config.toml`: whether the daemon may steer
//! sessions and run reviews on its own, and the escalation guard's limits (docs/review.md,
//! "config.toml"). One reader for every part that needs them: the daemon's guard, the review
//! robot's cadence.
//!
//! ```toml
//! [review]
//! steer = false                   # the robot may send corrections (past the guard)
//! robot = false                   # the daemon reviews idle sessions on its own
//! max_corrections_per_day = 3     # per session, over the last 24 hours
//! cooldown_minutes = 30           # between two corrections to one session
//! robot_after_idle_minutes = 10   # a session is due this long after its last turn ended
//! robot_interval_minutes = 60     # and at most once per this
//! ```
//!
//! A missing file or table is every default. The file is read only when it is safe: not a
//! symbolic link, this user's, a regular file, not writable by group or others — it decides
//! whether the daemon writes into the person's sessions. An unknown key in `[review]` is an
//! error naming it (a misspelt `steer` must not quietly leave steering off or on); other
//! tables are other parts' and are not read here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::{Result, ReviewError};

/// The file, in `CROSS_AGENT_HOME`.
pub const FILE_NAME: &str = "config.toml";
/// `max_corrections_per_day` when not set.
pub const DEFAULT_MAX_CORRECTIONS_PER_DAY: u32 = 3;
/// `cooldown_minutes` when not set.
pub const DEFAULT_COOLDOWN_MINUTES: u64 = 30;
/// `robot_after_idle_minutes` when not set.
pub const DEFAULT_ROBOT_AFTER_IDLE_MINUTES: u64 = 10;
/// `robot_interval_minutes` when not set.
pub const DEFAULT_ROBOT_INTERVAL_MINUTES: u64 = 60;
/// A config file is a few hundred bytes; this keeps a wrong file from being read whole.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The `[review]` table, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewConfig {
    /// The review robot may send its corrections (each past the guard). A person's `--send`
    /// or tap does not need it.
    pub steer: bool,
    /// The daemon reviews idle sessions on its own.
    pub robot: bool,
    /// The most corrections one session gets in 24 hours (0: none at all).
    pub max_corrections_per_day: u32,
    /// The least time between two corrections to one session.
    pub cooldown: Duration,
    /// A session is due for the robot this long after its last turn ended.
    pub robot_after_idle: Duration,
    /// The robot reviews one session at most once per this.
    pub robot_interval: Duration,
    /// Where they were read from (the file may not exist).
    pub path: PathBuf,
}

impl ReviewConfig {
    /// Every default, as if `path` did not exist.
    pub fn defaults(path: PathBuf) -> ReviewConfig {
        ReviewConfig {
            steer: false,
            robot: false,
            max_corrections_per_day: DEFAULT_MAX_CORRECTIONS_PER_DAY,
            cooldown: minutes(DEFAULT_COOLDOWN_MINUTES),
            robot_after_idle: minutes(DEFAULT_ROBOT_AFTER_IDLE_MINUTES),
            robot_interval: minutes(DEFAULT_ROBOT_INTERVAL_MINUTES),
            path,
        }
    }
}

fn minutes(n: u64) -> Duration {
    Duration::from_secs(n.saturating_mul(60))
}

/// The whole file as far as this reader cares: its `[review]` table.
#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(default)]
    review: Table,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    steer: Option<bool>,
    robot: Option<bool>,
    max_corrections_per_day: Option<u32>,
    cooldown_minutes: Option<u64>,
    robot_after_idle_minutes: Option<u64>,
    robot_interval_minutes: Option<u64>,
}

/// `home`'s `config.toml` `[review]` table (every default when there is no file).
pub fn load(home: &Path) -> Result<ReviewConfig> {
    let path = home.join(FILE_NAME);
    match read_safely(&path)? {
        None => Ok(ReviewConfig::defaults(path)),
        Some(text) => parse(&text, path),
    }
}

/// The `[review]` table of `text`, read from `path` (named in errors).
pub fn parse(text: &str, path: PathBuf) -> Result<ReviewConfig> {
    let file: File = toml::from_str(text).map_err(|error| ReviewError::Settings {
        path: path.clone(),
        problem: format!("it is not valid: {}", error.to_string().trim_end()),
        fix: "Fix the key named (docs/review.md lists the [review] keys)".to_owned(),
    })?;
    let table = file.review;
    if table.robot_interval_minutes == Some(0) {
        return Err(ReviewError::Settings {
            path,
            problem: "review.robot_interval_minutes is 0".to_owned(),
            fix: "Set it to 1 or more: the robot reviews one session at most once per interval"
                .to_owned(),
        });
    }
    let defaults = ReviewConfig::defaults(path);
    Ok(ReviewConfig {
        steer: table.steer.unwrap_or(defaults.steer),
        robot: table.robot.unwrap_or(defaults.robot),
        max_corrections_per_day: table
            .max_corrections_per_day
            .unwrap_or(defaults.max_corrections_per_day),
        cooldown: table.cooldown_minutes.map_or(defaults.cooldown, minutes),
        robot_after_idle: table
            .robot_after_idle_minutes
            .map_or(defaults.robot_after_idle, minutes),
        robot_interval: table
            .robot_interval_minutes
            .map_or(defaults.robot_interval, minutes),
        path: defaults.path,
    })
}

/// The file's text, or `None` when there is none; refused when it is a link, someone else's,
/// not a regular file, or writable by group or others.
fn read_safely(path: &Path) -> Result<Option<String>> {
    use cross_agent_home::safety::{SettingsFileRefusal as Refusal, read_settings_file};
    read_settings_file(path, MAX_FILE_BYTES).map_err(|refusal| match refusal {
        Refusal::Entry(e) => e.into(),
        Refusal::NotRegular => ReviewError::Settings {
            path: path.to_owned(),
            problem: "it is not a regular file".to_owned(),
            fix: "Remove it and write config.toml as a plain file (docs/review.md)".to_owned(),
        },
        Refusal::GroupWritable { mode } => ReviewError::Settings {
            path: path.to_owned(),
            problem: format!(
                "it is writable by group or others (mode {mode:o}), and it decides whether \
                 cross-agent writes corrections into your sessions"
            ),
            fix: format!(
                "Check its [review] table, then `chmod go-w {}`",
                path.display()
            ),
        },
        Refusal::Io(source) => ReviewError::io(path, source),
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn no_file_is_every_default() {
        let home = tempfile::tempdir().unwrap();
        let settings = load(home.path()).unwrap();
        assert_eq!(
            settings,
            ReviewConfig::defaults(home.path().join("config.toml"))
        );
        assert_eq!(settings.max_corrections_per_day, 3);
        assert_eq!(settings.cooldown, Duration::from_secs(30 * 60));
        assert!(!settings.steer && !settings.robot);
    }

    #[test]
    fn the_review_table_is_read_and_other_tables_are_left_alone() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("config.toml");
        std::fs::write(
            &path,
            "[telegram]\nwhatever = 1\n\n[review]\nsteer = true\nmax_corrections_per_day = 5\n\
             cooldown_minutes = 0\nrobot_interval_minutes = 120\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let settings = load(home.path()).unwrap();
        assert_eq!(
            settings,
            ReviewConfig {
                steer: true,
                robot: false,
                max_corrections_per_day: 5,
                cooldown: Duration::ZERO,
                robot_after_idle: Duration::from_secs(10 * 60),
                robot_interval: Duration::from_secs(120 * 60),
                path,
            }
        );
    }

    #[test]
    fn a_misspelt_key_is_named() {
        let error = parse("[review]\nsteeer = true\n", PathBuf::from("/h/config.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("/h/config.toml: it is not valid"),
            "{error}"
        );
        assert!(error.contains("steeer"), "{error}");
        let error = parse(
            "[review]\nrobot_interval_minutes = 0\n",
            PathBuf::from("/h/c"),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("robot_interval_minutes is 0"), "{error}");
    }

    #[test]
    fn a_linked_or_writable_file_is_refused_naming_it_and_the_fix() {
        let home = tempfile::tempdir().unwrap();
        let real = home.path().join("real.toml");
        std::fs::write(&real, "[review]\nsteer = true\n").unwrap();
        let path = home.path().join("config.toml");
        std::os::unix::fs::symlink(&real, &path).unwrap();
        let error = load(home.path()).unwrap_err().to_string();
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains("link"), "{error}");

        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "[review]\nsteer = true\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let error = load(home.path()).unwrap_err().to_string();
        assert!(error.contains("writable by group or others"), "{error}");
        assert!(error.contains("chmod go-w"), "{error}");
    }
}
