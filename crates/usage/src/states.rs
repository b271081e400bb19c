//! The ledger's key states ([`crate::ledger`]: each call identity's first copy and winner, 16
//! bytes) kept in an unnamed file of the directory the index writes its call records to
//! ([`crate::spill`]), not on the heap: at 111k sessions they are 1.7 million, 27 MB.
//!
//! An update that looks at a few files reads the states it touches a block at a time (a file's
//! keys were made one after another, so they sit together) and writes the blocks it changed
//! back when it is done ([`KeyStates::settle`]); between updates the heap holds none of them.
//! An update that looks at many files (the cold one, or every Codex file decided again) holds
//! them all in memory ([`KeyStates::hold_all`]), and writes them out once at its end.
//!
//! With no directory the states stay in memory, as they do after a write failed (said once,
//! through [`Spill`]'s warning). A read that fails is kept as the records' failure
//! ([`Spill::failure`]), so the report made with it is an error and the index reads the stores
//! again — never a smaller figure.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::sync::{Arc, Mutex, PoisonError};

use crate::spill::Spill;

pub(crate) type FileId = u32;
pub(crate) type KeyId = u32;

/// A copy of a call: its file and its place there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CopyAt {
    pub(crate) file: FileId,
    pub(crate) at: u32,
}

/// No copy: a key with no first copy has none at all.
pub(crate) const NO_COPY: CopyAt = CopyAt {
    file: FileId::MAX,
    at: u32::MAX,
};

/// One key's first copy and what was decided for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyState {
    /// The first copy put in ([`NO_COPY`] when none is left); the rest are in the ledger's
    /// side table.
    pub(crate) first: CopyAt,
    /// The copy that wins the call ([`NO_COPY`] before it is decided, or with no copy).
    pub(crate) winner: CopyAt,
}

const UNSET: KeyState = KeyState {
    first: NO_COPY,
    winner: NO_COPY,
};

/// Bytes of one state on disk.
const STATE: usize = 16;
/// States read and written together (4 KiB).
const BLOCK: usize = 256;

/// Every key's state, by [`KeyId`] (see the module's header).
#[derive(Debug, Default)]
pub(crate) struct KeyStates {
    /// Every state while they are in memory (no directory, a failed write, or an update that
    /// holds them all); empty while they are in [`KeyStates::file`].
    held: Vec<KeyState>,
    /// Where the states are between updates, once written.
    file: Option<StateFile>,
    /// How many states there are.
    len: usize,
    /// The file's blocks this update read or changed, until [`KeyStates::settle`].
    blocks: Mutex<HashMap<usize, Block>>,
    /// Set once a write failed: the states stay in memory from then on.
    in_memory_for_good: bool,
}

#[derive(Debug)]
struct StateFile {
    file: File,
    /// How many states the file holds (those pushed since are in blocks until settled).
    written: usize,
    spill: Arc<Spill>,
}

#[derive(Debug)]
struct Block {
    states: Vec<KeyState>,
    changed: bool,
}

impl KeyStates {
    /// The state of `k` (a key past the end, or a block that could not be read: no copy).
    pub(crate) fn get(&self, k: KeyId) -> KeyState {
        let k = k as usize;
        match &self.file {
            None => self.held.get(k).copied().unwrap_or(UNSET),
            Some(file) => {
                let mut blocks = lock(&self.blocks);
                let block = blocks
                    .entry(k / BLOCK)
                    .or_insert_with(|| file.read_block(k / BLOCK));
                block.states[k % BLOCK]
            }
        }
    }

    pub(crate) fn set(&mut self, k: KeyId, state: KeyState) {
        let k = k as usize;
        match &self.file {
            None => {
                if let Some(slot) = self.held.get_mut(k) {
                    *slot = state;
                }
            }
            Some(file) => {
                let blocks = self
                    .blocks
                    .get_mut()
                    .unwrap_or_else(PoisonError::into_inner);
                let block = blocks
                    .entry(k / BLOCK)
                    .or_insert_with(|| file.read_block(k / BLOCK));
                block.states[k % BLOCK] = state;
                block.changed = true;
            }
        }
    }

    /// A new key's state, at the end.
    pub(crate) fn push(&mut self, state: KeyState) -> KeyId {
        let k = self.len as KeyId;
        self.len += 1;
        match self.file {
            None => self.held.push(state),
            Some(_) => self.set(k, state),
        }
        k
    }

    /// Brings every state into memory for an update that looks at many files (read once, not
    /// a block at a time), written out again when it settles.
    pub(crate) fn hold_all(&mut self) {
        let Some(file) = self.file.take() else {
            return;
        };
        let mut held = vec![UNSET; self.len];
        let on_disk = file.written.min(self.len);
        let mut bytes = vec![0u8; on_disk * STATE];
        match file.file.read_exact_at(&mut bytes, 0) {
            Ok(()) => {
                for (state, bytes) in held.iter_mut().zip(bytes.chunks_exact(STATE)) {
                    *state = decode(bytes);
                }
            }
            Err(e) => file.spill.note_read_failure(&e),
        }
        let blocks = std::mem::take(
            self.blocks
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for (b, block) in blocks {
            let from = b * BLOCK;
            for (k, state) in (from..self.len.min(from + BLOCK)).zip(block.states) {
                held[k] = state;
            }
        }
        // Written out whole, to a fresh file, when the update settles.
        self.held = held;
    }

    /// Ends an update: the states it changed are written (all of them to a fresh file when
    /// they were in memory), and the heap lets go of them. Without `spill`, or after a failed
    /// write, they stay in memory.
    pub(crate) fn settle(&mut self, spill: Option<&Arc<Spill>>) {
        match self.file.take() {
            Some(mut file) => {
                let blocks = std::mem::take(
                    self.blocks
                        .get_mut()
                        .unwrap_or_else(PoisonError::into_inner),
                );
                let mut failed = None;
                let mut written = file.written;
                for (&b, block) in blocks.iter().filter(|(_, block)| block.changed) {
                    let from = b * BLOCK;
                    let to = self.len.min(from + BLOCK);
                    let bytes = encode(&block.states[..to - from]);
                    if let Err(e) = file.file.write_all_at(&bytes, (from * STATE) as u64) {
                        failed = Some(e);
                        break;
                    }
                    written = written.max(to);
                }
                match failed {
                    None => {
                        file.written = written;
                        self.file = Some(file);
                    }
                    Some(e) => {
                        // What the file holds and the blocks changed since, in memory for good.
                        file.spill.warn_kept_in_memory(&e);
                        self.in_memory_for_good = true;
                        *self
                            .blocks
                            .get_mut()
                            .unwrap_or_else(PoisonError::into_inner) = blocks;
                        self.file = Some(file);
                        self.hold_all();
                    }
                }
            }
            None => self.write_out(spill),
        }
        trim(&mut self.held);
    }

    /// The states held in memory written to a fresh file in the spill's directory, and let go.
    fn write_out(&mut self, spill: Option<&Arc<Spill>>) {
        let Some(spill) = spill else { return };
        if self.in_memory_for_good || self.len == 0 {
            return;
        }
        let written = spill.tempfile().and_then(|file| {
            file.write_all_at(&encode(&self.held), 0)?;
            Ok(file)
        });
        match written {
            Ok(file) => {
                self.file = Some(StateFile {
                    file,
                    written: self.len,
                    spill: spill.clone(),
                });
                self.held = Vec::new();
            }
            Err(e) => {
                spill.warn_kept_in_memory(&e);
                self.in_memory_for_good = true;
            }
        }
    }

    /// Heap bytes the states take now (none between updates once written).
    pub(crate) fn heap_bytes(&self) -> usize {
        let blocks = lock(&self.blocks);
        self.held.capacity() * size_of::<KeyState>()
            + blocks.len() * (BLOCK * size_of::<KeyState>() + 48)
    }

    /// Whether the states are in a file between updates.
    #[cfg(test)]
    pub(crate) fn on_disk(&self) -> bool {
        self.file.is_some()
    }
}

impl StateFile {
    /// Block `b` as the file holds it (past its end: no copy). A failed read is kept as the
    /// records' failure, and the block reads as no copy.
    fn read_block(&self, b: usize) -> Block {
        let mut states = vec![UNSET; BLOCK];
        let from = b * BLOCK;
        let on_disk = self.written.saturating_sub(from).min(BLOCK);
        if on_disk > 0 {
            let mut bytes = vec![0u8; on_disk * STATE];
            match self.file.read_exact_at(&mut bytes, (from * STATE) as u64) {
                Ok(()) => {
                    for (state, bytes) in states.iter_mut().zip(bytes.chunks_exact(STATE)) {
                        *state = decode(bytes);
                    }
                }
                Err(e) => self.spill.note_read_failure(&e),
            }
        }
        Block {
            states,
            changed: false,
        }
    }
}

/// Gives back a list's spare room when a quarter or more of it is spare, keeping an eighth (a
/// list grown by doubling holds up to twice its length; the eighth kept so the next few new
/// items do not move it again).
pub(crate) fn trim<T>(list: &mut Vec<T>) {
    if list.capacity() - list.len() > list.len() / 4 {
        list.shrink_to(list.len() + list.len() / 8);
    }
}

fn encode(states: &[KeyState]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(states.len() * STATE);
    for state in states {
        for word in [
            state.first.file,
            state.first.at,
            state.winner.file,
            state.winner.at,
        ] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    bytes
}

fn decode(bytes: &[u8]) -> KeyState {
    let word = |i: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&bytes[i * 4..i * 4 + 4]);
        u32::from_le_bytes(w)
    };
    KeyState {
        first: CopyAt {
            file: word(0),
            at: word(1),
        },
        winner: CopyAt {
            file: word(2),
            at: word(3),
        },
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
impl KeyStates {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Cuts the states' file to nothing, as a damaged disk would leave it.
    pub(crate) fn damage(&self) {
        if let Some(file) = &self.file {
            file.file.set_len(0).ok();
        }
    }
}
