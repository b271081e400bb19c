//! The process chain above this process, nearest first, read from `/proc`.
//!
//! The daemon uses it to tell which agent (and, for a per-conversation panel process, which
//! session) is calling when no variable says so. Only what identifies a process is kept: pid,
//! executable name and a trimmed command line — a command line can carry a prompt, so it is cut
//! short rather than copied whole.

use cross_agent_protocol::bridge::AncestorProcess;

/// How many characters of a command line are kept.
pub const CMDLINE_LIMIT: usize = 300;
/// How far up the chain to walk; deeper chains are cut (a loop in `/proc` cannot happen, but a
/// bound costs nothing).
const MAX_DEPTH: usize = 64;

/// The ancestry of `pid`, starting with its parent. Empty where `/proc` is not available.
pub fn of_parent(pid: u32) -> Vec<AncestorProcess> {
    let mut chain = Vec::new();
    let mut current = parent_of(pid);
    while let Some(pid) = current {
        if pid == 0 || chain.len() >= MAX_DEPTH {
            break;
        }
        chain.push(describe(pid));
        if pid == 1 {
            break;
        }
        current = parent_of(pid);
    }
    chain
}

/// One process: its `comm` and its command line, trimmed.
pub fn describe(pid: u32) -> AncestorProcess {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|comm| comm.trim_end_matches('\n').to_owned())
        .unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| trim_cmdline(&raw))
        .unwrap_or_default();
    AncestorProcess { pid, name, cmdline }
}

/// The parent pid from `/proc/<pid>/stat`. The second field (the name, in parentheses) may
/// itself hold spaces and parentheses, so fields are counted from the last `)`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_ppid(&stat)
}

fn parse_ppid(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name: state, then ppid.
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// NUL-separated arguments joined by spaces, cut at [`CMDLINE_LIMIT`] characters.
fn trim_cmdline(raw: &[u8]) -> String {
    let joined = String::from_utf8_lossy(raw)
        .split('\0')
        .filter(|arg| !arg.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match joined.char_indices().nth(CMDLINE_LIMIT) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn ppid_is_read_after_a_name_with_spaces_and_parentheses() {
        assert_eq!(parse_ppid("123 (a (b) c) S 77 123 123 0"), Some(77));
        assert_eq!(parse_ppid("garbage"), None);
    }

    #[test]
    fn cmdline_is_joined_and_trimmed() {
        assert_eq!(trim_cmdline(b"claude\0-p\0hi\0"), "claude -p hi");
        let long = "x".repeat(CMDLINE_LIMIT + 10);
        let trimmed = trim_cmdline(long.as_bytes());
        assert_eq!(trimmed.chars().count(), CMDLINE_LIMIT + 1);
        assert!(trimmed.ends_with('…'));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_parent_chain() {
        let chain = of_parent(std::process::id());
        assert!(!chain.is_empty());
        assert_eq!(Some(chain[0].pid), parent_of(std::process::id()));
        assert!(!chain[0].name.is_empty());
    }
}
