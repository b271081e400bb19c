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
use super::plan::{Change, Plan};
use super::shell_quote;

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
    // Directory → who needs it, for the hint.
    let mut dirs: Vec<(PathBuf, String)> = Vec::new();
    let mut add_dir = |dir: &Path, who: String| {
        if !dirs.iter().any(|(known, _)| known == dir) {
            dirs.push((dir.to_owned(), who));
        }
    };
    for change in &plan.changes {
        let Some(dir) = change.path.parent() else {
            continue;
        };
        let backup = files::backup_path(&change.path);
        let writes_backup = !plan.uninstall
            && change.before.is_some()
            && std::fs::symlink_metadata(&backup).is_err();
        // Uninstall removes the backup once the file is back to it.
        let removes_backup = plan.uninstall
            && change.after.is_some()
            && std::fs::read_to_string(&backup).ok() == change.after;
        if change.changes_anything()
            && change.before.is_some()
            && let Some(problem) = file_problem(&change.path)
        {
            problems.push(format!("{problem} — {}", fix(plan, change, &change.path)));
        }
        if change.changes_anything() || writes_backup || removes_backup {
            add_dir(dir, fix(plan, change, dir));
        }
    }
    for link in plan.links.iter().filter(|link| !link.in_place) {
        if let Some(dir) = link.path.parent() {
            let leave_out = if plan.uninstall {
                "then run `cross-agent uninstall` again".to_owned()
            } else {
                "or choose another --shim-dir".to_owned()
            };
            add_dir(
                dir,
                format!("make it writable (`chmod u+w {}`) {leave_out}", quoted(dir)),
            );
        }
    }
    let mut seen = BTreeSet::new();
    for (dir, how) in &dirs {
        if let Some(problem) = dir_problem(dir)
            && seen.insert(problem.clone())
        {
            problems.push(format!("{problem} — {how}"));
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

/// Why a file cannot be made in `dir` (or in the nearest directory of it that exists, where
/// the rest would be created), if it cannot.
fn dir_problem(dir: &Path) -> Option<String> {
    let mut at = dir;
    let meta = loop {
        match std::fs::symlink_metadata(at) {
            Ok(meta) => break meta,
            Err(_) => at = at.parent()?,
        }
    };
    let mode = meta.permissions().mode() & 0o7777;
    if meta.file_type().is_symlink() {
        return Some(format!(
            "{} is a symbolic link; cross-agent does not write through links",
            at.display()
        ));
    }
    if !meta.is_dir() {
        return Some(format!("{} is not a directory", at.display()));
    }
    if mode & OWNER_WRITE == 0 {
        return Some(format!(
            "{} is read-only (mode {mode:04o}): no file can be written in it",
            at.display()
        ));
    }
    if rustix::fs::access(at, rustix::fs::Access::WRITE_OK).is_err() {
        return Some(format!(
            "{} is not writable by you (mode {mode:04o})",
            at.display()
        ));
    }
    None
}

/// The fix for a file or directory of `change`: make it writable, or leave its agent out.
fn fix(plan: &Plan, change: &Change, path: &Path) -> String {
    let chmod = format!("make it writable (`chmod u+w {}`)", quoted(path));
    if plan.uninstall {
        return format!("{chmod}, then run `cross-agent uninstall` again");
    }
    match change.label.as_str() {
        "Claude Code" | "Codex" | "Grok Build" => {
            format!("{chmod}, or leave {} out with --agents", change.label)
        }
        editor => format!("{chmod}, or leave {editor} out (no --panels, no vscode in --agents)"),
    }
}

fn quoted(path: &Path) -> String {
    shell_quote(&path.to_string_lossy())
}
