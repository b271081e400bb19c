//! Our own pace for `editMessageText`: Telegram allows about one message a second per chat, and
//! teloxide's `Throttle` (observed) forwards edits un-throttled, so a stream of edits (a live
//! answer, a card's state) would run into 429s. Each chat gets the next free slot, at least
//! `per_chat` after the one before; other chats are not held up.

use std::collections::HashMap;
use std::time::Duration;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::api::{ParseMode, TelegramApi};
use crate::error::Error;

/// Telegram's per-chat pace (core.telegram.org/bots/faq: "no more than one message per second").
pub const DEFAULT_PER_CHAT: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct EditLimiter {
    per_chat: Duration,
    next_free: Mutex<HashMap<i64, Instant>>,
}

impl Default for EditLimiter {
    fn default() -> EditLimiter {
        EditLimiter::new(DEFAULT_PER_CHAT)
    }
}

impl EditLimiter {
    pub fn new(per_chat: Duration) -> EditLimiter {
        EditLimiter {
            per_chat,
            next_free: Mutex::new(HashMap::new()),
        }
    }

    /// Takes `chat_id`'s next slot and waits for it.
    pub async fn wait_turn(&self, chat_id: i64) {
        let slot = {
            let mut next_free = self.next_free.lock().await;
            let now = Instant::now();
            let slot = next_free.get(&chat_id).map_or(now, |free| (*free).max(now));
            next_free.insert(chat_id, slot + self.per_chat);
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

/// Edits a message's text at the limiter's pace, retrying as plain text when Telegram cannot
/// parse the HTML; the outcome is a decision. "Message is not modified" counts as done.
pub async fn edit_text<A: TelegramApi>(
    api: &A,
    limiter: &EditLimiter,
    decisions: &DecisionLog,
    chat_id: i64,
    message_id: i64,
    html: &str,
) -> bool {
    limiter.wait_turn(chat_id).await;
    let mut outcome = "edited";
    let mut result = api
        .edit_message_text(chat_id, message_id, html, ParseMode::Html)
        .await;
    if let Err(Error::Api {
        code: 400,
        description,
        ..
    }) = &result
    {
        let description = description.to_ascii_lowercase();
        if description.contains("message is not modified") {
            outcome = "unchanged";
            result = Ok(());
        } else if description.contains("can't parse entities") {
            outcome = "retried_plain";
            let plain = html
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&");
            result = api
                .edit_message_text(chat_id, message_id, &plain, ParseMode::Plain)
                .await;
        }
    }
    let decision = match &result {
        Ok(()) => Decision::new(DecisionKind::new("telegram_edit"), Outcome::new(outcome)),
        Err(error) => Decision::new(DecisionKind::new("telegram_edit"), Outcome::new("failed"))
            .reason(error.to_string()),
    };
    decisions.record(
        decision
            .detail("chat_id", chat_id)
            .detail("message_id", message_id),
    );
    result.is_ok()
}
