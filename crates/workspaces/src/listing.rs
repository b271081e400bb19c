//! The rows of `cross-agent windows`: each open workspace (named in its editor's window state,
//! or shown by a live window), the live window showing it, and its git state, read for all
//! rows at once on a few threads, each repository once, each within the deadline.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::error::Warning;
use crate::git::{self, GitState};
use crate::state::{self, Editor, Workspace};
use crate::x11::{self, LiveWindow, LiveWindows};

/// Threads reading git states at once: the walks are disk-bound and gix runs two threads per
/// status of its own.
const GIT_THREADS: usize = 4;

/// What to list.
#[derive(Debug, Clone)]
pub struct ListingOptions {
    pub editors: Vec<Editor>,
    /// Every workspace the editors know (`workspaceStorage`), not only the open ones.
    pub all: bool,
    /// Whether to read each workspace's git state (with the counts).
    pub git: bool,
    /// How long one repository's state may take.
    pub git_deadline: Duration,
    pub windows: LiveWindows,
}

/// A workspace's git state, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GitCell {
    /// Read.
    Repository(GitState),
    /// The folder is not in a git repository, is missing, or is on another machine.
    None,
    /// Not asked for.
    Skipped,
    /// The repository could not be read, and why.
    Error { message: String },
}

/// One row: a workspace, its window, its git state.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub workspace: Workspace,
    pub window: Option<LiveWindow>,
    pub git: GitCell,
}

/// The rows, what the display said, and what could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct Listing {
    pub rows: Vec<Row>,
    /// `:0`, "no X display", or why the display could not be asked.
    pub display: String,
    pub warnings: Vec<Warning>,
}

/// The open workspaces of every editor (all the known ones with `all`), matched to live
/// windows, with their git state.
pub fn list(options: &ListingOptions) -> Listing {
    let mut warnings = Vec::new();
    let live = options.windows.windows();
    let mut rows: Vec<Row> = Vec::new();
    for editor in &options.editors {
        for workspace in state::read_editor(editor, &mut warnings) {
            let window = x11::window_for(&workspace, live).cloned();
            if options.all || workspace.in_window_state || window.is_some() {
                rows.push(Row {
                    workspace,
                    window,
                    git: GitCell::Skipped,
                });
            }
        }
    }
    if options.git {
        let folders: Vec<PathBuf> = {
            let mut folders: Vec<PathBuf> = rows
                .iter()
                .filter_map(|r| r.workspace.folder().map(Path::to_path_buf))
                .collect();
            folders.sort();
            folders.dedup();
            folders
        };
        let states = git_states(&folders, options.git_deadline);
        for row in &mut rows {
            row.git = match row.workspace.folder() {
                Some(folder) => states.get(folder).cloned().unwrap_or(GitCell::None),
                None => GitCell::None,
            };
            if let GitCell::Error { message } = &row.git {
                warnings.push(Warning {
                    message: message.clone(),
                });
            }
        }
    }
    warnings.dedup();
    Listing {
        rows,
        display: options.windows.describe(),
        warnings,
    }
}

/// The git state of each folder, read on a few threads.
fn git_states(folders: &[PathBuf], deadline: Duration) -> HashMap<PathBuf, GitCell> {
    let next = AtomicUsize::new(0);
    let out = Mutex::new(HashMap::with_capacity(folders.len()));
    let threads = GIT_THREADS.min(folders.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(folder) = folders.get(i) else { break };
                    let cell = match git::state_of(folder, deadline) {
                        Ok(Some(state)) => GitCell::Repository(state),
                        Ok(None) => GitCell::None,
                        Err(e) => GitCell::Error {
                            message: e.to_string(),
                        },
                    };
                    if let Ok(mut out) = out.lock() {
                        out.insert(folder.clone(), cell);
                    }
                }
            });
        }
    });
    out.into_inner().unwrap_or_default()
}

/// The row whose folder holds `cwd` (the deepest one when folders nest).
pub fn row_for<'r>(rows: &'r [Row], cwd: &Path) -> Option<&'r Row> {
    rows.iter()
        .filter_map(|row| {
            row.workspace
                .folders()
                .iter()
                .filter(|f| cwd.starts_with(f))
                .map(|f| f.components().count())
                .max()
                .map(|depth| (depth, row))
        })
        .max_by_key(|(depth, _)| *depth)
        .map(|(_, row)| row)
}
