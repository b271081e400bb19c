//! The entries of a listing read once and dropped (a cold listing without a cache file), packed
//! as the cache's bytes into a few large buffers as each file is read, instead of held as an
//! [`Entry`] each until the listing is made.
//!
//! Why: the readers run on 16 threads, and what a reader allocates for the session it keeps (an
//! id, a working directory, a title, a path — four small strings) lands in the same allocator
//! pages as the millions of short-lived buffers it reads with. Once those are freed, every page
//! still holding a kept string stays resident: at 22,000 sessions the held sessions were 13 MB
//! but the process held 50 MB more than it started with once they were listed (about 2 KB a
//! session), and at 111,000 sessions that was most of the peak. Packed, each entry is copied
//! into a 1 MiB buffer and dropped on the reader's thread, so the readers' pages hold nothing
//! when the read ends; the sessions are then made on one thread, in pages of their own
//! ([`Packed::sessions`]). The encoding is the cache file's ([`cache::encode_entry`]): one
//! layout, one round-trip test, and the same sessions a warm listing gets from the cache.

use std::sync::Mutex;

use super::cache::{self, EntryView};
use super::{Entry, FoldKind};
use crate::model::{Agent, Session};

/// How much each buffer holds: about 3,000 entries, so 111,000 sessions are ~40 buffers, each
/// a large allocation of its own rather than a share of the small-object pages.
const CHUNK_BYTES: usize = 1 << 20;

/// Where one packed entry starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    chunk: u32,
    at: u32,
}

/// The packed entries of one read, and the readers' shared buffer while they are read.
#[derive(Debug, Default)]
pub(crate) struct Packed {
    chunks: Vec<Vec<u8>>,
    /// In the order of the files read (the order the held entries had), so the listing's
    /// sessions come out as they did when held.
    slots: Vec<Slot>,
}

/// The buffers the readers pack into, one at a time.
#[derive(Debug, Default)]
pub(crate) struct Packer(Mutex<Buffers>);

#[derive(Debug, Default)]
struct Buffers {
    /// Filled, and the one being filled (last).
    used: Vec<Vec<u8>>,
    /// Made by the thread that made the packer, not yet used.
    spare: Vec<Vec<u8>>,
}

/// About what one packed entry takes, to reserve the buffers for `files` entries ahead.
const BYTES_AN_ENTRY: usize = 400;

impl Packer {
    /// A packer with room for about `files` entries, reserved on this thread.
    ///
    /// Reserved here, not by the readers: an allocation a reader's thread makes keeps its part
    /// of that thread's memory — and, once the thread has ended, the free pages beside it —
    /// resident until it is freed. The readers' threads end with the read; what they packed
    /// into is kept to the end of the listing. Reserving costs no memory until written (the
    /// pages are the kernel's until touched).
    pub(crate) fn with_room(files: usize) -> Packer {
        let chunks = (files * BYTES_AN_ENTRY).div_ceil(CHUNK_BYTES);
        Packer(Mutex::new(Buffers {
            used: Vec::with_capacity(chunks + 4),
            spare: (0..chunks)
                .map(|_| Vec::with_capacity(CHUNK_BYTES))
                .collect(),
        }))
    }

    /// Packs `entry` and drops it, or hands it back when it is to be held: the Codex names
    /// file's (its fold is read after the walk) and one the cache's layout cannot say (a path
    /// that is not UTF-8 where the platform has no byte paths, a string over 4 GB).
    pub(crate) fn pack(&self, entry: Entry) -> Result<Slot, Box<Entry>> {
        if entry.kind == FoldKind::CodexNames {
            return Err(Box::new(entry));
        }
        // Encoded on the reader's own thread, outside the lock; only the copy is under it.
        let mut bytes = Vec::new();
        let encoded =
            EntryView::of(&entry, 0, 0, 0).and_then(|view| cache::encode_entry(&view, &mut bytes));
        if encoded.is_none() {
            return Err(Box::new(entry));
        }
        let Ok(mut buffers) = self.0.lock() else {
            // A reader panicked while holding the lock (it cannot: the copy does not panic):
            // the entry is simply held.
            return Err(Box::new(entry));
        };
        let Buffers {
            used: chunks,
            spare,
        } = &mut *buffers;
        let room = chunks
            .last()
            .is_some_and(|chunk| chunk.capacity() - chunk.len() >= bytes.len());
        if !room {
            let next = spare
                .pop()
                .filter(|chunk| chunk.capacity() >= bytes.len())
                .unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES.max(bytes.len())));
            chunks.push(next);
        }
        let index = chunks.len() - 1;
        let (Ok(chunk), Some(buffer)) = (u32::try_from(index), chunks.last_mut()) else {
            return Err(Box::new(entry));
        };
        let Ok(at) = u32::try_from(buffer.len()) else {
            return Err(Box::new(entry));
        };
        buffer.extend_from_slice(&bytes);
        Ok(Slot { chunk, at })
    }

    /// The buffers packed into, with the slots of the entries in the order they were read.
    pub(crate) fn finish(self, slots: Vec<Slot>) -> Packed {
        Packed {
            chunks: self
                .0
                .into_inner()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .used,
            slots,
        }
    }
}

impl Packed {
    /// How many entries are packed.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The packed entries' sessions of `agents`, in the order their files were read, appended
    /// to `sessions`.
    pub(crate) fn sessions(&self, agents: &[Agent], sessions: &mut Vec<Session>) {
        sessions.reserve_exact(self.slots.len());
        for slot in &self.slots {
            // Our own bytes, encoded a moment ago by the same layout: they always decode.
            let Some(bytes) = self
                .chunks
                .get(slot.chunk as usize)
                .and_then(|chunk| chunk.get(slot.at as usize..))
            else {
                continue;
            };
            if let Some(session) = cache::decode_entry(bytes)
                .and_then(|(view, _)| view.session_owning(None))
                .filter(|session| agents.contains(&session.agent))
            {
                sessions.push(session);
            }
        }
    }
}
