//! The live top-level windows on an X11 display (EWMH: the root's `_NET_CLIENT_LIST`, each
//! window's `_NET_WM_PID` and `_NET_WM_NAME` or `WM_NAME`), and which editor workspace each
//! shows: a window of the editor (its process's program, or its title ending in the editor's
//! name) whose title names the workspace (VS Code's default title is
//! `[●] file — folder — Visual Studio Code`, `window.title`'s `${rootName}` being the folder's
//! name or `<name> (Workspace)`).
//!
//! Without `DISPLAY` (or on Wayland alone) nothing is asked and the listing says so
//! ("no X display") instead of failing.

use serde::Serialize;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{Atom, AtomEnum, ConnectionExt, Window};

use crate::error::{Error, Result};
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

/// The top-level windows of `display` (`:0`) in `_NET_CLIENT_LIST`'s order.
pub fn read(display: &str) -> Result<Vec<LiveWindow>> {
    let x = |e: &dyn std::fmt::Display| Error::X11 {
        message: format!("{display}: {e}"),
    };
    let (conn, screen) = x11rb::connect(Some(display)).map_err(|e| x(&e))?;
    let root = conn
        .setup()
        .roots
        .get(screen)
        .map(|s| s.root)
        .ok_or_else(|| x(&"the display has no such screen"))?;
    let atom = |name: &str| -> Result<Atom> {
        Ok(conn
            .intern_atom(false, name.as_bytes())
            .map_err(|e| x(&e))?
            .reply()
            .map_err(|e| x(&e))?
            .atom)
    };
    let client_list = atom("_NET_CLIENT_LIST")?;
    let wm_pid = atom("_NET_WM_PID")?;
    let net_name = atom("_NET_WM_NAME")?;
    let utf8 = atom("UTF8_STRING")?;
    let clients: Vec<Window> = conn
        .get_property(false, root, client_list, AtomEnum::WINDOW, 0, 1 << 16)
        .map_err(|e| x(&e))?
        .reply()
        .map_err(|e| x(&e))?
        .value32()
        .map(|v| v.collect())
        .unwrap_or_default();
    let mut windows = Vec::with_capacity(clients.len());
    for window in clients {
        // A window gone between the list and the question is skipped.
        let Ok(pid) = conn.get_property(false, window, wm_pid, AtomEnum::CARDINAL, 0, 1) else {
            continue;
        };
        let pid = pid
            .reply()
            .ok()
            .and_then(|r| r.value32().and_then(|mut v| v.next()));
        let title = text_property(&conn, window, net_name, utf8)
            .or_else(|| {
                text_property(
                    &conn,
                    window,
                    AtomEnum::WM_NAME.into(),
                    AtomEnum::STRING.into(),
                )
            })
            .unwrap_or_default();
        windows.push(LiveWindow {
            id: format!("0x{window:x}"),
            pid,
            title,
        });
    }
    Ok(windows)
}

fn text_property(
    conn: &impl Connection,
    window: Window,
    property: Atom,
    kind: Atom,
) -> Option<String> {
    let reply = conn
        .get_property(false, window, property, kind, 0, 4096)
        .ok()?
        .reply()
        .ok()?;
    (!reply.value.is_empty()).then(|| String::from_utf8_lossy(&reply.value).into_owned())
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

/// Whether `title` names `name` as one of its ` - ` or ` — `-separated parts, the app's name
/// taken off its end first and the unsaved mark (`●`) off a part's start.
pub fn title_names(title: &str, app: &str, name: &str) -> bool {
    let rest = title.strip_suffix(app).unwrap_or(title);
    rest.split(" - ")
        .flat_map(|part| part.split(" \u{2014} "))
        .any(|part| part.trim().trim_start_matches('\u{25cf}').trim() == name)
}

/// The live window showing `workspace`, if one does.
pub fn window_for<'w>(workspace: &Workspace, windows: &'w [LiveWindow]) -> Option<&'w LiveWindow> {
    let app = app_name(workspace.editor);
    windows
        .iter()
        .filter(|w| belongs_to(w, workspace.editor))
        .find(|w| title_names(&w.title, app, &workspace.name))
}
