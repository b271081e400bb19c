//! Putting a brief where the work is and starting the receiver: `HANDOFF.md` at the workspace
//! root (an earlier one rotated to `HANDOFF.prev.md`, both git-ignored locally), the prompt
//! that asks the receiver to read it, and for a CLI agent a generated launcher script opened in
//! a terminal — the prompt is read from a file by the script, so no shell quoting can corrupt
//! it. Nothing is written through a link ([`crate::safe_write`]): the workspace may be a clone
//! that ships one at any name we write.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cross_agent_process::shell_word;
use serde::{Deserialize, Serialize};

use crate::error::{HandoffError, Result};
use crate::receipt::{RECEIPT_BEGIN, RECEIPT_END};
use crate::safe_write::{self, Found, Mode};

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
    /// The folder the brief went to, when it did not exist and was made for it.
    #[serde(default)]
    pub created_folder: Option<PathBuf>,
}

/// The workspace root a directory belongs to: the nearest folder holding `.git`, else itself.
pub fn workspace_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

/// Writes `markdown` as `root/HANDOFF.md`, rotating an earlier one and git-ignoring both.
///
/// `root` is a folder cross-agent did not make (or makes now, and says so in
/// [`Written::created_folder`]): nothing is written through a link in it
/// ([`crate::safe_write`]). A link at `HANDOFF.md`, `HANDOFF.prev.md`, `.git`, `.git/info` or
/// `.git/info/exclude` is refused, naming it, before anything is written.
pub fn write_brief(root: &Path, markdown: &str) -> Result<Written> {
    let file = root.join(HANDOFF_FILE);
    let previous = root.join(PREVIOUS_FILE);
    let earlier = safe_write::check_file(&file, &safe_write::remove_link_fix(&file))?;
    safe_write::check_file(&previous, &safe_write::remove_link_fix(&previous))?;
    let exclude = exclude_file(root)?;
    let created_folder = if root.exists() {
        None
    } else {
        std::fs::create_dir_all(root).map_err(|e| HandoffError::io("create", root, e))?;
        Some(root.to_path_buf())
    };
    let rotated_to = if earlier == Found::Nothing {
        None
    } else {
        // A rename moves the file itself, and replaces (never follows) whatever is at the name.
        std::fs::rename(&file, &previous).map_err(|e| HandoffError::io("rotate", &file, e))?;
        Some(previous)
    };
    let mode = match earlier {
        Found::File { mode } => Mode::Exactly(mode),
        _ => Mode::New(BRIEF_MODE),
    };
    safe_write::replace(root, HANDOFF_FILE, markdown.as_bytes(), mode)?;
    let ignored_in = match exclude {
        Some(exclude) => Some(git_ignore(exclude)?),
        None => None,
    };
    Ok(Written {
        file,
        rotated_to,
        ignored_in,
        created_folder,
    })
}

/// The mode of a first brief (less the umask), as the workspace's other files; a later brief
/// keeps the mode of the one it replaces.
const BRIEF_MODE: u32 = 0o644;

/// The mode of an exclude file git has not made yet (less the umask, as `git init` makes it).
const EXCLUDE_MODE: u32 = 0o644;

/// The repository's `info/exclude`, checked: where it is and what is there now.
struct Exclude {
    info: PathBuf,
    file: PathBuf,
    found: Found,
}

/// The fix for a link where the local git-ignore goes.
fn git_link_fix(path: &Path) -> String {
    format!(
        "cross-agent git-ignores HANDOFF.md there and never writes through a link it did not make; make {} a real {} (or hand off to a folder outside this repository: handoff SESSION PATH)",
        path.display(),
        if path.ends_with("exclude") {
            "file"
        } else {
            "folder"
        }
    )
}

/// Finds and checks the repository's exclude file: `None` when `root` is not a git repository
/// we can see; a link at `.git`, at the git directory, `info` or `info/exclude` is refused.
fn exclude_file(root: &Path) -> Result<Option<Exclude>> {
    let dot_git = root.join(".git");
    let git_dir = match std::fs::symlink_metadata(&dot_git) {
        Err(_) => return Ok(None),
        // A linked worktree: its `.git` file names the git directory.
        Ok(meta) if meta.is_file() => match linked_git_dir(root, &dot_git) {
            Some(dir) => dir,
            None => return Ok(None),
        },
        Ok(_) => dot_git,
    };
    // A link (at `.git` itself too) is refused; a git directory that is not there is no
    // repository we can see.
    if safe_write::check_dir(&git_dir, &git_link_fix(&git_dir))? == Found::Nothing {
        return Ok(None);
    }
    let info = git_dir.join("info");
    safe_write::check_dir(&info, &git_link_fix(&info))?;
    let file = info.join("exclude");
    let found = safe_write::check_file(&file, &git_link_fix(&file))?;
    Ok(Some(Exclude { info, file, found }))
}

/// Adds the two names to the repository's own `info/exclude` (local, never committed: a brief
/// is a working artifact, and the project's `.gitignore` is not ours to edit). The file is
/// replaced whole, keeping its mode.
fn git_ignore(exclude: Exclude) -> Result<PathBuf> {
    let Exclude { info, file, found } = exclude;
    if !info.exists() {
        std::fs::create_dir(&info).map_err(|e| HandoffError::io("create", &info, e))?;
    }
    let current = safe_write::read_no_follow(&file)?;
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
        let mode = match found {
            Found::File { mode } => Mode::Exactly(mode),
            _ => Mode::New(EXCLUDE_MODE),
        };
        safe_write::replace(&info, "exclude", text.as_bytes(), mode)?;
    }
    Ok(file)
}

/// The common git directory of a linked worktree (a `.git` file): the main repository's,
/// where `info/exclude` is read from.
fn linked_git_dir(root: &Path, dot_git: &Path) -> Option<PathBuf> {
    let text = safe_write::read_no_follow(dot_git).ok()?;
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

/// Writes the prompt file and the launcher script into `dir`, a new folder of this launch
/// (made when missing; a link there is refused, and neither file may exist yet).
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
    // The launch folder is ours, one per launch: made owner-only here (or by the caller), never
    // a link, and the two files in it are new (`O_EXCL|O_NOFOLLOW`).
    if safe_write::check_dir(dir, &safe_write::remove_link_fix(dir))? == Found::Nothing {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| HandoffError::io("create", dir, e))?;
    }
    let prompt_file = dir.join("prompt.txt");
    safe_write::create_new(&prompt_file, prompt.as_bytes(), 0o600)?;
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
        root = shell_word(&root.to_string_lossy()),
        path = shell_word(&path_var.to_string_lossy()),
        prompt_file = shell_word(&prompt_file.to_string_lossy()),
        program = shell_word(&program.to_string_lossy()),
        agent_q = shell_word(agent),
        title = shell_word(&title),
        close = shell_word(&format!(
            "tell application \"Terminal\" to close (every window whose name contains \"{title}\")"
        )),
    );
    safe_write::create_new(&script, text.as_bytes(), 0o700)?;
    Ok(Launcher {
        script,
        prompt_file,
    })
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
            shell_word(&script.to_string_lossy())
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
