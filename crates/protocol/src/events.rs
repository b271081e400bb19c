//! What the engine tells its subscribers as it happens, in process: the Telegram bot, the
//! notifications, tests. Typed, never written anywhere — `decisions.jsonl` stays the durable
//! record for people; this is how the daemon's own parts learn of a delivery's course without
//! reading that file back.
//!
//! The engine publishes on a bounded broadcast channel: a subscriber that falls behind is told
//! how many events it missed (and should say so) rather than holding the engine up.

use crate::bridge::DeliveryRecord;
use crate::panel::PendingApproval;
use crate::vocabulary::{Agent, Transport};

/// One thing that happened to a delivery.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// A send was accepted and queued (its receipt is the caller's).
    DeliveryAccepted {
        delivery_id: String,
        target_agent: Agent,
        /// `None` for a new session whose id the agent chooses.
        target_session_id: Option<String>,
        transport: Transport,
    },
    /// A delivery settled `delivered`: its record as stored.
    Delivered(Box<DeliveryRecord>),
    /// A delivery settled `failed` (its `error` says why; `is_undelivered` when the peer never
    /// got it): its record as stored.
    DeliveryFailed(Box<DeliveryRecord>),
    /// A request's real answer arrived after it settled, as a delivery record of its own.
    LateAnswer {
        request_delivery_id: String,
        late_delivery_id: String,
    },
    /// A panel delivery's turn waits on an approval (as its shim reported it).
    ApprovalWaiting {
        delivery_id: String,
        approval: PendingApproval,
    },
}

impl EngineEvent {
    /// The delivery it is about (for a late answer: the request's).
    pub fn delivery_id(&self) -> &str {
        match self {
            EngineEvent::DeliveryAccepted { delivery_id, .. }
            | EngineEvent::ApprovalWaiting { delivery_id, .. } => delivery_id,
            EngineEvent::Delivered(record) | EngineEvent::DeliveryFailed(record) => {
                &record.delivery_id
            }
            EngineEvent::LateAnswer {
                request_delivery_id,
                ..
            } => request_delivery_id,
        }
    }
}
