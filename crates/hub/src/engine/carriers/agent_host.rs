//! The Agent Host carrier: a delivery to Copilot is a new user turn in an existing session's
//! default chat, handed to the VS Code Agent Host that runs it (AHP `chat/turnStarted`, through
//! the `agent-host` crate). It is Copilot's only way in: it takes every Copilot send and no
//! other, and never falls back to a CLI or creates a session.
//!
//! At acceptance the route is the session's URI and its editor's endpoint registry (never the
//! token). When the delivery goes out the registry is read again, and the carrier takes the
//! connection it keeps for that endpoint (one per host, by socket, pid, instance and token: a
//! changed entry is a new connection, an ended one is replaced then), and hands over the same bridge envelope the other agents get. The host's
//! echo decides what the hand-over was: accepted (the delivery awaits the answer), refused (failed with
//! the host's words, never re-sent), or unknown — the connection ended or the echo never came
//! — which fails the delivery with `outcome: unknown` and never re-sends it, since the turn may
//! have started. The answer is the turn's markdown, paired by its request id like every other
//! agent's; `chat/error` and a cancelled turn fail with the host's words. An answer that never
//! came back over the connection (or an orphan's, after a restart) is read from the Copilot
//! SDK's `events.jsonl` by the request token (the answers part's recovery).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_agent_host::{
    ConnectionToken, DeliverRequest, EndpointKey, Error as HostError, HostConnection, HostPool,
};
use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState, HandOverOutcome, Transport};
use cross_agent_stores::Warnings;
use cross_agent_stores::copilot::endpoints::{self, Endpoint, EndpointAddress};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::{Carried, Carrier, CarrierContext, Carrying, RouteQuery, message_text};
use crate::Agent;
use crate::engine::copilot_caller::verify_return;
use crate::engine::dispatch::{carrier_stopped, off_async};
use crate::engine::{roots_for, watch_secs};
use crate::records::{AgentHostJob, Claimed, Job};

/// Between two looks at a chat that is busy with a turn of someone else's.
const BUSY_RETRY: Duration = Duration::from_secs(1);

/// Takes every Copilot send; no other agent's. Keeps one connection per host endpoint.
pub(in crate::engine) struct AgentHostCarrier {
    pool: Arc<HostPool>,
}

impl Default for AgentHostCarrier {
    fn default() -> Self {
        AgentHostCarrier {
            pool: Arc::new(HostPool::new(format!(
                "cross-agent-{}-carry",
                std::process::id()
            ))),
        }
    }
}

impl Carrier for AgentHostCarrier {
    fn transport(&self) -> Transport {
        Transport::AgentHost
    }

    /// Copilot has no other carrier: its send is taken even when the session's editor cannot be
    /// read again here, and then fails undelivered when carried (never headless).
    fn route(&self, _cx: &CarrierContext, send: &RouteQuery<'_>, job: &mut Job) -> bool {
        if send.agent != Agent::Copilot {
            return false;
        }
        job.agent_host = send
            .resolved
            .session_id
            .as_deref()
            .and_then(|id| route_of(send, id));
        true
    }

    /// The host refuses a turn while the chat runs one, and says so before anything is sent
    /// (`chat busy`): the carrier waits for the chat itself, looking again each second while
    /// holding the session's lock, up to the delivery's timeout. Copilot's SDK events are not a
    /// transcript the busy check reads, so the queue's wait on an open turn would not see one.
    fn waits_for_open_turn(&self) -> bool {
        false
    }

    fn carry(&self, cx: CarrierContext, claimed: Claimed) -> Carrying {
        let pool = self.pool.clone();
        Box::pin(async move {
            carry_to_host(cx, &pool, claimed).await;
            Carried::Closed
        })
    }
}

/// The route of session `id`: its URI as the host names it and its editor's registry.
fn route_of(send: &RouteQuery<'_>, id: &str) -> Option<AgentHostJob> {
    let roots = roots_for(&send.params.caller);
    let mut warnings = Warnings::default();
    let session = cross_agent_stores::copilot::list(&roots.copilot, &mut warnings)
        .into_iter()
        .find(|s| s.session_id == id)?;
    let details = session.copilot?;
    let place = roots
        .copilot
        .places
        .iter()
        .find(|p| p.user_data.to_string_lossy() == details.user_data_dir.as_str())?;
    Some(AgentHostJob {
        session_uri: details.session_uri,
        user_data_dir: details.user_data_dir,
        endpoint_dir: place.endpoint_dir.as_ref()?.to_string_lossy().into_owned(),
        is_busy_skipped: false,
    })
}

/// Hands one delivery to its host, awaits the answer, and closes the delivery.
async fn carry_to_host(cx: CarrierContext, pool: &HostPool, claimed: Claimed) {
    let Claimed {
        mut record,
        job,
        created_ms,
        target_key,
        lock_token,
    } = claimed;
    let renew = cx.renew_lease(
        Arc::new(Mutex::new(target_key.clone())),
        &lock_token,
        &record.delivery_id,
    );
    match job.agent_host.clone() {
        Some(route) => {
            let message = message_text(&job, created_ms);
            Delivery {
                cx: &cx,
                pool,
                record: &mut record,
                job: &job,
            }
            .run(&route, message)
            .await;
        }
        None => undelivered(
            &mut record,
            "the Copilot session's editor could not be read again at acceptance (its catalog \
             entry or endpoint registry is gone), so there is no Agent Host to hand it to; \
             nothing was sent, and Copilot has no CLI fallback"
                .to_owned(),
        ),
    }
    renew.abort();
    if !record.state.is_finished() {
        record.state = DeliveryState::Failed;
    }
    cx.answer_pending(&record.delivery_id);
    let closer = cx.clone();
    let closed = off_async(move || closer.close_delivery(record, &job, &target_key, &lock_token));
    if closed.await.is_none() {
        tracing::error!("an Agent Host delivery's outcome could not be recorded");
    }
    cx.wake_dispatcher();
}

/// One delivery on its way through the host.
struct Delivery<'a> {
    cx: &'a CarrierContext,
    pool: &'a HostPool,
    record: &'a mut DeliveryRecord,
    job: &'a Job,
}

impl Delivery<'_> {
    async fn run(self, route: &AgentHostJob, message: String) {
        let limit = Duration::from_secs(self.job.timeout_secs.max(1));
        let deadline = Instant::now() + limit;
        let mut stop = self.cx.stop_signal();
        // Return traffic to a Copilot sender: its route is checked once more, right before,
        // and the host it names — the owner of the sender's MCP process — is the one used.
        let is_return = self.record.answer.answers_delivery_id.is_some();
        let mut owner = None;
        if let Some(back) = self.job.copilot_return.clone().filter(|_| is_return) {
            match off_async(move || verify_return(&back)).await {
                Some(Ok(endpoint)) => owner = Some(endpoint),
                Some(Err(why)) => {
                    return undelivered(
                        self.record,
                        format!(
                            "the answer was not put into the sender's Copilot chat: {why}; \
                             read it with bridge_status"
                        ),
                    );
                }
                None => {}
            }
        }
        let mut conn = match connect(self.pool, route, owner.as_ref()).await {
            Ok(conn) => conn,
            Err(why) => return undelivered(self.record, why),
        };
        // A kept connection can end between two deliveries; found so before anything was
        // sent, it is replaced once.
        let mut reconnected = false;
        // The hand-over, waiting while the chat runs someone else's turn.
        let turn = loop {
            let request = DeliverRequest::new(route.session_uri.clone(), message.clone());
            let handed = tokio::select! {
                handed = conn.deliver(request) => handed,
                () = carrier_stopped(&mut stop) => {
                    return undelivered(self.record, "the daemon stopped before the message was handed to the Agent Host; nothing was sent".to_owned());
                }
            };
            match handed {
                Ok(turn) => break turn,
                Err(error @ HostError::ChatBusy { .. }) if route.is_busy_skipped => {
                    // A progress notice never waits for a busy sender: nothing was sent, and
                    // the note stays readable on the request.
                    return undelivered(
                        self.record,
                        format!(
                            "{error}: a progress notice never waits for a busy sender, so it \
                             was not sent; the request's progress_note keeps it"
                        ),
                    );
                }
                Err(HostError::ChatBusy { .. }) if Instant::now() + BUSY_RETRY < deadline => {
                    tokio::time::sleep(BUSY_RETRY).await;
                }
                Err(HostError::ConnectionLost { .. }) if !reconnected => {
                    // Lost while subscribing or before the turn's frame was queued: nothing
                    // reached the host, so a fresh connection may carry it.
                    reconnected = true;
                    conn = match connect(self.pool, route, None).await {
                        Ok(conn) => conn,
                        Err(why) => return undelivered(self.record, why),
                    };
                }
                Err(error @ HostError::UnknownOutcome { .. }) => {
                    // Sent, but the host never said: it may have started, so not undelivered.
                    self.record.state = DeliveryState::Failed;
                    self.record.outcome = Some(HandOverOutcome::Unknown);
                    self.record.error = Some(error.to_string());
                    return;
                }
                Err(error) => {
                    // Refused by the host (its words), or refused before sending (busy past
                    // the timeout, not ready, no default chat): nothing started.
                    return undelivered(self.record, format!("{error}; it is never re-sent"));
                }
            }
        };
        if is_return {
            // Return traffic is delivered once the host took it: the sender's turn that reads it
            // is the sender's own, not an answer to wait for.
            self.record.state = DeliveryState::Delivered;
            self.record.progress_note = Some(format!(
                "put into the sender's Copilot chat as turn {} in {}",
                turn.turn_id(),
                turn.chat()
            ));
            return;
        }
        self.record.state = DeliveryState::AwaitingPeer;
        self.record.progress_note = Some(format!(
            "accepted by the Agent Host as turn {} in {}; awaiting Copilot's answer",
            turn.turn_id(),
            turn.chat()
        ));
        self.save().await;
        let left = deadline.saturating_duration_since(Instant::now());
        let answered = tokio::select! {
            answered = turn.answer(left.max(Duration::from_secs(1))) => answered,
            () = carrier_stopped(&mut stop) => {
                self.record.state = DeliveryState::Failed;
                self.record.is_stopped_with_carrier = true;
                self.record.error = Some("the daemon stopped while Copilot's answer was awaited; the message was handed over and is never re-sent".to_owned());
                return;
            }
        };
        match answered {
            Ok(answer) => {
                self.cx
                    .pair_answer(self.record, &answer.text, watch_secs(self.job));
            }
            Err(error @ (HostError::TurnFailed { .. } | HostError::TurnCancelled { .. })) => {
                self.record.state = DeliveryState::Failed;
                self.record.error = Some(error.to_string());
            }
            Err(error) => {
                // The answer did not come back over the connection: the SDK's events may hold
                // it (read back by the request token, never re-sent).
                let why = error.to_string();
                self.record.state = DeliveryState::Failed;
                self.record.error = Some(why.clone());
                let (cx, mut record) = (self.cx.clone(), self.record.clone());
                if let Some(recovered) = off_async(move || {
                    cx.recover(&mut record, &why);
                    record
                })
                .await
                {
                    *self.record = recovered;
                }
            }
        }
    }

    async fn save(&self) {
        let (cx, record) = (self.cx.clone(), self.record.clone());
        off_async(move || {
            if let Err(error) = cx.db().update_delivery(&record) {
                tracing::warn!(%error, "could not record an Agent Host delivery's progress");
            }
        })
        .await;
    }
}

/// The kept connection to the live host of the route's editor, its registry read now (a host
/// restarted since acceptance is at a new socket with a new token, hence a new connection) —
/// or to `checked`, the entry a return's route check has just read, without reading the
/// registry again. The error says what to do.
async fn connect(
    pool: &HostPool,
    route: &AgentHostJob,
    checked: Option<&Endpoint>,
) -> Result<HostConnection, String> {
    if let Some(endpoint) = checked
        && let Some(key) = key_of(endpoint)
    {
        return pool.get(&key).await.map_err(|error| {
            format!(
                "could not reach the Agent Host of the editor at {}: {error}. Nothing was sent",
                route.user_data_dir
            )
        });
    }
    let dir = PathBuf::from(&route.endpoint_dir);
    let registry = off_async(move || endpoints::read_registry(&dir, cross_agent_process::is_alive))
        .await
        .unwrap_or_default();
    let mut tried = Vec::new();
    for endpoint in &registry.endpoints {
        let Some(key) = key_of(endpoint) else {
            continue;
        };
        match pool.get(&key).await {
            Ok(conn) => return Ok(conn),
            Err(error) => tried.push(error.to_string()),
        }
    }
    let problems: Vec<String> = registry.problems.iter().map(ToString::to_string).collect();
    Err(if tried.is_empty() {
        format!(
            "host not running: no Agent Host is running for the editor at {} any more \
             (VS Code was closed since the send was accepted){}; open VS Code and send again. \
             Nothing was sent, and Copilot has no CLI fallback",
            route.user_data_dir,
            if problems.is_empty() {
                String::new()
            } else {
                format!(" — {}", problems.join("; "))
            }
        )
    } else {
        format!(
            "could not reach the Agent Host of the editor at {}: {}. Nothing was sent",
            route.user_data_dir,
            tried.join("; ")
        )
    })
}

/// The pool's key for a registry entry with a socket address.
fn key_of(endpoint: &Endpoint) -> Option<EndpointKey> {
    let EndpointAddress::Socket { path } = &endpoint.address else {
        return None;
    };
    Some(EndpointKey {
        socket: path.clone(),
        pid: endpoint.pid,
        instance_id: endpoint.instance_id.clone(),
        token: ConnectionToken::new(endpoint.token.expose()),
    })
}

/// Failed without anything having reached the session.
fn undelivered(record: &mut DeliveryRecord, why: String) {
    record.state = DeliveryState::Failed;
    record.is_undelivered = true;
    record.error = Some(why);
}
