//! Which session a send goes to (spec 004 §5): the caller's `session_id`, a pin, the active
//! session on disk (never the caller's own), or a new session; and the refusals of a lookup.

use std::path::{Path, PathBuf};

use cross_agent_protocol::bridge::{
    DeliveryRecord, DeliveryState, Pin, Refusal, RefusalReason, Scope, SendParams,
    SessionCandidate, TargetSelectedBy,
};
use cross_agent_stores::resolve::{self, Lookup};
use cross_agent_stores::{Session, StoreError, UnixMillis};
use serde_json::Value;

use cross_agent_transports::panel::window::{self, PanelTab};

use super::panels::{transcript_clock, vantage};
use super::{Engine, refusal};
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

/// The panel a send goes into (spec 004 "IDE panel integration").
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
    pub(super) fn of(
        session: &Session,
        selected_by: TargetSelectedBy,
        fallback_cwd: &Path,
    ) -> Resolved {
        Resolved {
            selected_by,
            session_id: Some(session.session_id.clone()),
            cwd: session
                .cwd
                .clone()
                .unwrap_or_else(|| fallback_cwd.to_owned()),
            title: session.title.clone(),
            transcript: Some(session.path.clone()),
            last_activity: session.last_activity,
            is_working: session.is_working,
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

impl Engine {
    /// The session a send goes to (spec 004 §5, "A new conversation is the last resort"), or
    /// why none can be chosen: `session_id` → pin → the conversation open in this window's
    /// panel → the active session on disk → a new session (in this window's panel when one can
    /// open it). A session a panel holds — this window's first, then another window's — is
    /// delivered through that panel whichever rule chose it; auto-selection (rule 3) looks only
    /// in the caller's window. Under `CROSS_AGENT_UI_HOOK=off` no panel is looked at.
    pub(super) fn resolve(&self, query: TargetQuery<'_>) -> Result<Result<Resolved, Refusal>> {
        let TargetQuery {
            agent,
            params,
            explicit,
            cwd,
            scope,
            settings,
            own_session,
        } = query;
        let panels = self.live_panels(settings.ui_hook);
        let vantage = vantage(&params.caller);
        let tabs = window::tabs(&panels, agent, &vantage);
        let held = |id: &str| window::holding(&tabs, id).map(|tab| PanelChoice::of(&tab));
        let new_session = |reason: String, by: TargetSelectedBy| {
            if let Some((host, into)) = window::new_conversation_host(&panels, agent, &vantage) {
                return Resolved {
                    selected_by: by,
                    session_id: into.clone(),
                    cwd: host
                        .registration
                        .cwd
                        .as_deref()
                        .map_or_else(|| cwd.to_owned(), PathBuf::from),
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
                selected_by: by,
                session_id: match agent {
                    Agent::Claude | Agent::Grok => Some(uuid::Uuid::new_v4().to_string()),
                    Agent::Codex => None,
                },
                cwd: cwd.to_owned(),
                title: None,
                transcript: None,
                last_activity: None,
                is_working: false,
                new_reason: Some(reason),
                panel: None,
            }
        };
        if params.new_session {
            return Ok(Ok(new_session(
                "new_session=true was passed".to_owned(),
                TargetSelectedBy::NewSession,
            )));
        }
        let (mut sessions, _) = self.list(&params.caller, &[agent]);
        // An explicit id or name is looked for among every session.
        let explicit_lookup = Lookup {
            agent,
            scope: Scope::Any,
            cwd,
            bound: settings.name_bound(agent, scope),
        };
        if let Some(query) = explicit
            && matches!(
                resolve::lookup(&sessions, query, explicit_lookup),
                Err(StoreError::NoSuchSession { .. })
            )
        {
            // The index is kept current by file-system notifications, which come late (or not
            // at all) on a loaded machine: a session written a moment ago by another process
            // is walked for before it is called missing.
            self.inner.scan.mark_stale(agent);
            sessions = self.list(&params.caller, &[agent]).0;
        }
        if let Some(query) = explicit {
            return Ok(match resolve::lookup(&sessions, query, explicit_lookup) {
                Ok(found) => Ok(Resolved::of(found.session, TargetSelectedBy::Caller, cwd)
                    .in_panel(held(&found.session.session_id))),
                // Open in a panel but not on disk yet (a conversation that just started).
                Err(StoreError::NoSuchSession { .. })
                    if let Some(tab) = window::holding(&tabs, query) =>
                {
                    Ok(Resolved {
                        selected_by: TargetSelectedBy::Caller,
                        session_id: Some(query.to_owned()),
                        cwd: tab
                            .session
                            .cwd
                            .as_deref()
                            .map_or_else(|| cwd.to_owned(), PathBuf::from),
                        title: tab.session.title.clone(),
                        transcript: None,
                        last_activity: None,
                        is_working: tab.session.state
                            != cross_agent_protocol::panel::PanelSessionState::Idle,
                        new_reason: None,
                        panel: Some(PanelChoice::of(&tab)),
                    })
                }
                // A session the bridge is creating right now is not on disk yet, but its id
                // is on the receipt the caller holds: follow-ups may name it.
                Err(StoreError::NoSuchSession { .. })
                    if let Some(pending) = self.session_being_created(agent, query)? =>
                {
                    Ok(Resolved {
                        selected_by: TargetSelectedBy::Caller,
                        session_id: Some(query.to_owned()),
                        cwd: pending
                            .target_cwd
                            .as_deref()
                            .map_or_else(|| cwd.to_owned(), PathBuf::from),
                        title: None,
                        transcript: pending.target_transcript.as_deref().map(PathBuf::from),
                        last_activity: None,
                        is_working: true,
                        new_reason: None,
                        panel: None,
                    })
                }
                Err(error) => Err(lookup_refusal(error, agent)),
            });
        }
        let now = UnixMillis::now();
        if let Some((pin, pinned_ms)) = self.current_pin(agent, cwd)? {
            let on_disk = sessions
                .iter()
                .find(|s| s.agent == agent && s.session_id == pin.session_id);
            let recent = on_disk
                .and_then(|s| s.last_activity)
                .map_or(pinned_ms, |last| last.0.max(pinned_ms));
            if pin.sticky
                || settings
                    .active_window
                    .is_active(Some(UnixMillis(recent)), now)
            {
                let resolved = match on_disk {
                    Some(session) => Resolved::of(session, TargetSelectedBy::Pin, cwd),
                    // A session the bridge just created may not be on disk yet.
                    None => Resolved {
                        selected_by: TargetSelectedBy::Pin,
                        session_id: Some(pin.session_id.clone()),
                        cwd: pin
                            .cwd
                            .as_deref()
                            .map_or_else(|| cwd.to_owned(), PathBuf::from),
                        title: pin.title.clone(),
                        transcript: None,
                        last_activity: None,
                        is_working: false,
                        new_reason: None,
                        panel: None,
                    },
                };
                return Ok(Ok(resolved.in_panel(held(&pin.session_id))));
            }
        }
        if let Some((tab, why)) =
            window::select(&tabs, own_session, transcript_clock(&sessions, agent))
            && let Some(id) = tab.session.session_id.clone()
        {
            let on_disk = sessions
                .iter()
                .find(|s| s.agent == agent && s.session_id == id);
            let mut resolved = match on_disk {
                Some(session) => Resolved::of(session, TargetSelectedBy::PanelFocus, cwd),
                None => Resolved {
                    selected_by: TargetSelectedBy::PanelFocus,
                    session_id: Some(id),
                    cwd: tab
                        .session
                        .cwd
                        .as_deref()
                        .map_or_else(|| cwd.to_owned(), PathBuf::from),
                    title: None,
                    transcript: None,
                    last_activity: None,
                    is_working: false,
                    new_reason: None,
                    panel: None,
                },
            };
            if resolved.title.is_none() {
                resolved.title.clone_from(&tab.session.title);
            }
            resolved.is_working =
                tab.session.state != cross_agent_protocol::panel::PanelSessionState::Idle;
            let mut choice = PanelChoice::of(&tab);
            choice.selected_by = Some(why.as_str());
            return Ok(Ok(resolved.in_panel(Some(choice))));
        }
        // Discovery is auto-selection too: a session another window's panel holds is that
        // window's business, reachable only by naming it.
        let elsewhere: Vec<&str> = tabs
            .iter()
            .filter(|t| !t.in_caller_window)
            .filter_map(|t| t.session.session_id.as_deref())
            .collect();
        let sessions: Vec<Session> = if elsewhere.is_empty() {
            sessions
        } else {
            sessions
                .into_iter()
                .filter(|s| s.agent != agent || !elsewhere.contains(&s.session_id.as_str()))
                .collect()
        };
        if let Some(session) = resolve::best_active(
            &sessions,
            agent,
            scope,
            cwd,
            settings.active_window,
            now,
            own_session,
        ) {
            return Ok(Ok(Resolved::of(session, TargetSelectedBy::Discovery, cwd)
                .in_panel(held(&session.session_id))));
        }
        Ok(Ok(new_session(
            format!(
                "no {agent} session active in the last {} minutes was found in scope `{}` of {}",
                settings.active_window.minutes(),
                scope,
                cwd.display()
            ),
            TargetSelectedBy::NewSession,
        )))
    }

    /// An unfinished delivery creating `agent` session `session_id`.
    pub(super) fn session_being_created(
        &self,
        agent: Agent,
        session_id: &str,
    ) -> Result<Option<DeliveryRecord>> {
        Ok(self
            .db()
            .deliveries_in(
                &[
                    DeliveryState::Queued,
                    DeliveryState::Delivering,
                    DeliveryState::AwaitingPeer,
                ],
                1000,
            )?
            .into_iter()
            .find(|r| {
                r.will_create_session
                    && r.target_agent == agent
                    && r.target_session_id.as_deref() == Some(session_id)
            }))
    }

    /// The pin for `cwd`, else the pin for every directory.
    pub(super) fn current_pin(&self, agent: Agent, cwd: &Path) -> Result<Option<(Pin, i64)>> {
        let db = self.db();
        let key = cwd_key(Some(&cwd.to_string_lossy()));
        if let Some(found) = db.pin(agent, &key)? {
            return Ok(Some(found));
        }
        db.pin(agent, "")
    }
}
