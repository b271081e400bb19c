//! The engine's event stream, subscribed to in process as the bot and tests do: an accepted
//! send is announced at once, a refused one not at all, and a delivery that fails is announced
//! with the record the store holds.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use cross_agent_protocol::bridge::{Agent, DeliveryState, Transport};
use cross_agent_protocol::events::EngineEvent;
use pretty_assertions::assert_eq;
use tokio::sync::broadcast::error::TryRecvError;

use super::guards::bench;

/// Only guards against a hang; nothing here is timed.
const HANG: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_send_and_its_failure_are_events_and_a_refusal_is_none() {
    let bench = bench();
    let mut events = bench.engine.subscribe();
    let codex = bench.home.join("codex-that-fails");
    std::fs::write(&codex, "#!/bin/sh\necho 'no model here' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o755)).unwrap();
    let codex = codex.to_string_lossy().into_owned();
    let caller = bench.caller("claude", &[("CROSS_AGENT_CODEX_BIN", codex.as_str())]);

    let mut empty = bench.params(Agent::Codex, caller.clone());
    empty.message = " ".into();
    bench.refused(empty);
    assert_eq!(events.try_recv(), Err(TryRecvError::Empty));

    let mut params = bench.params(Agent::Codex, caller);
    params.new_session = true;
    let receipt = bench.accepted(params);
    assert_eq!(
        events.try_recv(),
        Ok(EngineEvent::DeliveryAccepted {
            delivery_id: receipt.delivery_id.clone(),
            target_agent: Agent::Codex,
            target_session_id: None,
            transport: Transport::HeadlessCli,
        })
    );

    bench.engine.start();
    let settled = tokio::time::timeout(HANG, events.recv())
        .await
        .expect("the delivery settled")
        .unwrap();
    let EngineEvent::DeliveryFailed(failed) = settled else {
        panic!("the next event is the failure: {settled:?}");
    };
    bench.engine.shutdown().await;
    assert_eq!(failed.delivery_id, receipt.delivery_id);
    assert_eq!(failed.state, DeliveryState::Failed);
    let error = failed.error.clone().unwrap_or_default();
    assert!(
        error.contains("exit code 1") && error.contains("no model here"),
        "{error}"
    );
    let stored = cross_agent_hub::db::HubDb::open(&bench.hub_db())
        .unwrap()
        .delivery(&receipt.delivery_id)
        .unwrap()
        .unwrap();
    assert_eq!(*failed, stored, "the event carries the record as stored");
}
