//! A send through a relay: the queued send written to the relay's directory, the send turn
//! written on its stdin, the wait for Claude's receipt, and picking (or starting) the relay of
//! the target's permission class with its send lock held.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use cross_agent_protocol::timestamp::UnixMillis;
use serde_json::json;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::watch;

use crate::endpoint::SendTurn;
use crate::error::RelayError;
use crate::receipt::{QueuedSend, RelayReceipt, queue_path, read_receipt, write_json};
use crate::relay_name_for;

use super::{
    Awaited, Current, MAX_TO_CHARS, NativeSend, Relay, RelayHost, TURN_END_WAIT, send_turn,
};

impl RelayHost {
    pub(super) async fn send_in_task(&self, send: NativeSend) -> Result<RelayReceipt, RelayError> {
        if send.to.is_empty()
            || send.to.contains(['\n', '\r'])
            || send.to.chars().count() > MAX_TO_CHARS
        {
            return Err(RelayError::Invalid(format!(
                "the recipient {:?} is not one SendMessage takes (one line, 1 to {MAX_TO_CHARS} characters)",
                send.to
            )));
        }
        let limit = self.inner.config.send_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        let name = relay_name_for(
            &send.represented,
            &self.inner.config.machine,
            send.permission_mode.as_deref(),
        );
        let (relay, guard) = tokio::time::timeout_at(deadline, self.relay_for(&send))
            .await
            .map_err(|_| RelayError::Timeout {
                relay: name.clone(),
                send_id: String::new(),
                limit,
            })??;

        let send_id = uuid::Uuid::now_v7().to_string();
        let queued = QueuedSend {
            send_id: send_id.clone(),
            delivery_id: send.delivery_id.clone(),
            to: send.to.clone(),
            message: send.message.clone(),
            queued_at_ms: UnixMillis::now().0,
        };
        write_json(&queue_path(&relay.dir, &send_id), &queued)?;
        let prompt = send_turn(&relay.name, &send_id);
        let (receipt_tx, mut receipt_rx) = watch::channel(None);
        let turns_before = *relay.turns_ended.borrow();
        {
            let mut state = relay.state.lock();
            state.current = Some(Current {
                send: queued,
                prompt: prompt.clone(),
                allowed: false,
                allowed_call: None,
                receipt: receipt_tx,
            });
            state.last_activity = Instant::now();
        }
        self.inner.endpoint.state.set_turn(
            &relay.key,
            Some(SendTurn {
                prompt: prompt.clone(),
                to: send.to.clone(),
                message: send.message.clone(),
                tool_use_id: format!("toolu_relay_{}", send_id.replace('-', "")),
            }),
        );

        let line = json!({"type":"user","message":{"role":"user","content":prompt}}).to_string();
        let written = {
            let mut stdin = relay.stdin.lock().await;
            match stdin.as_mut() {
                Some(stdin) => match stdin.write_all(format!("{line}\n").as_bytes()).await {
                    Ok(()) => stdin.flush().await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                },
                None => Err("its stdin is closed".to_owned()),
            }
        };
        if let Err(why) = written {
            relay.settle(RelayReceipt::RelayDied {
                detail: format!("the relay took no send turn: {why}"),
            });
        }

        let mut exited = relay.exited.clone();
        let outcome = tokio::select! {
            got = receipt_rx.wait_for(Option::is_some) => got.is_ok(),
            _ = exited.wait_for(Option::is_some) => true,
            () = tokio::time::sleep_until(deadline) => false,
        };
        if !outcome
            && relay
                .state
                .lock()
                .current
                .as_ref()
                .is_some_and(|c| c.receipt.borrow().is_none())
        {
            // No receipt in time: stop the relay, so the queued message cannot go out later.
            self.stop_relay(&relay, "no receipt in time").await;
            self.finish_turn(&relay, guard);
            return Err(RelayError::Timeout {
                relay: relay.name.clone(),
                send_id,
                limit,
            });
        }
        if let Some(detail) = relay.exited.borrow().clone() {
            relay.settle(RelayReceipt::RelayDied { detail });
        }
        let receipt =
            read_receipt(&relay.dir, &send_id)?.ok_or_else(|| RelayError::BadReceipt {
                path: crate::receipt::receipt_path(&relay.dir, &send_id),
                reason: "signalled but not written".to_owned(),
            })?;
        if let RelayReceipt::Sent { msg_id, .. } = &receipt {
            relay.state.lock().awaiting.push(Awaited {
                to: send.to.clone(),
                msg_id: msg_id.clone(),
                sent_at: Instant::now(),
            });
        }

        // The turn finishes behind the caller; the next send waits for it.
        let host = self.clone();
        let relay_for_turn = Arc::clone(&relay);
        tokio::spawn(async move {
            let mut ended = relay_for_turn.turns_ended.subscribe();
            let mut exited = relay_for_turn.exited.clone();
            tokio::select! {
                _ = ended.wait_for(|n| *n > turns_before) => {}
                _ = exited.wait_for(Option::is_some) => {}
                () = tokio::time::sleep(TURN_END_WAIT) => {
                    tracing::warn!(relay = %relay_for_turn.name, "a relay's send turn did not end in time");
                }
            }
            host.finish_turn(&relay_for_turn, guard);
        });
        Ok(receipt)
    }

    /// Ends the send in hand: no queued turn at the endpoint, no current send.
    fn finish_turn(&self, relay: &Relay, guard: tokio::sync::OwnedMutexGuard<()>) {
        self.inner.endpoint.state.set_turn(&relay.key, None);
        let mut state = relay.state.lock();
        state.current = None;
        state.last_activity = Instant::now();
        drop(state);
        drop(guard);
    }

    /// The running relay for this send — the one of its represented sender in the target's
    /// permission class — with its send lock held, started if needed. A relay of the other
    /// class is left alone: it stays up while it awaits replies (the reaper's rule).
    async fn relay_for(
        &self,
        send: &NativeSend,
    ) -> Result<(Arc<Relay>, tokio::sync::OwnedMutexGuard<()>), RelayError> {
        let name = relay_name_for(
            &send.represented,
            &self.inner.config.machine,
            send.permission_mode.as_deref(),
        );
        loop {
            if self.inner.stopping.load(Ordering::SeqCst) {
                return Err(RelayError::ShuttingDown);
            }
            let existing = self.inner.relays.lock().get(&name).cloned();
            let relay = match existing {
                Some(relay) => relay,
                None => {
                    let _starting = self.inner.starting.lock().await;
                    let started = self.inner.relays.lock().get(&name).cloned();
                    match started {
                        Some(relay) => relay,
                        None => self.start_relay(&name, send).await?,
                    }
                }
            };
            let guard = Arc::clone(&relay.send_lock).lock_owned().await;
            if relay.exited.borrow().is_some() {
                self.forget(&relay);
                continue;
            }
            return Ok((relay, guard));
        }
    }
}
