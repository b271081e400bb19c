//! Which live panels are the caller's: the caller's window, the caller's own panel (its reply
//! address), where a named session is open, and which tab an unaddressed send goes to.
//!
//! **The window rule** (docs/spec/cross-agent-mcp.md "Conversations in another VS Code window"). A VS Code window's
//! extension host spawns every panel process of that window, so a shim's parent — the first of
//! its registered ancestors — names its window. A caller is in a shim's window when:
//!
//! 1. the shim's parent, or the shim itself, is in the caller's ancestry (the strong case: a
//!    panel session's own MCP server, a terminal the extension host started); or else
//! 2. the nearest ancestor the shim and the caller share tells windows apart: it is not pid 1,
//!    not a process named `systemd`/`init`/`launchd` (the user's service manager), not the daemon
//!    itself or any of its ancestors, and some live shim does *not* descend from it. (A wrapper
//!    script between the extension host and the shim puts the host one step further up; the
//!    host still discriminates, since other windows' shims are not below it.)
//!
//! An ancestor shared with everything — init, the user's session manager, the editor's main
//! process above every window — therefore never puts a caller in a window: with one shim
//! registered, only the strong case does.
//!
//! **The caller's own panel** (docs/spec/cross-agent-mcp.md "Reply address"): for Claude and Grok, a shim of the
//! caller's agent whose pid is in the caller's ancestry (the panel process runs the MCP server),
//! holding the session the caller's own variable names (`CLAUDE_CODE_SESSION_ID`,
//! `GROK_SESSION_ID`), else its only session; for Codex, whose threads share one app-server, the
//! shim hosting the thread `x-codex-turn-metadata` names. After the send, the route back is
//! found again by the sender's session id alone: whichever live shim hosts it.

use std::collections::HashSet;

use cross_agent_protocol::panel::PanelSession;
use cross_agent_protocol::vocabulary::Agent;

use super::registry::LivePanel;

/// What the window rule knows of the caller and of the daemon.
#[derive(Debug, Clone, Default)]
pub struct Vantage {
    /// The caller's pid and its ancestry, nearest first.
    pub caller_chain: Vec<u32>,
    /// The daemon's pid and its ancestry: never a window.
    pub daemon_chain: Vec<u32>,
}

/// How a shim came to be in the caller's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowMatch {
    /// The shim (or its parent, the extension host) is an ancestor of the caller.
    Parent,
    /// They share a window-level ancestor further up.
    SharedAncestor(u32),
}

fn is_service_manager(pid: u32) -> bool {
    pid <= 1
        || cross_agent_process::name_of(pid)
            .is_some_and(|name| matches!(name.as_str(), "systemd" | "init" | "launchd"))
}

/// Whether `panel` is in the caller's window, and why (see the module's rule).
pub fn window_match(
    panel: &LivePanel,
    all: &[LivePanel],
    vantage: &Vantage,
) -> Option<WindowMatch> {
    let shim = &panel.registration;
    let caller: HashSet<u32> = vantage.caller_chain.iter().copied().collect();
    let parent = shim.ancestors.first().copied();
    if caller.contains(&shim.pid)
        || parent.is_some_and(|p| {
            caller.contains(&p) && !vantage.daemon_chain.contains(&p) && !is_service_manager(p)
        })
    {
        return Some(WindowMatch::Parent);
    }
    let joint = shim
        .ancestors
        .iter()
        .copied()
        .find(|pid| caller.contains(pid))?;
    if is_service_manager(joint) || vantage.daemon_chain.contains(&joint) {
        return None;
    }
    let discriminates = all.iter().any(|other| {
        other.registration.pid != joint && !other.registration.ancestors.contains(&joint)
    });
    discriminates.then_some(WindowMatch::SharedAncestor(joint))
}

/// A conversation open in a panel, with the shim holding it.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelTab<'a> {
    pub panel: &'a LivePanel,
    pub session: &'a PanelSession,
    pub in_caller_window: bool,
}

/// Every conversation `agent`'s live panels hold (intercepting shims only).
pub fn tabs<'a>(panels: &'a [LivePanel], agent: Agent, vantage: &Vantage) -> Vec<PanelTab<'a>> {
    panels
        .iter()
        .filter(|p| p.registration.agent == agent && p.registration.intercepting)
        .flat_map(|panel| {
            let in_caller_window = window_match(panel, panels, vantage).is_some();
            panel
                .registration
                .sessions
                .iter()
                .map(move |session| PanelTab {
                    panel,
                    session,
                    in_caller_window,
                })
        })
        .collect()
}

/// Whether a tab is a conversation a send may go to: it has an id, and (Grok) it is not an
/// empty session nobody prompted yet — that one only takes a new conversation.
fn is_conversation(tab: &PanelTab<'_>) -> bool {
    tab.session.session_id.is_some()
        && (tab.panel.registration.agent != Agent::Grok || tab.session.has_history)
}

/// Where the named session is open: the caller's window first, then any other window.
pub fn holding<'a>(tabs: &[PanelTab<'a>], session_id: &str) -> Option<PanelTab<'a>> {
    let all: Vec<&PanelTab<'a>> = tabs
        .iter()
        .filter(|t| t.session.session_id.as_deref() == Some(session_id))
        .collect();
    all.iter()
        .find(|t| t.in_caller_window)
        .or(all.first())
        .map(|t| (*t).clone())
}

/// Why [`select`] picked its tab (`bridge_status.ide_panels.<agent>.selected_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectedBy {
    /// The tab a human typed into most recently.
    HumanInput,
    /// Nobody typed since the shims started: the tab whose transcript changed last.
    TranscriptActivity,
    /// The newest tab.
    Newest,
}

impl SelectedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            SelectedBy::HumanInput => "human-input",
            SelectedBy::TranscriptActivity => "transcript-activity",
            SelectedBy::Newest => "newest",
        }
    }
}

/// The tab an unaddressed send goes to, among the caller's window's conversations only
/// (docs/spec/cross-agent-mcp.md "Which conversation tab it goes to"): the one a human typed into most recently,
/// else the one whose transcript changed last (`transcript_ms` reads it from the session
/// store), else the newest. `except` is the caller's own session, never picked.
pub fn select<'a>(
    tabs: &[PanelTab<'a>],
    except: Option<&str>,
    transcript_ms: impl Fn(&str) -> Option<i64>,
) -> Option<(PanelTab<'a>, SelectedBy)> {
    let candidates: Vec<&PanelTab<'a>> = tabs
        .iter()
        .filter(|t| t.in_caller_window && is_conversation(t))
        .filter(|t| except.is_none() || t.session.session_id.as_deref() != except)
        .collect();
    if let Some(tab) = candidates
        .iter()
        .filter(|t| t.session.last_human_input_ms.is_some())
        .max_by_key(|t| t.session.last_human_input_ms)
    {
        return Some(((*tab).clone(), SelectedBy::HumanInput));
    }
    let touched = |t: &PanelTab<'_>| t.session.session_id.as_deref().and_then(&transcript_ms);
    if let Some(tab) = candidates
        .iter()
        .filter(|t| touched(t).is_some())
        .max_by_key(|t| touched(t))
    {
        return Some(((*tab).clone(), SelectedBy::TranscriptActivity));
    }
    candidates
        .iter()
        .max_by_key(|t| t.session.opened_at_ms)
        .map(|t| ((*t).clone(), SelectedBy::Newest))
}

/// A panel of the caller's window that can open a new conversation (docs/spec/cross-agent-mcp.md "When the panel
/// has no conversation open"): a Claude process with no session yet, any Codex app-server, a
/// Grok session nobody prompted. Returns the shim and, for Grok, the empty session to write
/// into.
pub fn new_conversation_host<'a>(
    panels: &'a [LivePanel],
    agent: Agent,
    vantage: &Vantage,
) -> Option<(&'a LivePanel, Option<String>)> {
    panels
        .iter()
        .filter(|p| p.registration.agent == agent && p.registration.intercepting)
        .filter(|p| window_match(p, panels, vantage).is_some())
        .filter_map(|panel| {
            let sessions = &panel.registration.sessions;
            match agent {
                Agent::Claude => (sessions.is_empty()
                    || sessions.iter().all(|s| s.session_id.is_none()))
                .then_some((panel, None)),
                Agent::Codex => Some((panel, None)),
                Agent::Grok => sessions
                    .iter()
                    .find(|s| !s.has_history && s.session_id.is_some())
                    .map(|s| (panel, s.session_id.clone())),
                // Copilot has no panel shim: its sessions live in the editor's Agent Host.
                Agent::Copilot => None,
            }
        })
        .max_by_key(|(panel, _)| panel.registration.started_at_ms)
}

/// The caller's own panel at send time: see the module's rule. `session` is the caller's
/// session as identified (its variable, or Codex's turn metadata).
pub fn own_panel<'a>(
    panels: &'a [LivePanel],
    agent: Agent,
    session: Option<&str>,
    vantage: &Vantage,
) -> Option<&'a LivePanel> {
    let hosts = |panel: &LivePanel, id: &str| {
        panel
            .registration
            .sessions
            .iter()
            .any(|s| s.session_id.as_deref() == Some(id))
    };
    let ours = panels.iter().filter(|p| p.registration.agent == agent);
    match agent {
        Agent::Codex => {
            let id = session?;
            ours.into_iter().find(|p| hosts(p, id))
        }
        // No shim registers Copilot panels.
        Agent::Copilot => None,
        Agent::Claude | Agent::Grok => ours
            .filter(|p| vantage.caller_chain.contains(&p.registration.pid))
            .find(|p| match session {
                Some(id) => hosts(p, id),
                None => p.registration.sessions.len() <= 1,
            }),
    }
}

/// The live panel hosting `agent` session `session_id` now, whichever window: the route a
/// reply takes once the answer exists.
pub fn hosting<'a>(
    panels: &'a [LivePanel],
    agent: Agent,
    session_id: &str,
) -> Option<&'a LivePanel> {
    panels.iter().find(|p| {
        p.registration.agent == agent
            && p.registration.intercepting
            && p.registration
                .sessions
                .iter()
                .any(|s| s.session_id.as_deref() == Some(session_id))
    })
}
