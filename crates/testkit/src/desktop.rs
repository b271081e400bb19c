//! A real desktop for the focus and GUI-fallback tests: Xvfb on a free display with openbox as its window manager, and stand-in editor
//! windows — `x11-recorder` processes titled as VS Code titles its windows, each recording the
//! keys and pastes it receives. All processes are ended when dropped. [`Xvfb`] alone (no window
//! manager) is for tests that only need a display (the handoff launcher's terminal): one way of
//! picking a display for every test, so tests run in parallel never share a server.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{self, AtomEnum, ConnectionExt as _};
use x11rb::protocol::xtest::ConnectionExt as _;

/// Xvfb with openbox on it.
pub struct Desktop {
    // Declared first: openbox is stopped before its server.
    openbox: Child,
    xvfb: Xvfb,
    _config: tempfile::TempDir,
}

/// An Xvfb server on a display of its own, stopped (its lock file removed) when dropped.
#[derive(Debug)]
pub struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    /// Starts Xvfb on a free display: a number tried, its lock file deciding (below).
    pub fn start() -> Result<Xvfb> {
        Xvfb::start_sized(1024, 768)
    }

    /// Starts Xvfb with one 24-bit screen of `width`×`height` on a free display.
    pub fn start_sized(width: u32, height: u32) -> Result<Xvfb> {
        let (child, display) = start_xvfb(&format!("{width}x{height}x24"))?;
        Ok(Xvfb { child, display })
    }

    /// `:N`.
    pub fn display(&self) -> &str {
        &self.display
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

impl std::fmt::Debug for Desktop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desktop")
            .field("display", &self.xvfb.display)
            .finish()
    }
}

impl Desktop {
    /// Starts Xvfb and openbox, and waits until openbox manages new windows.
    pub fn start() -> Result<Desktop> {
        let xvfb = Xvfb::start()?;
        let display = xvfb.display.clone();
        // openbox reads its rc.xml from XDG_CONFIG_HOME first: an empty one means its defaults.
        let config = tempfile::tempdir()?;
        let openbox = Command::new("openbox")
            .args(["--sm-disable"])
            .env("DISPLAY", &display)
            .env("XDG_CONFIG_HOME", config.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let openbox = match openbox {
            Ok(child) => child,
            // The server is stopped as `xvfb` is dropped.
            Err(e) => bail!("start openbox (scripts/install-debian-packages installs it): {e}"),
        };
        let desktop = Desktop {
            openbox,
            xvfb,
            _config: config,
        };
        desktop.wait_managed()?;
        Ok(desktop)
    }

    /// Waits until openbox manages new windows: a probe window mapped here shows in
    /// `_NET_CLIENT_LIST`. (`_NET_SUPPORTING_WM_CHECK` is set earlier in openbox's start-up; a
    /// window mapped right after it was seen left unmanaged.)
    fn wait_managed(&self) -> Result<()> {
        let (conn, screen) = x11rb::connect(Some(self.display()))?;
        let root = conn.setup().roots[screen].root;
        let list = conn.intern_atom(false, b"_NET_CLIENT_LIST")?.reply()?.atom;
        let probe = conn.generate_id()?;
        conn.create_window(
            x11rb::COPY_DEPTH_FROM_PARENT,
            probe,
            root,
            0,
            0,
            10,
            10,
            0,
            xproto::WindowClass::INPUT_OUTPUT,
            0,
            &xproto::CreateWindowAux::new(),
        )?;
        conn.map_window(probe)?;
        conn.flush()?;
        wait_for("openbox to manage windows", Duration::from_secs(20), || {
            let reply = conn
                .get_property(false, root, list, AtomEnum::WINDOW, 0, 1024)?
                .reply()?;
            Ok(reply
                .value32()
                .is_some_and(|mut ids| ids.any(|id| id == probe)))
        })?;
        conn.destroy_window(probe)?;
        conn.get_input_focus()?.reply()?;
        Ok(())
    }

    /// `:N`.
    pub fn display(&self) -> &str {
        self.xvfb.display()
    }

    /// Opens a stand-in editor window titled `title` that records into `record`.
    pub fn open_window(&self, title: &str, record: &Path) -> Result<Recorder> {
        let child = Command::new(crate::binaries::x11_recorder_bin()?)
            .arg("--title")
            .arg(title)
            .arg("--record")
            .arg(record)
            .env("DISPLAY", self.display())
            .stdin(Stdio::null())
            .spawn()
            .context("start x11-recorder")?;
        Ok(Recorder {
            child,
            record: record.to_owned(),
        })
    }

    /// Moves the pointer through XTEST: input as the person's own, resetting the idle time.
    pub fn move_pointer(&self) -> Result<()> {
        let (conn, screen) = x11rb::connect(Some(self.display()))?;
        let root = conn.setup().roots[screen].root;
        conn.xtest_fake_input(xproto::MOTION_NOTIFY_EVENT, 0, 0, root, 17, 23, 0)?;
        conn.get_input_focus()?.reply()?;
        Ok(())
    }
}

/// Starts Xvfb on a display of its own. Not `-displayfd`: two servers started at once by it
/// were seen to report the same display (and one test's windows went to another's server), so
/// the number is chosen here and the X server's own lock file (`/tmp/.X<n>-lock`, created
/// exclusively) decides — a server that lost exits, and the next number is tried.
fn start_xvfb(screen: &str) -> Result<(Child, String)> {
    let first = 200 + fastrand_like() % 600;
    for n in (first..800).chain(200..first) {
        if Path::new(&format!("/tmp/.X{n}-lock")).exists() {
            continue;
        }
        let display = format!(":{n}");
        let mut xvfb = Command::new("Xvfb")
            .args([&display, "-screen", "0", screen, "-nolisten", "tcp"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start Xvfb (scripts/install-debian-packages installs it)")?;
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if xvfb.try_wait()?.is_some() {
                break;
            }
            if x11rb::connect(Some(&display)).is_ok() {
                // Connected: to ours only if ours is still running (a loser exits at once).
                std::thread::sleep(Duration::from_millis(100));
                if xvfb.try_wait()?.is_none() {
                    return Ok((xvfb, display));
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        terminate(&mut xvfb);
    }
    bail!("no free X display between :200 and :799 for Xvfb")
}

/// A number that differs between processes and calls, to spread the displays tried.
fn fastrand_like() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id().wrapping_mul(2_654_435_761)
}

impl Drop for Desktop {
    fn drop(&mut self) {
        // The server follows as `xvfb` is dropped.
        terminate(&mut self.openbox);
    }
}

/// SIGTERM, so that Xvfb removes its lock file and socket, then SIGKILL after 2 s.
fn terminate(child: &mut Child) {
    if let Some(pid) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A running stand-in editor window.
#[derive(Debug)]
pub struct Recorder {
    child: Child,
    record: PathBuf,
}

impl Recorder {
    /// Its pid (`_NET_WM_PID`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every line it recorded so far.
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The texts pasted into it.
    pub fn pastes(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter_map(|e| e.get("paste").and_then(Value::as_str).map(str::to_owned))
            .collect()
    }

    /// The key syms pressed in it.
    pub fn keys(&self) -> Vec<u32> {
        self.events()
            .iter()
            .filter_map(|e| e.get("key").and_then(Value::as_u64))
            .filter_map(|k| u32::try_from(k).ok())
            .collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `ready` every 20 ms until it is true or `within` passed.
pub fn wait_for(
    what: &str,
    within: Duration,
    mut ready: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let started = Instant::now();
    loop {
        if ready()? {
            return Ok(());
        }
        if started.elapsed() > within {
            bail!("waited {within:?} for {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
