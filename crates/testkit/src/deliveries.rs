//! Records the hub's tests start from: a delivery as a send queues it, every field spelled once
//! here rather than in each test that needs one.

use cross_agent_protocol::Agent;
use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState, TargetSelectedBy, Transport};

/// Delivery `id`, queued from a Codex session to Claude session `s` over its CLI (hop 1 of 4,
/// the request id made from `id`): what a test changes is set over it.
pub fn queued_delivery(id: &str) -> DeliveryRecord {
    DeliveryRecord {
        delivery_id: id.into(),
        host: None,
        forwarded_from: None,
        request_id: format!("req_1795992430029_{id:0>6}"),
        state: DeliveryState::Queued,
        from_agent: Some(Agent::Codex),
        from_session: None,
        target_agent: Agent::Claude,
        target_session_id: Some("s".into()),
        target_cwd: None,
        target_selected_by: TargetSelectedBy::Caller,
        will_create_session: false,
        conversation_id: "conv_000000000001".into(),
        hop: 1,
        max_hops: 4,
        transport: Transport::HeadlessCli,
        created_at: "2026-11-29T00:00:00Z".into(),
        started_at: None,
        finished_at: None,
        expires_at: None,
        carrier_generation: Some(1),
        peer_pid: None,
        error: None,
        is_killed_by_timeout: false,
        is_stopped_with_carrier: false,
        is_reply_recovered: false,
        is_undelivered: false,
        reply_preview: None,
        late_reply_delivery_id: None,
        return_delivery_id: None,
        progress_delivery_id: None,
        progress_note: None,
        message_chars: 1,
        is_orphaned: false,
        is_return_status_only: true,
        target_transcript: None,
        outcome: None,
        answer: Default::default(),
    }
}
