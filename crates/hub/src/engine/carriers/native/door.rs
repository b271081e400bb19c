//! The native door's delivery: the relay host (started with the first native send), the
//! envelope sent with Claude's own `SendMessage`, Claude's receipt, and the wait for the peer's
//! answer, which comes back as inbound mail paired by its request id ([`super::inbound`]).
//! [`Native`] is one delivery's work: its context and the carrier's door.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{DeliveryRecord, DeliveryState};
use cross_agent_relay::{NativeSend, RelayConfig, RelayHost, RelayReceipt};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::engine::NativeSettings;
use crate::engine::carriers::{CarrierContext, message_text};
use crate::engine::dispatch::{carrier_stopped, off_async};
use crate::engine::watch_secs;
use crate::records::{Claimed, Job, NativeJob};

/// The engine's native door: the settings, the relay host once started, and the deliveries
/// whose answer is awaited, by request id.
#[derive(Default)]
pub(in crate::engine) struct NativeDoor {
    settings: Mutex<Option<NativeSettings>>,
    host: tokio::sync::Mutex<Option<RelayHost>>,
    /// Started host, readable without awaiting (the daemon's `hook` calls).
    started: Mutex<Option<RelayHost>>,
    /// Native deliveries sent and awaiting their answer: request id → their events.
    pub(super) pending: Mutex<HashMap<String, Pending>>,
    /// Claude's msg_id of each sent message → its request id (delivery notices name msg_ids).
    pub(super) msg_ids: Mutex<HashMap<String, String>>,
}

impl NativeDoor {
    /// Lets this door host relays (the daemon calls it once, before the engine starts).
    pub(in crate::engine) fn enable(&self, settings: NativeSettings) {
        *self.settings.lock() = Some(settings);
    }

    /// Whether this daemon can host relays.
    pub(super) fn is_enabled(&self) -> bool {
        self.settings.lock().is_some()
    }

    /// The relay host, once a native send started it.
    pub(in crate::engine) fn started_host(&self) -> Option<RelayHost> {
        self.started.lock().clone()
    }

    /// The started relay host, taken to be stopped.
    pub(in crate::engine) fn take_started_host(&self) -> Option<RelayHost> {
        self.started.lock().take()
    }
}

pub(super) struct Pending {
    pub(super) delivery_id: String,
    pub(super) events: mpsc::UnboundedSender<NativeEvent>,
}

/// What the inbound mail says about one awaited delivery.
#[derive(Debug)]
pub(super) enum NativeEvent {
    /// The peer answered (the body of its envelope, byte-exact).
    Answer { text: String, relay: String },
    /// A delivery notice: `held` (not delivered yet), `released`, `expired`, `refused`, ….
    Notice { status: String },
}

/// One native delivery's work: its context and the carrier's door (cheap to clone: the wait
/// for the answer and the inbound mail run as tasks of their own).
#[derive(Clone)]
pub(super) struct Native {
    pub(super) cx: CarrierContext,
    pub(super) door: Arc<NativeDoor>,
}

impl Native {
    /// The relay host, started on first use with this job's Claude binary and environment.
    async fn host_for(&self, job: &Job) -> Result<RelayHost, String> {
        let mut slot = self.door.host.lock().await;
        if let Some(host) = slot.as_ref() {
            return Ok(host.clone());
        }
        let Some(settings) = self.door.settings.lock().clone() else {
            return Err("this daemon hosts no relays".to_owned());
        };
        let claude = job
            .settings
            .get(cross_agent_protocol::settings::CLAUDE_BIN)
            .filter(|b| !b.trim().is_empty())
            .map_or_else(|| PathBuf::from("claude"), PathBuf::from);
        let config = RelayConfig {
            home: self.cx.state_root().to_path_buf(),
            claude,
            cross_agent: settings.cross_agent.clone(),
            claude_env: job
                .child_env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            machine: settings.machine.clone(),
            decisions: self.cx.decisions().clone(),
            idle_stop: settings.idle_stop,
            send_timeout: settings.send_timeout,
            reply_wait: Duration::from_secs(job.timeout_secs.max(60)),
        };
        let host = RelayHost::start(config)
            .await
            .map_err(|error| format!("could not start the relay host: {error}"))?;
        if let Some(inbound) = host.take_inbound() {
            let native = self.clone();
            tokio::spawn(async move { native.inbound_loop(inbound).await });
        }
        *self.door.started.lock() = Some(host.clone());
        *slot = Some(host.clone());
        Ok(host)
    }

    /// Carries one native delivery: the relay sends the envelope with Claude's own
    /// `SendMessage`, Claude's receipt settles whether it went, and the peer's answer comes
    /// back as inbound mail, paired by its request id. The wait for the answer runs as a task
    /// of its own, so it holds no worker; the session's busy lock and the lease are kept until
    /// the delivery closes. Nothing is ever sent twice: a relay that dies, a receipt that never
    /// comes, a refusal — each fails the delivery.
    pub(super) async fn run_native_delivery(self, claimed: Claimed) {
        let Claimed {
            mut record,
            job,
            created_ms,
            target_key,
            lock_token,
        } = claimed;
        let Some(native) = job.native.clone() else {
            return;
        };
        let message = message_text(&job, created_ms);
        let renew = self.cx.renew_lease(
            Arc::new(Mutex::new(target_key.clone())),
            &lock_token,
            &record.delivery_id,
        );
        // Registered before the send: the answer may come back before the receipt is read.
        let events = self.expect_answer(&record);
        // No `peer_pid`: that names a process the bridge started and may stop (an orphan's
        // turn is killed); this one is the person's own Claude Code.
        record.state = DeliveryState::AwaitingPeer;
        self.save(&record).await;
        if !self
            .send_natively(&mut record, &job, &native, message)
            .await
        {
            self.door.pending.lock().remove(&record.request_id);
            renew.abort();
            self.close_native(record, job, target_key, lock_token).await;
            return;
        }
        self.save(&record).await;
        // The answer is awaited outside the worker pool.
        let native = self.clone();
        tokio::spawn(async move {
            native.await_native_answer(&mut record, &job, events).await;
            native.door
                .pending
                .lock()
                .remove(&record.request_id);
            renew.abort();
            native
                .close_native(record, job, target_key, lock_token)
                .await;
        });
    }

    /// Registers a delivery whose answer (and delivery notices) the inbound mail will bring,
    /// by its request id; returns where they arrive.
    fn expect_answer(&self, record: &DeliveryRecord) -> mpsc::UnboundedReceiver<NativeEvent> {
        let (events_tx, events) = mpsc::unbounded_channel();
        self.door.pending.lock().insert(
            record.request_id.clone(),
            Pending {
                delivery_id: record.delivery_id.clone(),
                events: events_tx,
            },
        );
        events
    }

    /// Has the relay send `message` with Claude's `SendMessage` and records Claude's receipt.
    /// True when Claude sent it.
    async fn send_natively(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        native: &NativeJob,
        message: String,
    ) -> bool {
        let relay = cross_agent_relay::relay_name_for(
            &native.represented,
            &self.door
                .settings
                .lock()
                .as_ref()
                .map(|s| s.machine.clone())
                .unwrap_or_default(),
            native.permission_mode.as_deref(),
        );
        let receipt = match self.host_for(job).await {
            Ok(host) => host
                .send(NativeSend {
                    represented: native.represented.clone(),
                    to: native.address.clone(),
                    message,
                    delivery_id: record.delivery_id.clone(),
                    permission_mode: native.permission_mode.clone(),
                })
                .await
                .map_err(|error| error.to_string()),
            Err(why) => Err(why),
        };
        self.apply_receipt(record, &relay, receipt)
    }

    /// Waits for a sent message's answer: paired when it comes; a notice that it will never
    /// reach the session fails it; so do the delivery's timeout and the daemon's stop (the
    /// message is never re-sent — a later answer is a late answer).
    async fn await_native_answer(
        &self,
        record: &mut DeliveryRecord,
        job: &Job,
        mut events: mpsc::UnboundedReceiver<NativeEvent>,
    ) {
        let mut stop = self.cx.stop_signal();
        let limit = Duration::from_secs(job.timeout_secs.max(1));
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(NativeEvent::Answer { text, relay }) => {
                        self.cx.pair_answer(record, &text, watch_secs(job));
                        tracing::info!(delivery = %record.delivery_id, %relay, "native answer paired");
                        return;
                    }
                    Some(NativeEvent::Notice { status }) => {
                        if self.apply_notice(record, &status) {
                            return;
                        }
                        self.save(record).await;
                    }
                    None => return,
                },
                () = tokio::time::sleep_until(deadline) => {
                    record.state = DeliveryState::Failed;
                    record.error = Some(format!(
                        "no answer came back within {}s; Claude took the message into the \
                         session's inbox (native send), so it is never re-sent — an answer \
                         that comes later is recorded as a late answer",
                        limit.as_secs()
                    ));
                    return;
                }
                () = carrier_stopped(&mut stop) => {
                    record.state = DeliveryState::Failed;
                    record.is_stopped_with_carrier = true;
                    record.error = Some(
                        "the daemon stopped while the answer was awaited; the message was \
                         sent natively and is never re-sent"
                            .to_owned(),
                    );
                    return;
                }
            }
        }
    }

    /// Records Claude's receipt on the delivery. True when Claude sent the message.
    fn apply_receipt(
        &self,
        record: &mut DeliveryRecord,
        relay: &str,
        receipt: Result<RelayReceipt, String>,
    ) -> bool {
        let words = |claude: &serde_json::Value| {
            claude
                .get("message")
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| claude.to_string(), str::to_owned)
        };
        let (outcome, msg_id, reason, sent) = match receipt {
            Ok(RelayReceipt::Sent { msg_id, .. }) => {
                if let Some(id) = &msg_id {
                    self.door
                        .msg_ids
                        .lock()
                        .insert(id.clone(), record.request_id.clone());
                }
                record.progress_note = Some(format!(
                    "sent natively through relay {relay} (Claude's msg_id {}); awaiting the answer",
                    msg_id.as_deref().unwrap_or("unknown")
                ));
                ("sent", msg_id, None, true)
            }
            Ok(RelayReceipt::Refused { claude, dead }) => {
                let words = words(&claude);
                record.state = DeliveryState::Failed;
                record.is_undelivered = true;
                record.error = Some(if dead {
                    format!(
                        "the target Claude session's process is gone (Claude's receipt: dead): \
                         {words} — not delivered, never re-sent"
                    )
                } else {
                    format!("Claude refused the native send: {words} — not delivered")
                });
                (
                    if dead { "dead" } else { "refused" },
                    None,
                    Some(words),
                    false,
                )
            }
            Ok(RelayReceipt::RateLimited { words, .. }) => {
                record.state = DeliveryState::Failed;
                record.is_undelivered = true;
                record.error = Some(format!(
                    "Claude's own rate limit on messages to that session stopped the native \
                     send: {words} — nothing was sent; the session is alive, and a later send \
                     may pass"
                ));
                ("rate_limited", None, Some(words), false)
            }
            Ok(RelayReceipt::Denied { reason }) => {
                record.state = DeliveryState::Failed;
                record.is_undelivered = true;
                record.error = Some(format!(
                    "the relay's gate denied the send turn's tool call ({reason}); not delivered"
                ));
                self.cx.decisions().record(events::native_gate_denied(record, relay, &reason));
                ("denied", None, Some(reason), false)
            }
            Ok(RelayReceipt::NoSend) => {
                record.state = DeliveryState::Failed;
                record.is_undelivered = true;
                record.error =
                    Some("the relay's send turn ended without sending; not delivered".to_owned());
                ("no_send", None, None, false)
            }
            Ok(RelayReceipt::RelayDied { detail }) => {
                record.state = DeliveryState::Failed;
                record.error = Some(format!(
                    "the relay process died mid-send ({detail}); whether Claude sent the \
                     message is unknown, and it is never re-sent"
                ));
                ("relay_died", None, Some(detail), false)
            }
            Err(why) => {
                record.state = DeliveryState::Failed;
                record.error = Some(format!(
                    "the native send did not complete: {why}; it is never re-sent"
                ));
                ("error", None, Some(why), false)
            }
        };
        self.cx.decisions().record(events::native_receipt(
            record,
            outcome,
            msg_id.as_deref(),
            relay,
            reason.as_deref(),
        ));
        sent
    }

    /// A delivery notice about a sent message. True when it settles the delivery (the
    /// message will never reach the target's Claude).
    fn apply_notice(&self, record: &mut DeliveryRecord, status: &str) -> bool {
        match status {
            "held" => {
                record.progress_note = Some(
                    "held, not delivered: the target session holds the message (usually another \
                     permission mode) until its user releases it"
                        .to_owned(),
                );
                false
            }
            "released" => {
                record.progress_note =
                    Some("released to the target session after being held".to_owned());
                false
            }
            other => {
                record.state = DeliveryState::Failed;
                record.is_undelivered = true;
                record.error = Some(format!(
                    "the target session did not take the message ({other}, by Claude's delivery \
                     notice); not delivered"
                ));
                true
            }
        }
    }

    async fn save(&self, record: &DeliveryRecord) {
        let (cx, record) = (self.cx.clone(), record.clone());
        off_async(move || {
            if let Err(error) = cx.db().update_delivery(&record) {
                tracing::warn!(%error, "could not record a native delivery's progress");
            }
        })
        .await;
    }

    async fn close_native(
        &self,
        mut record: DeliveryRecord,
        job: Job,
        target_key: String,
        lock_token: String,
    ) {
        if record.state == DeliveryState::AwaitingPeer {
            record.state = DeliveryState::Failed;
        }
        self.cx.answer_pending(&record.delivery_id);
        let cx = self.cx.clone();
        off_async(move || cx.close_delivery(record, &job, &target_key, &lock_token)).await;
        self.cx.wake_dispatcher();
    }
}
