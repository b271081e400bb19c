//! Pid liveness and process-group signals. Every headless turn runs in a process group of its
//! own, so stopping it also stops what it started (MCP servers, shell commands): nothing is left
//! writing to a session no lock protects any more (spec 004 §6 item 4).

use rustix::process::{Pid, Signal};

fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// True while a process with this pid exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    let Some(raw) = pid_of(pid) else { return false };
    let exists = match rustix::process::test_kill_process(raw) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    };
    exists && !is_zombie(pid)
}

/// True while any process of the group led by `pgid` runs. Zombies do not count: an orphan
/// killed with its group may wait a while for a reaper, but it runs nothing.
#[cfg(target_os = "linux")]
pub fn group_alive(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            return false;
        };
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                // After `pid (comm)`: state, ppid, pgrp.
                let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
                let state = fields.next()?;
                let _ppid = fields.next()?;
                let pgrp: u32 = fields.next()?.parse().ok()?;
                Some(pgrp == pgid && state != "Z")
            })
            .unwrap_or(false)
    })
}

/// True while any process of the group led by `pgid` exists.
#[cfg(not(target_os = "linux"))]
pub fn group_alive(pgid: u32) -> bool {
    let Some(raw) = pid_of(pgid) else {
        return false;
    };
    match rustix::process::test_kill_process_group(raw) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

#[cfg(target_os = "linux")]
fn is_zombie(pid: u32) -> bool {
    // `/proc/<pid>/stat` is `pid (comm) state ...`; comm may hold spaces and parentheses.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = &stat[stat.rfind(')')? + 1..];
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(false)
}

#[cfg(not(target_os = "linux"))]
fn is_zombie(_pid: u32) -> bool {
    false
}

/// SIGKILLs the whole process group led by `pgid`. A group already gone is not an error.
pub fn kill_group(pgid: u32) {
    if let Some(raw) = pid_of(pgid)
        && let Err(error) = rustix::process::kill_process_group(raw, Signal::KILL)
        && error != rustix::io::Errno::SRCH
    {
        tracing::warn!(pgid, %error, "could not kill a turn's process group");
    }
}
