//! Reading a `getUpdates` answer one update at a time. The answer's `result` is taken as a list
//! of raw JSON values and each is decoded on its own, so one update our types reject (a field
//! of an unexpected type, a shape Telegram added since) is skipped — with why, for the log, the
//! decisions and `telegram status` — instead of failing the whole answer. Failing it would leave
//! the offset before that update for good: every later poll would get it again, and the bot
//! would never hear another message or tap.
//!
//! The offset moves past the highest `update_id` that can be read in the batch, decoded or not.
//! An entry with no readable `update_id` is skipped too; a batch where no id at all can be read
//! confirms nothing ([`UpdateBatch::next_offset`] is `None`), and the poller backs off rather
//! than asking again at once for the same batch.

use cross_agent_protocol::schema::json_kind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Update;
use crate::secrets::Scrubber;

/// The longest reason kept for a skipped update, in characters: the decoder's message can
/// quote a value from the update, which is the sender's, not ours to copy at length.
const MAX_REASON_CHARS: usize = 200;

/// The longest update kind kept (a key of the update object), in characters.
const MAX_KIND_CHARS: usize = 40;

/// One `getUpdates` answer, each entry decoded on its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateBatch {
    /// The updates that decoded, in the order Telegram sent them.
    pub updates: Vec<Update>,
    /// The entries that did not, in order, with why.
    pub skipped: Vec<SkippedUpdate>,
    /// How many entries the answer held.
    pub received: usize,
    /// The highest `update_id` read from any entry, decoded or not.
    pub highest_id: Option<i64>,
}

/// An update the poller could not read and went past.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedUpdate {
    /// Its id, when that much could be read.
    #[serde(default)]
    pub update_id: Option<i64>,
    /// What it carried (`message`, `callback_query`, …): its first key past `update_id`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Why it could not be read: where in the update and what the decoder said, with control
    /// characters escaped ([`SkippedUpdate::to_record`] also scrubs and shortens it).
    pub reason: String,
    /// A fingerprint of its bytes, so the same unreadable entry offered again is told once.
    #[serde(skip)]
    pub fingerprint: u64,
}

impl SkippedUpdate {
    /// This skip as it may be logged and recorded: its reason scrubbed of secrets by
    /// `scrubber`, then cut at a couple of hundred characters (scrubbed first, so a cut never
    /// leaves half a secret).
    pub fn to_record(&self, scrubber: &Scrubber) -> SkippedUpdate {
        SkippedUpdate {
            reason: printable(&scrubber.scrub(&self.reason), MAX_REASON_CHARS),
            ..self.clone()
        }
    }
}

impl UpdateBatch {
    /// Decodes each entry of `getUpdates`'s `result` on its own.
    pub fn decode(entries: Vec<Value>) -> UpdateBatch {
        let mut batch = UpdateBatch {
            received: entries.len(),
            ..UpdateBatch::default()
        };
        for entry in entries {
            let update_id = entry.get("update_id").and_then(Value::as_i64);
            if let Some(id) = update_id {
                batch.highest_id = Some(batch.highest_id.map_or(id, |high| high.max(id)));
            }
            if update_id.is_none() {
                batch
                    .skipped
                    .push(skipped(&entry, None, no_id_reason(&entry)));
                continue;
            }
            match serde_path_to_error::deserialize::<_, Update>(&entry) {
                Ok(update) => batch.updates.push(update),
                Err(error) => {
                    let reason = if error.path().iter().next().is_none() {
                        error.inner().to_string()
                    } else {
                        format!("{}: {}", error.path(), error.inner())
                    };
                    batch.skipped.push(skipped(&entry, update_id, reason));
                }
            }
        }
        batch
    }

    /// The offset that confirms this batch: one past its highest readable `update_id`. `None`
    /// when no entry's id could be read (nothing can be confirmed safely).
    pub fn next_offset(&self) -> Option<i64> {
        self.highest_id.map(|id| id.saturating_add(1))
    }

    /// Whether the batch held entries and not one readable id: polling again at once would
    /// only bring the same entries back.
    pub fn is_unconfirmable(&self) -> bool {
        self.received > 0 && self.highest_id.is_none()
    }
}

fn no_id_reason(entry: &Value) -> String {
    match entry.get("update_id") {
        None if entry.is_object() => "it has no update_id".to_owned(),
        None => format!("it is {}, not an update object", json_kind(entry)),
        Some(id) => format!("its update_id is {}, not an integer", json_kind(id)),
    }
}

fn skipped(entry: &Value, update_id: Option<i64>, reason: String) -> SkippedUpdate {
    SkippedUpdate {
        update_id,
        kind: kind(entry),
        reason: printable(&reason, usize::MAX),
        fingerprint: xxhash_rust::xxh3::xxh3_64(entry.to_string().as_bytes()),
    }
}

/// The update's first key past `update_id` that looks like one of the Bot API's names (never
/// a key of the sender's making, which could hold anything).
fn kind(entry: &Value) -> Option<String> {
    entry
        .as_object()?
        .keys()
        .find(|key| {
            *key != "update_id"
                && !key.is_empty()
                && key.len() <= MAX_KIND_CHARS
                && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        })
        .cloned()
}

/// `text` with every control character escaped (`\u{1b}`), cut at `most` characters with `…`.
pub(crate) fn printable(text: &str, most: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for (count, c) in text.chars().enumerate() {
        if count == most {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn message(update_id: i64, message_id: Value) -> Value {
        json!({"update_id": update_id, "message": {"message_id": message_id,
               "chat": {"id": 5, "type": "private"}, "text": "hi"}})
    }

    #[test]
    fn a_bad_update_is_skipped_with_where_and_why_and_the_offset_passes_it() {
        let batch = UpdateBatch::decode(vec![
            message(1000, json!(1)),
            message(1001, json!("x")),
            message(1002, json!(3)),
        ]);
        assert_eq!(batch.received, 3);
        let ids: Vec<i64> = batch.updates.iter().map(|u| u.update_id).collect();
        assert_eq!(ids, [1000, 1002]);
        assert_eq!(batch.skipped.len(), 1);
        let bad = &batch.skipped[0];
        assert_eq!(bad.update_id, Some(1001));
        assert_eq!(bad.kind.as_deref(), Some("message"));
        assert!(
            bad.reason
                .starts_with("message.message_id: invalid type: string"),
            "{}",
            bad.reason
        );
        assert_eq!(batch.next_offset(), Some(1003));
        assert!(!batch.is_unconfirmable());
    }

    #[test]
    fn the_offset_passes_the_highest_readable_id_even_when_that_update_is_bad() {
        let batch = UpdateBatch::decode(vec![
            message(7, json!(1)),
            json!({"no_id": true}),
            message(9, json!(null)),
        ]);
        assert_eq!(batch.updates.len(), 1);
        assert_eq!(batch.skipped.len(), 2);
        assert_eq!(batch.skipped[0].update_id, None);
        assert_eq!(batch.skipped[0].reason, "it has no update_id");
        assert_eq!(batch.next_offset(), Some(10));
    }

    #[test]
    fn a_batch_without_one_readable_id_confirms_nothing() {
        let batch = UpdateBatch::decode(vec![json!(5), json!({"update_id": "12"})]);
        assert_eq!(batch.next_offset(), None);
        assert!(batch.is_unconfirmable());
        assert_eq!(
            batch.skipped[0].reason,
            "it is a number, not an update object"
        );
        assert_eq!(
            batch.skipped[1].reason,
            "its update_id is a string, not an integer"
        );
        assert!(!UpdateBatch::decode(Vec::new()).is_unconfirmable());
    }

    #[test]
    fn a_reason_never_carries_control_characters_raw_a_secret_or_a_long_value_whole() {
        const TOKEN: &str = "4242:SECRETupdates";
        let hostile = format!("\u{1b}]0;PWNED\u{7}{TOKEN}{}", "y".repeat(1000));
        let batch = UpdateBatch::decode(vec![message(1, json!(hostile))]);
        assert!(!batch.skipped[0].reason.chars().any(char::is_control));
        let told = batch.skipped[0].to_record(&Scrubber::new(Some(TOKEN), |_| None));
        let reason = &told.reason;
        assert!(!reason.chars().any(char::is_control), "{reason}");
        assert!(
            !reason.contains(TOKEN) && reason.contains("[secret]"),
            "{reason}"
        );
        assert!(reason.chars().count() <= MAX_REASON_CHARS + 1, "{reason}");
        assert!(reason.ends_with('…'));
        // A key that is not a Bot API name is never taken for the kind.
        let odd = UpdateBatch::decode(vec![json!({"update_id": 2, "\u{1b}[2J": 1, "message": 1})]);
        assert_eq!(odd.skipped[0].kind.as_deref(), Some("message"));
        let odd = UpdateBatch::decode(vec![json!({"update_id": 3, "Weird\u{1b}": 1})]);
        assert!(
            odd.skipped.is_empty(),
            "unknown keys are ignored by the decoder"
        );
    }
}
