//! The undo log of one `install` / `uninstall` run: each write, removal, backup, link and
//! directory is recorded as it happens with what puts it back, so that a failure the preflight
//! could not foresee (a full disk, a file size limit, a race with another program) leaves
//! every file as it was before the run instead of half the agents set up.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::files;

/// How to take back one step.
#[derive(Debug)]
enum Undo {
    /// The file held `text` with `mode` (it was changed or removed): write that back.
    Restore {
        path: PathBuf,
        text: String,
        mode: Option<u32>,
    },
    /// The file or link was created: remove it.
    Remove(PathBuf),
    /// The directory was created: remove it (it is empty again once the files in it are).
    RemoveDir(PathBuf),
    /// The link pointed at `target` and was removed: make it again.
    Relink { path: PathBuf, target: PathBuf },
}

/// The steps done so far, in order.
#[derive(Debug, Default)]
pub struct Journal {
    done: Vec<Undo>,
}

impl Journal {
    /// Records that `path`, which held `text` with `mode`, was changed or removed.
    pub fn changed(&mut self, path: &Path, text: &str, mode: Option<u32>) {
        self.done.push(Undo::Restore {
            path: path.to_owned(),
            text: text.to_owned(),
            mode,
        });
    }

    /// Records that the file or link `path` was created.
    pub fn created(&mut self, path: &Path) {
        self.done.push(Undo::Remove(path.to_owned()));
    }

    /// Records that the link `path` to `target` was removed.
    pub fn unlinked(&mut self, path: &Path, target: &Path) {
        self.done.push(Undo::Relink {
            path: path.to_owned(),
            target: target.to_owned(),
        });
    }

    /// Creates `dir` and whichever of its parents are missing, recording each.
    pub fn create_dirs(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(path) = at {
            if std::fs::symlink_metadata(path).is_ok() {
                break;
            }
            missing.push(path);
            at = path.parent();
        }
        for path in missing.into_iter().rev() {
            std::fs::create_dir(path).with_context(|| format!("creating {}", path.display()))?;
            self.done.push(Undo::RemoveDir(path.to_owned()));
        }
        Ok(())
    }

    /// How many steps were done.
    pub fn steps(&self) -> usize {
        self.done.len()
    }

    /// Takes back every step, the last first. Returns what could not be put back, one line
    /// each, naming the path.
    pub fn roll_back(self) -> Vec<String> {
        let mut failed = Vec::new();
        for undo in self.done.into_iter().rev() {
            let (path, outcome) = match undo {
                Undo::Restore { path, text, mode } => {
                    let outcome = files::write_atomically_with_mode(&path, &text, mode);
                    (path, outcome)
                }
                Undo::Remove(path) => {
                    let outcome = std::fs::remove_file(&path)
                        .with_context(|| format!("removing {}", path.display()));
                    (path, outcome)
                }
                Undo::RemoveDir(path) => {
                    let outcome = std::fs::remove_dir(&path)
                        .with_context(|| format!("removing {}", path.display()));
                    (path, outcome)
                }
                Undo::Relink { path, target } => {
                    let outcome = std::os::unix::fs::symlink(&target, &path)
                        .with_context(|| format!("linking {} again", path.display()));
                    (path, outcome)
                }
            };
            if let Err(error) = outcome {
                failed.push(format!("{}: {error:#}", path.display()));
            }
        }
        failed
    }
}
