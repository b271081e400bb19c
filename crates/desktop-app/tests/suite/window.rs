//! The real window: `cross-agent-desktop` opened on Xvfb (Mesa's software GL under the glow
//! renderer), found by its title among the X server's windows, and its pixels read back with
//! `GetImage`: the window is there, mapped, and not blank (more than a handful of colours — text
//! and buttons, not one fill). With `CROSS_AGENT_DESKTOP_SCREENSHOT=<file.png>` the test also
//! writes what it read there (`scripts/desktop-screenshot` makes `docs/desktop.png` so).

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_testkit::desktop::Xvfb;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, ImageFormat, MapState, Window};

const APP: &str = env!("CARGO_BIN_EXE_cross-agent-desktop");

/// The app's process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The mapped window titled `title` under `root`, at any depth.
fn find_window(
    conn: &impl x11rb::connection::Connection,
    root: Window,
    title: &str,
) -> Option<Window> {
    let net_wm_name = conn
        .intern_atom(false, b"_NET_WM_NAME")
        .ok()?
        .reply()
        .ok()?
        .atom;
    let mut todo = vec![root];
    while let Some(window) = todo.pop() {
        let tree = conn.query_tree(window).ok()?.reply().ok()?;
        for child in tree.children {
            todo.push(child);
            let named = [net_wm_name, AtomEnum::WM_NAME.into()]
                .into_iter()
                .any(|atom| {
                    conn.get_property(false, child, atom, AtomEnum::ANY, 0, 256)
                        .ok()
                        .and_then(|cookie| cookie.reply().ok())
                        .is_some_and(|reply| reply.value == title.as_bytes())
                });
            let mapped = conn
                .get_window_attributes(child)
                .ok()
                .and_then(|cookie| cookie.reply().ok())
                .is_some_and(|attributes| attributes.map_state == MapState::VIEWABLE);
            if named && mapped {
                return Some(child);
            }
        }
    }
    None
}

/// The window's pixels as RGB, with its size.
fn grab(conn: &impl x11rb::connection::Connection, window: Window) -> Option<(u32, u32, Vec<u8>)> {
    let geometry = conn.get_geometry(window).ok()?.reply().ok()?;
    let (width, height) = (u32::from(geometry.width), u32::from(geometry.height));
    let image = conn
        .get_image(
            ImageFormat::Z_PIXMAP,
            window,
            0,
            0,
            geometry.width,
            geometry.height,
            !0,
        )
        .ok()?
        .reply()
        .ok()?;
    // Depth 24 in 32 bits a pixel, little-endian: blue, green, red, padding.
    let rgb = image
        .data
        .chunks_exact(4)
        .flat_map(|pixel| [pixel[2], pixel[1], pixel[0]])
        .collect();
    Some((width, height, rgb))
}

fn colours(rgb: &[u8]) -> usize {
    rgb.chunks_exact(3)
        .map(|pixel| (pixel[0], pixel[1], pixel[2]))
        .collect::<HashSet<_>>()
        .len()
}

fn write_png(path: &Path, width: u32, height: u32, rgb: &[u8]) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .unwrap()
        .write_image_data(rgb)
        .unwrap();
}

#[test]
fn the_app_opens_a_real_window_that_is_not_blank() {
    let xvfb = Xvfb::start_sized(1024, 768).unwrap();
    let home = tempfile::tempdir().unwrap();
    let app = Running(
        Command::new(APP)
            .env("DISPLAY", xvfb.display())
            .env_remove("WAYLAND_DISPLAY")
            .env("HOME", home.path())
            .env("CROSS_AGENT_HOME", home.path().join("state"))
            // Mesa's software rasteriser: no GPU here, in CI or in a container.
            .env("LIBGL_ALWAYS_SOFTWARE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (conn, screen) = x11rb::connect(Some(xvfb.display())).unwrap();
    let root = conn.setup().roots[screen].root;

    // The window appears, then fills in (the first frames may still be one colour).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = None;
    let (width, height, rgb) = loop {
        if let Some(window) = seen.or_else(|| find_window(&conn, root, "cross-agent")) {
            seen = Some(window);
            if let Some(shot) = grab(&conn, window)
                && colours(&shot.2) > 8
            {
                break shot;
            }
        }
        if Instant::now() > deadline {
            let mut app = app;
            let _ = app.0.kill();
            let out = std::mem::replace(&mut app.0, Command::new("true").spawn().unwrap());
            let stderr = out.wait_with_output().map(|o| o.stderr).unwrap_or_default();
            panic!(
                "no non-blank window titled cross-agent within 60 s (window found: {}); the app said: {}",
                seen.is_some(),
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(width >= 400 && height >= 300, "{width}x{height}");
    if let Some(path) = std::env::var_os("CROSS_AGENT_DESKTOP_SCREENSHOT") {
        // Let the first frames settle (fonts, layout) before the picture the README shows.
        std::thread::sleep(Duration::from_secs(2));
        let (width, height, rgb) = seen.and_then(|w| grab(&conn, w)).unwrap();
        write_png(Path::new(&path), width, height, &rgb);
    }
    drop(rgb);
    drop(app);
}
