//! Where a session can be handed: other chats the bridge reaches (`chat:ID`), installed editors
//! (`app:NAME`) and CLI agents (`cli:NAME`) with their login state.
//!
//! Programs are looked up on PATH and also in the usual per-user install folders and the newest
//! nvm node, because the daemon may run under a systemd user unit whose PATH is minimal; that
//! search path is what every started program is given as its PATH.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::compact::Programs;
use crate::error::{HandoffError, Result};
use crate::login_cache::{Cached, LoginCache};
use crate::run::{RunError, run};

/// How long a login check may take.
const LOGIN_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// One place a session can go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Destination {
    /// What `--to` takes: `chat:ID`, `app:Cursor`, `cli:codex`.
    pub id: String,
    pub kind: DestinationKind,
    pub label: String,
    /// The program or app bundle it starts; the session's directory for a chat.
    pub location: Option<PathBuf>,
    /// For a CLI agent: whether it is signed in.
    pub login: Option<Login>,
    /// Set when `login` is a remembered answer (see [`crate::login_cache`]): how old it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_cached: Option<Cached>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DestinationKind {
    Chat,
    App,
    Cli,
}

/// A CLI agent's login state, as its own status command tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Login {
    SignedIn {
        checked_with: String,
    },
    SignedOut {
        checked_with: String,
        said: String,
    },
    /// The check could not tell (it failed to run or timed out).
    Unknown {
        checked_with: String,
        why: String,
    },
    /// Claude Code has no headless login check: nothing is claimed.
    NotChecked,
}

/// The editors, by the id `--to` takes, the names their launchers go by on PATH, and the macOS
/// bundle name.
pub const EDITORS: [(&str, &[&str], &str); 5] = [
    ("app:Antigravity", &["antigravity"], "Antigravity.app"),
    ("app:Cursor", &["cursor"], "Cursor.app"),
    ("app:Windsurf", &["windsurf"], "Windsurf.app"),
    ("app:VSCodium", &["codium", "vscodium"], "VSCodium.app"),
    (
        "app:Code",
        &["code", "code-insiders", "code-oss"],
        "Visual Studio Code.app",
    ),
];

/// The CLI agents `--to` takes.
pub const CLI_AGENTS: [&str; 4] = ["claude", "codex", "cursor-agent", "agy"];

/// The folders programs are looked for in, PATH first.
pub fn search_path(path_var: Option<&OsStr>, home: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = path_var
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    let extra = [
        home.join(".local/bin"),
        home.join("bin"),
        home.join(".npm-global/bin"),
        home.join(".volta/bin"),
        home.join(".bun/bin"),
        home.join(".cargo/bin"),
        PathBuf::from("/usr/local/bin"),
        PathBuf::from("/usr/bin"),
        PathBuf::from("/bin"),
        PathBuf::from("/snap/bin"),
        PathBuf::from("/opt/homebrew/bin"),
    ];
    dirs.extend(extra);
    if let Some(node) = newest_nvm_node(home) {
        dirs.push(node);
    }
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let fresh = !d.as_os_str().is_empty() && !seen.contains(d);
        if fresh {
            seen.push(d.clone());
        }
        fresh
    });
    dirs
}

/// The search path as a PATH value.
pub fn path_value(dirs: &[PathBuf]) -> OsString {
    std::env::join_paths(dirs).unwrap_or_default()
}

/// `~/.nvm/versions/node/<newest>/bin`, comparing versions by number.
fn newest_nvm_node(home: &Path) -> Option<PathBuf> {
    let root = home.join(".nvm/versions/node");
    let versions = std::fs::read_dir(&root).ok()?;
    versions
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let numbers: Vec<u64> = name
                .trim_start_matches('v')
                .split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            Some((numbers, e.path().join("bin")))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, bin)| bin)
}

/// The first executable file named `name` in `dirs`; a path with a separator is taken as is.
pub fn which(name: &Path, dirs: &[PathBuf]) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return is_executable(name).then(|| name.to_path_buf());
    }
    ::which::which_in_global(name, Some(path_value(dirs)))
        .ok()?
        .next()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The editors installed: macOS `.app` bundles, elsewhere their launchers on the search path.
pub fn editors(dirs: &[PathBuf], home: &Path) -> Vec<Destination> {
    EDITORS
        .iter()
        .filter_map(|(id, names, bundle)| {
            let found = if cfg!(target_os = "macos") {
                [PathBuf::from("/Applications"), home.join("Applications")]
                    .into_iter()
                    .map(|d| d.join(bundle))
                    .find(|p| p.is_dir())
            } else {
                names.iter().find_map(|n| which(Path::new(n), dirs))
            };
            found.map(|location| Destination {
                id: (*id).to_owned(),
                kind: DestinationKind::App,
                label: id.trim_start_matches("app:").to_owned(),
                location: Some(location),
                login: None,
                login_cached: None,
            })
        })
        .collect()
}

/// The CLI agents installed, each asked (in parallel) whether it is signed in — or, with a
/// `cache`, answered from it while nothing that could change the answer has changed.
pub fn cli_agents(
    dirs: &[PathBuf],
    programs: &Programs,
    cache: Option<&LoginCache>,
) -> Vec<Destination> {
    let found: Vec<(&str, PathBuf)> = CLI_AGENTS
        .iter()
        .filter_map(|name| Some((*name, which(program_of(name, programs), dirs)?)))
        .collect();
    let path = path_value(dirs);
    std::thread::scope(|scope| {
        let checks: Vec<_> = found
            .iter()
            .map(|(name, program)| {
                let path = path.clone();
                scope.spawn(move || cached_login_state(name, program, &path, cache))
            })
            .collect();
        found
            .iter()
            .zip(checks)
            .map(|((name, program), check)| {
                let (login, login_cached) = check.join().unwrap_or((
                    Login::Unknown {
                        checked_with: String::new(),
                        why: "the check panicked".to_owned(),
                    },
                    None,
                ));
                Destination {
                    id: format!("cli:{name}"),
                    kind: DestinationKind::Cli,
                    label: (*name).to_owned(),
                    location: Some(program.clone()),
                    login: Some(login),
                    login_cached,
                }
            })
            .collect()
    })
}

/// [`login_state`] through `cache`: the remembered answer when its key still holds, else the
/// CLI asked and its answer remembered under the key taken before asking.
pub fn cached_login_state(
    name: &str,
    program: &Path,
    path: &OsStr,
    cache: Option<&LoginCache>,
) -> (Login, Option<Cached>) {
    let key = cache.and_then(|cache| Some((cache, cache.key(name, program)?)));
    if let Some((cache, key)) = &key
        && let Some((login, cached)) = cache.get(name, key)
    {
        return (login, Some(cached));
    }
    let login = login_state(name, program, path);
    if let Some((cache, key)) = key {
        cache.put(name, key, &login);
    }
    (login, None)
}

/// The installed program of `cli:NAME`.
pub fn cli_program(name: &str, programs: &Programs, dirs: &[PathBuf]) -> Result<PathBuf> {
    let dest = format!("cli:{name}");
    if !CLI_AGENTS.contains(&name) {
        return Err(HandoffError::BadDestination {
            dest,
            why: format!("the CLI agents are {}", CLI_AGENTS.join(", ")),
        });
    }
    let program = program_of(name, programs);
    which(program, dirs).ok_or_else(|| HandoffError::BadDestination {
        dest,
        why: format!(
            "{} is not installed (not on PATH nor in the usual folders)",
            program.display()
        ),
    })
}

/// The installed launcher (or macOS bundle) of `app:NAME`, the name in any case.
pub fn editor_program(name: &str, dirs: &[PathBuf], home: &Path) -> Result<PathBuf> {
    let dest = format!("app:{name}");
    editors(dirs, home)
        .into_iter()
        .find(|d| d.id.eq_ignore_ascii_case(&dest))
        .and_then(|d| d.location)
        .ok_or_else(|| HandoffError::BadDestination {
            dest,
            why: "that editor is not installed".to_owned(),
        })
}

/// The program a CLI destination runs (the `CROSS_AGENT_*_BIN` setting, or its name).
pub fn program_of<'a>(name: &str, programs: &'a Programs) -> &'a Path {
    match name {
        "claude" => &programs.claude,
        "codex" => &programs.codex,
        "cursor-agent" => &programs.cursor_agent,
        _ => &programs.agy,
    }
}

/// Asks a CLI whether it is signed in: `codex login status`, `cursor-agent status`, `agy
/// models` (which lists models only with credentials); nothing for Claude Code. `path` is the
/// PATH it runs with.
pub fn login_state(name: &str, program: &Path, path: &OsStr) -> Login {
    let args: &[&str] = match name {
        "codex" => &["login", "status"],
        "cursor-agent" => &["status"],
        "agy" => &["models"],
        _ => return Login::NotChecked,
    };
    let checked_with = format!("{name} {}", args.join(" "));
    let mut command = std::process::Command::new(program);
    command.args(args).env("PATH", path);
    match run(command, None, LOGIN_CHECK_TIMEOUT) {
        Ok(done) => {
            let out = String::from_utf8_lossy(&done.stdout);
            let err = String::from_utf8_lossy(&done.stderr);
            let said = out
                .lines()
                .chain(err.lines())
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .to_owned();
            let lower = format!("{out}\n{err}").to_lowercase();
            let denies = lower.contains("not logged in")
                || lower.contains("not signed in")
                || lower.contains("not authenticated")
                || lower.contains("login required");
            let signed_in =
                done.status.success() && !denies && (name != "agy" || !out.trim().is_empty());
            if signed_in {
                Login::SignedIn { checked_with }
            } else {
                Login::SignedOut {
                    checked_with,
                    said: crate::brief::one_line(&said, 200),
                }
            }
        }
        Err(RunError::TimedOut) => Login::Unknown {
            checked_with,
            why: format!("no answer within {LOGIN_CHECK_TIMEOUT:?}"),
        },
        Err(RunError::Spawn(e) | RunError::Wait(e)) => Login::Unknown {
            checked_with,
            why: e.to_string(),
        },
    }
}

/// A chat the bridge can reach, as a destination.
pub fn chat(session_id: &str, agent: &str, title: Option<&str>, cwd: Option<&Path>) -> Destination {
    Destination {
        id: format!("chat:{session_id}"),
        kind: DestinationKind::Chat,
        label: match title {
            Some(t) => format!("{agent}: {}", crate::brief::one_line(t, 60)),
            None => format!("{agent} session"),
        },
        location: cwd.map(Path::to_path_buf),
        login: None,
        login_cached: None,
    }
}
