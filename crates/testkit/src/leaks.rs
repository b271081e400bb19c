//! Processes a test left behind: any process whose command line or environment names the
//! test's temporary directory (its HOME or state directory) is the test's, since every process
//! the tests start — the shim, the real agents, their MCP servers — gets that path. Real-agent
//! tests end with [`assert_none_left`], so an agent outliving its shim (or a test forgetting a
//! child) fails the test that left it instead of surfacing as a stray process later.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

/// How long processes being killed get to be gone: the kernel's parent-death signal and a
/// node program's exit both take a moment on a loaded machine.
pub const SETTLE: Duration = Duration::from_secs(20);

/// The live processes (pid and command line) other than this one whose command line or
/// environment contains `marker`.
pub fn left_running(marker: &Path) -> Vec<(u32, String)> {
    let needle = marker.as_os_str().as_encoded_bytes();
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own || is_zombie(pid) {
            continue;
        }
        let dir = entry.path();
        // Another user's process (or one gone meanwhile) cannot be read: it is not ours.
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        if contains(&cmdline, needle) || contains(&environ, needle) {
            let shown = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push((pid, shown.trim_end().to_owned()));
        }
    }
    found
}

/// Waits up to `within` for every process naming `marker` to be gone; fails naming those left.
pub fn assert_none_left(marker: &Path, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let left = left_running(marker);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "processes of this test ({}) still run after {within:?}: {left:?}",
                marker.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A zombie has ended; only its parent has yet to read its status.
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // The state follows the command name, which is in parentheses and may hold spaces.
            let after = stat.rsplit_once(')')?.1;
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(false)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}
