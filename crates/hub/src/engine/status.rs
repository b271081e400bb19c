//! What the bridge shows: `list_agent_sessions`, `bridge_status`, and one delivery's answer
//! re-read from the peer's transcript.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use cross_agent_protocol::bridge::{
    AgentFilter, BridgeStatusParams, BridgeStatusResponse, BusyLockStatus, CallerContext,
    DeliveriesStatus, DeliveryRecord, DeliveryState, IndexListingParams, IndexListingResponse,
    IndexSessionsParams, IndexSessionsResponse, IndexedSession, LateAnswerWatch,
    ListSessionsParams, ListSessionsResponse, PeerTranscript, ResolvedSession, ServerProcess,
    SessionEntry, TargetSelectedBy,
};
use cross_agent_protocol::vocabulary::TargetKey;
use cross_agent_stores::held::{HeldSessions, SessionRef};
use cross_agent_stores::live::ListingBytes;
use cross_agent_stores::resolve::{self, ActiveWindow, NameIndex};
use cross_agent_stores::{StoreWarning, UnixMillis};

use super::copilot_caller::map_copilot_caller;
use super::target::active_now;
use super::{Engine, non_blank, recent_turns, roots_for};
use crate::Agent;
use crate::caller::identify;
use crate::error::Result;
use crate::settings::CallSettings;

/// How many finished deliveries `bridge_status` lists.
const RECENT: u32 = 20;
/// How many late-answer watches `bridge_status` lists (the newest; a warning gives the total).
const WATCHES_SHOWN: u32 = 50;

impl Engine {
    /// `list_agent_sessions`.
    pub fn list_sessions(&self, params: ListSessionsParams) -> Result<ListSessionsResponse> {
        let agents: Vec<Agent> = match params.agent {
            AgentFilter::Claude => vec![Agent::Claude],
            AgentFilter::Codex => vec![Agent::Codex],
            AgentFilter::Grok => vec![Agent::Grok],
            AgentFilter::Copilot => vec![Agent::Copilot],
            AgentFilter::Both => vec![Agent::Claude, Agent::Codex],
            AgentFilter::All => Agent::ALL.to_vec(),
        };
        let settings = CallSettings::from_settings(&params.caller.settings);
        let mut caller = identify(&params.caller, &self.started_turns());
        if let Err(why) = map_copilot_caller(&mut caller, &params.caller) {
            caller.how = format!("agent Copilot; session unknown: {why}");
        }
        // Lent from the index: only the entries shown are copied out.
        let held = self.snapshot(&params.caller, &agents);
        let warnings = held.warnings().map(ToString::to_string).collect();
        let cwd = non_blank(params.cwd.as_deref())
            .or(non_blank(params.caller.cwd.as_deref()))
            .map(PathBuf::from);
        let scope = match (&cwd, params.scope) {
            (None, _) => cross_agent_protocol::bridge::Scope::Any,
            (Some(_), Some(scope)) => scope,
            (Some(_), None) => settings.scope,
        };
        let limit = params.limit.map_or(50, |l| l as usize);
        let pins: HashSet<(Agent, String)> = self
            .db()
            .pins()?
            .into_iter()
            .map(|p| (p.agent, p.session_id))
            .collect();
        let now = UnixMillis::now();
        let root = PathBuf::from("/");
        // Which Claude sessions a running process holds, by Claude's own registry.
        let registry = if agents.contains(&Agent::Claude) {
            super::native::claude_registry(&params.caller)
        } else {
            Default::default()
        };
        let mut out = BTreeMap::new();
        for agent in agents {
            let ranked = resolve::ranked(
                held.sessions(agent),
                agent,
                scope,
                cwd.as_deref().unwrap_or(&root),
            );
            let mut list: Vec<SessionRef<'_>> = ranked;
            list.sort_by_key(|s| std::cmp::Reverse(s.last_activity()));
            let entries = list
                .into_iter()
                .take(limit)
                .map(|s| SessionEntry {
                    host: None,
                    session_id: s.session_id().to_owned(),
                    title: s.title().map(str::to_owned),
                    title_is_assigned: s.title_is_assigned(),
                    cwd: s.cwd().map(|p| p.to_string_lossy().into_owned()),
                    last_activity: s.last_activity().map(UnixMillis::to_rfc3339),
                    is_active: settings.active_window.is_active(s.last_activity(), now),
                    // The store's scan sees any open turn; one the bridge started and stopped
                    // is nobody's work (the dispatcher's rule, docs/spec/cross-agent-mcp.md §9).
                    is_working: s.is_working()
                        && self.inner.dispatch.busy().is_someone_else_working(
                            agent,
                            &TargetKey::new(agent, s.session_id()).to_string(),
                            &s.path(),
                        ),
                    path: s.path().to_string_lossy().into_owned(),
                    is_caller: caller.agent == Some(agent)
                        && caller.session_id.as_deref() == Some(s.session_id()),
                    is_pinned: pins.contains(&(agent, s.session_id().to_owned())),
                    registry_name: (agent == Agent::Claude)
                        .then(|| registry.live_session(s.session_id()))
                        .flatten()
                        .and_then(|e| e.name.clone()),
                    registry_status: (agent == Agent::Claude)
                        .then(|| registry.live_session(s.session_id()))
                        .flatten()
                        .and_then(|e| e.status.clone()),
                    copilot: s.copilot().cloned(),
                })
                .collect();
            out.insert(agent.as_str().to_owned(), entries);
        }
        Ok(ListSessionsResponse {
            sessions: out,
            warnings,
        })
    }

    /// `index_sessions`: the live index's sessions of some agents, or the one a query resolves
    /// to. A query that does not resolve answers with every session of its agent, so the caller
    /// explains the refusal with its own lookup, word for word as without the daemon.
    pub fn index_sessions(&self, params: IndexSessionsParams) -> IndexSessionsResponse {
        let Some(query) = &params.resolve else {
            let (sessions, warnings) = self.list(&params.caller, &params.agents);
            return IndexSessionsResponse {
                sessions: sessions.iter().map(IndexedSession::from).collect(),
                matched_by: None,
                warnings,
            };
        };
        let cwd = PathBuf::from(&query.cwd);
        let lookup = resolve::Lookup {
            agent: query.agent,
            scope: query.scope,
            cwd: &cwd,
            bound: query.bound.map(|limit| resolve::ScanBound {
                limit: usize::try_from(limit).unwrap_or(usize::MAX),
                // Named only in a refusal, which the caller words itself.
                source: "",
            }),
        };
        // Looked up among the held sessions in place: only the one found is copied out.
        let roots = roots_for(&params.caller);
        let found = |sessions: &HeldSessions, names: &NameIndex, warnings: &[StoreWarning]| {
            let warnings = warnings.iter().map(ToString::to_string).collect();
            // The index kept with the sessions finds the candidates; `resolve::lookup`'s rules
            // decide among them.
            match names.lookup(sessions, &query.query, lookup) {
                Ok(found) => IndexSessionsResponse {
                    sessions: vec![IndexedSession::from(found.session)],
                    matched_by: serde_json::to_value(found.matched_by)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned)),
                    warnings,
                },
                Err(_) => IndexSessionsResponse {
                    sessions: sessions.iter().map(IndexedSession::from).collect(),
                    matched_by: None,
                    warnings,
                },
            }
        };
        self.inner
            .scan
            .with_named_sessions(&roots, query.agent, found)
    }

    /// `index_listing`: the listing `sessions --json` prints, made from the renderings the
    /// live index keeps (see `cross_agent_stores::render`), and its bytes, which refer to
    /// those renderings rather than copy them: the caller writes them out in pieces.
    pub fn index_listing(
        &self,
        params: &IndexListingParams,
    ) -> (IndexListingResponse, ListingBytes) {
        let agents = if params.agents.is_empty() {
            Agent::ALL.to_vec()
        } else {
            params.agents.clone()
        };
        let cwd = PathBuf::from(&params.cwd);
        let scope = params.scope;
        let limit = params
            .limit
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        let clock = (
            ActiveWindow::from_minutes(params.active_window_min),
            UnixMillis(params.now),
        );
        let rendered = self.render_listing(
            &params.caller,
            &agents,
            |s| resolve::scope_rank(scope, s, &cwd).is_some(),
            limit,
            clock,
        );
        let response = IndexListingResponse {
            bytes: rendered.bytes.len() as u64,
            sessions: rendered.sessions as u64,
            warnings: rendered.warnings.iter().map(ToString::to_string).collect(),
        };
        (response, rendered.bytes)
    }

    /// `bridge_status`, optionally re-reading one delivery's answer from the peer's transcript.
    pub fn bridge_status(&self, params: BridgeStatusParams) -> Result<BridgeStatusResponse> {
        let info = &self.inner.info;
        let settings = CallSettings::from_settings(&params.caller.settings);
        let mut caller = identify(&params.caller, &self.started_turns());
        if let Err(why) = map_copilot_caller(&mut caller, &params.caller) {
            caller.how = format!("agent Copilot; session unknown: {why}");
        }
        let cwd = non_blank(params.cwd.as_deref())
            .or(non_blank(params.caller.cwd.as_deref()))
            .map(PathBuf::from);
        let mut warnings = Vec::new();

        let mut resolved_sessions = BTreeMap::new();
        // Lent from the index: the few sessions shown are copied out, not every one.
        let held = self.snapshot(&params.caller, &Agent::ALL);
        warnings.extend(held.warnings().map(ToString::to_string));
        let own = caller.agent.zip(caller.session_id.as_deref());
        let ide_panels = self.ide_panels(&params.caller, &settings, &held, own);
        if let Some(cwd) = &cwd {
            let scope = params.scope.unwrap_or(settings.scope);
            // Copilot is never discovered (a send to it names its session, and this build does
            // not carry one yet): no unaddressed send would reach a Copilot session.
            for agent in Agent::ALL.into_iter().filter(|a| *a != Agent::Copilot) {
                let pin = self.inner.admission.current_pin(agent, cwd)?;
                let own = caller
                    .session_id
                    .as_deref()
                    .filter(|_| caller.agent == Some(agent));
                let value = if let Some((pin, _)) = pin {
                    ResolvedSession {
                        session_id: Some(pin.session_id),
                        selected_by: TargetSelectedBy::Pin,
                        title: None,
                        sticky: Some(pin.sticky),
                    }
                } else if let Some(s) =
                    active_now(held.sessions(agent), agent, scope, cwd, &settings, own)
                {
                    ResolvedSession {
                        session_id: Some(s.session_id().to_owned()),
                        selected_by: TargetSelectedBy::Discovery,
                        title: s.title().map(str::to_owned),
                        sticky: None,
                    }
                } else {
                    ResolvedSession {
                        session_id: None,
                        selected_by: TargetSelectedBy::NewSession,
                        title: None,
                        sticky: None,
                    }
                };
                resolved_sessions.insert(agent, value);
            }
        }

        let (pins, locks, pending, running, recent, watching) = {
            let db = self.db();
            let (watches, watches_total) = db.watch_summaries(WATCHES_SHOWN)?;
            let watching: Vec<LateAnswerWatch> = watches
                .into_iter()
                .map(|watch| LateAnswerWatch {
                    until: UnixMillis(watch.until_ms).to_rfc3339(),
                    delivery_id: watch.delivery_id,
                    owner_pid: watch.owner_pid,
                    request_id: watch.request_id,
                    target_agent: watch.target_agent.as_deref().and_then(Agent::parse),
                    target_session_id: watch.target_session_id,
                })
                .collect();
            if watches_total > u64::from(WATCHES_SHOWN) {
                warnings.push(format!(
                    "{watches_total} deliveries are watched for a late answer; \
                     watching_for_late_answers shows the newest {WATCHES_SHOWN}"
                ));
            }
            (
                db.pins()?,
                db.locks()?,
                db.deliveries_in(&[DeliveryState::Queued], 200)?,
                db.deliveries_in(
                    &[DeliveryState::Delivering, DeliveryState::AwaitingPeer],
                    200,
                )?,
                db.deliveries_in(&[DeliveryState::Delivered, DeliveryState::Failed], RECENT)?,
                watching,
            )
        };
        let (in_flight, elsewhere): (Vec<_>, Vec<_>) = running
            .into_iter()
            .partition(|r| r.carrier_generation == Some(info.generation));

        let (delivery, peer_transcript) = match non_blank(params.delivery_id.as_deref()) {
            Some(id) => {
                // Read before matching: the store's lock must not be held into the arms.
                let found = self.db().delivery(id)?;
                match found {
                    Some(record) => {
                        let transcript = self.peer_transcript(&params.caller, &record);
                        (Some(record), Some(transcript))
                    }
                    None => {
                        // Its record may have been in a damaged store moved aside at start.
                        warnings.push(self.db().unknown_delivery(id)?);
                        (None, None)
                    }
                }
            }
            None => (None, None),
        };
        let peer_panel = delivery.as_ref().and_then(|r| self.peer_panel(r));
        let return_id = delivery.as_ref().and_then(|r| r.return_delivery_id.clone());
        let return_delivery = match return_id {
            Some(id) => self.db().delivery(&id)?,
            None => None,
        };
        let mut settings_status = settings.status();
        settings_status.panels_available = !ide_panels.is_empty();

        let database = self.db().store_health(info.generation)?;
        Ok(BridgeStatusResponse {
            server_process: ServerProcess {
                pid: info.pid,
                generation: info.generation,
                started_at: info.started_at.clone(),
                version: info.version.clone(),
                // The daemon adds the replaced daemons still draining; the engine cannot see them.
                draining: Vec::new(),
                database: Some(database),
            },
            caller: caller.status(),
            settings: settings_status,
            resolved_sessions,
            pins,
            locks: locks
                .into_iter()
                .map(|lock| BusyLockStatus {
                    target_key: lock.target_key,
                    owner_pid: lock.owner_pid,
                    delivery_id: lock.delivery_id,
                    acquired_at: lock.acquired_at,
                    lease_until_ms: lock.lease_until_ms,
                })
                .collect(),
            deliveries: DeliveriesStatus {
                pending,
                in_flight,
                in_flight_elsewhere: elsewhere,
                recent,
                watching_for_late_answers: watching,
            },
            delivery,
            peer_transcript,
            return_delivery,
            peer_panel,
            ide_panels,
            warnings,
        })
    }

    /// Reads one delivery's answer fresh from the peer's transcript: the finished turn whose
    /// closing line carries the request id, else the last assistant message written after the
    /// delivery started (never text from before it).
    pub(super) fn peer_transcript(
        &self,
        context: &CallerContext,
        record: &DeliveryRecord,
    ) -> PeerTranscript {
        let mut out = PeerTranscript::default();
        let path = match (&record.target_transcript, &record.target_session_id) {
            (Some(path), _) if Path::new(path).exists() => Some(PathBuf::from(path)),
            (_, Some(id)) => {
                let (sessions, _) = self.list(context, &[record.target_agent]);
                sessions
                    .into_iter()
                    .find(|s| s.agent == record.target_agent && &s.session_id == id)
                    .map(|s| s.path)
                    // The index may not have heard of a deletion yet (its notifications come
                    // late on a loaded machine): a listed path that is gone is gone.
                    .filter(|path| path.exists())
            }
            (_, None) => None,
        };
        let Some(path) = path else {
            out.error = Some(
                "the peer's transcript was not found (gone, or never written); the record's \
                 reply_preview holds what remains of the answer"
                    .into(),
            );
            return out;
        };
        out.path = Some(path.to_string_lossy().into_owned());
        // Never handed over (still queued, or failed before hand-over): the peer never saw it,
        // so nothing in its transcript can be this delivery's answer.
        if record.state == DeliveryState::Queued || record.started_at.is_none() {
            return out;
        }
        let mut warnings = cross_agent_stores::Warnings::default();
        match recent_turns(record.target_agent, &path, &mut warnings) {
            Ok(transcript) => {
                let started = record
                    .started_at
                    .as_deref()
                    .and_then(UnixMillis::parse_rfc3339);
                out.is_working = transcript.running_turn().is_some()
                    && !record.is_killed_by_timeout
                    && !record.state.is_finished();
                if let Some(turn) = transcript.finished_turn_answering(&record.request_id, started)
                {
                    out.answer = turn.final_text().map(str::to_owned);
                    out.answer_carries_request_id = true;
                } else if let Some(started) = started
                    && let Some(message) = transcript.last_assistant_message_after(started)
                {
                    out.answer = Some(message.text.clone());
                }
            }
            Err(error) => out.error = Some(error.to_string()),
        }
        out
    }
}
