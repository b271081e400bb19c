//! Which window is a session's. VS Code titles a window `file — folder — Visual Studio Code`
//! (`window.title`'s default `${activeEditorShort}${separator}${rootName}…${appName}`, with
//! `" - "` or `" — "` between), and Cursor, Windsurf and VSCodium keep that shape; the
//! folder's name is the one thing of the session's that the title carries. So a window is the
//! session's when it is an editor's (its title ends with an editor's name, or its
//! `_NET_WM_PID` is a process the caller knows is the editor) and one part of its title is the
//! name of the session's working directory or of a folder above it, nearest first.
//!
//! One function, [`window_for_cwd`], for `cross-agent focus`, the GUI fallback and
//! `cross-agent windows`.

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

/// The parts of a title that can be the folder's name, split at `" — "` and `" - "`: not the
/// last (the editor's name) and, with three parts or more, not the first (the open file's name,
/// which may well equal a folder's).
fn folder_parts(title: &str) -> Vec<&str> {
    let parts: Vec<&str> = title
        .split(" — ")
        .flat_map(|p| p.split(" - "))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    match parts.as_slice() {
        [] | [_] => parts,
        [root, _app] => vec![root],
        [_file, middle @ .., _app] => middle.to_vec(),
    }
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

/// The editor windows whose title carries `folder_name` as one of its parts.
pub fn windows_for_folder<'a>(
    windows: &'a [Window],
    folder_name: &str,
    editor_pids: &[u32],
) -> Vec<&'a Window> {
    windows
        .iter()
        .filter(|w| is_editor_window(w, editor_pids))
        .filter(|w| folder_parts(&w.title).contains(&folder_name))
        .collect()
}

/// The one editor window of a session working in `cwd`: the nearest folder (cwd, then each
/// folder above it) whose name a window's title carries decides. Two windows for that folder
/// are told apart by `editor_pids` (processes known to be the session's editor) when given;
/// otherwise they are refused as ambiguous, never guessed between.
pub fn window_for_cwd<'a>(
    windows: &'a [Window],
    cwd: &Path,
    editor_pids: &[u32],
) -> Result<&'a Window> {
    for folder in cwd.ancestors() {
        let Some(name) = folder.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let mut found = windows_for_folder(windows, name, editor_pids);
        if found.len() > 1 && !editor_pids.is_empty() {
            found.retain(|w| w.pid.is_some_and(|pid| editor_pids.contains(&pid)));
        }
        match found.as_slice() {
            [] => continue,
            [one] => return Ok(one),
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
