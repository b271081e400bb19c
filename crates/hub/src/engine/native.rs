//! Claude's native peer door, the engine's side (docs/spec/claude-relay.txt, `claude_relay`): which
//! Claude sessions a running Claude Code process holds (its registry, `~/.claude/sessions`),
//! and the routing rule built on it.
//!
//! **Routing.** A send to a Claude session whose registry entry shows a live process (its pid
//! runs and started at the entry's `procStart`) and that no panel shim hosts goes through the
//! native door (`transport: "claude-native"`): a headless `claude -p --resume` beside a running
//! process would be a second writer on the same conversation, and its answer would have no way
//! back. Every other Claude session is dormant — no entry, or an entry a crash left behind with
//! its socket — and resumes over the CLI as before. The rule is applied at acceptance and again
//! when the delivery goes out: a process that exited meanwhile makes the session dormant.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_decisions::events;
use cross_agent_protocol::bridge::{CallerContext, DeliveryRecord, DeliveryState, Transport};
use cross_agent_relay::{
    InboundKind, InboundMail, NativeSend, RelayConfig, RelayHost, RelayReceipt,
};
use cross_agent_stores::claude_registry::Registry;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::carriers::message_text;
use super::dispatch::{carrier_stopped, off_async};
use super::target::Resolved;
use super::{Engine, roots_for, watch_secs};
use crate::Agent;
use crate::caller::Caller;
use crate::records::{Claimed, Job, NativeJob};

/// Who a relay speaks for when the sender has no session of its own (a `cross-agent send` from
/// a shell): its relay is `xa-cli-on-<machine>`.
pub const CLI_REPRESENTED: &str = "cli";

impl Engine {
    /// Claude Code's registry of running sessions, under the caller's Claude config root.
    pub(super) fn claude_registry(&self, caller: &CallerContext) -> Registry {
        let roots = roots_for(caller);
        let Some(config) = roots.claude_config.as_deref() else {
            return Registry::default();
        };
        let mut warnings = cross_agent_stores::Warnings::default();
        let registry = Registry::read(config, &mut warnings);
        for warning in warnings.items {
            tracing::debug!(%warning, "skipped a Claude registry entry");
        }
        registry
    }

    /// The native route of a send, when it takes one: a Claude session (not a new one) no panel
    /// carries, held by a live Claude Code process that announced a messaging socket, and a
    /// daemon that can host relays.
    pub(super) fn native_route(
        &self,
        agent: Agent,
        params_caller: &CallerContext,
        caller: &Caller,
        resolved: &Resolved,
    ) -> Option<NativeJob> {
        if agent != Agent::Claude
            || resolved.panel.is_some()
            || resolved.new_reason.is_some()
            || !self.has_native_door()
        {
            return None;
        }
        let session_id = resolved.session_id.as_deref()?;
        let registry = self.claude_registry(params_caller);
        let entry = registry.live_session(session_id)?;
        // A `claude -p --resume` the bridge itself runs registers too: that is a turn of ours,
        // not a session someone runs, and the busy lock already orders sends behind it.
        if self.inner.dispatch.runs_turn_of(entry.pid) {
            return None;
        }
        Some(NativeJob {
            pid: entry.pid,
            proc_start: entry.proc_start_ticks()?,
            address: entry.native_address()?,
            registry_name: entry.name.clone(),
            represented: represented(caller),
            permission_mode: resolved
                .transcript
                .as_deref()
                .and_then(cross_agent_stores::claude_registry::last_permission_mode),
        })
    }

    /// A native delivery about to go out: is its process still the one the registry named? If
    /// not, the session is dormant now and the delivery resumes it over the CLI (decided here,
    /// before anything was sent, so nothing is sent twice).
    pub(super) fn native_still_live(&self, record: &mut DeliveryRecord, job: &mut Job) -> bool {
        let Some(native) = &job.native else {
            return false;
        };
        if cross_agent_process::is_same_process(native.pid, native.proc_start)
            && self.has_native_door()
        {
            return true;
        }
        let why = format!(
            "the Claude Code process holding the session (pid {}) is gone; the session is \
             dormant and is resumed over the CLI",
            native.pid
        );
        tracing::info!(delivery = %record.delivery_id, "{why}");
        self.inner
            .decisions
            .record(events::native_route_changed(record, &why));
        job.native = None;
        record.transport = Transport::HeadlessCli;
        record.peer_pid = None;
        if let Err(error) = self.db().update_delivery(record) {
            tracing::warn!(%error, "could not record a native delivery moved to the CLI");
        }
        false
    }

    /// The native carrier's door.
    pub(super) fn native_door(&self) -> &NativeDoor {
        &self.inner.carriers.native.door
    }

    /// Whether this daemon can host relays ([`Engine::enable_native`]).
    pub(super) fn has_native_door(&self) -> bool {
        self.native_door().settings.lock().is_some()
    }
}

/// The name a relay speaks for: the sender's session by its agent and short id, or
/// [`CLI_REPRESENTED`] when the sender has no session.
pub(super) fn represented(caller: &Caller) -> String {
    match (&caller.agent, caller.session_id.as_deref()) {
        (Some(agent), Some(id)) => {
            let short: String = id.chars().filter(|c| *c != '-').take(8).collect();
            format!("{agent}-{short}")
        }
        _ => CLI_REPRESENTED.to_owned(),
    }
}

/// What the daemon tells the engine so it can host relays: the program the relays' hooks run
/// and this machine's name. The relay host itself starts with the first native send, with the
/// Claude binary and environment of that send's caller (a relay must share the target's HOME).
#[derive(Debug, Clone)]
pub struct NativeSettings {
    /// The `cross-agent` program (`<it> hook <Event>`), normally the daemon's own executable.
    pub cross_agent: PathBuf,
    /// This machine's name, in relay names (`xa-<name>-on-<machine>`).
    pub machine: String,
    /// A relay with nothing in hand is stopped this long after its last activity.
    pub idle_stop: Duration,
    /// How long a send waits for Claude's own receipt (relay start-up included).
    pub send_timeout: Duration,
}

impl NativeSettings {
    pub fn new(cross_agent: PathBuf, machine: String) -> NativeSettings {
        NativeSettings {
            cross_agent,
            machine,
            idle_stop: Duration::from_secs(300),
            send_timeout: Duration::from_secs(90),
        }
    }
}

/// The engine's native door: the settings, the relay host once started, and the deliveries
/// whose answer is awaited, by request id.
#[derive(Default)]
pub(super) struct NativeDoor {
    settings: Mutex<Option<NativeSettings>>,
    host: tokio::sync::Mutex<Option<RelayHost>>,
    /// Started host, readable without awaiting (the daemon's `hook` calls).
    started: Mutex<Option<RelayHost>>,
    /// Native deliveries sent and awaiting their answer: request id → their events.
    pending: Mutex<HashMap<String, Pending>>,
    /// Claude's msg_id of each sent message → its request id (delivery notices name msg_ids).
    msg_ids: Mutex<HashMap<String, String>>,
}

struct Pending {
    delivery_id: String,
    events: mpsc::UnboundedSender<NativeEvent>,
}

/// What the inbound mail says about one awaited delivery.
#[derive(Debug)]
enum NativeEvent {
    /// The peer answered (the body of its envelope, byte-exact).
    Answer { text: String, relay: String },
    /// A delivery notice: `held` (not delivered yet), `released`, `expired`, `refused`, ….
    Notice { status: String },
}

impl Engine {
    /// Lets this engine route live Claude sessions through relays (the daemon calls it once,
    /// before [`Engine::start`]).
    pub fn enable_native(&self, settings: NativeSettings) {
        *self.native_door().settings.lock() = Some(settings);
    }

    /// The relay host, once a native send started it: the daemon offers it every `hook` call
    /// first.
    pub fn relay_host(&self) -> Option<RelayHost> {
        self.native_door().started.lock().clone()
    }

    /// Stops every relay (the daemon's stop).
    pub(super) async fn stop_relays(&self) {
        let host = self.native_door().started.lock().take();
        if let Some(host) = host {
            host.shutdown().await;
        }
    }

    /// The relay host, started on first use with this job's Claude binary and environment.
    async fn host_for(&self, job: &Job) -> Result<RelayHost, String> {
        let mut slot = self.native_door().host.lock().await;
        if let Some(host) = slot.as_ref() {
            return Ok(host.clone());
        }
        let Some(settings) = self.native_door().settings.lock().clone() else {
            return Err("this daemon hosts no relays".to_owned());
        };
        let claude = job
            .settings
            .get(cross_agent_protocol::settings::CLAUDE_BIN)
            .filter(|b| !b.trim().is_empty())
            .map_or_else(|| PathBuf::from("claude"), PathBuf::from);
        let config = RelayConfig {
            home: self.inner.info.state_root.clone(),
            claude,
            cross_agent: settings.cross_agent.clone(),
            claude_env: job
                .child_env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            machine: settings.machine.clone(),
            decisions: self.inner.decisions.clone(),
            idle_stop: settings.idle_stop,
            send_timeout: settings.send_timeout,
            reply_wait: Duration::from_secs(job.timeout_secs.max(60)),
        };
        let host = RelayHost::start(config)
            .await
            .map_err(|error| format!("could not start the relay host: {error}"))?;
        if let Some(inbound) = host.take_inbound() {
            let engine = self.clone();
            tokio::spawn(async move { engine.inbound_loop(inbound).await });
        }
        *self.native_door().started.lock() = Some(host.clone());
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
        let renew = self.inner.dispatch.spawn_lease_renewal(
            Arc::new(Mutex::new(target_key.clone())),
            lock_token.clone(),
            record.delivery_id.clone(),
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
            self.native_door().pending.lock().remove(&record.request_id);
            renew.abort();
            self.close_native(record, job, target_key, lock_token).await;
            return;
        }
        self.save(&record).await;
        // The answer is awaited outside the worker pool.
        let engine = self.clone();
        tokio::spawn(async move {
            engine.await_native_answer(&mut record, &job, events).await;
            engine
                .native_door()
                .pending
                .lock()
                .remove(&record.request_id);
            renew.abort();
            engine
                .close_native(record, job, target_key, lock_token)
                .await;
        });
    }

    /// Registers a delivery whose answer (and delivery notices) the inbound mail will bring,
    /// by its request id; returns where they arrive.
    fn expect_answer(&self, record: &DeliveryRecord) -> mpsc::UnboundedReceiver<NativeEvent> {
        let (events_tx, events) = mpsc::unbounded_channel();
        self.native_door().pending.lock().insert(
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
            &self
                .native_door()
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
        let mut stop = self.inner.stop.subscribe();
        let limit = Duration::from_secs(job.timeout_secs.max(1));
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(NativeEvent::Answer { text, relay }) => {
                        self.inner.answers.pair_answer(record, &text, None, watch_secs(job));
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
                    self.native_door()
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
                self.inner
                    .decisions
                    .record(events::native_gate_denied(record, relay, &reason));
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
        self.inner.decisions.record(events::native_receipt(
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
        let (engine, record) = (self.clone(), record.clone());
        off_async(move || {
            if let Err(error) = engine.db().update_delivery(&record) {
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
        self.inner.dispatch.answer_pending(&record.delivery_id);
        let engine = self.clone();
        off_async(move || engine.close_delivery(record, &job, &target_key, &lock_token)).await;
        self.inner.dispatch.wake();
    }

    /// Files every piece of inbound mail the relays' hooks received.
    async fn inbound_loop(self, mut inbound: mpsc::UnboundedReceiver<InboundMail>) {
        while let Some(mail) = inbound.recv().await {
            let engine = self.clone();
            off_async(move || engine.file_inbound(mail)).await;
        }
    }

    /// One inbound mail: a peer's message is paired with the delivery it answers by the request
    /// id it carries (a delivery already closed gets it as a late answer); a delivery notice is
    /// applied to the message it names; an idle notice is only recorded.
    fn file_inbound(&self, mail: InboundMail) {
        match mail.kind {
            InboundKind::Message { body, .. } => {
                let ids: Vec<String> = cross_agent_stores::turns::closing_line(&body)
                    .map(cross_agent_stores::turns::request_ids)
                    .unwrap_or_default()
                    .into_iter()
                    .map(str::to_owned)
                    .collect();
                for id in &ids {
                    let pending = self
                        .native_door()
                        .pending
                        .lock()
                        .get(id)
                        .map(|p| (p.delivery_id.clone(), p.events.clone()));
                    if let Some((delivery_id, events)) = pending
                        && events
                            .send(NativeEvent::Answer {
                                text: body.clone(),
                                relay: mail.relay.clone(),
                            })
                            .is_ok()
                    {
                        self.inner.decisions.record(events::native_inbound(
                            &mail.relay,
                            "message",
                            Some(&delivery_id),
                            None,
                        ));
                        return;
                    }
                    // Its delivery closed already (timed out): a late answer of its own. The
                    // store's guard is let go before the late answer takes it again.
                    let closed = self.db().delivery_by_request(id);
                    if let Ok(Some(request)) = closed {
                        self.inner
                            .answers
                            .late_answer_arrived(&request.delivery_id, &body);
                        self.inner.decisions.record(events::native_inbound(
                            &mail.relay,
                            "message",
                            Some(&request.delivery_id),
                            Some("late"),
                        ));
                        return;
                    }
                }
                self.inner.decisions.record(events::native_inbound(
                    &mail.relay,
                    "message",
                    None,
                    Some("unpaired"),
                ));
            }
            InboundKind::DeliveryNotice { status, msg_id, .. } => {
                let request = msg_id
                    .as_deref()
                    .and_then(|m| self.native_door().msg_ids.lock().get(m).cloned());
                let pending = request.as_deref().and_then(|r| {
                    self.native_door()
                        .pending
                        .lock()
                        .get(r)
                        .map(|p| (p.delivery_id.clone(), p.events.clone()))
                });
                let paired = pending.and_then(|(delivery_id, events)| {
                    events
                        .send(NativeEvent::Notice {
                            status: status.clone(),
                        })
                        .ok()
                        .map(|()| delivery_id)
                });
                self.inner.decisions.record(events::native_inbound(
                    &mail.relay,
                    "delivery_notice",
                    paired.as_deref(),
                    Some(&status),
                ));
            }
            InboundKind::IdleNotice { .. } => {
                self.inner.decisions.record(events::native_inbound(
                    &mail.relay,
                    "idle_notice",
                    None,
                    None,
                ));
            }
            InboundKind::Other => {
                self.inner.decisions.record(events::native_inbound(
                    &mail.relay,
                    "other",
                    None,
                    None,
                ));
            }
        }
    }
}
