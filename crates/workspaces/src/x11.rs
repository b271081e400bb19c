//! The live top-level windows on an X11 display (EWMH: the root's `_NET_CLIENT_LIST`, each
//! window's `_NET_WM_PID` and `_NET_WM_NAME` or `WM_NAME`, read by `control`'s X11 backend,
//! the one reader of the window list), and which editor workspace each
//! shows: a window of the editor (its process's program, or its title ending in the editor's
//! name) whose title names the workspace (VS Code's default title is
//! `[●] file — folder — Visual Studio Code`, `window.title`'s `${rootName}` being the folder's
//! name or `<name> (Workspace)`). The title is read by `control`'s matcher
//! (`cross_agent_control::matching::title_names`), the one `cross-agent focus` uses.
//!
//! Without `DISPLAY` (or on Wayland alone) nothing is asked and the listing says so
//! ("no X display") instead of failing.

use cross_agent_control::x11::X11;
use cross_agent_control::{Control as _, matching};
use serde::Serialize;

use crate::error::Result;
use crate::state::{Workspace, app_name};

/// One top-level window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveWindow {
    /// The X window id, `0x…`.
    pub id: String,
    /// Its `_NET_WM_PID`, when set.
    pub pid: Option<u32>,
    pub title: String,
}

/// What the display said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveWindows {
    /// The display's top-level windows.
    Read {
        display: String,
        windows: Vec<LiveWindow>,
    },
    /// No `DISPLAY`: not asked.
    NoDisplay,
    /// `DISPLAY` is set but could not be asked, and why.
    Failed(String),
}

impl LiveWindows {
    /// The windows of the display `DISPLAY` names, if any.
    pub fn from_env() -> LiveWindows {
        match std::env::var("DISPLAY") {
            Ok(display) if !display.is_empty() => match read(&display) {
                Ok(windows) => LiveWindows::Read { display, windows },
                Err(e) => LiveWindows::Failed(e.to_string()),
            },
            _ => LiveWindows::NoDisplay,
        }
    }

    pub fn windows(&self) -> &[LiveWindow] {
        match self {
            LiveWindows::Read { windows, .. } => windows,
            LiveWindows::NoDisplay | LiveWindows::Failed(_) => &[],
        }
    }

    /// `:0`, "no X display" or why the display could not be asked.
    pub fn describe(&self) -> String {
        match self {
            LiveWindows::Read { display, .. } => display.clone(),
            LiveWindows::NoDisplay => "no X display".to_owned(),
            LiveWindows::Failed(why) => why.clone(),
        }
    }
}

/// The top-level windows of `display` (`:0`) in `_NET_CLIENT_LIST`'s order, read by `control`'s
/// X11 backend (the one reader of the window list, also behind `cross-agent focus`).
pub fn read(display: &str) -> Result<Vec<LiveWindow>> {
    let windows = X11::connect(display)?.windows()?;
    Ok(windows.into_iter().map(LiveWindow::from).collect())
}

impl From<cross_agent_control::Window> for LiveWindow {
    fn from(window: cross_agent_control::Window) -> LiveWindow {
        LiveWindow {
            id: format!("{:#x}", window.id),
            pid: window.pid,
            title: window.title,
        }
    }
}

/// The editor a window's process runs, by its program's name (Linux `/proc/<pid>/exe`).
fn editor_of_pid(pid: u32) -> Option<&'static str> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let name = exe.file_name()?.to_string_lossy().to_lowercase();
    Some(match name.as_str() {
        "code" => "VS Code",
        "code-insiders" => "VS Code Insiders",
        "codium" | "vscodium" => "VSCodium",
        "cursor" => "Cursor",
        "windsurf" => "Windsurf",
        _ => return None,
    })
}

/// Whether `window` is `editor`'s (its program, else its title's end).
fn belongs_to(window: &LiveWindow, editor: &str) -> bool {
    match window.pid.and_then(editor_of_pid) {
        Some(of_pid) => of_pid == editor || (editor.starts_with("VS Code") && of_pid == "VS Code"),
        None => {
            let app = app_name(editor);
            window.title.ends_with(app)
                // "Visual Studio Code" also ends Insiders' titles' prefix: tell them apart.
                && !(app == "Visual Studio Code"
                    && window.title.ends_with(app_name("VS Code Insiders")))
        }
    }
}

/// The live window showing `workspace`, if one does.
pub fn window_for<'w>(workspace: &Workspace, windows: &'w [LiveWindow]) -> Option<&'w LiveWindow> {
    windows
        .iter()
        .filter(|w| belongs_to(w, workspace.editor))
        .find(|w| matching::title_names(&w.title, &workspace.name))
}
