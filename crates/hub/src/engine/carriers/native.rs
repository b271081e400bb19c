//! The native carrier: a delivery to a Claude session a live Claude Code process holds (and no
//! panel does) goes through Claude's own cross-session messaging, sent by a relay the daemon
//! hosts. The door's mechanics — the relay host, the receipt, the inbound mail — are in
//! [`crate::engine::native`].

use cross_agent_protocol::bridge::Transport;

use super::{Carried, Carrier, CarrierContext, Carrying, RouteQuery};
use crate::engine::dispatch::off_async;
use crate::engine::native::NativeDoor;
use crate::records::{Claimed, Job};

/// The native carrier and its door.
#[derive(Default)]
pub(in crate::engine) struct NativeCarrier {
    pub(in crate::engine) door: NativeDoor,
}

impl Carrier for NativeCarrier {
    fn transport(&self) -> Transport {
        Transport::ClaudeNative
    }

    fn route(&self, cx: &CarrierContext, send: &RouteQuery<'_>, job: &mut Job) -> bool {
        job.native = cx.native_route(send.agent, &send.params.caller, send.caller, send.resolved);
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
        Box::pin(async move {
            let mut claimed = claimed;
            let checker = cx.clone();
            let (record, job) = (claimed.record.clone(), claimed.job.clone());
            let checked = off_async(move || {
                let (mut record, mut job) = (record, job);
                let live = checker.native_still_live(&mut record, &mut job);
                (live, record, job)
            })
            .await;
            match checked {
                Some((live, record, job)) => {
                    claimed.record = record;
                    claimed.job = job;
                    if live {
                        cx.run_native_delivery(claimed).await;
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
