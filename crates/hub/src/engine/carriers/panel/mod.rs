//! The panel carrier: a delivery written into an editor panel through its shim (a request, or
//! return traffic to the sender's panel). The wait runs on the blocking pool, its busy lock and
//! lease renewed meanwhile; no CLI is started and no process is ever killed: the panel is the
//! person's. The mechanics are this carrier's own, as methods of [`Door`] (one delivery's
//! context and the carrier's state): `inject` (one injection followed), `request` (a request
//! carried and settled), `returns` (return traffic put into the sender's panel).

use std::collections::HashMap;
use std::sync::Arc;

use cross_agent_protocol::bridge::{DeliveryRecord, TargetKey, Transport};
use cross_agent_protocol::panel::{InjectionKind, PendingApproval};
use parking_lot::Mutex;

use super::{Carried, Carrier, CarrierContext, Carrying, RouteQuery, message_text};
use crate::Agent;
use crate::engine::preview;
use crate::records::{Claimed, Job, PanelJob};

mod inject;
mod request;
mod returns;

pub(super) use request::confirmed_in_transcript;

/// The panel carrier and what it knows while its deliveries run.
#[derive(Default)]
pub(in crate::engine) struct PanelCarrier {
    /// The approval each panel delivery's turn waits on now, as its shim reported it.
    approvals: Arc<Approvals>,
}

impl PanelCarrier {
    /// The approval delivery `delivery_id`'s turn waits on, as its shim last reported it.
    pub(in crate::engine) fn approval(&self, delivery_id: &str) -> Option<PendingApproval> {
        self.approvals.0.lock().get(delivery_id).cloned()
    }
}

/// The approvals the panel deliveries' turns wait on, by delivery id.
#[derive(Default)]
struct Approvals(Mutex<HashMap<String, PendingApproval>>);

impl Approvals {
    /// Notes (or, with `None`, clears) the approval a delivery's turn waits on.
    fn set(&self, delivery_id: &str, approval: Option<PendingApproval>) {
        let mut approvals = self.0.lock();
        match approval {
            Some(approval) => {
                approvals.insert(delivery_id.to_owned(), approval);
            }
            None => {
                approvals.remove(delivery_id);
            }
        }
    }
}

impl Carrier for PanelCarrier {
    fn transport(&self) -> Transport {
        Transport::Panel
    }

    /// A send resolution put in a panel (the session a panel holds, or a new conversation a
    /// panel of this window opens).
    fn route(&self, _cx: &CarrierContext, send: &RouteQuery<'_>, job: &mut Job) -> bool {
        let Some(choice) = send.resolved.panel.as_ref() else {
            return false;
        };
        let caller = send.caller;
        job.panel = Some(PanelJob {
            kind: InjectionKind::Request,
            shim_pid: choice.shim_pid,
            session_id: choice.session_id.clone(),
            new_session: choice.new_session,
            // A new Codex thread is named "sender: head of the message" (else "New chat").
            title: choice.new_session.then(|| {
                let head: String = send
                    .params
                    .message
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                format!(
                    "{}: {}",
                    caller.agent.map_or("peer", Agent::as_str),
                    preview(&head, 60)
                )
            }),
            sender_label: caller.agent.map(|a| {
                format!(
                    "{a} · session {}",
                    caller.session_id.as_deref().unwrap_or("(unknown)")
                )
            }),
        });
        true
    }

    fn carry(&self, cx: CarrierContext, claimed: Claimed) -> Carrying {
        let approvals = self.approvals.clone();
        Box::pin(async move {
            match run_panel_delivery(cx, approvals, claimed).await {
                Some(to_cli) => Carried::Rerouted(Box::new(to_cli)),
                None => Carried::Closed,
            }
        })
    }
}

/// One panel delivery's work: its context and the carrier's own state. The door's mechanics
/// (`inject`, `request`, `returns`) are its methods.
struct Door<'a> {
    cx: &'a CarrierContext,
    approvals: &'a Approvals,
}

/// The busy lock a panel request holds; its key moves to the conversation a panel opens for it
/// (the lease renewal reads it from here).
struct HeldLock {
    key: Arc<Mutex<String>>,
    token: String,
}

/// Tells the dispatcher that a return delivery waits in the sender's shim (accepted `queued`
/// behind the sender's running turn): its worker slot is given back while the wait for
/// `written` goes on, so replies to busy senders never hold the workers.
type FreeWorker = tokio::sync::oneshot::Sender<()>;

/// What became of a request carried into a panel.
enum RequestEnd {
    /// Settled on the record (delivered, recovered or failed).
    Settled,
    /// A new Grok conversation with no empty session left in the panel: nothing was sent, and
    /// the message goes over the CLI as a new session instead (docs/spec/cross-agent-mcp.md "When the panel has no
    /// conversation open").
    ToCli,
}

/// A delivery carried by an editor panel (a request, or return traffic to the sender's
/// panel): the wait runs on the blocking pool, its busy lock and lease renewed meanwhile.
/// No CLI is started and no process is ever killed: the panel is the person's. The one
/// exception is a new Grok conversation the panel has no empty session for: it is handed
/// back, turned into a new CLI session, for the headless carrier to run.
async fn run_panel_delivery(
    cx: CarrierContext,
    approvals: Arc<Approvals>,
    claimed: Claimed,
) -> Option<Claimed> {
    let delivery_id = claimed.record.delivery_id.clone();
    let held = HeldLock {
        key: Arc::new(Mutex::new(claimed.target_key.clone())),
        token: claimed.lock_token.clone(),
    };
    let renew = cx.renew_lease(held.key.clone(), &held.token, &delivery_id);
    let (free, freed) = tokio::sync::oneshot::channel();
    let worker = cx.clone();
    let work = tokio::task::spawn_blocking(move || {
        let door = Door {
            cx: &worker,
            approvals: &approvals,
        };
        carry_in_panel(&door, claimed, held, Some(free))
    });
    let this = cx.clone();
    let settle = async move {
        let finished = work.await;
        renew.abort();
        match finished {
            Ok(to_cli) => {
                this.wake_dispatcher();
                to_cli
            }
            Err(error) => {
                tracing::error!(%error, "a panel delivery's outcome could not be recorded");
                this.carried_no_more(&delivery_id);
                this.wake_dispatcher();
                None
            }
        }
    };
    let mut settle = Box::pin(settle);
    tokio::select! {
        to_cli = &mut settle => to_cli,
        Ok(()) = freed => {
            // Queued in the sender's shim: the rest of the wait is a parked blocking
            // thread and this task, outside the dispatcher's worker count.
            tokio::spawn(settle);
            cx.wake_dispatcher();
            None
        }
    }
}

/// The blocking part of a panel delivery: the request (or return traffic) written and
/// followed to its end, and the delivery closed — or, re-routed to the CLI, handed back.
fn carry_in_panel(
    door: &Door<'_>,
    claimed: Claimed,
    held: HeldLock,
    free: Option<FreeWorker>,
) -> Option<Claimed> {
    let Claimed {
        mut record,
        mut job,
        created_ms,
        mut target_key,
        lock_token,
    } = claimed;
    let cx = door.cx;
    let mut free = free;
    let is_request = job
        .panel
        .as_ref()
        .is_some_and(|p| p.kind == InjectionKind::Request);
    if is_request {
        let text = message_text(&job, created_ms);
        let carried = door.carry_panel_request(&mut record, &job, text, &held);
        // The conversation the panel opened holds the lock now.
        target_key = held.key.lock().clone();
        if let RequestEnd::ToCli = carried {
            panel_to_cli(cx, &mut record, &mut job, &mut target_key, &lock_token);
            return Some(Claimed {
                record,
                job,
                created_ms,
                target_key,
                lock_token,
            });
        }
    } else {
        door.carry_return(&mut record, &job, &mut free);
    }
    cx.answer_pending(&record.delivery_id);
    cx.close_delivery(record, &job, &target_key, &lock_token);
    None
}

/// Turns a new conversation the panel could not open into a new CLI session: a fresh
/// session id (Grok takes it as `--session-id`), the headless transport, and the busy lock
/// and queue key moved to that session.
fn panel_to_cli(
    cx: &CarrierContext,
    record: &mut DeliveryRecord,
    job: &mut Job,
    target_key: &mut String,
    token: &str,
) {
    let id = uuid::Uuid::new_v4().to_string();
    job.panel = None;
    job.new_session_id = Some(id.clone());
    record.transport = Transport::HeadlessCli;
    record.target_session_id = Some(id.clone());
    record.target_transcript = None;
    let new_key = TargetKey::new(record.target_agent, id.as_str()).to_string();
    let db = cx.db();
    let _ = db.rekey_lock(target_key, &new_key, token);
    let _ = db.retarget_delivery(&record.delivery_id, &new_key);
    if let Err(error) = db.update_delivery(record) {
        tracing::warn!(%error, "could not record a new conversation moved to the CLI");
    }
    *target_key = new_key;
}
