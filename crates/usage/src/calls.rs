//! One model call as the usage index keeps it: a small fixed record, nothing on the heap — its
//! identity hashed ([`CallKey`]), its model interned ([`ModelId`]), its time in 8 bytes. A
//! file's calls are one list ([`Calls`]) that its reader appends to and the accounting's share
//! of the file ([`crate::account::Share`]) holds too, so the calls a file wins are not copied.

use std::sync::Arc;

use cross_agent_protocol::timestamp::UnixMillis;

use crate::keys::{CallKey, ModelId};
use crate::tokens::Tokens;

/// A file's calls in its order, shared by its reader and its share of the accounting (a reader
/// appending to a list a share still holds appends to its own copy).
pub type Calls = Arc<Vec<Call>>;

/// One call a file records (a Claude reply, a Codex `token_count`, a Grok turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// A Claude reply's `message.id` + `requestId`; a Codex call's running total + last usage
    /// (its thread family is added when calls are compared across files); nothing for Grok.
    pub key: CallKey,
    /// Unix milliseconds, [`NO_TIME`] when the line did not say.
    at: i64,
    pub model: Option<ModelId>,
    pub tokens: Tokens,
}

/// No time: no RFC 3339 time parses to it (it is 292 million years before 1970).
const NO_TIME: i64 = i64::MIN;

impl Call {
    pub fn new(
        key: CallKey,
        timestamp: Option<UnixMillis>,
        model: Option<ModelId>,
        tokens: Tokens,
    ) -> Call {
        let mut call = Call {
            key,
            at: NO_TIME,
            model,
            tokens,
        };
        call.set_timestamp(timestamp);
        call
    }

    /// When the call was made, if its line said.
    pub fn timestamp(&self) -> Option<UnixMillis> {
        (self.at != NO_TIME).then_some(UnixMillis(self.at))
    }

    pub fn set_timestamp(&mut self, timestamp: Option<UnixMillis>) {
        self.at = timestamp.map_or(NO_TIME, |t| t.0.max(NO_TIME + 1));
    }
}
