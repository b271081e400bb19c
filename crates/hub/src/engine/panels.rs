//! Editor panels as the engine uses them (docs/spec/cross-agent-mcp.md "IDE panel integration", "Return traffic
//! needs a panel"): the live shims for one call, the probe of the sender's own panel, a
//! request carried into a panel, and return traffic — `BRIDGE REPLY`, `DELIVERY FAILED`,
//! `PROGRESS (INFO)` and `LATE ANSWER` — put into the sender's live panel, each a delivery of
//! its own that spends no hop and never resumes a CLI.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cross_agent_decisions::{DecisionLog, events};
use cross_agent_protocol::bridge::{
    AwaitingApproval, CallerContext, DeliveryRecord, DeliveryState, IdePanels, PanelTabStatus,
    PeerPanelStatus, Pin, TargetKey, Transport,
};
use cross_agent_protocol::events::EngineEvent;
use cross_agent_protocol::panel::{
    Injection, InjectionKind, NO_EMPTY_SESSION, PanelSessionState, ShimEvent, ShimRequest,
};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::{Session, UnixMillis};
use cross_agent_transports::panel::client::{self, Next};
use cross_agent_transports::panel::registry::{self, LivePanel};
use cross_agent_transports::panel::window::{self, Vantage};
use parking_lot::Mutex;

use super::{Engine, recent_turns, watch_secs};
use crate::Agent;
use crate::envelope;
use crate::records::{Job, PanelJob};
use crate::settings::{CallSettings, UiHook};

/// How often a waiting worker wakes to look at the carrier's stop and the transcript clock.
const WAKE: Duration = Duration::from_secs(1);
/// How many times a return delivery looks for the sender's panel before it fails undelivered.
const RETURN_ATTEMPTS: u32 = 3;

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
pub(super) fn transcript_clock(sessions: &[Session], agent: Agent) -> impl Fn(&str) -> Option<i64> {
    let known: BTreeMap<String, i64> = sessions
        .iter()
        .filter(|s| s.agent == agent)
        .filter_map(|s| s.last_activity.map(|at| (s.session_id.clone(), at.0)))
        .collect();
    move |id: &str| known.get(id).copied()
}

/// The busy lock a panel request holds; its key moves to the conversation a panel opens for it
/// (the lease renewal reads it from here).
pub(super) struct HeldLock {
    pub key: Arc<Mutex<String>>,
    pub token: String,
}

/// Tells the dispatcher that a return delivery waits in the sender's shim (accepted `queued`
/// behind the sender's running turn): its worker slot is given back while the wait for
/// `written` goes on, so replies to busy senders never hold the workers.
pub(super) type FreeWorker = tokio::sync::oneshot::Sender<()>;

/// How an injection's events are followed.
struct Following<'a> {
    /// When the sender of a request gets its `PROGRESS (INFO)` notice (requests only).
    patience: Option<Duration>,
    /// The request's busy lock, moved to a conversation the panel opens for it.
    held: Option<&'a HeldLock>,
    /// Told when return traffic is queued behind the sender's turn.
    freed: Option<FreeWorker>,
}

/// What became of a request carried into a panel.
pub(super) enum RequestEnd {
    /// Settled on the record (delivered, recovered or failed).
    Settled,
    /// A new Grok conversation with no empty session left in the panel: nothing was sent, and
    /// the message goes over the CLI as a new session instead (docs/spec/cross-agent-mcp.md "When the panel has no
    /// conversation open").
    ToCli,
}

/// How a waited panel injection ended.
enum Ended {
    /// `turn_ended` (request) or `written` (return traffic).
    Done(Option<String>),
    /// The transcript showed a finished turn carrying the request id first.
    Confirmed(String),
    /// Not delivered: the agent never got the message.
    Undelivered(String),
    /// Delivered, but the turn could not be followed to its end.
    Broken(String),
    /// The daemon is stopping.
    Stopped,
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
        sessions: &[Session],
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
            let selected = window::select(&tabs, except, transcript_clock(sessions, agent));
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

    /// Carries a request into its panel and waits for its turn to end (blocking; the worker
    /// runs it on the blocking pool): `inject`, then events read in one-second waits, with the
    /// peer's transcript read every `transcript_check` in between — a finished turn carrying
    /// the request id settles it (`is_reply_confirmed_by_transcript`). A shim that disappears
    /// mid-turn fails the delivery and the answer is read back from the transcript; nothing is
    /// ever sent twice. Past the larger of the timeout and `CROSS_AGENT_PANEL_PATIENCE` the
    /// sender's idle panel gets one `PROGRESS (INFO)` notice, and the wait goes on.
    pub(super) fn carry_panel_request(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        text: String,
        held: &HeldLock,
    ) -> RequestEnd {
        let Some(route) = job.panel.clone() else {
            return RequestEnd::Settled;
        };
        let agent = record.target_agent;
        let panels = self.live_panels(UiHook::Auto);
        let Some(shim) = shim_for(&panels, agent, &route) else {
            shim_gone(record, &route);
            return RequestEnd::Settled;
        };
        // A new Grok conversation goes into whichever session the shim finds unprompted when
        // the message arrives: the one the registration showed may have been typed into since.
        let grok_new = agent == Agent::Grok && record.will_create_session;
        let socket = shim.registration.socket.clone();
        let agent_pid = shim.registration.agent_pid;
        let injection = request_injection(record, &route, text, grok_new);
        let settings = CallSettings::from_settings(&job.settings);
        let patience = Duration::from_secs(job.timeout_secs.max(settings.panel_patience_secs));
        let ended = self.wait_injection(
            record,
            &socket,
            injection,
            job,
            &mut Following {
                patience: Some(patience),
                held: Some(held),
                freed: None,
            },
        );
        self.inner
            .carriers
            .panel
            .set_approval(&record.delivery_id, None);
        // A new Grok conversation the panel has no empty session for goes over the CLI instead.
        if let Ended::Undelivered(why) = &ended
            && grok_new
            && why.contains(NO_EMPTY_SESSION)
            && settings.ui_hook != UiHook::Require
        {
            tracing::info!(delivery = %record.delivery_id, "no empty grok session in the panel: the new conversation goes over the CLI");
            return RequestEnd::ToCli;
        }
        self.settle_request(record, job, ended, agent_pid);
        RequestEnd::Settled
    }

    /// Records how a request's panel turn ended: its answer paired, or the delivery failed —
    /// with the answer read back from the transcript when the message was delivered.
    fn settle_request(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        ended: Ended,
        agent_pid: Option<u32>,
    ) {
        let watch = watch_secs(job);
        match ended {
            Ended::Done(Some(answer)) => {
                self.inner.answers.pair_answer(record, &answer, None, watch);
            }
            Ended::Confirmed(answer) => {
                record.answer.is_reply_confirmed_by_transcript = true;
                self.inner.answers.pair_answer(record, &answer, None, watch);
            }
            Ended::Done(None) => {
                let why = "the panel's turn ended without an answer".to_owned();
                record.state = DeliveryState::Failed;
                record.error = Some(why.clone());
                self.inner.answers.recover(record, &why);
            }
            Ended::Undelivered(why) => {
                record.state = DeliveryState::Failed;
                record.is_undelivered = true;
                record.error = Some(format!(
                    "not delivered: {why}. The peer never received the message; sending again \
                     is safe"
                ));
            }
            Ended::Broken(why) => {
                if record.target_session_id.is_some() {
                    self.follow_orphaned_turn(record, job, agent_pid);
                }
                record.state = DeliveryState::Failed;
                record.error = Some(format!(
                    "{why}; the message was delivered, so it is never sent again"
                ));
                self.inner.answers.recover(record, &why);
            }
            Ended::Stopped => {
                record.state = DeliveryState::Failed;
                record.is_stopped_with_carrier = true;
                record.error = Some(format!(
                    "stopped with its carrier: the daemon (pid {}, generation {}) stopped while \
                     the panel's turn ran; the turn goes on in the panel, and its answer is read \
                     from the transcript",
                    self.inner.info.pid, self.inner.info.generation
                ));
                self.inner
                    .answers
                    .recover(record, "the daemon stopped while the panel's turn ran");
            }
        }
    }

    /// Writes one injection and follows its events. `patience` (requests only) is when the
    /// sender gets a `PROGRESS (INFO)` notice.
    fn wait_injection(
        &self,
        record: &mut DeliveryRecord,
        socket: &str,
        injection: Injection,
        job: &Job,
        how: &mut Following<'_>,
    ) -> Ended {
        let is_request = injection.kind == InjectionKind::Request;
        let mut connection = match client::open(Path::new(socket), &ShimRequest::Inject(injection))
        {
            Ok(connection) => connection,
            Err(error) => return Ended::Undelivered(error.to_string()),
        };
        let stop = self.inner.stop.subscribe();
        let mut follow = FollowState::new(is_request);
        loop {
            if *stop.borrow() {
                return follow.stopped();
            }
            let next = match connection.next(WAKE) {
                Ok(next) => next,
                Err(error) => return follow.lost(error.to_string()),
            };
            if let Some(ended) = self.on_shim_news(record, job, how, &mut follow, next) {
                return ended;
            }
            if let Some(ended) = self.between_events(record, job, how.patience, &mut follow) {
                return ended;
            }
        }
    }

    /// What one read from the shim says: `Some` when the injection ended with it.
    fn on_shim_news(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        how: &mut Following<'_>,
        follow: &mut FollowState,
        next: Next,
    ) -> Option<Ended> {
        let held = how.held;
        let is_request = follow.is_request;
        match next {
            Next::Event(ShimEvent::Accepted { session_id, queued }) => {
                follow.accepted = true;
                if let Some(id) = session_id {
                    self.panel_session_known(record, id, job, held);
                }
                if is_request {
                    record.state = DeliveryState::AwaitingPeer;
                    record.started_at.get_or_insert_with(now_rfc3339);
                    let _ = self.db().update_delivery(record);
                }
                tracing::info!(delivery = %record.delivery_id, queued, "the panel took the message");
                // Return traffic queued behind the sender's running turn: the wait for its
                // `written` goes on, but no longer in one of the workers.
                if queued
                    && !is_request
                    && let Some(free) = how.freed.take()
                {
                    record.state = DeliveryState::AwaitingPeer;
                    let _ = self.db().update_delivery(record);
                    let _ = free.send(());
                }
                None
            }
            Next::Event(ShimEvent::SessionStarted { session_id }) => {
                self.panel_session_known(record, session_id, job, held);
                None
            }
            Next::Event(ShimEvent::ApprovalPending { approval }) => {
                self.inner
                    .carriers
                    .panel
                    .set_approval(&record.delivery_id, Some(approval.clone()));
                self.emit(EngineEvent::ApprovalWaiting {
                    delivery_id: record.delivery_id.clone(),
                    approval,
                });
                None
            }
            Next::Event(ShimEvent::ApprovalResolved { .. }) => {
                self.inner
                    .carriers
                    .panel
                    .set_approval(&record.delivery_id, None);
                None
            }
            Next::Event(ShimEvent::Written { session_id }) => {
                if let Some(id) = session_id {
                    self.panel_session_known(record, id, job, held);
                }
                follow.accepted = true;
                (!is_request).then_some(Ended::Done(None))
            }
            Next::Event(ShimEvent::TurnEnded {
                answer,
                stop,
                is_error,
                ..
            }) => {
                if is_error && answer.is_none() {
                    return Some(Ended::Broken(format!(
                        "the panel's turn ended with an error ({stop})"
                    )));
                }
                Some(Ended::Done(answer))
            }
            Next::Event(ShimEvent::Failed { reason, delivered }) => Some(if delivered {
                Ended::Broken(format!("the panel shim failed: {reason}"))
            } else {
                Ended::Undelivered(format!("the panel shim refused it: {reason}"))
            }),
            Next::Event(ShimEvent::Status { .. } | ShimEvent::ApprovalAnswered { .. }) => None,
            Next::Closed if follow.accepted => Some(Ended::Broken(
                "the panel shim went away before the turn ended (the panel closed, or its \
                 process died)"
                    .into(),
            )),
            Next::Closed => Some(Ended::Undelivered(
                "the panel shim closed the connection before taking the message".into(),
            )),
            Next::Quiet => None,
        }
    }

    /// The bookkeeping between two reads from the shim: return traffic's patience; a request's
    /// transcript found, read for a confirmed answer, and its sender's one progress notice.
    fn between_events(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        patience: Option<Duration>,
        follow: &mut FollowState,
    ) -> Option<Ended> {
        if !follow.is_request {
            // Return traffic waits for the sender's turn to end, bounded like a busy peer.
            let patience = patience_or_default(job);
            return (follow.started.elapsed() > patience).then(|| {
                Ended::Undelivered(format!(
                    "the sender's panel did not take it within {} s",
                    patience.as_secs()
                ))
            });
        }
        if !follow.accepted {
            return None;
        }
        // A conversation the panel opened is written to disk a moment after its id arrives.
        if record.target_transcript.is_none() && follow.last_locate.elapsed() >= WAKE {
            follow.last_locate = Instant::now();
            self.locate_transcript(record, job);
        }
        if follow.last_check.elapsed() >= self.inner.config.transcript_check {
            follow.last_check = Instant::now();
            if let Some(text) = confirmed_in_transcript(record) {
                return Some(Ended::Confirmed(text));
            }
        }
        if let Some(patience) = patience
            && !follow.progress_sent
            && follow.started.elapsed() >= patience
        {
            follow.progress_sent = true;
            self.send_progress(record, job, follow.started.elapsed());
        }
        None
    }

    /// A conversation the panel opened for a delivery has its id now: recorded with its
    /// transcript (where its answer is recovered from), its busy lock and queue key moved from
    /// `<agent>:new:<delivery id>` to the session, and pinned as a created session is.
    fn panel_session_known(
        &self,
        record: &mut DeliveryRecord,
        id: String,
        job: &Job,
        held: Option<&HeldLock>,
    ) {
        if record.target_session_id.as_deref() == Some(id.as_str()) {
            return;
        }
        record.target_session_id = Some(id.clone());
        record.target_transcript = None;
        self.locate_transcript(record, job);
        let db = self.db();
        if let Some(held) = held
            && record.will_create_session
        {
            let new_key = TargetKey::new(record.target_agent, id.as_str()).to_string();
            let mut key = held.key.lock();
            if *key != new_key {
                match db.rekey_lock(&key, &new_key, &held.token) {
                    Ok(()) => {
                        let _ = db.retarget_delivery(&record.delivery_id, &new_key);
                        *key = new_key;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "could not move a busy lock to the conversation a panel opened");
                    }
                }
            }
        }
        let _ = db.update_delivery(record);
        if record.will_create_session && record.transport == Transport::Panel {
            let pin = Pin {
                agent: record.target_agent,
                session_id: id,
                title: None,
                cwd: Some(job.cwd.clone()),
                sticky: false,
                pinned_at: now_rfc3339(),
            };
            if let Err(error) = db.set_pin(&pin, &job.pin_cwd_key, UnixMillis::now().0) {
                tracing::warn!(%error, "could not pin a conversation a panel opened");
            }
        }
    }

    /// Finds the peer's transcript once its session is known and the agent has written it.
    fn locate_transcript(&self, record: &mut DeliveryRecord, job: &Job) {
        if record.target_transcript.is_some() {
            return;
        }
        let Some(id) = record.target_session_id.clone() else {
            return;
        };
        if let Some(path) = self
            .inner
            .dispatch
            .transcript_of(record.target_agent, &id, job)
        {
            record.target_transcript = Some(path);
            let _ = self.db().update_delivery(record);
        }
    }

    /// After the shim went away mid-turn an agent that outlived it (outside Linux, or behind an
    /// older shim) may still finish the turn (the message was delivered): its transcript is
    /// followed until a finished turn answers the request, the agent is gone, it has been
    /// still for the delivery's inactivity timeout, or the daemon stops. Never re-sent.
    fn follow_orphaned_turn(&self, record: &mut DeliveryRecord, job: &Job, agent_pid: Option<u32>) {
        let quiet_limit = Duration::from_secs(job.timeout_secs);
        let stop = self.inner.stop.subscribe();
        let mut last_change: Option<std::time::SystemTime> = None;
        let mut quiet_since = Instant::now();
        loop {
            self.locate_transcript(record, job);
            if confirmed_in_transcript(record).is_some() {
                return;
            }
            let modified = record
                .target_transcript
                .as_deref()
                .and_then(|path| std::fs::metadata(path).ok())
                .and_then(|meta| meta.modified().ok());
            if modified != last_change {
                last_change = modified;
                quiet_since = Instant::now();
            }
            // The agent ends with its shim (the shim asks the kernel for that): once it is
            // gone nothing more will be written, so what the transcript holds is read now.
            let agent_gone = agent_pid.is_some_and(|pid| !cross_agent_process::is_alive(pid));
            if *stop.borrow() || agent_gone || quiet_since.elapsed() >= quiet_limit {
                return;
            }
            std::thread::sleep(self.inner.config.transcript_check.min(WAKE));
        }
    }

    /// Sends the `PROGRESS (INFO)` notice of a request that runs past patience to the sender's
    /// idle panel (it never waits for a busy sender), and notes it on the request.
    fn send_progress(&self, record: &mut DeliveryRecord, job: &Job, waited: Duration) {
        let note = envelope::progress_notice(record, waited.as_secs());
        record.progress_note = Some(note.clone());
        let idle_sender = self
            .inner
            .answers
            .returns()
            .sender_panel(record, job)
            .is_some_and(|(panel, session)| {
                panel
                    .registration
                    .sessions
                    .iter()
                    .find(|s| s.session_id.as_deref() == Some(session.as_str()))
                    .is_some_and(|s| s.state == PanelSessionState::Idle)
            });
        if idle_sender
            && let Some(id) =
                self.inner
                    .answers
                    .returns()
                    .queue_return(record, job, InjectionKind::Notice, note)
        {
            record.progress_delivery_id = Some(id);
        }
        let _ = self.db().update_delivery(record);
    }

    /// Puts return traffic into the sender's panel, found again now (a reopened tab counts);
    /// retried [`RETURN_ATTEMPTS`] times, then failed as undelivered — never a CLI.
    /// `freed` is told when the sender's shim queues it behind a running turn (see
    /// [`FreeWorker`]).
    pub(super) fn carry_return(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        freed: &mut Option<FreeWorker>,
    ) {
        let Some(route) = job.panel.clone() else {
            return;
        };
        let agent = record.target_agent;
        let session = route.session_id.clone().unwrap_or_default();
        let mut why = String::new();
        for attempt in 0..RETURN_ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(self.inner.config.return_retry);
            }
            let panels = self.live_panels(UiHook::Auto);
            let Some(shim) = window::hosting(&panels, agent, &session) else {
                why = format!("no live panel holds {agent} session {session}");
                continue;
            };
            let injection = Injection {
                delivery_id: record.delivery_id.clone(),
                kind: route.kind,
                session_id: Some(session.clone()),
                new_session: false,
                text: job.body.clone(),
                request_id: None,
                title: None,
                sender_label: record.from_session.as_deref().map(|s| {
                    format!(
                        "{} · session {s}",
                        record.from_agent.map_or("?", Agent::as_str)
                    )
                }),
            };
            let socket = shim.registration.socket.clone();
            let mut how = Following {
                patience: None,
                held: None,
                freed: freed.take(),
            };
            let ended = self.wait_injection(record, &socket, injection, job, &mut how);
            *freed = how.freed.take();
            match ended {
                Ended::Done(_) | Ended::Confirmed(_) => {
                    record.state = DeliveryState::Delivered;
                    return;
                }
                Ended::Stopped => {
                    record.state = DeliveryState::Failed;
                    record.is_stopped_with_carrier = true;
                    record.error = Some("stopped with its carrier before the panel took it".into());
                    return;
                }
                Ended::Undelivered(reason) | Ended::Broken(reason) => why = reason,
            }
        }
        record.state = DeliveryState::Failed;
        record.is_undelivered = true;
        record.error = Some(format!(
            "not delivered to the sender's panel after {RETURN_ATTEMPTS} attempts ({why}); no \
             CLI was resumed for it. The answer stays on the request: read it with \
             bridge_status(delivery_id=\"{}\")",
            record.answer.answers_delivery_id.as_deref().unwrap_or("?")
        ));
        // The request's answer now lives only on its record.
        if let Some(request_id) = record.answer.answers_delivery_id.clone() {
            let db = self.db();
            if let Ok(Some(mut request)) = db.delivery(&request_id)
                && request.return_delivery_id.as_deref() == Some(record.delivery_id.as_str())
            {
                request.is_return_status_only = true;
                let _ = db.update_delivery(&request);
            }
        }
    }
}

/// Where an injection's wait stands between two reads from the shim.
struct FollowState {
    is_request: bool,
    started: Instant,
    last_check: Instant,
    last_locate: Instant,
    /// The shim took the message: from here on the peer has it, and it is never sent again.
    accepted: bool,
    progress_sent: bool,
}

impl FollowState {
    fn new(is_request: bool) -> FollowState {
        let now = Instant::now();
        FollowState {
            is_request,
            started: now,
            last_check: now,
            last_locate: now,
            accepted: false,
            progress_sent: false,
        }
    }

    /// How the wait ends when the daemon stops.
    fn stopped(&self) -> Ended {
        if self.accepted {
            Ended::Stopped
        } else {
            Ended::Undelivered("the daemon stopped first".into())
        }
    }

    /// How the wait ends when the connection to the shim breaks.
    fn lost(&self, error: String) -> Ended {
        if self.accepted {
            Ended::Broken(error)
        } else {
            Ended::Undelivered(error)
        }
    }
}

/// The live shim a request goes to: the panel holding its session, or — for a new
/// conversation — the shim that offered to open it.
fn shim_for<'p>(panels: &'p [LivePanel], agent: Agent, route: &PanelJob) -> Option<&'p LivePanel> {
    match &route.session_id {
        Some(id) if !route.new_session || agent == Agent::Grok => {
            window::hosting(panels, agent, id)
        }
        _ => panels.iter().find(|p| p.registration.pid == route.shim_pid),
    }
}

/// The panel a request was routed to closed before it went out: failed, never sent.
fn shim_gone(record: &mut DeliveryRecord, route: &PanelJob) {
    let agent = record.target_agent;
    record.state = DeliveryState::Failed;
    record.is_undelivered = true;
    record.error = Some(format!(
        "not delivered: the {agent} panel holding {} closed before the message went \
         out; nothing was sent and no CLI was started. Sending again is safe",
        route.session_id.as_deref().map_or_else(
            || "the new conversation".to_owned(),
            |id| format!("session {id}")
        )
    ));
}

/// The `inject` a request is written as.
fn request_injection(
    record: &DeliveryRecord,
    route: &PanelJob,
    text: String,
    grok_new: bool,
) -> Injection {
    Injection {
        delivery_id: record.delivery_id.clone(),
        kind: InjectionKind::Request,
        session_id: route.session_id.clone().filter(|_| !grok_new),
        new_session: route.new_session || grok_new,
        text,
        request_id: Some(record.request_id.clone()),
        title: route.title.clone(),
        sender_label: route.sender_label.clone(),
    }
}

fn patience_or_default(job: &Job) -> Duration {
    let settings = CallSettings::from_settings(&job.settings);
    Duration::from_secs(job.timeout_secs.max(settings.panel_patience_secs))
}

/// A finished turn in the peer's transcript whose closing line echoes the request id: the
/// answer, whatever the shim says (it may have missed the turn's end).
fn confirmed_in_transcript(record: &DeliveryRecord) -> Option<String> {
    let path = record.target_transcript.as_deref()?;
    let started = record
        .started_at
        .as_deref()
        .and_then(UnixMillis::parse_rfc3339);
    let mut warnings = cross_agent_stores::Warnings::default();
    recent_turns(record.target_agent, Path::new(path), &mut warnings)
        .ok()?
        .finished_turn_answering(&record.request_id, started)
        .and_then(|turn| turn.final_text().map(str::to_owned))
}
