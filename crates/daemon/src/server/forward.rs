//! A replaced daemon's failures, told to the daemon that replaced it.
//!
//! After `cross-agent reload` (or `daemon restart`) the old daemon drains: it finishes the turns
//! it carries, which may take minutes, while its successor serves and polls the Telegram bot
//! (one poller per token). A delivery that fails in the old daemon would reach no bot, so the
//! old daemon forwards its `DeliveryFailed` events over the home's socket — the successor's
//! now — as `forward_event`, and the successor publishes them to its own subscribers.
//!
//! Forwarding is best effort and never holds the drain up: one short connection per event, each
//! bounded by [`FORWARD_TIMEOUT`]; a successor that is gone or too old to know the method is
//! logged (`decisions.jsonl` keeps the delivery's outcome either way).

use std::time::Duration;

use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_protocol::bridge::DeliveryRecord;
use cross_agent_protocol::events::EngineEvent;
use cross_agent_protocol::rpc::{ClientKind, ForwardEventParams, ForwardedEvent};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

/// The most one forward may take (connect, `hello`, the call).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(5);

/// The running forwarder of a draining daemon.
pub(super) struct Forwarder {
    task: JoinHandle<()>,
    finished: watch::Sender<bool>,
}

impl Forwarder {
    /// Forwards every failure `events` carries from now on; `generation` is this daemon's.
    pub(super) fn start(
        events: broadcast::Receiver<EngineEvent>,
        home: Home,
        generation: u64,
    ) -> Forwarder {
        let (finished, finished_rx) = watch::channel(false);
        let task = tokio::spawn(forward_failures(events, home, generation, finished_rx));
        Forwarder { task, finished }
    }

    /// Forwards what is still queued (the failures of the engine's own shutdown among them) and
    /// stops.
    pub(super) async fn finish(self) {
        self.finished.send_replace(true);
        if let Err(error) = self.task.await {
            tracing::warn!(%error, "the event forwarder ended abnormally");
        }
    }
}

async fn forward_failures(
    mut events: broadcast::Receiver<EngineEvent>,
    home: Home,
    generation: u64,
    mut finished: watch::Receiver<bool>,
) {
    use broadcast::error::{RecvError, TryRecvError};

    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = finished.wait_for(|done| *done) => break,
        };
        match event {
            Ok(event) => forward_failure(&home, generation, event).await,
            Err(RecvError::Lagged(missed)) => fell_behind(missed),
            Err(RecvError::Closed) => return,
        }
    }
    // What the engine published before the end (its shutdown's failures among it).
    loop {
        match events.try_recv() {
            Ok(event) => forward_failure(&home, generation, event).await,
            Err(TryRecvError::Lagged(missed)) => fell_behind(missed),
            Err(TryRecvError::Empty | TryRecvError::Closed) => return,
        }
    }
}

fn fell_behind(missed: u64) {
    tracing::warn!(
        missed,
        "the forwarder fell behind; some failures were not forwarded"
    );
}

/// Forwards `event` if it is a failure (the only event the successor's bot needs).
async fn forward_failure(home: &Home, generation: u64, event: EngineEvent) {
    if let EngineEvent::DeliveryFailed(record) = event {
        forward(home, generation, record).await;
    }
}

/// Tells the daemon now serving `home` that delivery `record` failed here.
async fn forward(home: &Home, generation: u64, record: Box<DeliveryRecord>) {
    let delivery_id = record.delivery_id.clone();
    let params = ForwardEventParams {
        from_generation: generation,
        event: ForwardedEvent::DeliveryFailed { record },
    };
    let sent = tokio::time::timeout(FORWARD_TIMEOUT, async {
        let mut options = ConnectOptions::new(ClientKind::Daemon);
        options.hello_timeout = FORWARD_TIMEOUT;
        // Never `connect_or_start`: a stopping daemon starts nobody.
        let connection = cross_agent_ipc::connect(home, &options).await?;
        connection.client.call(params).await
    })
    .await;
    match sent {
        Ok(Ok(answer)) => tracing::info!(
            delivery_id = %delivery_id,
            subscribers = answer.subscribers,
            "told the successor of a failed delivery"
        ),
        Ok(Err(error)) => tracing::warn!(
            delivery_id = %delivery_id,
            %error,
            "could not tell the successor of a failed delivery"
        ),
        Err(_) => tracing::warn!(
            delivery_id = %delivery_id,
            "telling the successor of a failed delivery took too long"
        ),
    }
}
