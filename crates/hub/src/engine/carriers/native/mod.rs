//! The native carrier: a delivery to a Claude session a live Claude Code process holds (and no
//! panel does) goes through Claude's own cross-session messaging, sent by a relay the daemon
//! hosts (docs/spec/claude-relay.txt, `claude_relay`).
//!
//! **Routing.** A send to a Claude session whose registry entry shows a live process (its pid
//! runs and started at the entry's `procStart`) and that no panel shim hosts goes through the
//! native door (`transport: "claude-native"`): a headless `claude -p --resume` beside a running
//! process would be a second writer on the same conversation, and its answer would have no way
//! back. Every other Claude session is dormant — no entry, or an entry a crash left behind with
//! its socket — and resumes over the CLI as before. The rule is applied at acceptance (here)
//! and again when the delivery goes out: a process that exited meanwhile makes the session
//! dormant. The door's mechanics are the carrier's own: `door` (the relay host, the send,
//! Claude's receipt, the wait for the answer) and `inbound` (the mail the relays' hooks bring).

use std::sync::Arc;

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{CallerContext, DeliveryRecord, Transport};

use super::{Carried, Carrier, CarrierContext, Carrying, RouteQuery};
use crate::Agent;
use crate::caller::Caller;
use crate::engine::dispatch::off_async;
use crate::engine::native::{CLI_REPRESENTED, claude_registry};
use crate::engine::target::Resolved;
use crate::records::{Claimed, Job, NativeJob};

mod door;
mod inbound;

pub(in crate::engine) use door::NativeDoor;

/// The native carrier and its door.
#[derive(Default)]
pub(in crate::engine) struct NativeCarrier {
    pub(in crate::engine) door: Arc<NativeDoor>,
}

impl Carrier for NativeCarrier {
    fn transport(&self) -> Transport {
        Transport::ClaudeNative
    }

    fn route(&self, cx: &CarrierContext, send: &RouteQuery<'_>, job: &mut Job) -> bool {
        job.native = native_route(
            cx,
            &self.door,
            send.agent,
            &send.params.caller,
            send.caller,
            send.resolved,
        );
        job.native.is_some()
    }

    /// Claude's own inbox takes the message while the session works and hands it over at its
    /// next tool round or turn, so a busy live session is no reason to hold it.
    fn waits_for_open_turn(&self) -> bool {
        false
    }

    /// The route is looked at again first: a process that exited since acceptance leaves the
    /// session dormant, and the delivery resumes it over the CLI instead (nothing was sent).
    fn carry(&self, cx: CarrierContext, claimed: Claimed) -> Carrying {
        let door = self.door.clone();
        Box::pin(async move {
            let mut claimed = claimed;
            let (checker, checker_door) = (cx.clone(), door.clone());
            let (record, job) = (claimed.record.clone(), claimed.job.clone());
            let checked = off_async(move || {
                let (mut record, mut job) = (record, job);
                let live = native_still_live(&checker, &checker_door, &mut record, &mut job);
                (live, record, job)
            })
            .await;
            match checked {
                Some((live, record, job)) => {
                    claimed.record = record;
                    claimed.job = job;
                    if live {
                        door::Native { cx, door }.run_native_delivery(claimed).await;
                        return Carried::Closed;
                    }
                }
                // The check itself failed: nothing was sent natively, and the CLI is the
                // route that needs no live process.
                None => {
                    claimed.job.native = None;
                    claimed.record.transport = Transport::HeadlessCli;
                }
            }
            Carried::Rerouted(Box::new(claimed))
        })
    }
}

/// The native route of a send, when it takes one: a Claude session (not a new one) no panel
/// carries, held by a live Claude Code process that announced a messaging socket, and a
/// daemon that can host relays.
fn native_route(
    cx: &CarrierContext,
    door: &NativeDoor,
    agent: Agent,
    params_caller: &CallerContext,
    caller: &Caller,
    resolved: &Resolved,
) -> Option<NativeJob> {
    if agent != Agent::Claude
        || resolved.panel.is_some()
        || resolved.new_reason.is_some()
        || !door.is_enabled()
    {
        return None;
    }
    let session_id = resolved.session_id.as_deref()?;
    let registry = claude_registry(params_caller);
    let entry = registry.live_session(session_id)?;
    // A `claude -p --resume` the bridge itself runs registers too: that is a turn of ours,
    // not a session someone runs, and the busy lock already orders sends behind it.
    if cx.runs_turn_of(entry.pid) {
        return None;
    }
    Some(NativeJob {
        pid: entry.pid,
        proc_start: entry.proc_start_ticks()?,
        address: entry.native_address()?,
        registry_name: entry.name.clone(),
        represented: represented(caller),
        permission_mode: resolved
            .transcript
            .as_deref()
            .and_then(cross_agent_stores::claude_registry::last_permission_mode),
    })
}

/// A native delivery about to go out: is its process still the one the registry named? If
/// not, the session is dormant now and the delivery resumes it over the CLI (decided here,
/// before anything was sent, so nothing is sent twice).
fn native_still_live(
    cx: &CarrierContext,
    door: &NativeDoor,
    record: &mut DeliveryRecord,
    job: &mut Job,
) -> bool {
    let Some(native) = &job.native else {
        return false;
    };
    if cross_agent_process::is_same_process(native.pid, native.proc_start)
        && door.is_enabled()
    {
        return true;
    }
    let why = format!(
        "the Claude Code process holding the session (pid {}) is gone; the session is \
         dormant and is resumed over the CLI",
        native.pid
    );
    tracing::info!(delivery = %record.delivery_id, "{why}");
    cx.decisions().record(events::native_route_changed(record, &why));
    job.native = None;
    record.transport = Transport::HeadlessCli;
    record.peer_pid = None;
    if let Err(error) = cx.db().update_delivery(record) {
        tracing::warn!(%error, "could not record a native delivery moved to the CLI");
    }
    false
}

/// The name a relay speaks for: the sender's session by its agent and short id, or
/// [`CLI_REPRESENTED`] when the sender has no session.
fn represented(caller: &Caller) -> String {
    match (&caller.agent, caller.session_id.as_deref()) {
        (Some(agent), Some(id)) => {
            let short: String = id.chars().filter(|c| *c != '-').take(8).collect();
            format!("{agent}-{short}")
        }
        _ => CLI_REPRESENTED.to_owned(),
    }
}
