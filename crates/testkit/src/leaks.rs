//! Processes a test left behind: any process whose command line or environment names the
//! test's temporary directory (its HOME or state directory) is the test's, since every process
//! the tests start — the shim, the real agents, their MCP servers — gets that path. Real-agent
//! tests end with [`assert_none_left`], so an agent outliving its shim (or a test forgetting a
//! child) fails the test that left it instead of surfacing as a stray process later.
//!
//! [`stop_daemons`] is the teardown of every test that runs `cross-agent daemon run` on a
//! temporary home: it ends each daemon of that home still alive — the one the test started, a
//! restart's successor, one an agent's hook autostarted — so none outlives its deleted home.

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

/// Ends every `cross-agent daemon run` process whose `CROSS_AGENT_HOME` is `home`: SIGTERM (a
/// daemon stops gracefully on it), then SIGKILL for any still there after `within`. Returns the
/// daemons it found (pid and command line), so a caller may insist there were none. For Drop:
/// it never fails, and signals only processes of this user naming exactly this home.
pub fn stop_daemons(home: &Path, within: Duration) -> Vec<(u32, String)> {
    let found = daemons_of(home);
    for (pid, _) in &found {
        signal(*pid, rustix::process::Signal::TERM);
    }
    let deadline = Instant::now() + within;
    loop {
        let left = daemons_of(home);
        if left.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            for (pid, _) in &left {
                signal(*pid, rustix::process::Signal::KILL);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    found
}

/// The live `daemon run` processes among those naming `home` whose environment sets
/// `CROSS_AGENT_HOME` to exactly it.
fn daemons_of(home: &Path) -> Vec<(u32, String)> {
    let mut wanted = b"CROSS_AGENT_HOME=".to_vec();
    wanted.extend_from_slice(home.as_os_str().as_encoded_bytes());
    left_running(home)
        .into_iter()
        .filter(|(pid, args)| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            args.contains("daemon run") && environ.split(|b| *b == 0).any(|var| var == wanted)
        })
        .collect()
}

fn signal(pid: u32, signal: rustix::process::Signal) {
    // Never pid 0 or 1 (the group, init) whatever a racing /proc read says.
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .filter(|pid| *pid > 1)
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, signal);
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
