//! Subscriptions a kept connection holds on to ([`crate::HostPool`]'s): after a delivery to a
//! chat, the connection stays subscribed to its session and chat, and keeps their state
//! current by applying each action the host sends with the protocol's own reducers
//! (`ahp::reducers`), so the next delivery to the same chat reads the state it would have got
//! from two `subscribe`s without sending them — the return of an answer into a Copilot
//! sender's chat is the case that counts (`docs/testing.md`, the copilot bench).
//!
//! Every user of a kept subscription gets a [`crate::client::Channel`] of its own: the state as
//! of the last action applied (its `from_seq` that action's `serverSeq`, the echo fence), and
//! every later event. When the connection ends, the subscription ends and so does every such
//! channel, exactly as for a fresh subscription (the unknown-outcome rule). An action the
//! reducers cannot place (one `ahp-types` could not read, say) retires the kept state: its
//! listeners still get every event, and the next user subscribes afresh instead of trusting a
//! state that may have drifted.

use std::sync::Arc;

use ahp::reducers::{ReduceOutcome, apply_action_to_chat, apply_action_to_session};
use ahp::{SessionSubscription, SubscriptionEvent};
use ahp_types::actions::ActionEnvelope;
use ahp_types::state::{Snapshot, SnapshotState};
use parking_lot::Mutex;
use tokio::sync::mpsc;

/// One kept subscription: its current state and who listens to it.
pub(crate) struct Kept {
    state: Mutex<KeptState>,
}

struct KeptState {
    snapshot: Snapshot,
    listeners: Vec<mpsc::UnboundedSender<SubscriptionEvent>>,
    ended: bool,
}

impl Kept {
    /// Starts keeping the subscription whose answer was `snapshot` and whose events `events`
    /// yields (`None`: the connection ended).
    pub(crate) fn start(snapshot: Snapshot, mut events: SessionSubscription) -> Arc<Kept> {
        let kept = Arc::new(Kept {
            state: Mutex::new(KeptState {
                snapshot,
                listeners: Vec::new(),
                ended: false,
            }),
        });
        let keeper = kept.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                let mut state = keeper.state.lock();
                if let SubscriptionEvent::Action(envelope) = &event
                    && !state.ended
                    && !apply(&mut state.snapshot, envelope)
                {
                    // No new user trusts this state; the ones listening still get every event.
                    tracing::debug!(channel = %envelope.channel, "a kept subscription's state could not follow an action; the next user subscribes afresh");
                    state.ended = true;
                }
                state.listeners.retain(|l| l.send(event.clone()).is_ok());
                if state.ended && state.listeners.is_empty() {
                    return;
                }
            }
            let mut state = keeper.state.lock();
            state.ended = true;
            state.listeners.clear();
        });
        kept
    }

    /// The state now and a queue of every later event, or `None` once the subscription ended.
    pub(crate) fn listen(&self) -> Option<(Snapshot, mpsc::UnboundedReceiver<SubscriptionEvent>)> {
        let mut state = self.state.lock();
        if state.ended {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        state.listeners.push(tx);
        Some((state.snapshot.clone(), rx))
    }
}

/// Applies an action the host sent on the channel to its kept state; false when the state
/// cannot follow it. A refused action (`rejectionReason`) changed nothing on the host.
fn apply(snapshot: &mut Snapshot, envelope: &ActionEnvelope) -> bool {
    if envelope.rejection_reason.is_none() {
        let outcome = match &mut snapshot.state {
            SnapshotState::Session(state) => apply_action_to_session(state, &envelope.action),
            SnapshotState::Chat(state) => apply_action_to_chat(state, &envelope.action),
            _ => return false,
        };
        if !matches!(outcome, ReduceOutcome::Applied | ReduceOutcome::NoOp) {
            return false;
        }
    }
    match i64::try_from(envelope.server_seq) {
        Ok(seq) => {
            snapshot.from_seq = seq;
            true
        }
        Err(_) => false,
    }
}
