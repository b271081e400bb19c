//! Editor panels as the engine uses them (docs/spec/cross-agent-mcp.md "IDE panel integration", "Return traffic
//! needs a panel"): the live shims for one call, the probe of the sender's own panel, a
//! request carried into a panel, and return traffic — `BRIDGE REPLY`, `DELIVERY FAILED`,
//! `PROGRESS (INFO)` and `LATE ANSWER` — put into the sender's live panel, each a delivery of
//! its own that spends no hop and never resumes a CLI.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cross_agent_decisions::{DecisionLog, events};
use cross_agent_protocol::bridge::{
    AwaitingApproval, CallerContext, DeliveryRecord, IdePanels, PanelTabStatus, PeerPanelStatus,
    Transport,
};
use cross_agent_protocol::panel::PanelSessionState;
use cross_agent_stores::UnixMillis;
use cross_agent_stores::held::HeldSessions;
use cross_agent_stores::live::Snapshot;
use cross_agent_transports::panel::client::{self};
use cross_agent_transports::panel::registry::{self, LivePanel};
use cross_agent_transports::panel::window::{self, Vantage};

use super::Engine;
use crate::Agent;
use crate::settings::{CallSettings, UiHook};

/// The pid chain of `pid`, itself first, at most 64 deep.
fn chain_of(pid: u32) -> Vec<u32> {
    let mut chain = vec![pid];
    let mut at = pid;
    while chain.len() < 64
        && let Some(parent) = cross_agent_process::parent_of(at)
        && parent != 0
        && !chain.contains(&parent)
    {
        chain.push(parent);
        at = parent;
    }
    chain
}

/// What the window rule knows of this caller and this daemon.
pub(super) fn vantage(context: &CallerContext) -> Vantage {
    let mut caller_chain = vec![context.pid];
    caller_chain.extend(context.ancestry.iter().map(|a| a.pid));
    Vantage {
        caller_chain,
        daemon_chain: chain_of(std::process::id()),
    }
}

fn ms_to_rfc3339(ms: u64) -> String {
    UnixMillis(i64::try_from(ms).unwrap_or(i64::MAX)).to_rfc3339()
}

fn state_name(state: PanelSessionState) -> &'static str {
    match state {
        PanelSessionState::Idle => "idle",
        PanelSessionState::Working => "working",
        PanelSessionState::AwaitingApproval => "awaiting_approval",
    }
}

fn tab_status(tab: &window::PanelTab<'_>) -> PanelTabStatus {
    PanelTabStatus {
        session_id: tab.session.session_id.clone(),
        state: state_name(tab.session.state).to_owned(),
        last_human_input: tab.session.last_human_input_ms.map(ms_to_rfc3339),
        title: tab.session.title.clone(),
        cwd: tab.session.cwd.clone(),
        shim_pid: tab.panel.registration.pid,
    }
}

/// The transcript-activity clock of tab selection: the session's last activity on disk.
pub(super) fn transcript_clock(
    sessions: &HeldSessions,
    agent: Agent,
) -> impl Fn(&str) -> Option<i64> + '_ {
    // Asked for the few tabs a window has: looked up when asked, so a send at 50,000 sessions
    // does not copy every id into a map first. The last session with that id and a recorded
    // activity answers.
    move |id: &str| {
        sessions.iter().rev().find_map(|s| {
            (s.agent() == agent && s.session_id() == id)
                .then_some(s.last_activity())
                .flatten()
                .map(|at| at.0)
        })
    }
}

/// The panel registry as the engine reads it: the shims' files under the daemon's home, with
/// dead shims' files removed as they are met (each with a decision line). Cheap to clone.
#[derive(Clone)]
pub(super) struct LivePanels {
    state_root: PathBuf,
    decisions: DecisionLog,
}

impl LivePanels {
    pub(super) fn new(state_root: PathBuf, decisions: DecisionLog) -> LivePanels {
        LivePanels {
            state_root,
            decisions,
        }
    }

    /// The live panel shims now (none under `CROSS_AGENT_UI_HOOK=off`); dead shims' files are
    /// removed, each with a decision line.
    pub(super) fn live(&self, ui_hook: UiHook) -> Vec<LivePanel> {
        if ui_hook == UiHook::Off {
            return Vec::new();
        }
        let scan = registry::scan(&self.state_root);
        for removed in &scan.removed {
            self.decisions
                .record(events::panel_removed(removed.pid, &removed.reason));
        }
        for skipped in &scan.skipped {
            tracing::debug!(file = %skipped.file.display(), reason = %skipped.reason, "panel registration skipped");
        }
        scan.live
    }
}

impl Engine {
    /// The live panel shims now (none under `CROSS_AGENT_UI_HOOK=off`).
    pub(super) fn live_panels(&self, ui_hook: UiHook) -> Vec<LivePanel> {
        self.inner.panels.live(ui_hook)
    }

    /// Whether the sender has a live panel now, asked of its shim (`status`), not read from
    /// its file: `return_panel_available_now` is this probe, not a promise.
    pub(super) fn probe_own_panel(
        &self,
        context: &CallerContext,
        agent: Option<Agent>,
        session: Option<&str>,
        settings: &CallSettings,
    ) -> bool {
        let Some(agent) = agent else { return false };
        let panels = self.live_panels(settings.ui_hook);
        let Some(panel) = window::own_panel(&panels, agent, session, &vantage(context)) else {
            return false;
        };
        match client::status(Path::new(&panel.registration.socket)) {
            Ok(now) => {
                now.intercepting
                    && session.is_none_or(|id| {
                        now.sessions
                            .iter()
                            .any(|s| s.session_id.as_deref() == Some(id))
                    })
            }
            Err(error) => {
                tracing::info!(%error, "the sender's panel did not answer the probe");
                false
            }
        }
    }

    /// `bridge_status.ide_panels`: per agent, the tabs of the caller's window, the one an
    /// unaddressed send would reach and why, and the other windows' conversations.
    pub(super) fn ide_panels(
        &self,
        context: &CallerContext,
        settings: &CallSettings,
        held: &Snapshot,
        own: Option<(Agent, &str)>,
    ) -> BTreeMap<Agent, IdePanels> {
        let panels = self.live_panels(settings.ui_hook);
        let vantage = vantage(context);
        let mut out = BTreeMap::new();
        for agent in Agent::ALL {
            let tabs = window::tabs(&panels, agent, &vantage);
            let can_open = window::new_conversation_host(&panels, agent, &vantage).is_some();
            if tabs.is_empty() && !can_open {
                continue;
            }
            let except = own.filter(|(a, _)| *a == agent).map(|(_, id)| id);
            let selected =
                window::select(&tabs, except, transcript_clock(held.sessions(agent), agent));
            out.insert(
                agent,
                IdePanels {
                    tabs: tabs
                        .iter()
                        .filter(|t| t.in_caller_window)
                        .map(tab_status)
                        .collect(),
                    selected_session_id: selected
                        .as_ref()
                        .and_then(|(t, _)| t.session.session_id.clone()),
                    selected_by: Some(selected.as_ref().map_or_else(
                        || "none: no conversation is open in this window's panels".to_owned(),
                        |(_, why)| why.as_str().to_owned(),
                    )),
                    other_window_sessions: tabs
                        .iter()
                        .filter(|t| !t.in_caller_window)
                        .map(tab_status)
                        .collect(),
                    can_open_new_conversation: can_open,
                },
            );
        }
        out
    }

    /// `bridge_status(delivery_id).peer_panel`: the panel carrying a delivery, as its shim's
    /// registration says now, with the approval the bridged turn waits on.
    pub(super) fn peer_panel(&self, record: &DeliveryRecord) -> Option<PeerPanelStatus> {
        if record.transport != Transport::Panel {
            return None;
        }
        let approval = self.inner.carriers.panel.approval(&record.delivery_id);
        let panels = self.live_panels(UiHook::Auto);
        let held = record
            .target_session_id
            .as_deref()
            .and_then(|id| window::hosting(&panels, record.target_agent, id));
        let session = held.and_then(|p| {
            p.registration
                .sessions
                .iter()
                .find(|s| s.session_id == record.target_session_id)
        });
        // The shim's own list of what its turns wait on counts too (an approval raised before
        // this daemon watched, say).
        let approval = approval.or_else(|| {
            session.and_then(|s| {
                s.pending_approvals
                    .iter()
                    .find(|a| a.delivery_id.as_deref() == Some(record.delivery_id.as_str()))
                    .cloned()
            })
        });
        let now = u64::try_from(UnixMillis::now().0).unwrap_or(0);
        Some(PeerPanelStatus {
            shim_pid: held.map(|p| p.registration.pid),
            session_id: record.target_session_id.clone(),
            state: session.map_or("gone", |s| state_name(s.state)).to_owned(),
            awaiting_approval: approval.map(|a| AwaitingApproval {
                waiting_seconds: now.saturating_sub(a.since_ms) / 1000,
                request_id: a.request_id,
                kind: a.kind,
                tool: a.tool,
                detail: a.detail,
            }),
        })
    }
}
