//! Live windows: the matching of a window to a workspace by its editor and title, and the
//! windows read from a real X server (Xvfb) where top-level windows carry `_NET_WM_PID` and
//! `_NET_WM_NAME` as VS Code's do, listed in the root's `_NET_CLIENT_LIST` as a window manager
//! lists them.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_workspaces::state::{Target, Workspace};
use cross_agent_workspaces::x11::{self, LiveWindow, LiveWindows};
use pretty_assertions::assert_eq;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt, CreateWindowAux, PropMode, WindowClass};
use x11rb::wrapper::ConnectionExt as _;

fn folder(editor: &'static str, path: &str) -> Workspace {
    let path = PathBuf::from(path);
    Workspace {
        editor,
        user_data: PathBuf::from("/ud"),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        target: Target::Folder { path },
        in_window_state: true,
        last_active: false,
    }
}

fn window(id: u32, title: &str) -> LiveWindow {
    LiveWindow {
        id: format!("0x{id:x}"),
        // Not an editor's process: the title tells the editor.
        pid: Some(std::process::id()),
        title: title.to_owned(),
    }
}

#[test]
fn a_window_is_matched_by_its_editor_and_the_folder_in_its_title() {
    let windows = vec![
        window(1, "● main.rs - api - Visual Studio Code"),
        window(2, "README.md \u{2014} web \u{2014} Cursor"),
        window(3, "lib.rs - api - Visual Studio Code - Insiders"),
        window(4, "Welcome - Visual Studio Code"),
        window(5, "apis - Visual Studio Code"),
        window(6, "both (Workspace) - VSCodium"),
    ];
    let found = |ws: &Workspace| x11::window_for(ws, &windows).map(|w| w.id.clone());
    assert_eq!(found(&folder("VS Code", "/src/api")), Some("0x1".into()));
    assert_eq!(
        found(&folder("VS Code Insiders", "/src/api")),
        Some("0x3".into())
    );
    assert_eq!(found(&folder("Cursor", "/src/web")), Some("0x2".into()));
    // Same folder name, another editor: not its window.
    assert_eq!(found(&folder("Cursor", "/src/api")), None);
    // `apis` is not `api`, `Welcome` no folder.
    assert_eq!(found(&folder("VS Code", "/src/ap")), None);
    let mut both = folder("VSCodium", "/src/both.code-workspace");
    both.name = "both (Workspace)".into();
    assert_eq!(found(&both), Some("0x6".into()));
}

#[test]
fn no_display_is_said_not_failed() {
    assert_eq!(LiveWindows::NoDisplay.describe(), "no X display");
    assert_eq!(LiveWindows::NoDisplay.windows(), &[] as &[LiveWindow]);
    let err = x11::read(":999")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with(
            "the X display cannot be asked for its windows: cannot connect to the X display \":999\":"
        ),
        "{err}"
    );
}

/// An Xvfb of the test's own, ended with it.
struct Xvfb {
    child: Child,
    display: String,
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn xvfb() -> anyhow::Result<Option<Xvfb>> {
    if which_xvfb().is_none() {
        eprintln!("Xvfb is not installed: the live-window test is skipped");
        return Ok(None);
    }
    let mut number = 200 + std::process::id() % 500;
    while PathBuf::from(format!("/tmp/.X{number}-lock")).exists() {
        number += 1;
    }
    let child = Command::new("Xvfb")
        .args([
            format!(":{number}").as_str(),
            "-nolisten",
            "tcp",
            "-screen",
            "0",
            "640x480x24",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let xvfb = Xvfb {
        child,
        display: format!(":{number}"),
    };
    let socket = PathBuf::from(format!("/tmp/.X11-unix/X{number}"));
    let started = Instant::now();
    while !socket.exists() {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(10),
            "Xvfb did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Some(xvfb))
}

fn which_xvfb() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("Xvfb"))
            .find(|p| p.is_file())
    })
}

#[test]
fn live_windows_are_read_from_a_real_x_server() -> anyhow::Result<()> {
    let Some(xvfb) = xvfb()? else { return Ok(()) };
    let (conn, screen) = x11rb::connect(Some(&xvfb.display))?;
    let root = conn.setup().roots[screen].root;
    let atom = |name: &str| -> anyhow::Result<u32> {
        Ok(conn.intern_atom(false, name.as_bytes())?.reply()?.atom)
    };
    let (pid_atom, name_atom, utf8, list) = (
        atom("_NET_WM_PID")?,
        atom("_NET_WM_NAME")?,
        atom("UTF8_STRING")?,
        atom("_NET_CLIENT_LIST")?,
    );
    let mut ids = Vec::new();
    for (pid, title) in [
        (4242u32, "● main.rs - api - Visual Studio Code"),
        (4343, "notes — web — Cursor"),
    ] {
        let id = conn.generate_id()?;
        conn.create_window(
            0,
            id,
            root,
            0,
            0,
            100,
            100,
            0,
            WindowClass::INPUT_OUTPUT,
            0,
            &CreateWindowAux::new(),
        )?;
        conn.change_property32(PropMode::REPLACE, id, pid_atom, AtomEnum::CARDINAL, &[pid])?;
        conn.change_property8(PropMode::REPLACE, id, name_atom, utf8, title.as_bytes())?;
        ids.push(id);
    }
    // A window with only the old WM_NAME and no pid.
    let old = conn.generate_id()?;
    conn.create_window(
        0,
        old,
        root,
        0,
        0,
        10,
        10,
        0,
        WindowClass::INPUT_OUTPUT,
        0,
        &CreateWindowAux::new(),
    )?;
    conn.change_property8(
        PropMode::REPLACE,
        old,
        AtomEnum::WM_NAME,
        AtomEnum::STRING,
        b"xterm",
    )?;
    ids.push(old);
    conn.change_property32(PropMode::REPLACE, root, list, AtomEnum::WINDOW, &ids)?;
    conn.sync()?;

    let windows = x11::read(&xvfb.display)?;
    assert_eq!(
        windows,
        vec![
            LiveWindow {
                id: format!("0x{:x}", ids[0]),
                pid: Some(4242),
                title: "● main.rs - api - Visual Studio Code".into()
            },
            LiveWindow {
                id: format!("0x{:x}", ids[1]),
                pid: Some(4343),
                title: "notes — web — Cursor".into()
            },
            LiveWindow {
                id: format!("0x{:x}", ids[2]),
                pid: None,
                title: "xterm".into()
            },
        ]
    );
    assert_eq!(
        x11::window_for(&folder("VS Code", "/src/api"), &windows).map(|w| w.pid),
        Some(Some(4242))
    );
    Ok(())
}
