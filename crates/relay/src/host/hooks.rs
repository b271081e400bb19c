//! The relay's hooks answered: `PreToolUse` through the gate, `PostToolUse` turning Claude's
//! `SendMessage` result into the send's receipt, `UserPromptSubmit` filing inbound mail, and
//! the turn's `Stop`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use cross_agent_protocol::hook::{HookParams, HookResponse};
use cross_agent_protocol::timestamp::UnixMillis;
use serde_json::Value;

use crate::gate::{gate_allow, gate_decision, gate_denial, inbound_block};
use crate::inbound::{InboundKind, InboundMail, parse_inbound_text};
use crate::receipt::{RelayReceipt, write_whole};

use super::{Relay, RelayHost, decision, settle_awaiting};

impl RelayHost {
    /// Answers a hook call if it comes from a relay (its `cwd` is under `<home>/relays/`):
    /// `Some(answer)`; `None` for any other session's hook.
    pub async fn hook(&self, params: &HookParams) -> Option<HookResponse> {
        let cwd = Path::new(params.payload.get("cwd")?.as_str()?);
        let rest = cwd
            .strip_prefix(&self.inner.relays_dir_canonical)
            .or_else(|_| cwd.strip_prefix(&self.inner.relays_dir))
            .ok()?;
        let name = rest
            .components()
            .next()?
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let relay = self.inner.relays.lock().get(&name).cloned();
        let payload = &params.payload;
        let output = match relay {
            Some(relay) => self.relay_hook(&relay, &params.event, payload),
            // A relay this host does not run (left from an earlier daemon): it may do nothing.
            None => match params.event.as_str() {
                "PreToolUse" => Some(gate_denial(
                    "this relay is not hosted by the running cross-agent daemon",
                )),
                "UserPromptSubmit" => {
                    self.file_orphan_inbound(&name, payload);
                    Some(inbound_block())
                }
                _ => None,
            },
        };
        Some(HookResponse { output })
    }

    fn relay_hook(&self, relay: &Arc<Relay>, event: &str, payload: &Value) -> Option<Value> {
        match event {
            "PreToolUse" => {
                let tool = payload
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let input = payload.get("tool_input").cloned().unwrap_or(Value::Null);
                let call = payload.get("tool_use_id").and_then(Value::as_str);
                let mut state = relay.state.lock();
                if call.is_some()
                    && state
                        .current
                        .as_ref()
                        .is_some_and(|c| c.allowed_call.as_deref() == call)
                {
                    return Some(gate_allow());
                }
                let queued = state
                    .current
                    .as_ref()
                    .filter(|c| !c.allowed && c.receipt.borrow().is_none())
                    .map(|c| (c.send.to.clone(), c.send.message.clone()));
                let verdict = gate_decision(
                    queued
                        .as_ref()
                        .map(|(to, message)| (to.as_str(), message.as_str())),
                    tool,
                    &input,
                );
                match verdict {
                    None => {
                        if let Some(current) = state.current.as_mut() {
                            current.allowed = true;
                            current.allowed_call = call.map(str::to_owned);
                        }
                        Some(gate_allow())
                    }
                    Some(reason) => {
                        let in_hand = state.current.as_ref().map(|c| c.send.delivery_id.clone());
                        drop(state);
                        // Recorded before the receipt wakes the sender, so whoever reads the
                        // receipt finds the denial in the log.
                        let mut record = decision("relay_gate", "denied", &relay.name)
                            .guard("relay_gate")
                            .reason(reason.clone())
                            .detail("tool", tool.to_owned());
                        if let Some(delivery) = in_hand {
                            record = record.delivery(delivery);
                        }
                        self.inner.config.decisions.record(record);
                        if queued.is_some() {
                            relay.settle(RelayReceipt::Denied {
                                reason: reason.clone(),
                            });
                        }
                        Some(gate_denial(&reason))
                    }
                }
            }
            "PostToolUse" => {
                let tool = payload
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let allowed = relay
                    .state
                    .lock()
                    .current
                    .as_ref()
                    .is_some_and(|c| c.allowed);
                if tool == "SendMessage" && allowed {
                    let response = payload.get("tool_response").cloned().unwrap_or(Value::Null);
                    relay.settle(RelayReceipt::from_claude(&response));
                }
                None
            }
            "UserPromptSubmit" => {
                let prompt = payload.get("prompt").and_then(Value::as_str).unwrap_or("");
                let ours = relay
                    .state
                    .lock()
                    .current
                    .as_ref()
                    .is_some_and(|c| c.prompt == prompt);
                if ours {
                    return None;
                }
                // The same prompt offered twice (a hook installed twice) is filed once.
                let prompt_id = payload.get("prompt_id").and_then(Value::as_str);
                let seen = {
                    let mut state = relay.state.lock();
                    let seen = prompt_id.is_some() && state.last_filed.as_deref() == prompt_id;
                    state.last_filed = prompt_id.map(str::to_owned);
                    seen
                };
                if !seen {
                    self.file_inbound(relay, prompt);
                }
                Some(inbound_block())
            }
            "Stop" => {
                relay.settle(RelayReceipt::NoSend);
                relay.turns_ended.send_modify(|n| *n += 1);
                None
            }
            _ => None,
        }
    }

    fn file_inbound(&self, relay: &Relay, prompt: &str) {
        let kind = parse_inbound_text(prompt).unwrap_or(InboundKind::Other);
        let received_at_ms = UnixMillis::now().0;
        {
            let mut state = relay.state.lock();
            state.last_activity = Instant::now();
            settle_awaiting(&mut state.awaiting, &kind);
        }
        self.write_inbox(&relay.dir, prompt, received_at_ms);
        let _ = self.inner.inbound_tx.send(InboundMail {
            relay: relay.name.clone(),
            represented: relay.represented.clone(),
            text: prompt.to_owned(),
            kind,
            received_at_ms,
        });
    }

    fn file_orphan_inbound(&self, name: &str, payload: &Value) {
        let prompt = payload.get("prompt").and_then(Value::as_str).unwrap_or("");
        self.write_inbox(
            &self.inner.relays_dir.join(name),
            prompt,
            UnixMillis::now().0,
        );
    }

    fn write_inbox(&self, dir: &Path, prompt: &str, at_ms: i64) {
        let seq = self.inner.inbound_seq.fetch_add(1, Ordering::Relaxed);
        let path = dir.join("inbox").join(format!("{at_ms}-{seq}.txt"));
        if let Err(error) = write_whole(&path, prompt.as_bytes()) {
            tracing::warn!(%error, "a relay's inbound mail could not be written to its inbox");
        }
    }
}
