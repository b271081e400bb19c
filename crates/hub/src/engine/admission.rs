//! The admission part, [`Admission`]: everything a send goes through before it is queued —
//! the guards (`send`), target resolution (`target`), the accepted record and its receipt
//! (`receipt`) — and the pins (`pins`: `pin_agent_session`, the pin a resolution follows), the
//! deliveries still creating a session. It holds its own handles: the store, the session
//! index, the decisions log, the event stream. What it asks of the other parts goes through
//! [`Neighbours`] (running turns, live panels, the busy watch, the carriers' route, the return
//! panel probe, the dispatcher's wake-up), so it runs in-process in its tests with a stand-in.

use std::path::Path;
use std::sync::Arc;

use cross_agent_decisions::DecisionLog;
use cross_agent_protocol::bridge::{CallerContext, DeliveryRecord, DeliveryState, Pin, Transport};
use cross_agent_protocol::events::EngineEvent;
use cross_agent_stores::StoreError;
use cross_agent_stores::held::SessionRef;
use cross_agent_stores::live::{LiveScanner, Snapshot};
use cross_agent_stores::resolve::{self, Lookup};
use cross_agent_transports::panel::registry::LivePanel;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::broadcast;

use super::carriers::RouteQuery;
use super::{Engine, cwd_key, roots_for};
use crate::Agent;
use crate::caller::StartedTurn;
use crate::db::HubDb;
use crate::error::Result;
use crate::records::Job;
use crate::settings::{CallSettings, UiHook};

/// Admission's own handles: the store (shared, one connection), the session index (shared
/// with the listings), the decisions log, the event stream and the daemon's generation.
pub(super) struct Admission {
    db: Arc<Mutex<HubDb>>,
    scan: Arc<LiveScanner>,
    pub(super) decisions: DecisionLog,
    events: broadcast::Sender<EngineEvent>,
    /// This daemon's generation, on every record it accepts.
    pub(super) generation: u64,
}

/// What admission asks of the other parts while it admits a send, and nothing else: the
/// dispatcher's running turns (a caller is identified by them), the live panels (resolution,
/// and the probe for the sender's own panel), the busy watch (is the peer working), the
/// carriers (the route a send takes) and the dispatcher's wake-up (a delivery was queued).
/// The engine implements it over its parts; a test can stand in for them.
pub(super) trait Neighbours {
    /// The headless turns running now.
    fn started_turns(&self) -> Vec<StartedTurn>;
    /// The live panels under `ui_hook` (none under `off`).
    fn live_panels(&self, ui_hook: UiHook) -> Vec<LivePanel>;
    /// Whether someone else's turn is open in the target's transcript.
    fn someone_else_working(&self, agent: Agent, target_key: &str, transcript: &Path) -> bool;
    /// The carrier that takes the send (its route written into `job`).
    fn route(&self, send: &RouteQuery<'_>, job: &mut Job) -> Transport;
    /// Whether the sender has a live panel for its answer to come back into now.
    fn has_return_panel(
        &self,
        context: &CallerContext,
        agent: Option<Agent>,
        session: Option<&str>,
        settings: &CallSettings,
    ) -> bool;
    /// A delivery was queued: the dispatcher looks at the queue.
    fn queued(&self);
    /// `[control]` of this daemon's `config.toml` (with `CROSS_AGENT_GUI_FALLBACK` over it):
    /// whether the GUI door is open for a send no headless CLI may carry.
    fn control_config(
        &self,
    ) -> cross_agent_control::Result<cross_agent_control::settings::ControlConfig>;
}

impl Neighbours for Engine {
    fn started_turns(&self) -> Vec<StartedTurn> {
        self.inner.dispatch.started_turns()
    }

    fn live_panels(&self, ui_hook: UiHook) -> Vec<LivePanel> {
        Engine::live_panels(self, ui_hook)
    }

    fn someone_else_working(&self, agent: Agent, target_key: &str, transcript: &Path) -> bool {
        self.inner
            .dispatch
            .busy()
            .is_someone_else_working(agent, target_key, transcript)
    }

    fn route(&self, send: &RouteQuery<'_>, job: &mut Job) -> Transport {
        self.inner
            .carriers
            .route(&self.carrier_context(), send, job)
    }

    fn has_return_panel(
        &self,
        context: &CallerContext,
        agent: Option<Agent>,
        session: Option<&str>,
        settings: &CallSettings,
    ) -> bool {
        self.probe_own_panel(context, agent, session, settings)
    }

    fn queued(&self) {
        self.inner.dispatch.wake();
    }

    fn control_config(
        &self,
    ) -> cross_agent_control::Result<cross_agent_control::settings::ControlConfig> {
        cross_agent_control::settings::load(&self.inner.info.state_root)
    }
}

impl Admission {
    pub(super) fn new(
        db: Arc<Mutex<HubDb>>,
        scan: Arc<LiveScanner>,
        decisions: DecisionLog,
        events: broadcast::Sender<EngineEvent>,
        generation: u64,
    ) -> Admission {
        Admission {
            db,
            scan,
            decisions,
            events,
            generation,
        }
    }

    pub(super) fn emit(&self, event: EngineEvent) {
        // An error only says nobody listens now.
        let _ = self.events.send(event);
    }

    pub(super) fn db(&self) -> MutexGuard<'_, HubDb> {
        self.db.lock()
    }

    /// One agent's sessions as the caller's stores hold them, lent rather than copied: a send
    /// at 50,000 sessions looks at them and copies only the one it picks.
    pub(super) fn held_sessions(&self, context: &CallerContext, agent: Agent) -> Snapshot {
        self.scan.snapshot(&roots_for(context), &[agent])
    }

    /// `named` looked up among `agent`'s sessions through the index of ids and titles kept
    /// with them, and looked up again after one more walk when `walk_again` takes the answer
    /// for the index being late (file-system notifications come late, or not at all, on a
    /// loaded machine: a session written a moment ago by another process is walked for before
    /// it is called missing). `f` gets the sessions looked in and the answer.
    pub(super) fn look_up_named<R>(
        &self,
        context: &CallerContext,
        named: &str,
        asked: Lookup<'_>,
        walk_again: fn(&StoreError) -> bool,
        f: impl FnOnce(&Snapshot, cross_agent_stores::Result<resolve::Resolved<SessionRef<'_>>>) -> R,
    ) -> R {
        let first = self.held_sessions(context, asked.agent);
        let late =
            matches!(first.lookup(asked.agent, named, asked), Err(error) if walk_again(&error));
        let held = if late {
            self.mark_stale(asked.agent);
            self.held_sessions(context, asked.agent)
        } else {
            first
        };
        let found = held.lookup(asked.agent, named, asked);
        f(&held, found)
    }

    /// Has `agent`'s stores walked again before the next look: a session written a moment ago
    /// may not have been noticed yet.
    pub(super) fn mark_stale(&self, agent: Agent) {
        self.scan.mark_stale(agent);
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use cross_agent_protocol::bridge::{
        PinParams, PinResponse, Scope, SendParams, TargetSelectedBy,
    };
    use cross_agent_stores::scan::ScanOptions;

    use std::sync::atomic::{AtomicUsize, Ordering};

    use cross_agent_protocol::bridge::{RefusalReason, SendResponse};

    use super::*;
    use crate::engine::target::{TargetQuery, Unresolved};
    use crate::settings::CallSettings;

    /// A send to Codex from a caller whose stores are an empty `home`.
    fn send_params(home: &Path, session_id: Option<&str>, new_session: bool) -> SendParams {
        let mut caller = CallerContext {
            cwd: Some("/work/project".to_owned()),
            ..CallerContext::default()
        };
        caller
            .child_env
            .insert("HOME".to_owned(), home.to_string_lossy().into_owned());
        SendParams {
            agent: Agent::Codex,
            message: "hello".to_owned(),
            session_id: session_id.map(str::to_owned),
            new_session,
            scope: None,
            cwd: None,
            timeout: None,
            conversation_id: None,
            raw: false,
            allow_same_agent: false,
            caller,
        }
    }

    fn resolve(
        admission: &Admission,
        params: &SendParams,
    ) -> std::result::Result<crate::engine::target::Resolved, Unresolved> {
        let settings = CallSettings::from_settings(&params.caller.settings);
        admission.resolve(
            TargetQuery {
                agent: params.agent,
                params,
                explicit: params.session_id.as_deref(),
                cwd: Path::new("/work/project"),
                scope: Scope::Cwd,
                settings: &settings,
                own_session: None,
            },
            &[],
        )
    }

    #[test]
    fn with_nothing_on_disk_and_no_pin_a_send_opens_a_new_cli_session() {
        let dir = tempfile::tempdir().unwrap();
        let admission = admission(dir.path());
        let resolved = resolve(&admission, &send_params(dir.path(), None, false)).unwrap();
        assert_eq!(resolved.selected_by, TargetSelectedBy::NewSession);
        assert!(resolved.panel.is_none());
        // Codex chooses its own id.
        assert_eq!(resolved.session_id, None);
        let forced = resolve(&admission, &send_params(dir.path(), None, true)).unwrap();
        assert_eq!(
            forced.new_reason.as_deref(),
            Some("new_session=true was passed")
        );
    }

    #[test]
    fn a_sticky_pin_is_followed_even_before_its_session_is_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let admission = admission(dir.path());
        let key = cwd_key(Some("/work/project"));
        admission
            .db()
            .set_pin(&pin("pinned", Some("/work/project")), &key, 1)
            .unwrap();
        let resolved = resolve(&admission, &send_params(dir.path(), None, false)).unwrap();
        assert_eq!(resolved.selected_by, TargetSelectedBy::Pin);
        assert_eq!(resolved.session_id.as_deref(), Some("pinned"));
    }

    #[test]
    fn a_named_session_nobody_has_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let admission = admission(dir.path());
        let params = send_params(dir.path(), Some("no-such-session"), false);
        match resolve(&admission, &params) {
            Err(Unresolved::Refused(refusal)) => {
                assert!(!refusal.message.is_empty());
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn admission(dir: &Path) -> Admission {
        let db = HubDb::open(&dir.join("hub.db")).unwrap();
        let scan = LiveScanner::new(
            ScanOptions {
                cache_file: None,
                refresh: Default::default(),
                agents: Vec::new(),
            },
            Default::default(),
        );
        Admission::new(
            Arc::new(Mutex::new(db)),
            Arc::new(scan),
            DecisionLog::in_existing_home(dir),
            tokio::sync::broadcast::channel(8).0,
            1,
        )
    }

    fn pin(session_id: &str, cwd: Option<&str>) -> Pin {
        Pin {
            agent: Agent::Codex,
            session_id: session_id.to_owned(),
            title: None,
            cwd: cwd.map(str::to_owned),
            sticky: true,
            pinned_at: "2026-01-01T00:00:00Z".to_owned(),
        }
    }

    #[test]
    fn the_directorys_pin_comes_before_the_pin_for_every_directory() {
        let dir = tempfile::tempdir().unwrap();
        let admission = admission(dir.path());
        let cwd = PathBuf::from("/work/project");
        assert_eq!(admission.current_pin(Agent::Codex, &cwd).unwrap(), None);
        admission
            .db()
            .set_pin(&pin("everywhere", None), "", 1)
            .unwrap();
        let found = admission.current_pin(Agent::Codex, &cwd).unwrap();
        assert_eq!(
            found.map(|(p, _)| p.session_id).as_deref(),
            Some("everywhere")
        );
        let key = cwd_key(Some("/work/project"));
        admission
            .db()
            .set_pin(&pin("here", Some("/work/project")), &key, 2)
            .unwrap();
        let found = admission.current_pin(Agent::Codex, &cwd).unwrap();
        assert_eq!(found.map(|(p, _)| p.session_id).as_deref(), Some("here"));
        // Another agent's pins are not this one's.
        assert_eq!(admission.current_pin(Agent::Claude, &cwd).unwrap(), None);
    }

    #[test]
    fn an_empty_session_id_unpins_and_names_the_pin_it_removed() {
        let dir = tempfile::tempdir().unwrap();
        let admission = admission(dir.path());
        let key = cwd_key(Some("/work/project"));
        admission
            .db()
            .set_pin(&pin("here", Some("/work/project")), &key, 1)
            .unwrap();
        let response = admission
            .pin(PinParams {
                agent: Agent::Codex,
                session_id: Some("  ".to_owned()),
                cwd: Some("/work/project".to_owned()),
                caller: CallerContext::default(),
            })
            .unwrap();
        match response {
            PinResponse::Unpinned { previous } => {
                assert_eq!(previous.map(|p| p.session_id).as_deref(), Some("here"));
            }
            other => panic!("expected an unpin, got {other:?}"),
        }
        let cwd = PathBuf::from("/work/project");
        assert_eq!(admission.current_pin(Agent::Codex, &cwd).unwrap(), None);
    }

    /// The other parts as admission sees them: no turns, no panels, nobody working, every
    /// send to the headless CLI; it counts the dispatcher's wake-ups.
    #[derive(Default)]
    struct Quiet {
        woken: AtomicUsize,
    }

    impl Neighbours for Quiet {
        fn started_turns(&self) -> Vec<StartedTurn> {
            Vec::new()
        }
        fn live_panels(&self, _ui_hook: UiHook) -> Vec<LivePanel> {
            Vec::new()
        }
        fn someone_else_working(&self, _: Agent, _: &str, _: &Path) -> bool {
            false
        }
        fn route(&self, _send: &RouteQuery<'_>, _job: &mut Job) -> Transport {
            Transport::HeadlessCli
        }
        fn has_return_panel(
            &self,
            _: &CallerContext,
            _: Option<Agent>,
            _: Option<&str>,
            _: &CallSettings,
        ) -> bool {
            false
        }
        fn queued(&self) {
            self.woken.fetch_add(1, Ordering::SeqCst);
        }
        fn control_config(
            &self,
        ) -> cross_agent_control::Result<cross_agent_control::settings::ControlConfig> {
            cross_agent_control::settings::parse("", "config.toml".into(), None)
        }
    }

    #[test]
    fn an_accepted_send_is_recorded_queued_and_wakes_the_dispatcher_and_the_hop_budget_holds() {
        let dir = tempfile::tempdir().unwrap();
        let admission = admission(dir.path());
        let others = Quiet::default();
        let mut params = send_params(dir.path(), None, false);
        params.caller.cwd = Some(dir.path().to_string_lossy().into_owned());
        params.conversation_id = Some("conversation-1".to_owned());
        params
            .caller
            .settings
            .insert("CROSS_AGENT_MAX_HOPS".to_owned(), "1".to_owned());
        let SendResponse::Accepted(receipt) =
            admission.send(params.clone(), &others, None, None).unwrap()
        else {
            panic!("the first send is accepted");
        };
        assert_eq!(others.woken.load(Ordering::SeqCst), 1);
        assert!(!receipt.return_panel_available_now);
        let record = admission
            .db()
            .delivery(&receipt.delivery_id)
            .unwrap()
            .unwrap();
        assert_eq!(record.state, DeliveryState::Queued);
        assert_eq!(record.transport, Transport::HeadlessCli);
        assert_eq!(record.carrier_generation, Some(1));
        // The conversation's one hop is spent: the next relay in it is refused, not queued.
        match admission.send(params, &others, None, None).unwrap() {
            SendResponse::Refused(refusal) => {
                assert_eq!(refusal.reason, RefusalReason::HopBudget);
            }
            SendResponse::Accepted(_) => panic!("a relay past the hop budget was accepted"),
        }
        assert_eq!(others.woken.load(Ordering::SeqCst), 1);
    }
}
