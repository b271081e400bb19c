//! The mail the relays' hooks receive: a peer's message paired with the native delivery it
//! answers by the request id it carries (a delivery closed already gets it as a late answer),
//! a delivery notice applied to the message it names, anything else only recorded.

use cross_agent_decisions::events;
use cross_agent_relay::{InboundKind, InboundMail};
use tokio::sync::mpsc;

use super::door::{Native, NativeEvent};
use crate::engine::dispatch::off_async;

impl Native {
    /// Files every piece of inbound mail the relays' hooks received.
    pub(super) async fn inbound_loop(self, mut inbound: mpsc::UnboundedReceiver<InboundMail>) {
        while let Some(mail) = inbound.recv().await {
            let native = self.clone();
            off_async(move || native.file_inbound(mail)).await;
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
                    let pending = self.door
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
                        self.cx.decisions().record(events::native_inbound(
                            &mail.relay,
                            "message",
                            Some(&delivery_id),
                            None,
                        ));
                        return;
                    }
                    // Its delivery closed already (timed out): a late answer of its own. The
                    // store's guard is let go before the late answer takes it again.
                    let closed = self.cx.db().delivery_by_request(id);
                    if let Ok(Some(request)) = closed {
                        self.cx.late_answer_arrived(&request.delivery_id, &body);
                        self.cx.decisions().record(events::native_inbound(
                            &mail.relay,
                            "message",
                            Some(&request.delivery_id),
                            Some("late"),
                        ));
                        return;
                    }
                }
                self.cx.decisions().record(events::native_inbound(
                    &mail.relay,
                    "message",
                    None,
                    Some("unpaired"),
                ));
            }
            InboundKind::DeliveryNotice { status, msg_id, .. } => {
                let request = msg_id
                    .as_deref()
                    .and_then(|m| self.door.msg_ids.lock().get(m).cloned());
                let pending = request.as_deref().and_then(|r| {
                    self.door
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
                self.cx.decisions().record(events::native_inbound(
                    &mail.relay,
                    "delivery_notice",
                    paired.as_deref(),
                    Some(&status),
                ));
            }
            InboundKind::IdleNotice { .. } => {
                self.cx.decisions().record(events::native_inbound(
                    &mail.relay,
                    "idle_notice",
                    None,
                    None,
                ));
            }
            InboundKind::Other => {
                self.cx.decisions().record(events::native_inbound(
                    &mail.relay,
                    "other",
                    None,
                    None,
                ));
            }
        }
    }
}
