//! Where a session sits on the desktop, for the session listing and the Telegram cards: the
//! open workspace holding its cwd (its editor and live window) and the git branch there.
//!
//! Cheap by design: the editors' state and the live windows are read once ([`Places::read`]),
//! HEAD is read without any status walk ([`git::head_of`], a millisecond or two) and once per
//! cwd; a session outside every open workspace gets its branch only when asked (the listing
//! asks for active and working sessions), so 20,000 old sessions cost nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Warning;
use crate::git;
use crate::listing::{self, ListingOptions, Row};
use crate::state::Editor;
use crate::x11::{LiveWindow, LiveWindows};

/// A session's place: the workspace it is in (when one is open) and its branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    /// The editor whose open workspace holds the cwd.
    pub editor: Option<&'static str>,
    /// That workspace's folder.
    pub folder: Option<PathBuf>,
    /// The live window showing it.
    pub window: Option<LiveWindow>,
    /// The branch at the cwd (`(detached)` for a detached HEAD), when it is in a repository.
    pub branch: Option<String>,
}

impl Place {
    /// `main · api — Visual Studio Code`-like short text: branch, then the window's title (or
    /// the editor when no window is known).
    pub fn short(&self) -> String {
        let mut parts = Vec::new();
        if let Some(branch) = &self.branch {
            parts.push(branch.clone());
        }
        match (&self.window, self.editor) {
            (Some(window), _) => parts.push(format!("{} {}", window.id, window.title)),
            (None, Some(editor)) => parts.push(editor.to_owned()),
            (None, None) => {}
        }
        parts.join(" · ")
    }
}

impl Place {
    /// The branch and the window's title (or the editor), for a Telegram card:
    /// `main · main.rs - api - Visual Studio Code`.
    pub fn card(&self) -> String {
        let mut parts = Vec::new();
        if let Some(branch) = &self.branch {
            parts.push(branch.clone());
        }
        match (&self.window, self.editor) {
            (Some(window), _) => parts.push(window.title.clone()),
            (None, Some(editor)) => parts.push(editor.to_owned()),
            (None, None) => {}
        }
        parts.join(" · ")
    }
}

/// The open workspaces and live windows, read once, and the branches found so far.
#[derive(Debug)]
pub struct Places {
    rows: Vec<Row>,
    heads: HashMap<PathBuf, Option<String>>,
}

impl Places {
    /// The open workspaces of `editors` with the windows showing them; no git state yet.
    pub fn read(editors: Vec<Editor>, windows: LiveWindows) -> (Places, Vec<Warning>) {
        let listed = listing::list(&ListingOptions {
            editors,
            all: false,
            git: false,
            git_deadline: git::DEFAULT_DEADLINE,
            windows,
        });
        (
            Places {
                rows: listed.rows,
                heads: HashMap::new(),
            },
            listed.warnings,
        )
    }

    /// From this user's environment: `HOME`, the editors' variables and `DISPLAY`.
    pub fn from_env() -> (Places, Vec<Warning>) {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Places::read(
            Editor::all(home.as_deref(), |name| std::env::var_os(name)),
            LiveWindows::from_env(),
        )
    }

    /// Whether any workspace is open.
    pub fn has_workspaces(&self) -> bool {
        !self.rows.is_empty()
    }

    /// The place of a session working in `cwd`: `None` when it is in no open workspace and
    /// `branch_anyway` is false, or when nothing is known of it.
    pub fn of(&mut self, cwd: &Path, branch_anyway: bool) -> Option<Place> {
        let row = listing::row_for(&self.rows, cwd);
        if row.is_none() && !branch_anyway {
            return None;
        }
        let (editor, folder, window) = match row {
            Some(row) => (
                Some(row.workspace.editor),
                row.workspace.folder().map(Path::to_path_buf),
                row.window.clone(),
            ),
            None => (None, None, None),
        };
        let branch = self
            .heads
            .entry(cwd.to_path_buf())
            // A session's cwd may be gone (or never made): its nearest folder still there.
            .or_insert_with(|| {
                match cwd
                    .ancestors()
                    .find(|dir| dir.is_dir())
                    .map(git::head_of)
                    .unwrap_or(Ok(None))
                {
                    Ok(Some((head, _))) => Some(head.label()),
                    // A cwd gone, not in a repository, or unreadable: no branch to show.
                    Ok(None) | Err(_) => None,
                }
            })
            .clone();
        let place = Place {
            editor,
            folder,
            window,
            branch,
        };
        (place.editor.is_some() || place.branch.is_some()).then_some(place)
    }
}
