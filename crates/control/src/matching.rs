//! Which window is a session's. VS Code titles a window `file — folder — Visual Studio Code`
//! (`window.title`'s default `${activeEditorShort}${separator}${rootName}…${appName}`, with
//! `" - "` or `" — "` between), and Cursor, Windsurf and VSCodium keep that shape; the
//! folder's name is the one thing of the session's that the title carries. So a window is the
//! session's when it is an editor's (its title ends with an editor's name, or its
//! `_NET_WM_PID` is a process the caller knows is the editor) and one part of its title is the
//! name of the session's working directory or of a folder above it, nearest first.
//!
//! One title matcher, [`title_names`], for `cross-agent focus`, the GUI fallback, the Telegram
//! Raise button ([`window_for_cwd`]) and `cross-agent windows` (the `workspaces` crate, which
//! matches a workspace's name instead of a cwd's folders).

use std::path::Path;

use crate::Window;
use crate::error::{ControlError, Result};

/// The names editors put last in their window titles.
pub const EDITOR_NAMES: &[&str] = &[
    "Visual Studio Code",
    "Visual Studio Code - Insiders",
    "Code - OSS",
    "VSCodium",
    "Cursor",
    "Windsurf",
];

/// The parts of a title that can be its folder's name: the editor's name taken off its end
/// (the longest of [`EDITOR_NAMES`] it ends with; failing one, its last part, as a window the
/// caller knows by pid may carry another app's name), the rest split at `" — "` and `" - "`,
/// the unsaved mark (`●`) taken off each part, and — with two parts or more — not the first
/// (the open file's name, which may well equal a folder's).
pub fn title_folders(title: &str) -> Vec<&str> {
    let app = EDITOR_NAMES
        .iter()
        .filter(|name| title.ends_with(*name))
        .max_by_key(|name| name.len());
    let rest = app.map_or(title, |app| &title[..title.len() - app.len()]);
    let mut parts: Vec<&str> = rest
        .split(" \u{2014} ")
        .flat_map(|p| p.split(" - "))
        .map(|p| p.trim().trim_start_matches('\u{25cf}').trim())
        .filter(|p| !p.is_empty())
        .collect();
    if app.is_none() && parts.len() > 1 {
        parts.pop();
    }
    match parts.as_slice() {
        [] | [_] => parts,
        [_file, folders @ ..] => folders.to_vec(),
    }
}

/// Whether `title` carries `folder_name` as its folder's part ([`title_folders`]): how
/// `cross-agent focus`, the GUI fallback and `cross-agent windows` tell a window's folder.
pub fn title_names(title: &str, folder_name: &str) -> bool {
    title_folders(title).contains(&folder_name)
}

/// Whether `window` is an editor's: by its title's end, or by its pid among `editor_pids`.
pub fn is_editor_window(window: &Window, editor_pids: &[u32]) -> bool {
    window.pid.is_some_and(|pid| editor_pids.contains(&pid))
        || EDITOR_NAMES.iter().any(|name| {
            window.title.strip_suffix(name).is_some_and(|head| {
                head.is_empty() || head.ends_with(" — ") || head.ends_with(" - ")
            })
        })
}

/// The one editor window of a session working in `cwd`: the nearest folder (cwd, then each
/// folder above it) whose name a window's title carries decides. `editor_pids` are processes
/// known to be the session's editor (the ancestors of a live panel shim hosting it): a window
/// one of them owns (`_NET_WM_PID`) is stronger evidence than a title alone, so those windows
/// are looked at first and win over another editor's window naming a nearer folder. Two
/// windows for the deciding folder are refused as ambiguous, never guessed between.
pub fn window_for_cwd<'a>(
    windows: &'a [Window],
    cwd: &Path,
    editor_pids: &[u32],
) -> Result<&'a Window> {
    let owned: Vec<&Window> = windows
        .iter()
        .filter(|w| w.pid.is_some_and(|pid| editor_pids.contains(&pid)))
        .collect();
    if let Some(found) = nearest(&owned, cwd, editor_pids)? {
        return Ok(found);
    }
    let all: Vec<&Window> = windows.iter().collect();
    if let Some(found) = nearest(&all, cwd, editor_pids)? {
        return Ok(found);
    }
    let editors: Vec<String> = windows
        .iter()
        .filter(|w| is_editor_window(w, editor_pids))
        .map(Window::describe)
        .collect();
    Err(ControlError::NoWindow {
        folder: cwd.display().to_string(),
        seen: if editors.is_empty() {
            " (no editor window is open)".to_owned()
        } else {
            format!(" (the editor windows are {})", editors.join(", "))
        },
    })
}

/// Among `candidates`, the one editor window naming the nearest folder of `cwd`; `None` when
/// none names any, ambiguous when two name the deciding folder.
fn nearest<'a>(
    candidates: &[&'a Window],
    cwd: &Path,
    editor_pids: &[u32],
) -> Result<Option<&'a Window>> {
    for folder in cwd.ancestors() {
        let Some(name) = folder.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let found: Vec<&Window> = candidates
            .iter()
            .copied()
            .filter(|w| is_editor_window(w, editor_pids) && title_names(&w.title, name))
            .collect();
        match found.as_slice() {
            [] => continue,
            [one] => return Ok(Some(one)),
            many => {
                return Err(ControlError::AmbiguousWindow {
                    folder: name.to_owned(),
                    count: many.len(),
                    windows: many
                        .iter()
                        .map(|w| w.describe())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn window(id: u64, title: &str, pid: Option<u32>) -> Window {
        Window {
            id,
            title: title.to_owned(),
            pid,
        }
    }

    #[test]
    fn the_nearest_folder_a_title_names_decides() {
        let windows = [
            window(1, "main.rs — alpha — Visual Studio Code", None),
            window(2, "lib.rs - beta - Cursor", None),
            // A terminal titled with the folder is not an editor's window.
            window(3, "alpha", None),
        ];
        let found = window_for_cwd(&windows, Path::new("/work/alpha/src"), &[]).unwrap();
        assert_eq!(found.id, 1);
        let found = window_for_cwd(&windows, Path::new("/work/beta"), &[]).unwrap();
        assert_eq!(found.id, 2);
    }

    #[test]
    fn two_windows_for_one_folder_are_refused_unless_a_pid_tells_them_apart() {
        let windows = [
            window(1, "a.rs — alpha — Visual Studio Code", Some(10)),
            window(2, "b.rs — alpha — Visual Studio Code", Some(20)),
        ];
        let e = window_for_cwd(&windows, Path::new("/x/alpha"), &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("2 editor windows could be the one for \"alpha\""),
            "{e}"
        );
        let found = window_for_cwd(&windows, Path::new("/x/alpha"), &[20]).unwrap();
        assert_eq!(found.id, 2);
    }

    #[test]
    fn the_editors_own_window_wins_over_another_naming_a_nearer_folder() {
        let windows = [
            window(1, "z.rs — src — Visual Studio Code", Some(10)),
            window(2, "y.rs — beta — Visual Studio Code", Some(20)),
        ];
        let cwd = Path::new("/w/beta/src");
        assert_eq!(window_for_cwd(&windows, cwd, &[]).unwrap().id, 1);
        assert_eq!(window_for_cwd(&windows, cwd, &[20]).unwrap().id, 2);
    }

    #[test]
    fn a_title_names_its_folder_not_its_file_nor_its_editor() {
        let named = |title| title_folders(title);
        assert_eq!(named("● main.rs - api - Visual Studio Code"), ["api"]);
        assert_eq!(
            named("lib.rs - api - Visual Studio Code - Insiders"),
            ["api"]
        );
        assert_eq!(named("README.md \u{2014} web \u{2014} Cursor"), ["web"]);
        assert_eq!(named("● api - Visual Studio Code"), ["api"]);
        assert_eq!(named("both (Workspace) - VSCodium"), ["both (Workspace)"]);
        // No editor's name at the end (a window known by its pid): the last part is the app's.
        assert_eq!(named("x.rs - api - Some Fork"), ["api"]);
        assert!(!title_names("apis - Visual Studio Code", "api"));
    }

    #[test]
    fn no_window_names_the_editor_windows_seen() {
        // The open file's name ("alpha") is not the folder's.
        let windows = [window(7, "alpha — gamma — Visual Studio Code", None)];
        let e = window_for_cwd(&windows, Path::new("/x/alpha"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no editor window has \"/x/alpha\""), "{e}");
        assert!(e.contains("0x7"), "{e}");
    }
}
