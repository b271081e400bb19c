//! What must hold before `install` / `uninstall` writes anything, checked for every target
//! first so that a run changes all of its files or none: each file whose content changes is
//! writable, and each directory a file, its backup, its temporary file or a shim link is made
//! in is a writable directory and not a link.
//!
//! Writable is decided by the mode bits as well as by `access(2)`: root passes `access` for
//! any file on a writable file system, yet a file (or directory) whose owner has no write bit
//! is one its owner made read-only (`chmod 0444`), and cross-agent leaves it alone whoever
//! runs it.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::files;
use super::plan::Plan;

/// The owner's write bit.
const OWNER_WRITE: u32 = 0o200;

/// Refuses the plan, naming every file and directory it could not write and the fix for
/// each, when one of them is read-only, not writable by us, or a link.
pub fn check(plan: &Plan) -> Result<()> {
    let problems = problems(plan);
    if problems.is_empty() {
        return Ok(());
    }
    let verb = if plan.uninstall {
        "uninstall"
    } else {
        "install"
    };
    bail!(
        "{verb}: nothing was changed, because cross-agent cannot write everything it would \
         change:\n  {}",
        problems.join("\n  ")
    )
}

/// Every file and directory of the plan that cannot be written, one line each with its fix.
pub fn problems(plan: &Plan) -> Vec<String> {
    let mut problems = Vec::new();
    // Each directory written in, with the way to do without it, and whether a link there
    // (or between it and HOME) is refused.
    let mut dirs: Vec<(PathBuf, String, bool)> = Vec::new();
    let mut add_dir = |dir: &Path, otherwise: String, no_links: bool| {
        if !dirs.iter().any(|(known, _, _)| known == dir) {
            dirs.push((dir.to_owned(), otherwise, no_links));
        }
    };
    for change in &plan.changes {
        let Some(dir) = change.path.parent() else {
            continue;
        };
        let backup = files::backup_path(&change.path);
        let writes_backup = !plan.uninstall
            && change.backup.is_some()
            && std::fs::symlink_metadata(&backup).is_err();
        // Uninstall removes the backup once the file is back to it (an empty one always).
        let removes_backup = plan.uninstall
            && std::fs::read_to_string(&backup)
                .is_ok_and(|original| files::backup_is_done(&original, change.after.as_deref()));
        let otherwise = otherwise(plan, &change.label);
        if change.changes_anything()
            && change.before.is_some()
            && let Some(problem) = file_problem(&change.path)
        {
            problems.push(format!("{problem} — {}{otherwise}", chmod(&change.path)));
        }
        if change.changes_anything() || writes_backup || removes_backup {
            add_dir(dir, otherwise, true);
        }
    }
    for link in plan.links.iter().filter(|link| !link.in_place) {
        if let Some(dir) = link.path.parent() {
            let otherwise = if plan.uninstall {
                otherwise(plan, "")
            } else {
                ", or choose another --shim-dir".to_owned()
            };
            // Uninstall takes its own links out of a linked folder too: install made them
            // there before it refused such a folder.
            add_dir(dir, otherwise, !plan.uninstall);
        }
    }
    let mut seen = BTreeSet::new();
    for (dir, otherwise, no_links) in &dirs {
        let home = no_links.then_some(plan.home.as_path());
        let problem = match dir_problem(dir, home) {
            Some(DirProblem::Link(problem)) => {
                format!("{problem} — replace the link with the folder it points at{otherwise}")
            }
            Some(DirProblem::Unwritable(at, problem)) => {
                format!("{problem} — {}{otherwise}", chmod(&at))
            }
            None => continue,
        };
        if seen.insert(problem.clone()) {
            problems.push(problem);
        }
    }
    problems
}

/// Why the existing file `path` cannot be written, if it cannot.
fn file_problem(path: &Path) -> Option<String> {
    let mode = files::mode_of(path)?;
    if mode & OWNER_WRITE == 0 {
        return Some(format!(
            "{} is read-only (mode {mode:04o}): cross-agent does not change a file its owner \
             may not write",
            path.display()
        ));
    }
    if rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_err() {
        return Some(format!(
            "{} is not writable by you (mode {mode:04o})",
            path.display()
        ));
    }
    None
}

/// Why no file can be made in a directory.
enum DirProblem {
    /// It, or a folder between it and HOME, is a link.
    Link(String),
    /// The folder (the directory, or its nearest parent that exists) cannot be written in.
    Unwritable(PathBuf, String),
}

/// Why a file cannot be made in `dir` (or in the nearest directory of it that exists, where
/// the rest would be created), if it cannot. `home`: refuse a link between it and `dir`.
fn dir_problem(dir: &Path, home: Option<&Path>) -> Option<DirProblem> {
    let mut at = dir;
    while std::fs::symlink_metadata(at).is_err() {
        at = at.parent()?;
    }
    if let Some((link, target)) = home.and_then(|home| files::first_link(at, home)) {
        return Some(DirProblem::Link(format!(
            "{} is a symbolic link (to {}); cross-agent does not write through links",
            link.display(),
            target.display()
        )));
    }
    let unwritable = |problem: String| Some(DirProblem::Unwritable(at.to_owned(), problem));
    let Ok(meta) = std::fs::metadata(at) else {
        return unwritable(format!("{} cannot be read", at.display()));
    };
    let mode = meta.permissions().mode() & 0o7777;
    if !meta.is_dir() {
        return unwritable(format!("{} is not a directory", at.display()));
    }
    if mode & OWNER_WRITE == 0 {
        return unwritable(format!(
            "{} is read-only (mode {mode:04o}): no file can be written in it",
            at.display()
        ));
    }
    if rustix::fs::access(at, rustix::fs::Access::WRITE_OK).is_err() {
        return unwritable(format!(
            "{} is not writable by you (mode {mode:04o})",
            at.display()
        ));
    }
    None
}

/// The first fix: let the owner write `path`.
fn chmod(path: &Path) -> String {
    format!(
        "make it writable (`chmod u+w {}`)",
        cross_agent_process::shell_word(&path.to_string_lossy())
    )
}

/// The other way out, after the first fix: leave the agent or editor `label` out (install),
/// or run again (uninstall).
fn otherwise(plan: &Plan, label: &str) -> String {
    if plan.uninstall {
        return ", then run `cross-agent uninstall` again".to_owned();
    }
    match label {
        "Claude Code" | "Codex" | "Grok Build" => format!(", or leave {label} out with --agents"),
        copilot if copilot.starts_with("Copilot") => {
            ", or leave Copilot out with --agents".to_owned()
        }
        editor => format!(
            ", or leave {editor} out (no --panels, no --copilot-auto-approve, no vscode in \
             --agents)"
        ),
    }
}
