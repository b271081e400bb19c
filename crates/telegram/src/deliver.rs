//! Sending text to a chat: HTML-escaped, chunked at 4,096 characters, retried as plain text
//! when Telegram cannot parse the entities, and every outcome one decision line.

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};

use crate::api::{MAX_TEXT_CHARS, ParseMode, TelegramApi};
use crate::error::Error;
use crate::text::{chunk, escape_html};

/// Whether a 400 is Telegram failing to read our markup (then plain text goes through).
fn is_parse_error(error: &Error) -> bool {
    matches!(error, Error::Api { code: 400, description, .. }
        if description.to_ascii_lowercase().contains("can't parse entities"))
}

/// Sends `text` (plain text: escaped here when `mode` is HTML) to `chat_id`; says whether every
/// piece went out.
pub async fn send_text<A: TelegramApi>(
    api: &A,
    decisions: &DecisionLog,
    chat_id: i64,
    text: &str,
    mode: ParseMode,
) -> bool {
    // Chunk before escaping would let an entity grow a piece past the limit, so chunk what is sent.
    let pieces = match mode {
        ParseMode::Html => chunk(&escape_html(text), MAX_TEXT_CHARS),
        ParseMode::Plain => chunk(text, MAX_TEXT_CHARS),
    };
    let count = pieces.len();
    let mut all_sent = true;
    for (index, piece) in pieces.iter().enumerate() {
        let mut outcome = "sent";
        let mut result = api.send_message(chat_id, piece, mode, None).await;
        if let Err(error) = &result
            && mode == ParseMode::Html
            && is_parse_error(error)
        {
            outcome = "retried_plain";
            result = api
                .send_message(chat_id, &unescape_html(piece), ParseMode::Plain, None)
                .await;
        }
        let mut decision = match &result {
            Ok(_) => Decision::new(
                DecisionKind::new("telegram_delivery"),
                Outcome::new(outcome),
            ),
            Err(error) => {
                all_sent = false;
                Decision::new(
                    DecisionKind::new("telegram_delivery"),
                    Outcome::new("failed"),
                )
                .reason(error.to_string())
            }
        };
        decision = decision
            .detail("chat_id", chat_id)
            .detail("chars", piece.chars().count());
        if count > 1 {
            decision = decision.detail("chunk", index + 1).detail("chunks", count);
        }
        decisions.record(decision);
    }
    all_sent
}

fn unescape_html(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}
