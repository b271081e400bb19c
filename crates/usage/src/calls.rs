//! One model call as the usage index keeps it: a small fixed record, nothing on the heap — its
//! identity hashed ([`CallKey`], 16 bytes) and, packed in 20 bytes, its time in milliseconds
//! (42 bits: 1970 to 2109), its model interned ([`ModelId`], 12 bits) and its five token counts
//! (21 bits each: 2 million tokens in one call, past the context of the models these agents
//! run): 36 bytes in all, in 4-byte words so a list holds no padding. A file's calls are one
//! list ([`Calls`]) that its reader appends to and the accounting's share of the file
//! ([`crate::account::Share`]) holds too, so the calls a file wins are not copied.
//!
//! A call that does not fit the packed fields (a count past 21 bits or a time outside those
//! years — a damaged file may say so —, or a process that interned 4,095 model names) is kept
//! whole beside the list, so every call stays exactly what the file says.

use std::sync::Arc;

use cross_agent_protocol::timestamp::UnixMillis;

use crate::keys::{CallKey, ModelId};
use crate::spill::{Region, Spill, Window};
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

/// A call as kept in its list: its key, and its time, model and counts packed in 160 bits
/// ([`Packed`]), all in 4-byte words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kept {
    key: [u32; 4],
    packed: [u32; 5],
}

/// Where each field sits in [`Kept::packed`] (bit offset, width): the time in Unix
/// milliseconds ([`NO_TIME`] when the line did not say), the model ([`NO_MODEL`], an id's place
/// + 1, or [`WIDE`]), then input, output, 5-minute and 1-hour cache writes, cache reads.
struct Packed;

impl Packed {
    const TIME: (u32, u32) = (0, 42);
    const MODEL: (u32, u32) = (42, 12);
    const COUNTS: u32 = 54;
    const COUNT_BITS: u32 = 21;

    /// The `width` bits at `at` (a field spans up to three words).
    fn get(words: &[u32; 5], (at, width): (u32, u32)) -> u64 {
        let mut value = 0;
        let mut got = 0;
        while got < width {
            let bit = at + got;
            let take = (32 - bit % 32).min(width - got);
            let part = u64::from(words[(bit / 32) as usize] >> (bit % 32)) & ((1 << take) - 1);
            value |= part << got;
            got += take;
        }
        value
    }

    /// Puts `value` (less than `1 << width`) at `at` in words all zero there.
    fn put(words: &mut [u32; 5], (at, width): (u32, u32), value: u64) {
        let mut put = 0;
        while put < width {
            let bit = at + put;
            let take = (32 - bit % 32).min(width - put);
            let part = (value >> put) & ((1 << take) - 1);
            words[(bit / 32) as usize] |= (part as u32) << (bit % 32);
            put += take;
        }
    }

    fn count(n: usize) -> (u32, u32) {
        (Self::COUNTS + n as u32 * Self::COUNT_BITS, Self::COUNT_BITS)
    }

    /// The call's time, model and counts packed, `None` when one does not fit.
    fn pack(call: &Call) -> Option<[u32; 5]> {
        let time = match call.timestamp {
            None => NO_TIME,
            Some(t) => u64::try_from(t.0).ok().filter(|&t| t < NO_TIME)?,
        };
        let model = match call.model {
            None => NO_MODEL,
            Some(id) => Some(id.index() as u64 + 1).filter(|&m| m < WIDE)?,
        };
        let mut words = [0; 5];
        Self::put(&mut words, Self::TIME, time);
        Self::put(&mut words, Self::MODEL, model);
        for (n, count) in counts(&call.tokens).into_iter().enumerate() {
            if count >= 1 << Self::COUNT_BITS {
                return None;
            }
            Self::put(&mut words, Self::count(n), count);
        }
        Some(words)
    }

    /// The call packed in `words` (not [`WIDE`]).
    fn unpack(key: CallKey, words: &[u32; 5]) -> Call {
        let time = Self::get(words, Self::TIME);
        let model = Self::get(words, Self::MODEL);
        let count = |n| Self::get(words, Self::count(n));
        Call {
            key,
            timestamp: (time != NO_TIME).then_some(UnixMillis(time as i64)),
            model: (model != NO_MODEL)
                .then(|| ModelId::from_index(model as usize - 1))
                .flatten(),
            tokens: Tokens {
                input: count(0),
                output: count(1),
                cache_write_5m: count(2),
                cache_write_1h: count(3),
                cache_read: count(4),
            },
        }
    }
}

/// No time: the time field all ones.
const NO_TIME: u64 = (1 << Packed::TIME.1) - 1;

/// No model.
const NO_MODEL: u64 = 0;

/// The model field of a call kept whole in [`CallList::wide`].
const WIDE: u64 = (1 << Packed::MODEL.1) - 1;

/// A call's five counts in their order.
fn counts(t: &Tokens) -> [u64; 5] {
    [
        t.input,
        t.output,
        t.cache_write_5m,
        t.cache_write_1h,
        t.cache_read,
    ]
}

/// A file's calls, in its order: on the heap, or on disk once written there ([`CallList::spill`]).
/// Kept for every file (110,000 at the largest stores) in an `Arc` its reader, share and ledger
/// slot hold: 32 bytes, so with the `Arc`'s counts one 48-byte block a file — where the records'
/// place was an `Arc` of its own (a second block) and the list 56 bytes (issue 30).
#[derive(Debug, Default)]
pub struct CallList {
    records: Records,
    /// The calls that do not fit their packed fields, whole, by place, in order (`None`:
    /// none, nearly always).
    wide: Option<Box<Wide>>,
}

/// The calls kept whole beside a list's records ([`CallList::wide`]), behind one thin pointer.
#[derive(Debug, Clone, Default)]
struct Wide(Vec<(u32, Call)>);

/// Where a list's records are.
#[derive(Debug)]
enum Records {
    Heap(Vec<Kept>),
    /// Written to disk ([`crate::spill`]): the region is this list's alone (its bytes are dead
    /// once the list lets go of it), so a copy of the list reads its records back
    /// ([`CallList::clone`]).
    Disk(Region),
}

impl Default for Records {
    fn default() -> Records {
        Records::Heap(Vec::new())
    }
}

/// The bytes of one record on disk: the key's four words, then the five packed ones.
const RECORD: usize = std::mem::size_of::<Kept>();

/// How many records a read back takes at once (36 KB).
const BLOCK: usize = 1024;

impl Kept {
    fn to_bytes(self, out: &mut Vec<u8>) {
        for word in self.key.iter().chain(self.packed.iter()) {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }

    fn from_bytes(bytes: &[u8]) -> Kept {
        let word = |n: usize| {
            let mut w = [0u8; 4];
            if let Some(b) = bytes.get(n * 4..n * 4 + 4) {
                w.copy_from_slice(b);
            }
            u32::from_le_bytes(w)
        };
        Kept {
            key: [word(0), word(1), word(2), word(3)],
            packed: [word(4), word(5), word(6), word(7), word(8)],
        }
    }
}

/// A record that could not be read back: no key, no time, no model, no tokens (the read's
/// failure is kept by [`Spill::failure`], so a report made with it is an error).
const UNREAD: Kept = Kept {
    key: [0; 4],
    packed: [0; 5],
};

impl PartialEq for CallList {
    fn eq(&self, other: &CallList) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for CallList {}

/// A copy is made only to be changed (`Arc::make_mut` before a push or a set, which read the
/// records back anyway), so a list on disk is copied onto the heap: its region stays its own.
/// A record that cannot be read back is [`UNREAD`], the failure kept for the next report
/// ([`Spill::failure`]); [`load_shared`] is the copy that says so instead.
impl Clone for CallList {
    fn clone(&self) -> CallList {
        let records = match &self.records {
            Records::Heap(calls) => calls.clone(),
            Records::Disk(region) => {
                read_back(region).unwrap_or_else(|_| vec![UNREAD; region.len()])
            }
        };
        CallList {
            records: Records::Heap(records),
            wide: self.wide.clone(),
        }
    }
}

/// Every record of `region`, read back.
fn read_back(region: &Region) -> std::io::Result<Vec<Kept>> {
    let mut bytes = vec![0u8; region.len() * RECORD];
    region.read(0, &mut bytes)?;
    Ok(bytes.chunks_exact(RECORD).map(Kept::from_bytes).collect())
}

/// The records of a list others may hold back on the heap, to be changed: read back in place
/// when nothing else holds it, else into a copy of its own (the others keep the one on disk);
/// an error when they cannot be read back (the list is left as it was).
pub(crate) fn load_shared(calls: &mut Calls) -> std::io::Result<()> {
    if let Some(list) = Arc::get_mut(calls) {
        return list.load();
    }
    if let Records::Disk(region) = &calls.records {
        let records = read_back(region)?;
        *calls = Arc::new(CallList {
            records: Records::Heap(records),
            wide: calls.wide.clone(),
        });
    }
    Ok(())
}

impl CallList {
    pub fn len(&self) -> usize {
        match &self.records {
            Records::Disk(region) => region.len(),
            Records::Heap(calls) => calls.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the records are on disk.
    pub fn on_disk(&self) -> bool {
        matches!(self.records, Records::Disk(_))
    }

    /// The region the records are in, when on disk.
    fn region(&self) -> Option<&Region> {
        match &self.records {
            Records::Disk(region) => Some(region),
            Records::Heap(_) => None,
        }
    }

    /// The calls kept whole beside the records.
    fn wide(&self) -> &[(u32, Call)] {
        self.wide.as_deref().map_or(&[], |wide| &wide.0)
    }

    /// The call at `at`.
    pub fn get(&self, at: usize) -> Option<Call> {
        let kept = self.kept(at)?;
        Some(self.read(at, &kept))
    }

    /// The key of the call at `at` (cheaper than [`CallList::get`]).
    pub fn key(&self, at: usize) -> Option<CallKey> {
        self.kept(at).map(|kept| CallKey::from_words(kept.key))
    }

    /// The record at `at`, read back from disk if it is there.
    fn kept(&self, at: usize) -> Option<Kept> {
        match &self.records {
            Records::Heap(calls) => calls.get(at).copied(),
            Records::Disk(region) => {
                if at >= region.len() {
                    return None;
                }
                let mut bytes = [0u8; RECORD];
                Some(match region.read(at, &mut bytes) {
                    Ok(()) => Kept::from_bytes(&bytes),
                    Err(_) => UNREAD,
                })
            }
        }
    }

    /// Every call, in order (read back from disk a block at a time).
    pub fn iter(&self) -> CallIter<'_> {
        self.iter_from(0)
    }

    /// The calls from `at` on, in order.
    pub fn iter_from(&self, at: usize) -> CallIter<'_> {
        CallIter {
            list: self,
            at,
            block: Vec::new(),
            block_at: 0,
            bytes: None,
        }
    }

    /// Every call, in order, read back through `window` (with the lists after it on disk, when
    /// lists are read in their order there: [`CallList::place`]).
    pub(crate) fn iter_in<'a>(&'a self, window: &'a mut Window) -> CallIter<'a> {
        let bytes = self.region().and_then(|region| window.records(region).ok());
        CallIter {
            bytes,
            ..self.iter()
        }
    }

    /// Where the records are on disk (file, offset), to read many lists in order; `None` on
    /// the heap.
    pub(crate) fn place(&self) -> Option<(usize, u64)> {
        self.region().map(Region::place)
    }

    /// Whether the records are on disk in a file `spill` no longer writes to.
    pub(crate) fn in_a_file_left(&self, spill: &Spill) -> bool {
        self.region()
            .is_some_and(|region| !spill.is_current(region))
    }

    /// The bytes of the records on disk.
    pub(crate) fn disk_bytes(&self) -> u64 {
        self.region().map_or(0, Region::bytes)
    }

    /// Writes the records to `spill` and keeps only where they are; left on the heap when the
    /// write fails (the spill says so once) or there is nothing to write.
    pub(crate) fn spill(&mut self, spill: &Spill) {
        let Records::Heap(calls) = &self.records else {
            return;
        };
        if calls.is_empty() {
            return;
        }
        let mut bytes = Vec::with_capacity(calls.len() * RECORD);
        for kept in calls {
            kept.to_bytes(&mut bytes);
        }
        if let Some(region) = spill.write(&bytes, calls.len() as u32, RECORD as u32) {
            self.records = Records::Disk(region);
        }
    }

    /// The records back on the heap (to be appended to or changed); an error when they cannot
    /// be read back (the list is left as it was).
    pub(crate) fn load(&mut self) -> std::io::Result<()> {
        if let Records::Disk(region) = &self.records {
            self.records = Records::Heap(read_back(region)?);
        }
        Ok(())
    }

    pub fn push(&mut self, call: Call) {
        self.load_or_lose();
        let Records::Heap(calls) = &mut self.records else {
            return;
        };
        let at = calls.len();
        calls.push(Kept {
            key: call.key.words(),
            packed: [0; 5],
        });
        self.set(at, call);
    }

    /// Puts `call` at `at` in place of the call there (nothing when there is none).
    pub fn set(&mut self, at: usize, call: Call) {
        self.load_or_lose();
        let Records::Heap(calls) = &mut self.records else {
            return;
        };
        let Some(kept) = calls.get_mut(at) else {
            return;
        };
        let packed = Packed::pack(&call);
        *kept = Kept {
            key: call.key.words(),
            packed: packed.unwrap_or_else(|| {
                let mut words = [0; 5];
                Packed::put(&mut words, Packed::MODEL, WIDE);
                words
            }),
        };
        let place = at as u32;
        let found = self.wide().binary_search_by_key(&place, |&(p, _)| p);
        let mut wide = match (found, packed) {
            (Ok(_), _) | (Err(_), None) => self.wide.take().map(|wide| wide.0).unwrap_or_default(),
            (Err(_), Some(_)) => return,
        };
        match (found, packed) {
            (Ok(i), None) => wide[i].1 = call,
            (Err(i), None) => wide.insert(i, (place, call)),
            (Ok(i), Some(_)) => {
                wide.remove(i);
            }
            (Err(_), Some(_)) => {}
        }
        // Rare (a damaged file's counts): made again at its length on each change.
        wide.shrink_to_fit();
        self.wide = (!wide.is_empty()).then(|| Box::new(Wide(wide)));
    }

    /// The records on the heap before a change: the live index loads a list before its reader
    /// reads on ([`load_shared`], reading the file again when that fails), so this is only
    /// for a list changed outside it; records that cannot be read back are [`UNREAD`] and the
    /// failure is kept for the next report.
    fn load_or_lose(&mut self) {
        if let Records::Disk(region) = &self.records {
            let records = read_back(region).unwrap_or_else(|_| vec![UNREAD; region.len()]);
            self.records = Records::Heap(records);
        }
    }

    /// The bytes the list holds on the heap (its records and the wide counts beside; the
    /// place of records on disk is the list's own).
    pub fn heap_bytes(&self) -> usize {
        let records = match &self.records {
            Records::Heap(calls) => calls.capacity() * std::mem::size_of::<Kept>(),
            Records::Disk(_) => 0,
        };
        records + std::mem::size_of_val(self.wide())
    }

    pub fn shrink_to_fit(&mut self) {
        if let Records::Heap(calls) = &mut self.records {
            calls.shrink_to_fit();
        }
    }

    /// The list again in fresh allocations of exactly its length (its region moved, not read).
    fn renewed(self) -> CallList {
        let records = match self.records {
            Records::Heap(calls) => Records::Heap(calls.as_slice().to_vec()),
            disk @ Records::Disk(_) => disk,
        };
        CallList {
            records,
            wide: self
                .wide
                .map(|wide| Box::new(Wide(wide.0.as_slice().to_vec()))),
        }
    }

    fn read(&self, at: usize, kept: &Kept) -> Call {
        if Packed::get(&kept.packed, Packed::MODEL) != WIDE {
            return Packed::unpack(CallKey::from_words(kept.key), &kept.packed);
        }
        let wide = self.wide();
        wide.binary_search_by_key(&(at as u32), |&(p, _)| p)
            .map(|i| wide[i].1)
            .unwrap_or(Call {
                key: CallKey::from_words(kept.key),
                timestamp: None,
                model: None,
                tokens: Tokens::default(),
            })
    }
}

/// A list's calls in order ([`CallList::iter`]): from disk a block of [`BLOCK`] records at a
/// time, so reading a list back holds at most one block; or from a [`Window`] that read it
/// with the lists after it ([`CallList::iter_in`]).
pub struct CallIter<'a> {
    list: &'a CallList,
    at: usize,
    /// Records `block_at..block_at + block.len()`, read back from disk.
    block: Vec<Kept>,
    block_at: usize,
    /// Every record of the list, as a window read them.
    bytes: Option<&'a [u8]>,
}

impl Iterator for CallIter<'_> {
    type Item = Call;

    fn next(&mut self) -> Option<Call> {
        let at = self.at;
        let kept = match (&self.list.records, self.bytes) {
            (Records::Heap(calls), _) => *calls.get(at)?,
            (Records::Disk(_), Some(bytes)) => {
                Kept::from_bytes(bytes.get(at * RECORD..(at + 1) * RECORD)?)
            }
            (Records::Disk(region), None) => {
                if at >= region.len() {
                    return None;
                }
                if at >= self.block_at + self.block.len() || at < self.block_at {
                    let count = BLOCK.min(region.len() - at);
                    let mut bytes = vec![0u8; count * RECORD];
                    self.block = match region.read(at, &mut bytes) {
                        Ok(()) => bytes.chunks_exact(RECORD).map(Kept::from_bytes).collect(),
                        Err(_) => vec![UNREAD; count],
                    };
                    self.block_at = at;
                }
                self.block[at - self.block_at]
            }
        };
        self.at += 1;
        Some(self.list.read(at, &kept))
    }
}

/// Puts `calls` in fresh allocations of exactly its length, the old ones dropped, when nothing
/// else holds it (another holder's copy would be doubled): see [`crate::live`]'s compaction.
pub(crate) fn renew(calls: &mut Calls) {
    if let Some(list) = Arc::get_mut(calls) {
        *calls = Arc::new(std::mem::take(list).renewed());
    }
}

/// A file's text (a parent session's id) held in one place only put in a fresh allocation, as
/// [`renew`] does for calls.
pub(crate) fn renew_text(text: &mut Option<Arc<str>>) {
    if let Some(held) = text
        && Arc::strong_count(held) == 1
    {
        *held = Arc::from(&**held);
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

    /// A call that does not fit its packed fields — a count of 21 bits and more, a time before
    /// 1970 or from 2109 on, a model past the 4,094th — is kept exactly as the file says,
    /// beside the list, and the calls around them keep theirs; a call set back to one that fits
    /// leaves nothing beside the list. The largest that fit are packed.
    #[test]
    fn calls_past_their_packed_fields_stay_exact_and_the_calls_around_them_keep_theirs() {
        let most = (1 << Packed::COUNT_BITS) - 1;
        let small = Tokens {
            input: 3,
            output: most,
            cache_write_5m: 5,
            cache_write_1h: 0,
            cache_read: most,
        };
        let huge = Tokens {
            input: u64::from(u32::MAX),
            output: 1,
            cache_write_5m: u64::MAX,
            cache_write_1h: 2,
            cache_read: 1 << 40,
        };
        let just_past = Tokens {
            cache_write_1h: most + 1,
            ..small
        };
        let mut list: CallList = [call(0, small), call(1, huge), call(2, small)]
            .into_iter()
            .collect();
        list.push(call(3, huge));
        list.push(call(4, just_past));
        let got: Vec<Call> = list.iter().collect();
        assert_eq!(
            got,
            vec![
                call(0, small),
                call(1, huge),
                call(2, small),
                call(3, huge),
                call(4, just_past)
            ]
        );
        assert_eq!(list.wide().len(), 3);
        list.set(1, call(1, small));
        assert_eq!(list.get(1), Some(call(1, small)));
        assert_eq!(list.get(3), Some(call(3, huge)));
        assert_eq!(list.wide(), [(3, call(3, huge)), (4, call(4, just_past))]);
        let at = |ms: i64| Call {
            timestamp: Some(UnixMillis(ms)),
            ..call(5, small)
        };
        let model = |index: usize| Call {
            model: ModelId::from_index(index),
            ..call(6, small)
        };
        let no_time = Call {
            timestamp: None,
            model: None,
            ..call(7, small)
        };
        let last_ms = NO_TIME as i64 - 1;
        let edges = [
            (no_time, true),
            (at(0), true),
            (at(last_ms), true),
            (at(last_ms + 1), false),
            (at(-1), false),
            (at(i64::MIN), false),
            (model(0xFFD), true),
            (model(0xFFE), false),
        ];
        for (call, fits) in edges {
            list.push(call);
            let place = list.len() - 1;
            assert_eq!(list.get(place), Some(call));
            assert_eq!(
                list.wide().last().map(|&(p, _)| p as usize) == Some(place),
                !fits,
                "{call:?}"
            );
        }
        assert_eq!(std::mem::size_of::<Kept>(), 36);
    }

    /// A list is kept for every file in an `Arc` (110,000 at the largest stores): 32 bytes, so
    /// with the `Arc`'s counts it is one 48-byte block, the records' place on disk inline.
    #[test]
    fn a_list_fits_32_bytes() {
        assert!(std::mem::size_of::<CallList>() <= 32);
    }

    /// A list copied while on disk (to be changed while a share holds it) is copied onto the
    /// heap and reads as it was; the original keeps its region, counted dead once, when it
    /// goes; a renewed list keeps its region without reading it.
    #[test]
    fn a_copy_of_a_list_on_disk_is_on_the_heap_and_its_region_dead_once() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path());
        let mut list: CallList = (0..10u8).map(|n| call(n, Tokens::default())).collect();
        list.spill(&spill);
        let mut calls: Calls = Arc::new(list);
        renew(&mut calls);
        assert!(calls.on_disk());
        let copy = CallList::clone(&calls);
        assert!(!copy.on_disk());
        assert!(copy.iter().eq(calls.iter()));
        let held = calls.clone();
        load_shared(&mut calls).unwrap();
        assert!(!calls.on_disk() && held.on_disk());
        assert_eq!(spill.bytes_written_and_dead(), (360, 0));
        drop(held);
        assert_eq!(spill.bytes_written_and_dead(), (360, 360));
    }

    /// A list written to disk reads back as it was — one call at a time, in blocks, through a
    /// window with other lists, and taken back on the heap — its wide calls with it; a list
    /// appended to after is taken back first.
    #[test]
    fn records_read_back_are_those_written() {
        let huge = Tokens {
            input: u64::MAX,
            ..Tokens::default()
        };
        let mut list: CallList = (0..2_500u32)
            .map(|n| {
                let tokens = Tokens {
                    input: u64::from(n),
                    output: 3,
                    ..Tokens::default()
                };
                call((n % 251) as u8, if n % 999 == 5 { huge } else { tokens })
            })
            .collect();
        let before = list.clone();
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path());
        let other: CallList = [call(1, Tokens::default())].into_iter().collect();
        let mut other = other;
        other.spill(&spill);
        list.spill(&spill);
        assert!(list.on_disk());
        assert_eq!(list.len(), before.len());
        assert!(list.iter().eq(before.iter()));
        assert!(list.iter_from(1_900).eq(before.iter_from(1_900)));
        for at in [0, 5, 1_023, 1_024, 2_499] {
            assert_eq!(list.get(at), before.get(at));
            assert_eq!(list.key(at), before.key(at));
        }
        assert_eq!(list.get(2_500), None);
        let mut window = Window::new(1 << 20);
        assert!(other.iter_in(&mut window).eq(other.iter()));
        assert!(list.iter_in(&mut window).eq(before.iter()));
        assert_eq!(spill.failure(), None);
        list.push(call(9, huge));
        assert!(!list.on_disk());
        assert!(list.iter().take(2_500).eq(before.iter()));
        assert_eq!(list.get(2_500), Some(call(9, huge)));
    }
}
