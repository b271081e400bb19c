//! The Hand off button: the destinations offered for a session, and the handoff run when one
//! is tapped.

use cross_agent_decisions::{Decision, Outcome};
use serde_json::{Value, json};

use super::{Desk, MAX_DESTINATIONS, Place, SessionRef, kind, say};
use crate::api::{ParseMode, TelegramApi};
use crate::cards::{self, Action};
use crate::queue::{OutboundQueue, Outgoing};
use crate::text::escape_html;

impl Desk {
    pub(super) async fn offer_destinations<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
    ) {
        let header = escape_html(&cards::header(&session));
        let Some(host) = self.host() else {
            say(out, place, "Handoff is not available on this daemon.");
            return;
        };
        let found = {
            let session = session.clone();
            tokio::task::spawn_blocking(move || host.destinations(&session))
                .await
                .unwrap_or_else(|e| Err(format!("the lookup failed: {e}")))
        };
        let destinations = match found {
            Ok(d) if d.is_empty() => {
                let text = format!(
                    "Nowhere to hand <b>{header}</b> to: no other session, editor or CLI agent was found."
                );
                say(out, place, &text);
                return;
            }
            Ok(d) => d,
            Err(reason) => {
                let text = format!(
                    "Could not list where <b>{header}</b> can go: {}",
                    escape_html(&reason)
                );
                say(out, place, &text);
                return;
            }
        };
        let rows: Vec<Value> = {
            let mut state = self.state.lock();
            destinations
                .iter()
                .take(MAX_DESTINATIONS)
                .map(|d| {
                    let label: String = d.label.chars().take(60).collect();
                    json!([cards::button(
                        &mut state.keys,
                        &label,
                        Action::HandOffTo(session.clone(), d.id.clone()),
                    )])
                })
                .collect()
        };
        self.save();
        let text = format!("🤝 Hand <b>{header}</b> to:");
        out.push_item(
            place.chat,
            Outgoing::Text {
                text,
                mode: ParseMode::Html,
                markup: Some(json!({"inline_keyboard": rows})),
                thread: place.thread,
            },
            "handoff_destinations",
        );
    }

    pub(super) async fn hand_off<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
        destination: String,
    ) {
        let header = escape_html(&cards::header(&session));
        let Some(host) = self.host() else {
            say(out, place, "Handoff is not available on this daemon.");
            return;
        };
        let text = format!(
            "⏳ Handing <b>{header}</b> to <code>{}</code>: reading the session and writing HANDOFF.md…",
            escape_html(&destination)
        );
        say(out, place, &text);
        let result = {
            let session = session.clone();
            let destination = destination.clone();
            tokio::task::spawn_blocking(move || host.hand_off(&session, &destination))
                .await
                .unwrap_or_else(|e| Err(format!("the handoff task failed: {e}")))
        };
        let decision = |outcome: &'static str| {
            Decision::new(kind("telegram_handoff"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", place.chat)
                .detail("destination", destination.clone())
        };
        let text = match result {
            Ok(done) => {
                self.record(decision("done"));
                format!("✅ Handed <b>{header}</b> over: {}", escape_html(&done))
            }
            Err(reason) => {
                self.record(decision("failed").reason(reason.clone()));
                format!(
                    "❌ The handoff of <b>{header}</b> failed: {}",
                    escape_html(&reason)
                )
            }
        };
        say(out, place, &text);
    }
}
