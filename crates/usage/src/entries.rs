//! The live index's entries ([`crate::entry::Entry`], one per usage file) in one list, found by
//! their file's path (issue 30). At 111,000 files each entry boxed apart and keyed in a map by a
//! second `Arc` of its path was 111,000 small long-lived allocations, each pinning an allocator
//! page the daemon could not give back; here the entries sit in one `Vec` (a gone file's slot is
//! reused by the next new one) and the table beside it holds only a slot's number (4 bytes),
//! hashed from the path the entry's parse already holds — no second key.

use std::hash::{Hash as _, Hasher as _};
use std::path::Path;

use hashbrown::HashTable;
use xxhash_rust::xxh3::Xxh3;

use crate::entry::Entry;

/// Every file's entry, by path.
#[derive(Debug, Default)]
pub(crate) struct Entries {
    /// `None`: a slot left by a file gone, listed in `free`.
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    /// Each entry's slot, found by the hash of its parse's path.
    by_path: HashTable<u32>,
}

/// A path's hash for the tables that find a file by it (here and in [`crate::ledger`]): by
/// `Path`'s own `Hash`, which agrees with its `==` (`a//b` is `a/b`), as the maps did.
pub(crate) fn hash(path: &Path) -> u64 {
    let mut hasher = Xxh3::new();
    path.hash(&mut hasher);
    hasher.finish()
}

impl Entries {
    /// Room for `files` entries made ahead (a walk knows how many it will keep).
    pub(crate) fn with_capacity(files: usize) -> Entries {
        Entries {
            slots: Vec::with_capacity(files),
            free: Vec::new(),
            by_path: HashTable::with_capacity(files),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.by_path.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }

    fn slot_of(&self, path: &Path) -> Option<u32> {
        let slots = &self.slots;
        self.by_path
            .find(hash(path), |&at| {
                slots[at as usize]
                    .as_ref()
                    .is_some_and(|entry| **entry.parse().path() == *path)
            })
            .copied()
    }

    pub(crate) fn get(&self, path: &Path) -> Option<&Entry> {
        let at = self.slot_of(path)?;
        self.slots[at as usize].as_ref()
    }

    /// Keeps `entry` under its parse's path, in place of any entry kept there.
    pub(crate) fn insert(&mut self, entry: Entry) {
        drop(self.remove(entry.parse().path()));
        let at = match self.free.pop() {
            Some(at) => {
                self.slots[at as usize] = Some(entry);
                at
            }
            None => {
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        let slots = &self.slots;
        let path = |at: &u32| {
            slots[*at as usize]
                .as_ref()
                .map_or(0, |entry| hash(entry.parse().path()))
        };
        let hashed = path(&at);
        self.by_path.insert_unique(hashed, at, path);
    }

    /// The entry kept for `path`, taken out.
    pub(crate) fn remove(&mut self, path: &Path) -> Option<Entry> {
        let slots = &self.slots;
        let found = self.by_path.find_entry(hash(path), |&at| {
            slots[at as usize]
                .as_ref()
                .is_some_and(|entry| **entry.parse().path() == *path)
        });
        let (at, _) = found.ok()?.remove();
        self.free.push(at);
        self.slots[at as usize].take()
    }

    pub(crate) fn clear(&mut self) {
        *self = Entries::default();
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter().flatten()
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.slots.iter_mut().flatten()
    }

    /// Every entry, taken out (their list let go).
    pub(crate) fn into_values(self) -> impl Iterator<Item = Entry> {
        self.slots.into_iter().flatten()
    }

    /// The room left spare given back once a refresh is done, when a quarter or more of the
    /// list is ([`crate::states::trim`]: a list grown by doubling holds up to twice its length,
    /// 13 MB of entries at 111,000 files), the free slots at its end dropped first.
    pub(crate) fn trim(&mut self) {
        while self.slots.last().is_some_and(Option::is_none) {
            self.slots.pop();
        }
        let len = self.slots.len() as u32;
        self.free.retain(|&at| at < len);
        crate::states::trim(&mut self.slots);
        crate::states::trim(&mut self.free);
    }

    /// The heap bytes of the list and the table (the entries' own allocations not counted).
    pub(crate) fn heap_bytes(&self) -> usize {
        let buckets = if self.by_path.capacity() == 0 {
            0
        } else {
            (self.by_path.capacity() * 8 / 7).next_power_of_two()
        };
        self.slots.capacity() * std::mem::size_of::<Option<Entry>>()
            + self.free.capacity() * 4
            + buckets * (4 + 1)
    }
}

#[cfg(test)]
mod tests {
    /// Two spellings of one path find the same file, as they did in a map keyed by `Path`.
    #[test]
    fn a_path_spelled_another_way_is_found() {
        assert_eq!(
            super::hash(std::path::Path::new("/a//b/c.jsonl")),
            super::hash(std::path::Path::new("/a/b/c.jsonl"))
        );
    }

    /// A slot is an entry's own size: a gone file's slot costs no tag beside the entries.
    #[test]
    fn a_slot_is_an_entrys_size() {
        assert_eq!(
            std::mem::size_of::<Option<super::Entry>>(),
            std::mem::size_of::<super::Entry>()
        );
    }
}
