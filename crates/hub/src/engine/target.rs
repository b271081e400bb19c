//! Which session a send goes to (docs/spec/cross-agent-mcp.md §5): the caller's `session_id`, a pin, the active
//! session on disk (never the caller's own), or a new session; and the refusals of a lookup.
//! Resolution is admission's ([`Admission::resolve`]), over the live panels the engine reads
//! for it.

use std::path::{Path, PathBuf};

use cross_agent_protocol::bridge::{
    Refusal, RefusalReason, Scope, SendParams, SessionCandidate, TargetSelectedBy,
};
use cross_agent_stores::held::{AsSession, HeldSessions};
use cross_agent_stores::resolve::{self, Lookup};
use cross_agent_stores::{StoreError, UnixMillis};
use serde_json::Value;

use cross_agent_protocol::panel::PanelSessionState;
use cross_agent_transports::panel::registry::LivePanel;
use cross_agent_transports::panel::window::{self, PanelTab, Vantage};

use super::admission::Admission;
use super::panels::{transcript_clock, vantage};
use super::refusal;
use crate::Agent;
use crate::error::Result;
use crate::settings::CallSettings;

pub(super) fn candidate(session: &resolve::Candidate, agent: Agent) -> SessionCandidate {
    SessionCandidate {
        agent,
        session_id: session.session_id.clone(),
        title: session.title.clone(),
        title_is_assigned: session.title_is_assigned,
        cwd: session
            .cwd
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
        last_activity: session.last_activity.map(UnixMillis::to_rfc3339),
    }
}

/// A store lookup's refusal, with candidates where it has them.
pub(super) fn lookup_refusal(error: StoreError, agent: Agent) -> Refusal {
    let message = error.to_string();
    match error {
        StoreError::AmbiguousName { candidates, .. } => Refusal {
            reason: RefusalReason::AmbiguousName,
            message,
            candidates: candidates.iter().map(|c| candidate(c, agent)).collect(),
            details: Value::Null,
        },
        StoreError::ScanBoundReached { candidate: c, .. } => Refusal {
            reason: RefusalReason::ScanBoundReached,
            message,
            candidates: vec![candidate(&c, agent)],
            details: Value::Null,
        },
        StoreError::NoSuchSession { similar, .. } => Refusal {
            reason: RefusalReason::NoSuchSession,
            message,
            candidates: similar
                .iter()
                .map(|s| SessionCandidate {
                    agent,
                    session_id: s.session_id.clone(),
                    title: Some(s.title.clone()),
                    title_is_assigned: s.title_is_assigned,
                    cwd: None,
                    last_activity: s.last_activity.map(UnixMillis::to_rfc3339),
                })
                .collect(),
            details: Value::Null,
        },
        // Reading the store failed rather than the lookup: nothing can be shown to exist.
        StoreError::Io { .. }
        | StoreError::Zstd { .. }
        | StoreError::Sqlite { .. }
        | StoreError::Format { .. }
        | StoreError::InvalidSetting { .. }
        | StoreError::Cache { .. } => refusal(RefusalReason::NoSuchSession, message, Value::Null),
    }
}

/// The session a send goes to.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    pub(super) selected_by: TargetSelectedBy,
    /// `None` for a new session whose id the agent chooses (Codex).
    pub(super) session_id: Option<String>,
    pub(super) cwd: PathBuf,
    pub(super) title: Option<String>,
    pub(super) transcript: Option<PathBuf>,
    pub(super) last_activity: Option<UnixMillis>,
    pub(super) is_working: bool,
    /// Why a new session is created.
    pub(super) new_reason: Option<String>,
    /// The editor panel that takes the delivery, when one does.
    pub(super) panel: Option<PanelChoice>,
}

/// The panel a send goes into (docs/spec/cross-agent-mcp.md "IDE panel integration").
#[derive(Debug, Clone)]
pub(super) struct PanelChoice {
    /// The shim's pid.
    pub(super) shim_pid: u32,
    /// The conversation; `None` for one the panel opens (Claude, Codex).
    pub(super) session_id: Option<String>,
    /// The panel opens a new conversation for it.
    pub(super) new_session: bool,
    /// The panel is in another window than the caller's (reached because the send named it).
    pub(super) other_window: bool,
    /// How rule 3 chose the tab (`human-input`, …), when it did.
    pub(super) selected_by: Option<&'static str>,
}

impl PanelChoice {
    fn of(tab: &PanelTab<'_>) -> PanelChoice {
        PanelChoice {
            shim_pid: tab.panel.registration.pid,
            session_id: tab.session.session_id.clone(),
            new_session: false,
            other_window: !tab.in_caller_window,
            selected_by: None,
        }
    }
}

impl Resolved {
    pub(super) fn of<'s>(
        session: impl AsSession<'s>,
        selected_by: TargetSelectedBy,
        fallback_cwd: &Path,
    ) -> Resolved {
        let session = session.fields();
        Resolved {
            selected_by,
            session_id: Some(session.session_id().to_owned()),
            cwd: session
                .cwd()
                .map_or_else(|| fallback_cwd.to_owned(), Path::to_path_buf),
            title: session.title().map(str::to_owned),
            transcript: Some(session.path().into_owned()),
            last_activity: session.last_activity(),
            is_working: session.is_working(),
            new_reason: None,
            panel: None,
        }
    }

    fn in_panel(mut self, panel: Option<PanelChoice>) -> Resolved {
        self.panel = panel;
        self
    }
}

/// What a send's target is resolved from.
#[derive(Debug, Clone, Copy)]
pub(super) struct TargetQuery<'a> {
    pub(super) agent: Agent,
    pub(super) params: &'a SendParams,
    /// `session_id`, when not blank: an id or an exact conversation name.
    pub(super) explicit: Option<&'a str>,
    pub(super) cwd: &'a Path,
    pub(super) scope: Scope,
    pub(super) settings: &'a CallSettings,
    /// The calling session, when it is `agent`'s: discovery never picks it.
    pub(super) own_session: Option<&'a str>,
}

/// The pin key of a directory: pins are per agent and per directory (`""`: every directory).
pub(super) fn cwd_key(cwd: Option<&str>) -> String {
    cwd.map(|c| c.trim_end_matches('/').to_owned())
        .filter(|c| !c.is_empty())
        .unwrap_or_default()
}

/// Why a target could not be chosen: a refusal for the caller, or the engine failed.
#[derive(Debug)]
pub(super) enum Unresolved {
    Refused(Refusal),
    Failed(crate::Error),
}

impl From<crate::Error> for Unresolved {
    fn from(error: crate::Error) -> Self {
        Unresolved::Failed(error)
    }
}

/// One resolution's view: the query, and the panels and tabs of the caller's vantage.
struct Lookout<'a> {
    query: TargetQuery<'a>,
    panels: &'a [LivePanel],
    vantage: Vantage,
    tabs: Vec<PanelTab<'a>>,
}

impl Lookout<'_> {
    /// The panel holding session `id`, if one does: this window's first, then another's.
    fn held(&self, id: &str) -> Option<PanelChoice> {
        window::holding(&self.tabs, id).map(|tab| PanelChoice::of(&tab))
    }

    /// The `cwd` a send names, else `fallback`'s.
    fn cwd_or(&self, fallback: Option<&str>) -> PathBuf {
        fallback.map_or_else(|| self.query.cwd.to_owned(), PathBuf::from)
    }

    /// A new session, the last resort: in a panel of this window that can open one, else a
    /// new CLI session (Claude and Grok take the id we choose; Codex chooses its own).
    fn new_session(&self, reason: String) -> Resolved {
        let agent = self.query.agent;
        if let Some((host, into)) = window::new_conversation_host(self.panels, agent, &self.vantage)
        {
            return Resolved {
                selected_by: TargetSelectedBy::NewSession,
                session_id: into.clone(),
                cwd: self.cwd_or(host.registration.cwd.as_deref()),
                title: None,
                transcript: None,
                last_activity: None,
                is_working: false,
                new_reason: Some(format!("{reason}; it opens in the {agent} panel")),
                panel: Some(PanelChoice {
                    shim_pid: host.registration.pid,
                    new_session: into.is_none(),
                    session_id: into,
                    other_window: false,
                    selected_by: None,
                }),
            };
        }
        Resolved {
            selected_by: TargetSelectedBy::NewSession,
            session_id: match agent {
                Agent::Claude | Agent::Grok => Some(uuid::Uuid::new_v4().to_string()),
                Agent::Codex | Agent::Copilot => None,
            },
            cwd: self.query.cwd.to_owned(),
            title: None,
            transcript: None,
            last_activity: None,
            is_working: false,
            new_reason: Some(reason),
            panel: None,
        }
    }

    /// A session known by id only (not on disk yet): what the caller, a pin or a tab says.
    fn not_on_disk(&self, by: TargetSelectedBy, id: String, cwd: Option<&str>) -> Resolved {
        Resolved {
            selected_by: by,
            session_id: Some(id),
            cwd: self.cwd_or(cwd),
            title: None,
            transcript: None,
            last_activity: None,
            is_working: false,
            new_reason: None,
            panel: None,
        }
    }
}

impl Admission {
    /// The session a send goes to (docs/spec/cross-agent-mcp.md §5, "A new conversation is the last resort"), or
    /// why none can be chosen: `session_id` → pin → the conversation open in this window's
    /// panel → the active session on disk → a new session (in this window's panel when one can
    /// open it). A session a panel holds — this window's first, then another window's — is
    /// delivered through that panel whichever rule chose it; auto-selection (rule 3) looks only
    /// in the caller's window. Under `CROSS_AGENT_UI_HOOK=off` no panel is looked at.
    pub(super) fn resolve(
        &self,
        query: TargetQuery<'_>,
        panels: &[LivePanel],
    ) -> Result<Resolved, Unresolved> {
        // Copilot has its own rules: named or pinned, on a live host, never created.
        if query.agent == Agent::Copilot {
            return self.resolve_copilot(query);
        }
        let vantage = vantage(&query.params.caller);
        let lookout = Lookout {
            tabs: window::tabs(panels, query.agent, &vantage),
            query,
            panels,
            vantage,
        };
        if query.params.new_session {
            return Ok(lookout.new_session("new_session=true was passed".to_owned()));
        }
        if let Some(named) = query.explicit {
            return self.by_session_id(&lookout, named);
        }
        let held = self.held_sessions(&query.params.caller, query.agent);
        let sessions = held.sessions(query.agent);
        if let Some(resolved) = self.by_pin(&lookout, sessions)? {
            return Ok(resolved);
        }
        if let Some(resolved) = by_panel_focus(&lookout, sessions) {
            return Ok(resolved);
        }
        Ok(by_discovery(&lookout, sessions).unwrap_or_else(|| {
            let TargetQuery {
                agent,
                cwd,
                scope,
                settings,
                ..
            } = query;
            lookout.new_session(format!(
                "no {agent} session active in the last {} minutes was found in scope `{}` of {}",
                settings.active_window.minutes(),
                scope,
                cwd.display()
            ))
        }))
    }

    /// Rule 1: the session `session_id` names (an id or an exact name), looked for among every
    /// session — or open in a panel, or being created by the bridge, while not on disk yet.
    fn by_session_id(&self, lookout: &Lookout<'_>, named: &str) -> Result<Resolved, Unresolved> {
        let TargetQuery {
            agent,
            params,
            cwd,
            scope,
            settings,
            ..
        } = lookout.query;
        let explicit_lookup = Lookup {
            agent,
            scope: Scope::Any,
            cwd,
            bound: settings.name_bound(agent, scope),
        };
        let found = self.look_up_named(
            &params.caller,
            named,
            explicit_lookup,
            |error| matches!(error, StoreError::NoSuchSession { .. }),
            |_, found| {
                found.map(|found| {
                    Resolved::of(found.session, TargetSelectedBy::Caller, cwd)
                        .in_panel(lookout.held(found.session.session_id()))
                })
            },
        );
        match found {
            Ok(resolved) => Ok(resolved),
            // Open in a panel but not on disk yet (a conversation that just started).
            Err(StoreError::NoSuchSession { .. })
                if let Some(tab) = window::holding(&lookout.tabs, named) =>
            {
                let mut resolved = lookout.not_on_disk(
                    TargetSelectedBy::Caller,
                    named.to_owned(),
                    tab.session.cwd.as_deref(),
                );
                resolved.title.clone_from(&tab.session.title);
                resolved.is_working = tab.session.state != PanelSessionState::Idle;
                Ok(resolved.in_panel(Some(PanelChoice::of(&tab))))
            }
            // A session the bridge is creating right now is not on disk yet, but its id
            // is on the receipt the caller holds: follow-ups may name it.
            Err(StoreError::NoSuchSession { .. })
                if let Some(pending) = self.session_being_created(agent, named)? =>
            {
                let mut resolved = lookout.not_on_disk(
                    TargetSelectedBy::Caller,
                    named.to_owned(),
                    pending.target_cwd.as_deref(),
                );
                resolved.transcript = pending.target_transcript.as_deref().map(PathBuf::from);
                resolved.is_working = true;
                Ok(resolved)
            }
            Err(error) => Err(Unresolved::Refused(lookup_refusal(error, agent))),
        }
    }

    /// Rule 2: the pin of this directory (else of every directory), when sticky or active.
    fn by_pin(
        &self,
        lookout: &Lookout<'_>,
        sessions: &HeldSessions,
    ) -> Result<Option<Resolved>, Unresolved> {
        let TargetQuery {
            agent,
            cwd,
            settings,
            ..
        } = lookout.query;
        let Some((pin, pinned_ms)) = self.current_pin(agent, cwd)? else {
            return Ok(None);
        };
        let on_disk = sessions
            .iter()
            .find(|s| s.agent() == agent && s.session_id() == pin.session_id);
        let recent = on_disk
            .and_then(|s| s.last_activity())
            .map_or(pinned_ms, |last| last.0.max(pinned_ms));
        if !pin.sticky
            && !settings
                .active_window
                .is_active(Some(UnixMillis(recent)), UnixMillis::now())
        {
            return Ok(None);
        }
        let resolved = match on_disk {
            Some(session) => Resolved::of(session, TargetSelectedBy::Pin, cwd),
            // A session the bridge just created may not be on disk yet.
            None => {
                let mut resolved = lookout.not_on_disk(
                    TargetSelectedBy::Pin,
                    pin.session_id.clone(),
                    pin.cwd.as_deref(),
                );
                resolved.title.clone_from(&pin.title);
                resolved
            }
        };
        Ok(Some(resolved.in_panel(lookout.held(&pin.session_id))))
    }
}

/// Rule 3: the conversation in front in this window's panel (never the caller's own).
fn by_panel_focus(lookout: &Lookout<'_>, sessions: &HeldSessions) -> Option<Resolved> {
    let TargetQuery {
        agent,
        cwd,
        own_session,
        ..
    } = lookout.query;
    let (tab, why) = window::select(
        &lookout.tabs,
        own_session,
        transcript_clock(sessions, agent),
    )?;
    let id = tab.session.session_id.clone()?;
    let on_disk = sessions
        .iter()
        .find(|s| s.agent() == agent && s.session_id() == id);
    let mut resolved = match on_disk {
        Some(session) => Resolved::of(session, TargetSelectedBy::PanelFocus, cwd),
        None => lookout.not_on_disk(TargetSelectedBy::PanelFocus, id, tab.session.cwd.as_deref()),
    };
    if resolved.title.is_none() {
        resolved.title.clone_from(&tab.session.title);
    }
    resolved.is_working = tab.session.state != PanelSessionState::Idle;
    let mut choice = PanelChoice::of(&tab);
    choice.selected_by = Some(why.as_str());
    Some(resolved.in_panel(Some(choice)))
}

/// Rule 4: the most recently active session on disk in scope (never the caller's own). It is
/// auto-selection too: a session another window's panel holds is that window's business,
/// reachable only by naming it.
fn by_discovery(lookout: &Lookout<'_>, sessions: &HeldSessions) -> Option<Resolved> {
    let TargetQuery {
        agent,
        cwd,
        scope,
        settings,
        own_session,
        ..
    } = lookout.query;
    let elsewhere: Vec<&str> = lookout
        .tabs
        .iter()
        .filter(|t| !t.in_caller_window)
        .filter_map(|t| t.session.session_id.as_deref())
        .collect();
    let here = sessions
        .iter()
        .filter(|s| s.agent() != agent || !elsewhere.contains(&s.session_id()));
    let session = active_now(here, agent, scope, cwd, settings, own_session)?;
    Some(
        Resolved::of(session, TargetSelectedBy::Discovery, cwd)
            .in_panel(lookout.held(session.session_id())),
    )
}

/// The most recently active `agent` session in `scope` now (never `own_session`): what
/// discovery picks, and what `bridge_status` shows it would pick.
pub(super) fn active_now<'s, S: AsSession<'s>>(
    sessions: impl IntoIterator<Item = S>,
    agent: Agent,
    scope: Scope,
    cwd: &Path,
    settings: &CallSettings,
    own_session: Option<&str>,
) -> Option<S> {
    resolve::best_active(
        sessions,
        agent,
        scope,
        cwd,
        settings.active_window,
        UnixMillis::now(),
        own_session,
    )
}
