//! The local record of a send forwarded to another machine (docs/remote.md, "Addressing").
//!
//! A send addressed to a host is accepted here, recorded here, and forwarded over that host's
//! link, where the remote daemon delivers it through its own doors under the same delivery
//! id. The record here is never dispatched (it has no payload and is never `queued`) and
//! never orphaned by a restart: what happened to it is the remote record's to say, and the
//! daemon's follower copies that here ([`Engine::settle_remote`]) whenever the link is up —
//! including after a link that dropped mid-delivery comes back. Nothing is ever re-sent.

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{
    DeliveryRecord, DeliveryState, HandOverOutcome, Refusal, SendParams, SendReceipt, SendResponse,
    TargetSelectedBy,
};
use cross_agent_protocol::timestamp::now_rfc3339;
use cross_agent_stores::UnixMillis;

use super::Engine;
use super::receipt::fresh_record;
use crate::Agent;
use crate::caller::identify;
use crate::envelope;
use crate::error::Result;

impl Engine {
    /// Writes the decision line of a send the daemon refused before any engine took it (a
    /// host that is not connected, a name on no host or on two): the same `send_refused` /
    /// `name_ambiguous` line a refusal here writes. A refusal by the host itself is that
    /// host's to record.
    pub fn record_refused_send(&self, agent: Agent, refusal: &Refusal) {
        self.inner
            .decisions
            .record_all(events::send(agent, &SendResponse::Refused(refusal.clone())));
    }

    /// Records a send about to be forwarded to `host` (`delivering`, the sender as this
    /// machine identifies it) and returns its record; the caller forwards it with that id.
    pub fn record_remote_send(&self, host: &str, params: &SendParams) -> Result<DeliveryRecord> {
        let caller = identify(&params.caller, &self.started_turns());
        let now = now_rfc3339();
        let created_ms = UnixMillis::now().0;
        let record = DeliveryRecord {
            host: Some(host.to_owned()),
            // The request id is given by the remote's receipt.
            target_session_id: params.session_id.clone().filter(|s| !s.trim().is_empty()),
            target_cwd: params.cwd.clone(),
            target_selected_by: if params.session_id.is_some() {
                TargetSelectedBy::Caller
            } else if params.new_session {
                TargetSelectedBy::NewSession
            } else {
                TargetSelectedBy::Discovery
            },
            will_create_session: params.new_session,
            conversation_id: params.conversation_id.clone().unwrap_or_default(),
            started_at: Some(now.clone()),
            ..fresh_record(
                envelope::delivery_id(),
                DeliveryState::Delivering,
                &caller,
                params,
                now,
            )
        };
        let target_key = format!(
            "{host}/{}:{}",
            params.agent,
            record.target_session_id.as_deref().unwrap_or("?")
        );
        self.db()
            .insert_remote_delivery(&record, &target_key, created_ms)?;
        Ok(record)
    }

    /// The remote accepted the forwarded send: what its receipt says goes on the record here.
    pub fn remote_accepted(&self, delivery_id: &str, receipt: &SendReceipt) -> Result<()> {
        let db = self.db();
        let Some(mut record) = db.delivery(delivery_id)? else {
            return Ok(());
        };
        if record.state.is_finished() {
            // The follower was quicker (a very short turn): the remote record already spoke.
            return Ok(());
        }
        record.state = DeliveryState::AwaitingPeer;
        record.request_id = receipt.request_id.clone();
        record.target_session_id = receipt.target_session_id.clone();
        record.target_selected_by = receipt.target_selected_by;
        record.will_create_session = receipt.will_create_session;
        record.conversation_id = receipt.conversation_id.clone();
        record.hop = receipt.hop;
        record.max_hops = receipt.max_hops;
        record.transport = receipt.transport;
        db.update_delivery(&record)
    }

    /// The forwarded send was refused there, or never reached it: the record here ends
    /// `failed` with `why`.
    pub fn remote_failed(&self, delivery_id: &str, why: &str, unknown: bool) -> Result<()> {
        let db = self.db();
        let Some(mut record) = db.delivery(delivery_id)? else {
            return Ok(());
        };
        record.state = DeliveryState::Failed;
        record.finished_at = Some(now_rfc3339());
        record.error = Some(why.to_owned());
        if unknown {
            record.outcome = Some(HandOverOutcome::Unknown);
        }
        db.update_delivery(&record)
    }

    /// Takes the remote record's word for a forwarded delivery: its state, answer and how it
    /// was paired, keeping what only this side knows (the host, the sender here). Returns the
    /// record as now stored, or `None` when there is no such forwarded record here.
    pub fn settle_remote(&self, remote: &DeliveryRecord) -> Result<Option<DeliveryRecord>> {
        let db = self.db();
        let Some(local) = db.delivery(&remote.delivery_id)? else {
            return Ok(None);
        };
        if local.host.is_none() || local.state.is_finished() {
            return Ok(Some(local));
        }
        let mut record = remote.clone();
        record.host = local.host.clone();
        record.forwarded_from = None;
        record.from_agent = local.from_agent;
        record.from_session = local.from_session.clone();
        record.created_at = local.created_at.clone();
        record.carrier_generation = None;
        record.peer_pid = None;
        // The remote had no route back to a sender on another machine; the answer is on this
        // record (and the remote's), read with `status ID`.
        record.is_return_status_only = record.state.is_finished();
        record.return_delivery_id = None;
        // A late answer there is recorded here as one of this daemon's own, when the follower
        // brings it ([`Engine::remote_late_answer`]); the remote's id for it means nothing here.
        record.late_reply_delivery_id = local.late_reply_delivery_id.clone();
        if record == local {
            return Ok(Some(local));
        }
        db.update_delivery(&record)?;
        Ok(Some(record))
    }

    /// Forwarded deliveries not finished yet, oldest first: the follower's work.
    pub fn remote_unfinished(&self) -> Result<Vec<DeliveryRecord>> {
        let records = self.db().deliveries_in(
            &[DeliveryState::Delivering, DeliveryState::AwaitingPeer],
            1000,
        )?;
        Ok(records.into_iter().filter(|r| r.host.is_some()).collect())
    }

    /// Forwarded deliveries that ended with an answer taken by timing alone, whose late-answer
    /// watch there still runs and whose late answer has not come here yet: the follower asks
    /// their remote records for one, newest first.
    pub fn remote_awaiting_late_answers(&self) -> Result<Vec<DeliveryRecord>> {
        let now = UnixMillis::now().0;
        let records = self.db().deliveries_in(&[DeliveryState::Delivered], 1000)?;
        Ok(records
            .into_iter()
            .filter(|r| r.host.is_some() && r.late_reply_delivery_id.is_none())
            .filter(|r| {
                r.answer
                    .late_answer_watch_until
                    .as_deref()
                    .and_then(UnixMillis::parse_rfc3339)
                    .is_some_and(|until| until.0 >= now)
            })
            .collect())
    }

    /// A forwarded request's late answer, found by the watch on the remote machine: recorded
    /// here and pushed to the sender exactly as a local late answer is (its own delivery
    /// record, a `LATE ANSWER` to the sender's live panel, else read with `status ID`).
    /// Nothing is done for a request that is not a forwarded one or already has its late
    /// answer. Blocking.
    pub fn remote_late_answer(&self, request_delivery_id: &str, text: &str) -> Result<()> {
        let Some(request) = self.db().delivery(request_delivery_id)? else {
            return Ok(());
        };
        if request.host.is_none() || request.late_reply_delivery_id.is_some() {
            return Ok(());
        }
        self.inner
            .answers
            .late_answer_arrived(request_delivery_id, text);
        Ok(())
    }
}
