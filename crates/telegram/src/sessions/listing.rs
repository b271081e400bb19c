//! `/sessions`: the session cards, and each session's forum topic, created on its first
//! activity in a forum supergroup (one creation at a time).

use std::collections::HashSet;

use cross_agent_decisions::{Decision, Outcome};
use cross_agent_protocol::timestamp::now_rfc3339;

use super::{Desk, Place, SessionRef, SessionState, kind, say};
use crate::api::{ParseMode, TelegramApi};
use crate::cards;
use crate::queue::{OutboundQueue, Outgoing};
use crate::text::escape_html;
use crate::topics;

impl Desk {
    /// Posts the cards of the live sessions (or of `only` that one).
    pub(super) async fn list<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        only: Option<&SessionRef>,
        awaiting_approval: &HashSet<String>,
    ) {
        let Some(host) = self.host() else {
            say(out, place, "Sessions are not available on this daemon.");
            return;
        };
        let listed = tokio::task::spawn_blocking(move || host.live_sessions_everywhere())
            .await
            .unwrap_or_else(|e| Err(format!("the session listing failed: {e}")));
        let (mut sessions, unreachable) = match listed {
            Ok(listing) => (listing.sessions, listing.unreachable),
            Err(reason) => {
                say(
                    out,
                    place,
                    &format!("Could not list the sessions: {}", escape_html(&reason)),
                );
                return;
            }
        };
        if let Some(only) = only {
            sessions.retain(|s| {
                s.session.agent == only.agent
                    && s.session.session_id == only.session_id
                    && s.session.host == only.host
            });
            if sessions.is_empty()
                && let Some(down) = only
                    .host
                    .as_deref()
                    .and_then(|h| unreachable.iter().find(|line| names_host(line, h)))
            {
                say(out, place, &escape_html(down));
                return;
            }
            if sessions.is_empty() {
                let text = format!(
                    "<b>{}</b> is not live any more (no activity in the window /sessions shows).",
                    escape_html(&cards::header(only))
                );
                say(out, place, &text);
                return;
            }
        }
        // A host that could not be asked is said once, before the cards, so its sessions are
        // never silently missing.
        if only.is_none() && !unreachable.is_empty() {
            say(out, place, &escape_html(&unreachable.join("\n")));
        }
        if sessions.is_empty() {
            say(
                out,
                place,
                "No live sessions: none of Claude Code, Codex or Grok was active in the last 24 hours.",
            );
            return;
        }
        for mut live in sessions {
            if awaiting_approval.contains(&live.session.session_id) {
                live.state = SessionState::AwaitingApproval;
            }
            let thread = self.thread_for(out, place, &live.session).await;
            let markup = cards::card_markup(
                &mut self.state.lock().keys,
                &live.session,
                live.window.is_some(),
            );
            let html = cards::card_html(&live);
            // Sent through the queue (in order with the rest of the chat, 429s waited out),
            // waiting for the message id that replies to the card are matched by.
            let sent = out
                .send(
                    place.chat,
                    Outgoing::Text {
                        text: html,
                        mode: ParseMode::Html,
                        markup: Some(markup),
                        thread,
                    },
                    "session_card",
                )
                .await;
            if let Ok(message) = sent {
                self.remember_card(place.chat, message.message_id, &live.session);
            }
        }
        // The cards' buttons and replies work after a restart.
        self.save();
    }

    /// Where things about `session` are posted: its topic in a forum (made on first use),
    /// else where the person wrote.
    pub(super) async fn thread_for<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: &SessionRef,
    ) -> Option<i64> {
        if !place.is_forum {
            return None;
        }
        self.ensure_topic(out, place.chat, session)
            .await
            .or(place.thread)
    }

    /// The topic of `session` in forum `chat`, created (once) if it has none.
    pub(super) async fn ensure_topic<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        chat: i64,
        session: &SessionRef,
    ) -> Option<i64> {
        let _one_at_a_time = self.topic_lock.lock().await;
        let mut stored = match topics::read(&self.home) {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(%error, "could not read the telegram topics");
                return None;
            }
        };
        if let Some(topic) = stored.of_session(chat, &session.agent, &session.session_id) {
            return Some(topic.thread_id);
        }
        let name = topics::name_of(session);
        let topic_decision = |outcome: &'static str| {
            Decision::new(kind("telegram_topic"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", chat)
                .detail("name", name.clone())
        };
        match out.api().create_forum_topic(chat, &name).await {
            Ok(topic) => {
                stored.topics.push(topics::Topic {
                    chat_id: chat,
                    thread_id: topic.message_thread_id,
                    session: session.clone(),
                    name: name.clone(),
                    created_at: now_rfc3339(),
                });
                if let Err(error) = topics::write(&self.home, &stored) {
                    tracing::warn!(%error, "could not save the telegram topics");
                }
                self.record(topic_decision("created").detail("thread_id", topic.message_thread_id));
                Some(topic.message_thread_id)
            }
            Err(error) => {
                // The bot may not be an admin with "manage topics": the chat itself still works.
                self.record(topic_decision("failed").reason(error.to_string()));
                None
            }
        }
    }
}

/// Whether an unreachable-host line is about `host` (they start `🖥 NAME `).
fn names_host(line: &str, host: &str) -> bool {
    line.strip_prefix("🖥 ")
        .and_then(|rest| rest.strip_prefix(host))
        .is_some_and(|rest| rest.starts_with(' '))
}
