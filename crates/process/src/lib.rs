//! What cross-agent asks about local processes, answered in one place: whether a pid runs,
//! whether a process group still runs, and a process's parent, name and command line. The
//! daemon client (stopping a daemon), the transports (a turn's process group), the caller
//! context (the ancestry that tells who is calling) and the engine (is a pid still the agent it
//! was) all ask these; before, each read `/proc` its own way. [`run`] runs a short-lived program
//! with a deadline (an agent CLI's `--version`, `login status`, a compact). [`shell_word`]
//! quotes a word for the `sh` command lines cross-agent writes (hooks, launchers, hints).
//!
//! Linux answers from `/proc`. Elsewhere liveness falls back to signals (a zombie then counts
//! as alive) and what only `/proc` knows is `None`. This crate depends on nothing of
//! cross-agent's, so every crate can use it.

use rustix::process::Pid;

pub mod run;

fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// True while a process with this pid runs (a process of another user counts: the kernel
/// refusing to signal it still proves it exists). A zombie — exited, not yet reaped by its
/// parent — does not count: it holds nothing and will never answer.
pub fn is_alive(pid: u32) -> bool {
    let Some(raw) = pid_of(pid) else { return false };
    let exists = match rustix::process::test_kill_process(raw) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    };
    exists && !stat(pid).is_some_and(|s| s.is_zombie())
}

/// True while any process of the group led by `pgid` runs. Zombies do not count: an orphan
/// killed with its group may wait a while for a reaper, but it runs nothing.
#[cfg(target_os = "linux")]
pub fn group_alive(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
            .and_then(stat)
            .is_some_and(|s| s.process_group == pgid && !s.is_zombie())
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

/// The parent's pid.
pub fn parent_of(pid: u32) -> Option<u32> {
    stat(pid).map(|s| s.parent)
}

/// When the process started, in clock ticks since boot (`/proc/<pid>/stat` field 22): with the
/// pid, it tells a process apart from a later one that reused the pid.
pub fn start_ticks(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.start_ticks)
}

/// True while `pid` runs and is still the process that started at `start_ticks` (clock ticks
/// since boot, as [`start_ticks`] reads them): a record naming a pid and its start time (Claude
/// Code's session registry keeps them as `pid` and `procStart`) is told apart from a later
/// process that reused the pid. Where the start time cannot be read (not Linux), a live pid is
/// taken at its word.
pub fn is_same_process(pid: u32, start: u64) -> bool {
    if !is_alive(pid) {
        return false;
    }
    match start_ticks(pid) {
        Some(ticks) => ticks == start,
        None => cfg!(not(target_os = "linux")),
    }
}

/// This machine's name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`), when it has one.
pub fn machine_name() -> Option<String> {
    #[cfg(target_os = "linux")]
    let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    #[cfg(not(target_os = "linux"))]
    let kernel: Option<String> = None;
    kernel
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

/// The executable's name as the kernel keeps it (`/proc/<pid>/comm`, at most 15 bytes).
pub fn name_of(pid: u32) -> Option<String> {
    read_proc(pid, "comm").map(|comm| {
        String::from_utf8_lossy(&comm)
            .trim_end_matches('\n')
            .to_owned()
    })
}

/// The command line's arguments (non-UTF-8 bytes replaced), empty ones dropped.
pub fn arguments_of(pid: u32) -> Option<Vec<String>> {
    read_proc(pid, "cmdline").map(|raw| {
        String::from_utf8_lossy(&raw)
            .split('\0')
            .filter(|arg| !arg.is_empty())
            .map(str::to_owned)
            .collect()
    })
}

/// True while `pid` runs and its command line mentions `program` (a path or an argument that
/// contains it): how a recorded pid is told apart from an unrelated process that reused it.
pub fn runs_program(pid: u32, program: &str) -> bool {
    is_alive(pid)
        && arguments_of(pid).is_some_and(|args| args.iter().any(|arg| arg.contains(program)))
}

/// The fields of `/proc/<pid>/stat` cross-agent reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    state: char,
    parent: u32,
    process_group: u32,
    start_ticks: u64,
}

impl Stat {
    /// `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses, so the fields are
    /// counted from the last `)`.
    fn parse(text: &str) -> Option<Stat> {
        let mut fields = text[text.rfind(')')? + 1..].split_whitespace();
        let state = fields.next()?.chars().next()?;
        let parent = fields.next()?.parse().ok()?;
        let process_group = fields.next()?.parse().ok()?;
        // Fields 6 to 21 (session … itrealvalue) come before the start time.
        let start_ticks = fields.nth(16)?.parse().ok()?;
        Some(Stat {
            state,
            parent,
            process_group,
            start_ticks,
        })
    }

    fn is_zombie(self) -> bool {
        self.state == 'Z'
    }
}

fn stat(pid: u32) -> Option<Stat> {
    read_proc(pid, "stat").and_then(|raw| Stat::parse(&String::from_utf8_lossy(&raw)))
}

#[cfg(target_os = "linux")]
fn read_proc(pid: u32, file: &str) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/{file}")).ok()
}

#[cfg(not(target_os = "linux"))]
fn read_proc(_pid: u32, _file: &str) -> Option<Vec<u8>> {
    None
}

/// `text` as one word for `sh`: as it is when it needs no quoting, else quoted (`shlex`).
///
/// No shell word can hold a NUL, and `shlex` refuses one; the words quoted here are paths and
/// cross-agent's own names, which never contain one, so a NUL is left out rather than failing.
pub fn shell_word(text: &str) -> String {
    let without_nul;
    let text = if text.contains('\0') {
        without_nul = text.replace('\0', "");
        &without_nul
    } else {
        text
    };
    shlex::try_quote(text).map_or_else(|_| String::new(), std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn stat_is_read_after_a_name_with_spaces_and_parentheses() {
        assert_eq!(
            Stat::parse(
                "123 (a (b) c) S 77 123 123 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1 2"
            ),
            Some(Stat {
                state: 'S',
                parent: 77,
                process_group: 123,
                start_ticks: 98765,
            })
        );
        assert_eq!(
            Stat::parse("9 (x) Z 1 9 9 0 0 0 0 0 0 0 0 0 0 0 0 0 1 0 5").map(Stat::is_zombie),
            Some(true)
        );
        assert_eq!(Stat::parse("garbage"), None);
        assert_eq!(Stat::parse("1 (x) S"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_described() {
        let me = std::process::id();
        assert!(is_alive(me));
        assert!(parent_of(me).is_some_and(is_alive));
        assert!(!name_of(me).unwrap().is_empty());
        assert!(start_ticks(me).is_some_and(|t| t >= start_ticks(1).unwrap()));
        let ticks = start_ticks(me).unwrap();
        assert!(is_same_process(me, ticks));
        assert!(!is_same_process(me, ticks + 1));
        let args = arguments_of(me).unwrap();
        assert!(runs_program(me, &args[0]));
        assert!(!runs_program(me, "no-such-program-name"));
        let group = rustix::process::getpgid(None).unwrap().as_raw_pid();
        assert!(group_alive(u32::try_from(group).unwrap()));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_exited_unreaped_child_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Until it is reaped the exited child is a zombie: it exists, and runs nothing.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while stat(pid).is_some_and(|s| !s.is_zombie()) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(stat(pid).is_some_and(Stat::is_zombie));
        assert!(!is_alive(pid));
        child.wait().unwrap();
        assert!(!is_alive(pid));
        assert_eq!(parent_of(pid), None);
    }

    #[test]
    fn shell_words_read_back_as_the_text() {
        for text in [
            "/usr/bin/cross-agent",
            "/a b/it's",
            "",
            "naïve $HOME `x`",
            "nul\0here",
        ] {
            let word = shell_word(text);
            assert_eq!(
                shlex::split(&word),
                Some(vec![text.replace('\0', "")]),
                "{text:?} quoted as {word:?}"
            );
        }
        assert_eq!(shell_word("/usr/bin/cross-agent"), "/usr/bin/cross-agent");
    }
}
