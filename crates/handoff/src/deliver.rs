//! Putting a brief where the work is and starting the receiver: `HANDOFF.md` at the workspace
//! root (an earlier one rotated to `HANDOFF.prev.md`, both git-ignored locally), the prompt
//! that asks the receiver to read it, and for a CLI agent a generated launcher script opened in
//! a terminal — the prompt is read from a file by the script, so no shell quoting can corrupt
//! it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::error::{HandoffError, Result};
use crate::receipt::{RECEIPT_BEGIN, RECEIPT_END};

pub const HANDOFF_FILE: &str = "HANDOFF.md";
pub const PREVIOUS_FILE: &str = "HANDOFF.prev.md";

/// The terminals tried on Linux, in order, with the arguments that make each run a command.
pub const TERMINALS: [(&str, &[&str]); 18] = [
    ("x-terminal-emulator", &["-e"]),
    ("gnome-terminal", &["--"]),
    ("konsole", &["-e"]),
    ("xfce4-terminal", &["-x"]),
    ("mate-terminal", &["-x"]),
    ("lxterminal", &["-e"]),
    ("tilix", &["-e"]),
    ("terminator", &["-x"]),
    ("alacritty", &["-e"]),
    ("kitty", &[]),
    ("foot", &[]),
    ("wezterm", &["start", "--"]),
    ("ghostty", &["-e"]),
    ("qterminal", &["-e"]),
    ("urxvt", &["-e"]),
    ("rxvt", &["-e"]),
    ("st", &["-e"]),
    ("xterm", &["-e"]),
];

/// What writing the brief did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    pub file: PathBuf,
    /// Where the earlier brief went, when there was one.
    pub rotated_to: Option<PathBuf>,
    /// The git exclude file the two names were added to (`None`: not a git repository).
    pub ignored_in: Option<PathBuf>,
}

/// The workspace root a directory belongs to: the nearest folder holding `.git`, else itself.
pub fn workspace_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

/// Writes `markdown` as `root/HANDOFF.md`, rotating an earlier one and git-ignoring both.
pub fn write_brief(root: &Path, markdown: &str) -> Result<Written> {
    std::fs::create_dir_all(root).map_err(|e| HandoffError::io("create", root, e))?;
    let file = root.join(HANDOFF_FILE);
    let previous = root.join(PREVIOUS_FILE);
    let rotated_to = if file.exists() {
        std::fs::rename(&file, &previous).map_err(|e| HandoffError::io("rotate", &file, e))?;
        Some(previous)
    } else {
        None
    };
    let temp = root.join(".HANDOFF.md.tmp");
    std::fs::write(&temp, markdown).map_err(|e| HandoffError::io("write", &temp, e))?;
    std::fs::rename(&temp, &file).map_err(|e| HandoffError::io("write", &file, e))?;
    let ignored_in = git_ignore(root)?;
    Ok(Written {
        file,
        rotated_to,
        ignored_in,
    })
}

/// Adds the two names to the repository's own `info/exclude` (local, never committed: a brief
/// is a working artifact, and the project's `.gitignore` is not ours to edit).
fn git_ignore(root: &Path) -> Result<Option<PathBuf>> {
    let Some(git_dir) = git_dir(root) else {
        return Ok(None);
    };
    let info = git_dir.join("info");
    std::fs::create_dir_all(&info).map_err(|e| HandoffError::io("create", &info, e))?;
    let exclude = info.join("exclude");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    let mut text = current.clone();
    for name in [HANDOFF_FILE, PREVIOUS_FILE] {
        let pattern = format!("/{name}");
        if !current
            .lines()
            .any(|l| l.trim() == pattern || l.trim() == name)
        {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&pattern);
            text.push('\n');
        }
    }
    if text != current {
        std::fs::write(&exclude, text).map_err(|e| HandoffError::io("write", &exclude, e))?;
    }
    Ok(Some(exclude))
}

/// The common git directory of a worktree root: `.git` itself, or for a linked worktree (a
/// `.git` file) the main repository's, where `info/exclude` is read from.
fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let linked = root.join(text.trim().strip_prefix("gitdir:")?.trim());
    match std::fs::read_to_string(linked.join("commondir")) {
        Ok(common) => Some(linked.join(common.trim())),
        Err(_) => Some(linked),
    }
}

/// The first message the receiving agent gets.
pub fn receiver_prompt(root: &Path) -> String {
    format!(
        "You are taking over work another agent session started. Read {file} at the root of \
         this workspace ({path}) first: its Contract section is the requirement; the narrative \
         compact is context only.\n\nBefore you change any code, append your receipt to {file} \
         between the markers {RECEIPT_BEGIN} and {RECEIPT_END}: the contract in your own words, \
         what you found already true in this repository, and the first step you will take. \
         Then continue the work.",
        file = HANDOFF_FILE,
        path = root.join(HANDOFF_FILE).display(),
    )
}

/// A launcher written for a CLI agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launcher {
    pub script: PathBuf,
    pub prompt_file: PathBuf,
}

/// Writes the prompt file and the launcher script into `dir`.
///
/// The script goes to the workspace, runs the agent with the prompt file's text as its one
/// argument, and exits with the agent's status — closing its window — or, on failure, says the
/// status and waits for Enter so the window stays readable.
pub fn write_launcher(
    dir: &Path,
    root: &Path,
    agent: &str,
    program: &Path,
    prompt: &str,
    path_var: &OsStr,
) -> Result<Launcher> {
    std::fs::create_dir_all(dir).map_err(|e| HandoffError::io("create", dir, e))?;
    let prompt_file = dir.join("prompt.txt");
    std::fs::write(&prompt_file, prompt).map_err(|e| HandoffError::io("write", &prompt_file, e))?;
    let script = dir.join("launch.sh");
    // Unique per launch: the launch folder's own name.
    let title = format!(
        "cross-agent handoff {}",
        dir.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    let text = format!(
        "#!/bin/sh\n\
         # Written by `cross-agent handoff`: starts {agent} in the workspace, asked to read {file}.\n\
         # The window is titled so that, on macOS, AppleScript can close this window and no other.\n\
         printf '\\033]0;%s\\007' {title}\n\
         cd {root} || exit 1\n\
         PATH={path}; export PATH\n\
         prompt=$(cat {prompt_file}) || exit 1\n\
         {program} \"$prompt\"\n\
         status=$?\n\
         if [ \"$status\" -ne 0 ]; then\n\
         \x20 printf '\\n%s exited with status %s. Press Enter to close this window.\\n' {agent_q} \"$status\"\n\
         \x20 read -r _\n\
         fi\n\
         if [ \"$(uname)\" = Darwin ]; then\n\
         \x20 osascript -e {close} >/dev/null 2>&1 &\n\
         fi\n\
         exit \"$status\"\n",
        file = HANDOFF_FILE,
        root = sh_quote(&root.to_string_lossy()),
        path = sh_quote(&path_var.to_string_lossy()),
        prompt_file = sh_quote(&prompt_file.to_string_lossy()),
        program = sh_quote(&program.to_string_lossy()),
        agent_q = sh_quote(agent),
        title = sh_quote(&title),
        close = sh_quote(&format!(
            "tell application \"Terminal\" to close (every window whose name contains \"{title}\")"
        )),
    );
    std::fs::write(&script, text).map_err(|e| HandoffError::io("write", &script, e))?;
    {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700));
    }
    Ok(Launcher {
        script,
        prompt_file,
    })
}

/// A path or word in single quotes for `sh` (only our own paths and names go through this; the
/// prompt never does).
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The terminal a launcher was opened in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    pub terminal: String,
    pub pid: u32,
}

/// Opens a terminal on the script. Linux: the first emulator found on the search path
/// ([`TERMINALS`]), unless `forced` names one; no `DISPLAY`/`WAYLAND_DISPLAY` fails naming the
/// script. macOS: Terminal, through AppleScript.
pub fn open_terminal(
    script: &Path,
    dirs: &[PathBuf],
    display: bool,
    forced: Option<&str>,
) -> Result<Opened> {
    if cfg!(target_os = "macos") {
        let apple = format!(
            "tell application \"Terminal\" to do script \"sh {} && exit\"",
            sh_quote(&script.to_string_lossy())
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
        );
        let mut command = Command::new("osascript");
        command.args(["-e", &apple]);
        return spawn_detached(command, "Terminal");
    }
    if !display {
        return Err(HandoffError::NoDisplay {
            script: script.to_path_buf(),
        });
    }
    let candidates: Vec<(String, Vec<&str>)> = match forced {
        Some(name) => {
            let args = TERMINALS
                .iter()
                .find(|(t, _)| Path::new(name).file_name() == Some(OsStr::new(t)))
                .map_or(vec!["-e"], |(_, a)| a.to_vec());
            vec![(name.to_owned(), args)]
        }
        None => TERMINALS
            .iter()
            .map(|(t, a)| ((*t).to_owned(), a.to_vec()))
            .collect(),
    };
    for (name, args) in &candidates {
        if let Some(program) = crate::destinations::which(Path::new(name), dirs) {
            let mut command = Command::new(program);
            command.args(args).arg("sh").arg(script);
            return spawn_detached(command, name);
        }
    }
    Err(HandoffError::NoTerminal {
        script: script.to_path_buf(),
        tried: candidates
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Starts a program that outlives us: its own process group, no stdio of ours.
pub fn spawn_detached(mut command: Command, name: &str) -> Result<Opened> {
    use std::os::unix::process::CommandExt as _;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let child = command.spawn().map_err(|source| HandoffError::Spawn {
        program: name.to_owned(),
        source,
    })?;
    Ok(Opened {
        terminal: name.to_owned(),
        pid: child.id(),
    })
}

/// Opens an editor on the workspace, giving it the search path as PATH.
pub fn open_editor(program: &Path, root: &Path, path_var: &OsStr) -> Result<Opened> {
    let mut command = if cfg!(target_os = "macos") {
        let mut c = Command::new("open");
        c.arg("-a").arg(program);
        c
    } else {
        Command::new(program)
    };
    command.arg(root).env("PATH", path_var);
    spawn_detached(command, &program.to_string_lossy())
}
