//! A real X server for tests that open windows: Xvfb on a display it picks itself
//! (`-displayfd`, so parallel tests never race for a number), no TCP, stopped when dropped.
//! The handoff launcher's xterm and the desktop app's window run on it.

use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};

/// A started Xvfb, stopped when dropped.
pub struct Xvfb {
    child: Child,
    /// `:<n>`, for `DISPLAY`.
    pub display: String,
}

impl Xvfb {
    /// Starts Xvfb with one 24-bit screen of `width`×`height`.
    pub fn start_sized(width: u32, height: u32) -> anyhow::Result<Xvfb> {
        let mut child = Command::new("Xvfb")
            .args(["-displayfd", "1", "-screen", "0"])
            .arg(format!("{width}x{height}x24"))
            .args(["-nolisten", "tcp"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                anyhow::anyhow!("Xvfb could not start ({e}): scripts/install-debian-packages")
            })?;
        let mut line = String::new();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("Xvfb's stdout"))?;
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        if line.trim().is_empty() {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("Xvfb said no display number");
        }
        Ok(Xvfb {
            child,
            display: format!(":{}", line.trim()),
        })
    }

    /// Starts Xvfb with an 800×600 screen.
    pub fn start() -> anyhow::Result<Xvfb> {
        Xvfb::start_sized(800, 600)
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
