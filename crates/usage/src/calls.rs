//! One model call as the usage index keeps it: a small fixed record, nothing on the heap — its
//! identity hashed ([`CallKey`]), its model interned ([`ModelId`]), its time in 8 bytes, its
//! five token counts in 4 bytes each (48 bytes in all). A file's calls are one list
//! ([`Calls`]) that its reader appends to and the accounting's share of the file
//! ([`crate::account::Share`]) holds too, so the calls a file wins are not copied.
//!
//! A count that does not fit 32 bits (4.29 billion tokens in one call: no model has such a
//! context, but a damaged file may say so) is kept whole beside the list, so every count stays
//! exactly what the file says.

use std::sync::Arc;

use cross_agent_protocol::timestamp::UnixMillis;

use crate::keys::{CallKey, ModelId};
use crate::tokens::Tokens;

/// A file's calls in its order, shared by its reader and its share of the accounting (a reader
/// appending to a list a share still holds appends to its own copy).
pub type Calls = Arc<CallList>;

/// One call a file records (a Claude reply, a Codex `token_count`, a Grok turn), read out of
/// its list whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// A Claude reply's `message.id` + `requestId`; a Codex call's running total + last usage
    /// (its thread family is added when calls are compared across files); nothing for Grok.
    pub key: CallKey,
    pub timestamp: Option<UnixMillis>,
    pub model: Option<ModelId>,
    pub tokens: Tokens,
}

/// A call as kept in its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kept {
    key: CallKey,
    /// Unix milliseconds, [`NO_TIME`] when the line did not say.
    at: i64,
    model: Option<ModelId>,
    /// input, output, 5-minute and 1-hour cache writes, cache reads; [`WIDE`] when the counts
    /// are in [`CallList::wide`].
    counts: [u32; 5],
}

/// No time: no RFC 3339 time parses to it (it is 292 million years before 1970).
const NO_TIME: i64 = i64::MIN;

/// The counts are kept whole beside the list.
const WIDE: [u32; 5] = [u32::MAX; 5];

/// A file's calls, in its order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallList {
    calls: Vec<Kept>,
    /// The counts of the calls with a count of `u32::MAX` or more, by place, in order.
    wide: Vec<(u32, Tokens)>,
}

impl CallList {
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The call at `at`.
    pub fn get(&self, at: usize) -> Option<Call> {
        let kept = self.calls.get(at)?;
        Some(self.read(at, kept))
    }

    /// The key of the call at `at` (cheaper than [`CallList::get`]).
    pub fn key(&self, at: usize) -> Option<CallKey> {
        self.calls.get(at).map(|kept| kept.key)
    }

    /// Every call, in order.
    pub fn iter(&self) -> impl Iterator<Item = Call> + '_ {
        self.calls
            .iter()
            .enumerate()
            .map(|(at, kept)| self.read(at, kept))
    }

    pub fn push(&mut self, call: Call) {
        let at = self.calls.len();
        self.calls.push(Kept {
            key: call.key,
            at: NO_TIME,
            model: None,
            counts: [0; 5],
        });
        self.set(at, call);
    }

    /// Puts `call` at `at` in place of the call there (nothing when there is none).
    pub fn set(&mut self, at: usize, call: Call) {
        let Some(kept) = self.calls.get_mut(at) else {
            return;
        };
        let t = call.tokens;
        let counts = [
            t.input,
            t.output,
            t.cache_write_5m,
            t.cache_write_1h,
            t.cache_read,
        ];
        let narrow = |n: u64| u32::try_from(n).ok().filter(|&n| n != u32::MAX);
        let narrow: Option<[u32; 5]> = (|| {
            Some([
                narrow(counts[0])?,
                narrow(counts[1])?,
                narrow(counts[2])?,
                narrow(counts[3])?,
                narrow(counts[4])?,
            ])
        })();
        *kept = Kept {
            key: call.key,
            at: call.timestamp.map_or(NO_TIME, |t| t.0.max(NO_TIME + 1)),
            model: call.model,
            counts: narrow.unwrap_or(WIDE),
        };
        let place = at as u32;
        let found = self.wide.binary_search_by_key(&place, |&(p, _)| p);
        match (found, narrow) {
            (Ok(i), None) => self.wide[i].1 = t,
            (Err(i), None) => self.wide.insert(i, (place, t)),
            (Ok(i), Some(_)) => {
                self.wide.remove(i);
            }
            (Err(_), Some(_)) => {}
        }
    }

    /// The bytes the list holds on the heap (its records and the wide counts beside).
    pub fn heap_bytes(&self) -> usize {
        self.calls.capacity() * std::mem::size_of::<Kept>()
            + self.wide.capacity() * std::mem::size_of::<(u32, Tokens)>()
    }

    pub fn shrink_to_fit(&mut self) {
        self.calls.shrink_to_fit();
        self.wide.shrink_to_fit();
    }

    fn read(&self, at: usize, kept: &Kept) -> Call {
        let tokens = if kept.counts == WIDE {
            self.wide
                .binary_search_by_key(&(at as u32), |&(p, _)| p)
                .map(|i| self.wide[i].1)
                .unwrap_or_default()
        } else {
            let [input, output, cache_write_5m, cache_write_1h, cache_read] = kept.counts;
            Tokens {
                input: u64::from(input),
                output: u64::from(output),
                cache_write_5m: u64::from(cache_write_5m),
                cache_write_1h: u64::from(cache_write_1h),
                cache_read: u64::from(cache_read),
            }
        };
        Call {
            key: kept.key,
            timestamp: (kept.at != NO_TIME).then_some(UnixMillis(kept.at)),
            model: kept.model,
            tokens,
        }
    }
}

/// Puts `calls` in fresh allocations of exactly its length, the old ones dropped, when nothing
/// else holds it (another holder's copy would be doubled): see [`crate::live`]'s compaction.
pub(crate) fn renew(calls: &mut Calls) {
    if Arc::strong_count(calls) == 1 {
        *calls = Arc::new(CallList::clone(calls));
    }
}

/// A path held in one place only put in a fresh allocation, as [`renew`] does for calls.
pub(crate) fn renew_path(path: &mut Arc<std::path::Path>) {
    if Arc::strong_count(path) == 1 {
        *path = Arc::from(&**path);
    }
}

impl FromIterator<Call> for CallList {
    fn from_iter<I: IntoIterator<Item = Call>>(calls: I) -> CallList {
        let mut list = CallList::default();
        for call in calls {
            list.push(call);
        }
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(n: u8, tokens: Tokens) -> Call {
        Call {
            key: CallKey::of(|w| {
                w.u64(u64::from(n));
            }),
            timestamp: Some(UnixMillis(1_796_000_000_000 + i64::from(n))),
            model: Some(ModelId::intern("calls-test-model")),
            tokens,
        }
    }

    /// Counts of 32 bits and more are kept exactly as the file says, beside the list, and the
    /// calls around them keep theirs; a call whose counts come back under 32 bits leaves
    /// nothing beside the list.
    #[test]
    fn counts_past_32_bits_stay_exact_and_the_calls_around_them_keep_theirs() {
        let small = Tokens {
            input: 3,
            output: u64::from(u32::MAX - 1),
            cache_write_5m: 5,
            cache_write_1h: 0,
            cache_read: 7,
        };
        let huge = Tokens {
            input: u64::from(u32::MAX),
            output: 1,
            cache_write_5m: u64::MAX,
            cache_write_1h: 2,
            cache_read: 1 << 40,
        };
        let mut list: CallList = [call(0, small), call(1, huge), call(2, small)]
            .into_iter()
            .collect();
        list.push(call(3, huge));
        let got: Vec<Call> = list.iter().collect();
        assert_eq!(
            got,
            vec![call(0, small), call(1, huge), call(2, small), call(3, huge)]
        );
        assert_eq!(list.wide.len(), 2);
        list.set(1, call(1, small));
        assert_eq!(list.get(1), Some(call(1, small)));
        assert_eq!(list.get(3), Some(call(3, huge)));
        assert_eq!(list.wide, vec![(3, huge)]);
        let no_time = Call {
            timestamp: None,
            ..call(4, small)
        };
        list.push(no_time);
        assert_eq!(list.get(4), Some(no_time));
        assert_eq!(std::mem::size_of::<Kept>(), 48);
    }
}
