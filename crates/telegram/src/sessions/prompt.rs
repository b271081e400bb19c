//! A prompt from the phone: sent to the session as a delivery from "telegram", its receipt
//! posted, and its answer awaited off the poller's loop and relayed once (marked relayed before
//! it is posted, so a successor daemon does not post it again).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, Outcome};
use cross_agent_protocol::timestamp::UnixMillis;

use super::{ANSWER_POLL, ANSWER_WAIT, Desk, Place, Progress, SessionRef, kind, say, say_long};
use crate::api::TelegramApi;
use crate::cards;
use crate::desk_store::{self, Relay};
use crate::queue::OutboundQueue;
use crate::text::escape_html;

impl Desk {
    /// Sends `text` to `session` through the host, says so, then relays the answer.
    pub(super) async fn prompt<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
        text: String,
    ) {
        let thread = self.thread_for(out, place, &session).await;
        let here = Place { thread, ..place };
        let header = escape_html(&cards::header(&session));
        let Some(host) = self.host() else {
            say(out, here, "Sessions are not available on this daemon.");
            return;
        };
        let chars = text.chars().count();
        let sent = {
            let host = Arc::clone(&host);
            let session = session.clone();
            tokio::task::spawn_blocking(move || host.prompt(&session, &text))
                .await
                .unwrap_or_else(|e| Err(format!("the send failed: {e}")))
        };
        let decision = |outcome: &'static str| {
            Decision::new(kind("telegram_prompt"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", place.chat)
                .detail("chars", chars)
        };
        let receipt = match sent {
            Ok(receipt) => receipt,
            Err(reason) => {
                // A Prompt this message used up is gone for good.
                self.save();
                self.record(decision("refused").reason(reason.clone()));
                let text = format!("❌ Not sent to <b>{header}</b>: {}", escape_html(&reason));
                say(out, here, &text);
                return;
            }
        };
        self.record(
            decision("sent")
                .detail("delivery_id", receipt.delivery_id.clone())
                .detail("transport", receipt.transport.clone()),
        );
        let relay = Relay {
            delivery_id: receipt.delivery_id.clone(),
            chat_id: here.chat,
            thread_id: here.thread,
            session: session.clone(),
            sent_at_ms: UnixMillis::now().0,
            relayed_at_ms: None,
        };
        {
            let mut state = self.state.lock();
            state.relays.push(relay.clone());
            desk_store::bound_relays(&mut state.relays);
        }
        // Stored before the receipt is posted: from here on a restart re-arms the wait.
        self.save();
        // Each carrier by its own name: a Copilot session's turn goes into its editor's Agent
        // Host (Copilot has no headless CLI), a shim-held session's into its panel.
        let route = match receipt.transport.as_str() {
            "panel" => "into its panel",
            "agent_host" => "through its editor's Agent Host",
            _ => "by resuming it headless",
        };
        let text = format!(
            "📨 Sent to <b>{header}</b> {route} (delivery <code>{}</code>). The answer comes here.",
            escape_html(&receipt.delivery_id)
        );
        say(out, here, &text);
        self.relay(out, relay).await;
    }

    /// Waits for the answer of `relay`'s delivery and posts it (or its failure) where the
    /// prompt was asked, once: marked relayed in `desk.json` first. Returns without posting
    /// when this daemon lets go of the bot (its successor re-arms the wait).
    pub(super) async fn relay<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        relay: Relay,
    ) {
        let Some(host) = self.host() else {
            return;
        };
        let here = Place {
            chat: relay.chat_id,
            thread: relay.thread_id,
            is_forum: relay.thread_id.is_some(),
        };
        let session = &relay.session;
        let header = escape_html(&cards::header(session));
        let waited_ms =
            u64::try_from(UnixMillis::now().0.saturating_sub(relay.sent_at_ms)).unwrap_or(0);
        let deadline =
            Instant::now() + ANSWER_WAIT.saturating_sub(Duration::from_millis(waited_ms));
        loop {
            if self.stopped() {
                return;
            }
            let progress = {
                let host = Arc::clone(&host);
                let id = relay.delivery_id.clone();
                tokio::task::spawn_blocking(move || host.progress(&id))
                    .await
                    .unwrap_or(Progress::Waiting)
            };
            let text = match progress {
                Progress::Answered(answer) => {
                    format!("💬 {}:\n\n{}", cards::header(session), answer.trim())
                }
                Progress::Failed(reason) => format!(
                    "❌ The prompt to <b>{header}</b> failed: {}",
                    escape_html(&reason)
                ),
                Progress::Waiting if Instant::now() >= deadline => format!(
                    "⌛ No answer from <b>{header}</b> after {} hours; it will be in the session.",
                    ANSWER_WAIT.as_secs() / 3600
                ),
                Progress::Waiting => {
                    tokio::time::sleep(ANSWER_POLL).await;
                    continue;
                }
            };
            if self.stopped() || !self.mark_relayed(&relay.delivery_id) {
                return;
            }
            if text.starts_with("💬") {
                say_long(out, here, &text);
            } else {
                say(out, here, &text);
            }
            return;
        }
    }

    /// Marks `delivery_id` relayed and stores it; false when it already was (or is unknown),
    /// so the answer is posted by whoever marked it first, and only once.
    pub(super) fn mark_relayed(&self, delivery_id: &str) -> bool {
        {
            let mut state = self.state.lock();
            let Some(relay) = state
                .relays
                .iter_mut()
                .find(|r| r.delivery_id == delivery_id && r.relayed_at_ms.is_none())
            else {
                return false;
            };
            relay.relayed_at_ms = Some(UnixMillis::now().0);
        }
        self.save();
        true
    }
}
