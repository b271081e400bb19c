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
    let name = cross_agent_process::name_of(pid).unwrap_or_default();
    let cmdline = cross_agent_process::arguments_of(pid)
        .map(|args| trim_cmdline(&args))
        .unwrap_or_default();
    AncestorProcess { pid, name, cmdline }
}

/// The parent pid (`/proc/<pid>/stat`, read by `cross_agent_process`).
pub fn parent_of(pid: u32) -> Option<u32> {
    cross_agent_process::parent_of(pid)
}

/// The arguments joined by spaces, cut at [`CMDLINE_LIMIT`] characters.
fn trim_cmdline(args: &[String]) -> String {
    let joined = args.join(" ");
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
    fn cmdline_is_joined_and_trimmed() {
        let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
        assert_eq!(trim_cmdline(&args(&["claude", "-p", "hi"])), "claude -p hi");
        let long = "x".repeat(CMDLINE_LIMIT + 10);
        let trimmed = trim_cmdline(&args(&[&long]));
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
