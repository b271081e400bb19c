//! The engine's event stream ([`EngineEvent`]): a bounded broadcast the bot, the notifications
//! and tests subscribe to in process. Publishing never waits: with nobody subscribed an event
//! is dropped, and a subscriber that falls more than [`EVENTS_KEPT`] behind is told how many it
//! missed (tokio's `RecvError::Lagged`).

use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState};
use cross_agent_protocol::events::EngineEvent;
use tokio::sync::broadcast;

use super::Engine;

/// Events kept for a slow subscriber before it starts missing them.
pub(super) const EVENTS_KEPT: usize = 1024;

impl Engine {
    /// Every event from now on (see [`EngineEvent`]).
    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.inner.events.subscribe()
    }

    /// Publishes an event that happened in another daemon of this home — a replaced one still
    /// draining what it carries (`forward_event`) — so this daemon's subscribers hear of it as
    /// of their own. Returns how many subscribers it reached.
    pub fn publish_forwarded(&self, event: EngineEvent) -> usize {
        self.inner.events.send(event).unwrap_or(0)
    }
}

/// A delivery settled: `Delivered` or `DeliveryFailed` with its record, to `events`' subscribers.
pub(super) fn emit_settled(events: &broadcast::Sender<EngineEvent>, record: &DeliveryRecord) {
    let event = match record.state {
        DeliveryState::Delivered => EngineEvent::Delivered(Box::new(record.clone())),
        DeliveryState::Failed => EngineEvent::DeliveryFailed(Box::new(record.clone())),
        DeliveryState::Queued | DeliveryState::Delivering | DeliveryState::AwaitingPeer => return,
    };
    // An error only says nobody listens now.
    let _ = events.send(event);
}
