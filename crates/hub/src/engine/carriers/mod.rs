//! The carriers: the ways a delivery reaches its peer, behind one [`Carrier`] trait.
//!
//! A carrier is asked twice. At acceptance ([`Carrier::route`]) the registry offers the send
//! to each carrier in turn, and the first that takes it writes its route into the queued
//! [`Job`]; the record's `transport` names it from then on. When the dispatcher takes the
//! delivery off the queue (the busy lock held, the payload handed over), the carrier named by
//! the record's `transport` carries it ([`Carrier::carry`]) until the delivery is closed — or
//! hands it back re-routed to another transport (a Claude process gone since acceptance, a
//! panel with no empty Grok session), and the registry passes it on.
//!
//! A carrier sees the engine only through [`CarrierContext`] (`context.rs`): the store, the
//! dispatcher's services for the delivery it carries (lease, transcript check, turn started and
//! ended) and the answers part's (pairing, settling, closing the delivery with its return
//! traffic). The queue, the busy lock and the lease stay dispatch's, the answers and the return
//! traffic the answers part's.
//!
//! **Adding a carrier** (as Copilot's Agent Host was; a remote host over SSH next): one new file
//! in this folder implementing [`Carrier`] over a [`CarrierContext`] (a `pub(in crate::engine)`
//! type with a `Default`), and one line in the `carriers!` registration list below —
//! `agent_host: agent_host::AgentHostCarrier,` — which declares its module and registers it (where it stands there
//! is its priority at acceptance); plus its [`Transport`] variant in `protocol`, where the wire
//! and `decisions.jsonl` name it. Nothing else in the engine changes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use cross_agent_protocol::bridge::{DeliveryState, SendParams, Transport};
use cross_agent_stores::UnixMillis;

use super::target::Resolved;
use crate::Agent;
use crate::caller::Caller;
use crate::envelope;
use crate::records::{Claimed, Job};

mod context;

pub(super) use context::{CarrierContext, Parts};

/// Declares the carriers' modules and the registry over them: `field: module::Type`, one line
/// per carrier, in the order a send is offered to them at acceptance. Each type is a
/// `pub(in crate::engine)` [`Carrier`] with a `Default` (its own state, empty); the registry
/// holds one of each, as the field named, for the parts that read a carrier's state
/// (`bridge_status`, the native door's relay host).
macro_rules! carriers {
    ($($field:ident: $module:ident::$carrier:ident),+ $(,)?) => {
        $(mod $module;)+

        /// The carriers this engine has, in the order a send is offered to them at acceptance;
        /// the headless CLI, last, takes every send the others leave.
        #[derive(Clone)]
        pub(super) struct Carriers {
            $(pub(super) $field: Arc<$module::$carrier>,)+
        }

        impl Carriers {
            pub(super) fn new() -> Carriers {
                Carriers {
                    $($field: Arc::new(<$module::$carrier>::default()),)+
                }
            }

            /// Every carrier, in registration order.
            fn all(&self) -> impl Iterator<Item = Arc<dyn Carrier>> {
                [$(self.$field.clone() as Arc<dyn Carrier>),+].into_iter()
            }
        }
    };
}

// The registration list: adding a carrier is its file in this folder and one line here.
carriers! {
    panel: panel::PanelCarrier,
    native: native::NativeCarrier,
    agent_host: agent_host::AgentHostCarrier,
    gui: gui::GuiCarrier,
    headless: headless::HeadlessCarrier,
}

/// The GUI door's rule, which acceptance's no-headless guard asks too.
pub(super) use gui::{NotTaken, takes as gui_takes};

/// What a carrier's work on one delivery came to.
pub(super) enum Carried {
    /// The delivery is closed, or a task of the carrier's own closes it later (the dispatcher's
    /// worker slot is free either way).
    Closed,
    /// Nothing was sent: the delivery goes on by another transport (the record's `transport`
    /// and the job were changed to it).
    Rerouted(Box<Claimed>),
}

/// A carrier's work on one delivery, as a boxed future (the trait stays object-safe).
pub(super) type Carrying = Pin<Box<dyn Future<Output = Carried> + Send>>;

/// What a carrier is shown of an accepted send to decide whether it takes it.
pub(super) struct RouteQuery<'a> {
    pub(super) agent: Agent,
    pub(super) params: &'a SendParams,
    pub(super) caller: &'a Caller,
    pub(super) resolved: &'a Resolved,
}

/// One way of carrying a delivery to its peer.
pub(super) trait Carrier: Send + Sync + 'static {
    /// The transport it is, as records, receipts and decisions name it.
    fn transport(&self) -> Transport;

    /// At acceptance: whether this carrier takes the send. When it does, it writes its route
    /// into `job` (and nothing else). Blocking: it may read registries on disk.
    fn route(&self, cx: &CarrierContext, send: &RouteQuery<'_>, job: &mut Job) -> bool;

    /// Whether a queued delivery waits while someone else's turn is open in the target's
    /// transcript (docs/spec/cross-agent-mcp.md §9). A carrier whose peer queues messages itself says no.
    fn waits_for_open_turn(&self) -> bool {
        true
    }

    /// Carries a delivery taken off the queue: its busy lock and lease are held, and must be
    /// released by closing it ([`CarrierContext::close_delivery`]) — or handed on with
    /// [`Carried::Rerouted`] before anything was sent.
    fn carry(&self, cx: CarrierContext, claimed: Claimed) -> Carrying;
}

impl Carriers {
    /// The carrier that takes an accepted send (its route written into `job`), and its
    /// transport.
    pub(super) fn route(
        &self,
        cx: &CarrierContext,
        send: &RouteQuery<'_>,
        job: &mut Job,
    ) -> Transport {
        self.all()
            .find(|carrier| carrier.route(cx, send, job))
            .map_or(Transport::HeadlessCli, |carrier| carrier.transport())
    }

    /// The carrier of `transport`.
    pub(super) fn of(&self, transport: Transport) -> Option<Arc<dyn Carrier>> {
        self.all().find(|c| c.transport() == transport)
    }

    /// Whether a delivery carried by `transport` waits on someone else's open turn.
    pub(super) fn waits_for_open_turn(&self, transport: Transport) -> bool {
        self.of(transport).is_none_or(|c| c.waits_for_open_turn())
    }
}

impl Carriers {
    /// Hands a delivery taken off the queue to the carrier its record names, and on to the
    /// next one when a carrier re-routes it. A delivery is re-routed at most once per
    /// transport, so this always ends.
    pub(super) async fn carry(self, cx: CarrierContext, claimed: Claimed) {
        let mut claimed = claimed;
        let mut tried = Vec::new();
        loop {
            let transport = claimed.record.transport;
            let carrier = self.of(transport);
            let Some(carrier) = carrier.filter(|_| !tried.contains(&transport)) else {
                no_carrier(cx, claimed).await;
                return;
            };
            tried.push(transport);
            match carrier.carry(cx.clone(), claimed).await {
                Carried::Closed => return,
                Carried::Rerouted(next) => claimed = *next,
            }
        }
    }
}

/// A delivery whose transport no registered carrier serves (or that was re-routed in a
/// circle): failed undelivered, never sent.
async fn no_carrier(cx: CarrierContext, claimed: Claimed) {
    let Claimed {
        mut record,
        job,
        target_key,
        lock_token,
        ..
    } = claimed;
    tracing::error!(delivery = %record.delivery_id, transport = ?record.transport, "no carrier for a delivery");
    record.state = DeliveryState::Failed;
    record.is_undelivered = true;
    record.error = Some(format!(
        "not delivered: this daemon has no carrier for transport `{}`; nothing was sent",
        record.transport.as_str()
    ));
    cx.answer_pending(&record.delivery_id);
    let closer = cx.clone();
    super::dispatch::off_async(move || {
        closer.close_delivery(record, &job, &target_key, &lock_token);
    })
    .await;
    cx.wake_dispatcher();
}

/// The text a delivery carries: its body as sent (`raw`), else the envelope assembled at
/// hand-over (the `queued:` line says how long it waited).
pub(super) fn message_text(job: &Job, created_ms: i64) -> String {
    if job.raw {
        job.body.clone()
    } else {
        envelope::assemble(&job.body, created_ms, UnixMillis::now().0)
    }
}
