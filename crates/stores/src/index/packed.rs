//! The entries of a listing read once and dropped (a cold listing without a cache file), packed
//! as the cache's bytes into a few large buffers as each file is read, instead of held as an
//! [`Entry`] each until the listing is made.
//!
//! Why: the readers run on 16 threads, and what a reader allocates for the session it keeps (an
//! id, a working directory, a title, a path — four small strings) lands in the same allocator
//! pages as the millions of short-lived buffers it reads with. Once those are freed, every page
//! still holding a kept string stays resident: at 22,000 sessions the held sessions were 13 MB
//! but the process held 50 MB more than it started with once they were listed (about 2 KB a
//! session). At 111,000 sessions, on an allocator that gives freed pages back within 10 ms,
//! packing took the peak from 142–152 MB to 96–120 MB (`docs/testing.md`, "cold listing").
//! Packed, each entry is copied
//! into a 1 MiB buffer and dropped on the reader's thread, so the readers' pages hold nothing
//! when the read ends; the sessions are then made on one thread, in pages of their own, each
//! buffer let go once its sessions are made ([`Packed::into_sessions`]). The encoding is the
//! cache file's ([`cache::encode_entry`]), after the entry's place among the files read: one
//! layout, one round-trip test, and the same sessions a warm listing gets from the cache.

use std::sync::Mutex;

use super::cache::{self, EntryView};
use super::{Entry, FoldKind};
use crate::model::{Agent, Session};

/// How much each buffer holds: about 3,000 entries, so 111,000 sessions are ~40 buffers, each
/// a large allocation of its own rather than a share of the small-object pages.
const CHUNK_BYTES: usize = 1 << 20;

/// The packed entries of one read.
#[derive(Debug, Default)]
pub(crate) struct Packed {
    /// Each entry is its place among the files read (u32) and its cache encoding.
    chunks: Vec<Vec<u8>>,
    /// How many files were read (packed or not): the places are below it.
    files: usize,
    packed: usize,
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
    packed: usize,
}

/// About what one packed entry takes, to reserve the buffers for `files` entries ahead.
const BYTES_AN_ENTRY: usize = 400;

impl Packer {
    /// A packer with room for about `files` entries, reserved on this thread.
    ///
    /// Reserved here, not by the readers: an allocation a reader's thread makes keeps its part
    /// of that thread's memory — and, once the thread has ended, the free pages beside it —
    /// resident until it is freed. The readers' threads end with the read; what they packed
    /// into is kept until the sessions are made. Reserving costs no memory until written (the
    /// pages are the kernel's until touched).
    pub(crate) fn with_room(files: usize) -> Packer {
        let chunks = (files * BYTES_AN_ENTRY).div_ceil(CHUNK_BYTES);
        Packer(Mutex::new(Buffers {
            used: Vec::with_capacity(chunks + 4),
            spare: (0..chunks)
                .map(|_| Vec::with_capacity(CHUNK_BYTES))
                .collect(),
            packed: 0,
        }))
    }

    /// Packs `entry`, the `place`-th file read, and drops it; or hands it back when it is to be
    /// held: the Codex names file's (its fold is read after the walk) and one the cache's
    /// layout cannot say (a path that is not UTF-8 where the platform has no byte paths, a
    /// string over 4 GB).
    pub(crate) fn pack(&self, place: usize, entry: Entry) -> Result<(), Box<Entry>> {
        let Ok(place) = u32::try_from(place) else {
            return Err(Box::new(entry));
        };
        if entry.kind == FoldKind::CodexNames {
            return Err(Box::new(entry));
        }
        // Encoded on the reader's own thread, outside the lock; only the copy is under it.
        let mut bytes = place.to_le_bytes().to_vec();
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
            used,
            spare,
            packed,
        } = &mut *buffers;
        let room = used
            .last()
            .is_some_and(|chunk| chunk.capacity() - chunk.len() >= bytes.len());
        if !room {
            let next = spare
                .pop()
                .filter(|chunk| chunk.capacity() >= bytes.len())
                .unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES.max(bytes.len())));
            used.push(next);
        }
        let Some(chunk) = used.last_mut() else {
            return Err(Box::new(entry));
        };
        chunk.extend_from_slice(&bytes);
        *packed += 1;
        Ok(())
    }

    /// What was packed, of `files` files read.
    pub(crate) fn finish(self, files: usize) -> Packed {
        let buffers = self
            .0
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Packed {
            chunks: buffers.used,
            files,
            packed: buffers.packed,
        }
    }
}

impl Packed {
    /// How many entries are packed.
    pub(crate) fn len(&self) -> usize {
        self.packed
    }

    /// The packed entries' sessions of `agents`, in the order their files were read, appended
    /// to `sessions`.
    pub(crate) fn sessions(&self, agents: &[Agent], sessions: &mut Vec<Session>) {
        let mut placed = self.places();
        for chunk in &self.chunks {
            decode_chunk(chunk, agents, &mut placed);
        }
        append_placed(placed, sessions);
    }

    /// [`Packed::sessions`], letting go of each buffer once its sessions are made: the
    /// sessions and the packed entries are never all held together.
    pub(crate) fn into_sessions(self, agents: &[Agent], sessions: &mut Vec<Session>) {
        let mut placed = self.places();
        for chunk in self.chunks {
            decode_chunk(&chunk, agents, &mut placed);
        }
        append_placed(placed, sessions);
    }

    /// A place for each file read. The buffers hold the entries in the order the readers
    /// finished them, not the files' order: each session is put in its file's place, so the
    /// listing (whose Codex duplicates are settled by order) is the same from run to run.
    fn places(&self) -> Vec<Option<Session>> {
        let mut placed = Vec::new();
        placed.resize_with(self.files, || None);
        placed
    }
}

/// Makes the sessions of `agents` of one buffer's entries, each in its place.
fn decode_chunk(mut bytes: &[u8], agents: &[Agent], placed: &mut [Option<Session>]) {
    while let Some((place, rest)) = bytes.split_first_chunk::<4>() {
        // Our own bytes, encoded a moment ago by the same layout: they always decode. Were
        // they ever not to, the listing says so rather than shorten without a word.
        let Some((view, rest)) = cache::decode_entry(rest) else {
            tracing::warn!(
                undecoded_bytes = rest.len(),
                "a packed listing buffer did not decode to its end: the sessions after that \
                 point are left out of this listing (the next listing reads their files again)"
            );
            return;
        };
        bytes = rest;
        if let Some(session) = view
            .session_owning(None)
            .filter(|session| agents.contains(&session.agent))
            && let Some(slot) = placed.get_mut(u32::from_le_bytes(*place) as usize)
        {
            *slot = Some(session);
        }
    }
}

/// The placed sessions, in their places' order, after `sessions`.
fn append_placed(placed: Vec<Option<Session>>, sessions: &mut Vec<Session>) {
    // Collected in place (a session fills its `Option`'s room): no second vector of them all.
    let placed: Vec<Session> = placed.into_iter().flatten().collect();
    if sessions.is_empty() {
        *sessions = placed;
    } else {
        sessions.extend(placed);
    }
}
