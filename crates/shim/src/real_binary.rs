//! Which real agent binary a shim runs (docs/spec/cross-agent-mcp.md "Shared rules": auto-discovered, overridable
//! with `CROSS_AGENT_REAL_CLAUDE` / `_CODEX` / `_GROK`), and never the shim itself — a shim
//! that found itself would start itself forever.
//!
//! - Claude: the wrapper is handed the binary, `<wrapper> <real-claude> <args…>`, or the JS
//!   fallback `<wrapper> <node> <cli.js> <args…>` (`claudeCode.claudeProcessWrapper`). An SDK
//!   host whose `pathToClaudeCodeExecutable` is the link starts it as the CLI itself, its first
//!   argument an option (`--output-format …`): then `~/.claude/local/claude`, then
//!   `~/.local/bin/claude`, then `claude` on `PATH`.
//! - Codex: the newest `openai.chatgpt-*` extension folder's bundled `bin/<platform>/codex`,
//!   under each editor's extension directory.
//! - Grok: `~/.grok/bin/grok`, then `grok` on `PATH`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use cross_agent_protocol::settings as var;

use crate::{Error, Result};

/// The real program and the arguments it is run with (the agent's own, after any leading
/// `cli.js`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealCommand {
    pub program: PathBuf,
    /// Arguments before the agent's own (`cli.js` when Claude runs under node).
    pub leading: Vec<OsString>,
    /// The agent's own arguments, the ones [`crate::intercept`] reads.
    pub args: Vec<OsString>,
}

impl RealCommand {
    /// Everything after the program.
    pub fn all_args(&self) -> Vec<OsString> {
        self.leading.iter().chain(&self.args).cloned().collect()
    }

    /// A readable form for the log and the registration.
    pub fn display(&self) -> String {
        self.program.display().to_string()
    }
}

/// The editors' extension directories under `$HOME` searched for the Codex extension.
pub const EXTENSION_DIRS: &[&str] = &[
    ".vscode/extensions",
    ".vscode-insiders/extensions",
    ".vscode-server/extensions",
    ".vscode-server-insiders/extensions",
    ".vscode-oss/extensions",
    ".cursor/extensions",
    ".cursor-server/extensions",
    ".windsurf/extensions",
];

/// The Codex extension's folder prefix (`openai.chatgpt-<version>[-<platform>]`).
const CODEX_EXTENSION_PREFIX: &str = "openai.chatgpt-";

/// Where Claude Code's installers put `claude`, under `$HOME` (the local install, then the
/// native installer's).
pub const CLAUDE_INSTALLS: &[&str] = &[".claude/local/claude", ".local/bin/claude"];

/// Claude: `args` is what follows the wrapper (`<real-claude> <args…>`), or, when the shim is
/// started as the CLI itself, the CLI's own arguments (the first an option).
pub fn claude(args: &[OsString], env: &dyn Fn(&str) -> Option<OsString>) -> Result<RealCommand> {
    let Some(first) = args.first() else {
        return Err(Error::Usage(
            "cross-agent shim claude <real-claude> <args…>: the real claude binary is missing \
             (claudeCode.claudeProcessWrapper passes it first)"
                .to_owned(),
        ));
    };
    if first.as_encoded_bytes().starts_with(b"-") {
        let program = installed_claude(env)?;
        refuse_self("claude", &program)?;
        return Ok(RealCommand {
            program,
            leading: Vec::new(),
            args: args.to_vec(),
        });
    }
    let runs_js = |name: &OsStr| {
        let name = name.to_string_lossy();
        [".js", ".mjs", ".cjs"]
            .iter()
            .any(|ext| name.ends_with(ext))
    };
    let (program, leading, rest) = match args.get(1) {
        Some(script) if is_js_runtime(first) && runs_js(script) => {
            (PathBuf::from(first), vec![script.clone()], &args[2..])
        }
        _ => (PathBuf::from(first), Vec::new(), &args[1..]),
    };
    let (program, leading) = match env(var::REAL_CLAUDE).filter(|v| !v.is_empty()) {
        Some(over) => (PathBuf::from(over), Vec::new()),
        None => (program, leading),
    };
    refuse_self("claude", &program)?;
    Ok(RealCommand {
        program,
        leading,
        args: rest.to_vec(),
    })
}

/// The real claude for a shim started as the CLI itself: `CROSS_AGENT_REAL_CLAUDE`, else the
/// installers' places, else `claude` on `PATH` (never this shim, which may be there under that
/// name).
fn installed_claude(env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf> {
    if let Some(over) = env(var::REAL_CLAUDE).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(over));
    }
    let home = env("HOME").map(PathBuf::from);
    let installed = home.iter().find_map(|home| {
        CLAUDE_INSTALLS
            .iter()
            .map(|place| home.join(place))
            .find(|path| is_executable(path) && !is_self(path))
    });
    installed
        .or_else(|| on_path("claude", env("PATH")))
        .ok_or_else(|| Error::RealBinary {
            agent: "claude",
            detail: format!(
                "started as the claude executable itself (its first argument is an option), and \
                 no real claude is in ~/{} or on PATH (other than this shim); set {} or pass the \
                 real binary first (<shim> <real-claude> <args…>)",
                CLAUDE_INSTALLS.join(", ~/"),
                var::REAL_CLAUDE
            ),
        })
}

fn is_js_runtime(program: &OsStr) -> bool {
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    matches!(
        name.as_str(),
        "node" | "nodejs" | "bun" | "node.exe" | "bun.exe"
    )
}

/// Codex: `CROSS_AGENT_REAL_CODEX`, else the newest extension's bundled binary.
pub fn codex(args: &[OsString], env: &dyn Fn(&str) -> Option<OsString>) -> Result<RealCommand> {
    let program = match env(var::REAL_CODEX).filter(|v| !v.is_empty()) {
        Some(over) => PathBuf::from(over),
        None => {
            let home = env("HOME").map(PathBuf::from).ok_or(Error::RealBinary {
                agent: "codex",
                detail: format!("HOME is not set; set {}", var::REAL_CODEX),
            })?;
            newest_codex_extension_binary(&home).ok_or_else(|| Error::RealBinary {
                agent: "codex",
                detail: format!(
                    "no {CODEX_EXTENSION_PREFIX}* extension with a bundled codex under ~/{}; \
                     set {}",
                    EXTENSION_DIRS.join(", ~/"),
                    var::REAL_CODEX
                ),
            })?
        }
    };
    refuse_self("codex", &program)?;
    Ok(RealCommand {
        program,
        leading: Vec::new(),
        args: args.to_vec(),
    })
}

/// Grok: `CROSS_AGENT_REAL_GROK`, else `~/.grok/bin/grok`, else `grok` on `PATH` (skipping
/// this binary, which `grok.cliPath` may have put there under another name).
pub fn grok(args: &[OsString], env: &dyn Fn(&str) -> Option<OsString>) -> Result<RealCommand> {
    let program = match env(var::REAL_GROK).filter(|v| !v.is_empty()) {
        Some(over) => PathBuf::from(over),
        None => {
            let installed = env("HOME").map(|h| PathBuf::from(h).join(".grok/bin/grok"));
            match installed.filter(|p| is_executable(p) && !is_self(p)) {
                Some(path) => path,
                None => on_path("grok", env("PATH")).ok_or_else(|| Error::RealBinary {
                    agent: "grok",
                    detail: format!(
                        "neither ~/.grok/bin/grok nor a grok on PATH (other than this shim); \
                         set {}",
                        var::REAL_GROK
                    ),
                })?,
            }
        }
    };
    refuse_self("grok", &program)?;
    Ok(RealCommand {
        program,
        leading: Vec::new(),
        args: args.to_vec(),
    })
}

fn refuse_self(agent: &'static str, program: &Path) -> Result<()> {
    if is_self(program) {
        return Err(Error::RealBinary {
            agent,
            detail: format!(
                "{} is this shim itself; point the setting at the real binary",
                program.display()
            ),
        });
    }
    Ok(())
}

/// True when `path` resolves to the running executable (the shim, under any of its names).
fn is_self(path: &Path) -> bool {
    let Ok(me) = std::env::current_exe().and_then(|p| p.canonicalize()) else {
        return false;
    };
    path.canonicalize().is_ok_and(|p| p == me)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first executable `name` on `path` that is not this shim: the shim may be installed under
/// the agent's own name ahead of the real binary.
fn on_path(name: &str, path: Option<OsString>) -> Option<PathBuf> {
    which::which_in_global(name, Some(path?))
        .ok()?
        .find(|candidate| !is_self(candidate))
}

/// The extension folder with the highest version (then the latest modified), and its bundled
/// binary for this platform.
pub fn newest_codex_extension_binary(home: &Path) -> Option<PathBuf> {
    let mut found: Vec<(Vec<u64>, SystemTime, PathBuf)> = Vec::new();
    for dir in EXTENSION_DIRS {
        let Ok(entries) = std::fs::read_dir(home.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix(CODEX_EXTENSION_PREFIX) else {
                continue;
            };
            let Some(binary) = bundled_codex(&entry.path()) else {
                continue;
            };
            let version = rest
                .split('-')
                .next()
                .unwrap_or("")
                .split('.')
                .map(|part| part.parse().unwrap_or(0))
                .collect();
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((version, modified, binary));
        }
    }
    found
        .into_iter()
        .max_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)))
        .map(|(_, _, binary)| binary)
}

/// `bin/<platform>/codex` inside an extension folder, preferring this platform's.
fn bundled_codex(extension: &Path) -> Option<PathBuf> {
    let arch = match std::env::consts::ARCH {
        "aarch64" => ["aarch64", "arm64"],
        _ => ["x86_64", "x64"],
    };
    let os = match std::env::consts::OS {
        "macos" => ["macos", "darwin"],
        _ => ["linux", "linux"],
    };
    let mut candidates: Vec<(bool, PathBuf)> = std::fs::read_dir(extension.join("bin"))
        .ok()?
        .flatten()
        .filter_map(|platform| {
            let name = platform.file_name().to_string_lossy().into_owned();
            let binary = platform.path().join("codex");
            let native =
                arch.iter().any(|a| name.contains(a)) && os.iter().any(|o| name.contains(o));
            is_executable(&binary).then_some((native, binary))
        })
        .collect();
    candidates.sort();
    candidates.pop().map(|(_, binary)| binary)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    use pretty_assertions::assert_eq;

    use super::*;

    fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let map: BTreeMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.as_os_str().to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn claude_is_handed_the_binary_or_node_and_cli_js() {
        let none = env_of(&[]);
        let native = claude(&args(&["/opt/claude", "--verbose"]), &none).unwrap();
        assert_eq!(native.program, PathBuf::from("/opt/claude"));
        assert_eq!(native.all_args(), args(&["--verbose"]));
        let js = claude(&args(&["/usr/bin/node", "/x/cli.js", "--verbose"]), &none).unwrap();
        assert_eq!(js.program, PathBuf::from("/usr/bin/node"));
        assert_eq!(js.leading, args(&["/x/cli.js"]));
        assert_eq!(js.args, args(&["--verbose"]));
        let over = claude(
            &args(&["/opt/claude", "-v"]),
            &env_of(&[(var::REAL_CLAUDE, Path::new("/elsewhere/claude"))]),
        )
        .unwrap();
        assert_eq!(over.program, PathBuf::from("/elsewhere/claude"));
        assert!(matches!(claude(&[], &none), Err(Error::Usage(_))));
    }

    /// An SDK host whose `pathToClaudeCodeExecutable` is the link starts the shim as the CLI:
    /// its first argument is an option, every argument is the CLI's, and the real claude is
    /// found (the override, the installers' places, `PATH`), never the shim.
    #[test]
    fn claude_started_as_the_cli_itself_is_found_and_keeps_every_argument() {
        let home = tempfile::tempdir().unwrap();
        let sdk = args(&[
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
        ]);
        // `claude` on PATH, behind a link to this executable (the shim under that name).
        let bin = home.path().join("bin");
        executable(&bin.join("claude"));
        let shim_dir = home.path().join("shim");
        std::fs::create_dir_all(&shim_dir).unwrap();
        std::os::unix::fs::symlink(std::env::current_exe().unwrap(), shim_dir.join("claude"))
            .unwrap();
        let path = std::env::join_paths([&shim_dir, &bin]).unwrap();
        let vars = [("HOME", home.path()), ("PATH", Path::new(&path))];
        let found = claude(&sdk, &env_of(&vars)).unwrap();
        assert_eq!(found.program, bin.join("claude"));
        assert_eq!(found.all_args(), sdk);
        // The installers' places come before PATH, the local install first.
        let native = home.path().join(".local/bin/claude");
        executable(&native);
        assert_eq!(claude(&sdk, &env_of(&vars)).unwrap().program, native);
        let local = home.path().join(".claude/local/claude");
        executable(&local);
        assert_eq!(claude(&sdk, &env_of(&vars)).unwrap().program, local);
        // The override before all, with every argument kept.
        let over = Path::new("/elsewhere/claude");
        let with_override = [vars[0], vars[1], (var::REAL_CLAUDE, over)];
        let found = claude(&sdk, &env_of(&with_override)).unwrap();
        assert_eq!(
            (found.program.as_path(), found.all_args()),
            (over, sdk.clone())
        );
        // Nothing found: said, naming the places and the override.
        let nowhere = claude(&sdk, &env_of(&[("HOME", &home.path().join("none"))]));
        let Err(Error::RealBinary { agent, detail }) = nowhere else {
            panic!("{nowhere:?}")
        };
        assert_eq!(agent, "claude");
        assert!(
            detail.contains(".claude/local/claude") && detail.contains(var::REAL_CLAUDE),
            "{detail}"
        );
        // The override pointing at the shim itself is refused.
        let me = std::env::current_exe().unwrap();
        let refused = claude(&sdk, &env_of(&[(var::REAL_CLAUDE, &me)]));
        assert!(
            matches!(refused, Err(Error::RealBinary { .. })),
            "{refused:?}"
        );
    }

    #[test]
    fn the_newest_codex_extension_is_found_and_never_the_shim_itself() {
        let home = tempfile::tempdir().unwrap();
        let old = home
            .path()
            .join(".vscode/extensions/openai.chatgpt-0.4.9-linux-x64/bin/linux-x86_64/codex");
        let new = home
            .path()
            .join(".cursor/extensions/openai.chatgpt-0.4.12-linux-x64/bin/linux-x86_64/codex");
        executable(&old);
        executable(&new);
        std::fs::create_dir_all(home.path().join(".vscode/extensions/openai.chatgpt-9.9.9"))
            .unwrap();
        let found = codex(&args(&["app-server"]), &env_of(&[("HOME", home.path())])).unwrap();
        assert_eq!(found.program, new);

        let me = std::env::current_exe().unwrap();
        let refused = codex(&[], &env_of(&[(var::REAL_CODEX, &me)]));
        assert!(
            matches!(refused, Err(Error::RealBinary { .. })),
            "{refused:?}"
        );
        let nothing = codex(&[], &env_of(&[("HOME", &home.path().join("empty"))]));
        assert!(matches!(nothing, Err(Error::RealBinary { .. })));
    }

    #[test]
    fn grok_is_the_install_then_path_skipping_the_shim() {
        let home = tempfile::tempdir().unwrap();
        let bin = home.path().join("bin");
        executable(&bin.join("grok"));
        // A link to this executable earlier on PATH is the shim, not grok.
        let shim_dir = home.path().join("shim");
        std::fs::create_dir_all(&shim_dir).unwrap();
        std::os::unix::fs::symlink(std::env::current_exe().unwrap(), shim_dir.join("grok"))
            .unwrap();
        let path = std::env::join_paths([&shim_dir, &bin]).unwrap();
        let found = grok(
            &[],
            &env_of(&[("HOME", home.path()), ("PATH", Path::new(&path))]),
        )
        .unwrap();
        assert_eq!(found.program, bin.join("grok"));
        let installed = home.path().join(".grok/bin/grok");
        executable(&installed);
        let found = grok(
            &[],
            &env_of(&[("HOME", home.path()), ("PATH", Path::new(&path))]),
        )
        .unwrap();
        assert_eq!(found.program, installed);
    }
}
