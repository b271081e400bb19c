//! The one focus path `cross-agent focus` and the daemon use: on X11 the session's window is
//! found by [`crate::matching::window_for_cwd`] and raised through the window manager, checked
//! in `_NET_ACTIVE_WINDOW`; where no window list can be read (Wayland without X11), the editor's
//! CLI raises the window that has the folder, which nothing can check. A window not found on
//! X11 is a refusal, not a reason to try the CLI: the CLI would open the folder in another
//! window.

use std::path::Path;

use serde::Serialize;

use crate::error::{ControlError, Result};
use crate::{Control, Window, editor_cli, matching};

/// How a window was raised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Focused {
    /// Through the window manager; the window is the active one now.
    Window { window: Window },
    /// Through the editor CLI (`cli --reuse-window folder`); unchecked.
    EditorCli { cli: String, folder: String },
}

/// Raises the window of a session working in `cwd`. `control` is the desktop's backend (an
/// error when there is none); `editor_pids` are processes known to be its editor.
pub fn focus_cwd(
    control: Result<&dyn Control>,
    cwd: &Path,
    editor_pids: &[u32],
) -> Result<Focused> {
    let control = control?;
    match control.windows() {
        Ok(windows) => {
            let window = matching::window_for_cwd(&windows, cwd, editor_pids)?;
            control.focus(window)?;
            Ok(Focused::Window {
                window: window.clone(),
            })
        }
        Err(unsupported @ ControlError::Unsupported { .. }) => {
            let raised = editor_cli::find()
                .and_then(|cli| editor_cli::reuse_window(&cli, cwd).map(|()| cli));
            match raised {
                Ok(cli) => Ok(Focused::EditorCli {
                    cli: cli.display().to_string(),
                    folder: cwd.display().to_string(),
                }),
                Err(cli) => Err(ControlError::NoDesktop {
                    why: format!("{unsupported}; and {cli}"),
                }),
            }
        }
        Err(other) => Err(other),
    }
}
