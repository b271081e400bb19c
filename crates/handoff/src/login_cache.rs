//! Remembered login checks, so `handoff destinations` need not start `codex login status` (a
//! Node program: ~270 ms here) every time.
//!
//! A remembered answer is used only while nothing that could change it has changed: it is kept
//! under a key made of the CLI's program (its resolved path, size, mtime, ctime and inode) and
//! of every file the CLI reads its login from (the same stamp, or its absence), plus which of
//! the API-key variables it honours are set. A login or logout rewrites or removes the
//! credentials file, so the key differs and the CLI is asked again; an upgrade replaces the
//! program, likewise. Only the CLIs whose login lives in a file we know are remembered: Codex
//! (`$CODEX_HOME/auth.json`, unless `config.toml` keeps credentials in the OS keyring, whose
//! changes we cannot see); `cursor-agent` and `agy` are asked every time. A check that could
//! not tell (it timed out or failed to start) is never remembered, and nothing is trusted past
//! [`MAX_AGE`] whatever the key says.
//!
//! The file holds login states and file stamps only, never a credential.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::destinations::Login;
use crate::error::{HandoffError, Result};

/// How long a remembered answer is trusted even when nothing in its key changed (a session
/// that expires on the provider's side changes no local file).
pub const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The API-key variables `codex login status` honours besides its file.
const CODEX_KEY_VARS: [&str; 2] = ["CODEX_API_KEY", "OPENAI_API_KEY"];

/// Where the login files are, and which key variables are set: read once from the environment.
#[derive(Debug, Clone)]
pub struct AuthPlaces {
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: PathBuf,
    /// The key variables (of `CODEX_KEY_VARS`) set to something.
    pub keys_set: Vec<String>,
}

impl AuthPlaces {
    /// From `CODEX_HOME` (else `home/.codex`) and the key variables' presence.
    pub fn from_env(home: &Path) -> AuthPlaces {
        let codex_home = std::env::var_os("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map_or_else(|| home.join(".codex"), PathBuf::from);
        let keys_set = CODEX_KEY_VARS
            .iter()
            .filter(|v| std::env::var_os(v).is_some_and(|k| !k.is_empty()))
            .map(|v| (*v).to_owned())
            .collect();
        AuthPlaces {
            codex_home,
            keys_set,
        }
    }
}

/// The remembered login checks, in one JSON file (the bridge's cache folder).
#[derive(Debug, Clone)]
pub struct LoginCache {
    file: PathBuf,
    places: AuthPlaces,
}

/// A remembered answer as shown beside the login state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cached {
    /// How long ago the CLI was asked.
    pub age_seconds: u64,
}

/// What a key is made of: the program and the login files, each stamped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginKey {
    program: Stamp,
    files: Vec<Stamp>,
    keys_set: Vec<String>,
}

/// A file's identity and last change, or its absence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    path: PathBuf,
    /// `[size, mtime ns, ctime ns, inode]`; `None` when there is no such file.
    seen: Option<[i128; 4]>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    entries: BTreeMap<String, Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    key: LoginKey,
    login: Login,
    /// Milliseconds since the Unix epoch.
    checked_at: u64,
}

impl LoginCache {
    /// A cache kept in `file`, keyed on the login files under `places`.
    pub fn new(file: PathBuf, places: AuthPlaces) -> LoginCache {
        LoginCache { file, places }
    }

    /// The key of `name`'s login as things stand now; `None` for a CLI whose login is not
    /// remembered (see the module's notes).
    pub fn key(&self, name: &str, program: &Path) -> Option<LoginKey> {
        if name != "codex" {
            return None;
        }
        let config = self.places.codex_home.join("config.toml");
        if keyring_store(&config) {
            return None;
        }
        let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
        Some(LoginKey {
            program: stamp(&program),
            files: vec![
                stamp(&self.places.codex_home.join("auth.json")),
                stamp(&config),
            ],
            keys_set: self.places.keys_set.clone(),
        })
    }

    /// The remembered answer for `name` under `key`, with its age, when one is there, fresh.
    pub fn get(&self, name: &str, key: &LoginKey) -> Option<(Login, Cached)> {
        let entry = self.read().entries.remove(name)?;
        let age = now_millis().checked_sub(entry.checked_at)?;
        if entry.key != *key || Duration::from_millis(age) > MAX_AGE {
            return None;
        }
        Some((
            entry.login,
            Cached {
                age_seconds: age / 1000,
            },
        ))
    }

    /// Remembers `login` for `name` under `key` (taken before the check ran, so a login made
    /// meanwhile changes the key and is asked about next time). Only a definite answer is kept;
    /// a cache that cannot be written is only a slower next run.
    pub fn put(&self, name: &str, key: LoginKey, login: &Login) {
        if !matches!(login, Login::SignedIn { .. } | Login::SignedOut { .. }) {
            return;
        }
        let mut cache = self.read();
        cache.entries.insert(
            name.to_owned(),
            Entry {
                key,
                login: login.clone(),
                checked_at: now_millis(),
            },
        );
        if let Err(error) = self.write(&cache) {
            tracing::debug!(file = %self.file.display(), %error, "cannot remember the login check");
        }
    }

    fn read(&self) -> CacheFile {
        std::fs::read(&self.file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Written whole to a temporary file and renamed over, so a reader never sees half.
    fn write(&self, cache: &CacheFile) -> Result<()> {
        let (Some(dir), Some(name)) = (self.file.parent(), self.file.file_name()) else {
            return Ok(());
        };
        std::fs::create_dir_all(dir).map_err(|e| HandoffError::io("create", dir, e))?;
        let bytes = serde_json::to_vec(cache)
            .map_err(|e| HandoffError::io("encode", &self.file, std::io::Error::other(e)))?;
        // Owner-only, as everything in the bridge's home is.
        crate::safe_write::replace(
            dir,
            &name.to_string_lossy(),
            &bytes,
            crate::safe_write::Mode::Exactly(0o600),
        )?;
        Ok(())
    }
}

/// Whether Codex's `config.toml` keeps credentials somewhere other than `auth.json`
/// (`cli_auth_credentials_store = "keyring"` or `"auto"`): their changes leave no file to see.
fn keyring_store(config: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(config) else {
        return false;
    };
    text.lines()
        .map(str::trim)
        .filter_map(|line| line.strip_prefix("cli_auth_credentials_store"))
        .filter_map(|rest| rest.trim_start().strip_prefix('='))
        .any(|value| {
            let value = value.split('#').next().unwrap_or("").trim();
            value.trim_matches(|c| c == '"' || c == '\'') != "file"
        })
}

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    let seen = std::fs::metadata(path).ok().map(|m| {
        [
            i128::from(m.size()),
            i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
            i128::from(m.ino()),
        ]
    });
    Stamp {
        path: path.to_path_buf(),
        seen,
    }
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(dir: &Path) -> LoginCache {
        LoginCache::new(
            dir.join("cache/logins.json"),
            AuthPlaces {
                codex_home: dir.join("codex"),
                keys_set: Vec::new(),
            },
        )
    }

    #[test]
    fn an_answer_is_remembered_until_the_credentials_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("codex")).unwrap();
        let program = dir.path().join("codex-bin");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        let cache = cache(dir.path());
        let out = Login::SignedOut {
            checked_with: "codex login status".into(),
            said: "Not logged in".into(),
        };
        let key = cache.key("codex", &program).unwrap();
        assert_eq!(cache.get("codex", &key), None);
        cache.put("codex", key, &out);
        let key = cache.key("codex", &program).unwrap();
        assert_eq!(cache.get("codex", &key).map(|(l, _)| l), Some(out));
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("cache/logins.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "owner-only like the rest of the home");

        // A login writes auth.json: the key is another, the answer is not used.
        std::fs::write(dir.path().join("codex/auth.json"), "{}").unwrap();
        let key = cache.key("codex", &program).unwrap();
        assert_eq!(cache.get("codex", &key), None);
    }

    #[test]
    fn undecided_answers_and_keyring_stores_are_not_remembered() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("codex")).unwrap();
        let program = dir.path().join("codex-bin");
        std::fs::write(&program, "").unwrap();
        let cache = cache(dir.path());
        let key = cache.key("codex", &program).unwrap();
        let unknown = Login::Unknown {
            checked_with: "codex login status".into(),
            why: "timed out".into(),
        };
        cache.put("codex", key.clone(), &unknown);
        assert_eq!(cache.get("codex", &key), None);
        assert_eq!(cache.key("cursor-agent", &program), None);
        std::fs::write(
            dir.path().join("codex/config.toml"),
            "cli_auth_credentials_store = \"keyring\"\n",
        )
        .unwrap();
        assert_eq!(cache.key("codex", &program), None);
        std::fs::write(
            dir.path().join("codex/config.toml"),
            "cli_auth_credentials_store = 'file' # the default\n",
        )
        .unwrap();
        assert!(cache.key("codex", &program).is_some());
    }
}
