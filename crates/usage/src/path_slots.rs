//! Items kept one per file in one list, found by their file's path (issue 30): the live index's
//! entries ([`crate::entry::Entry`]) and the ledger's file slots. At 111,000 files each item
//! boxed apart and keyed in a map by a second `Arc` of its path was 111,000 small long-lived
//! allocations, each with its allocator rounding and the key's counts; here the items sit in
//! one `Vec` (a gone file's slot is reused by the next new one) and the table beside it
//! holds only a slot's number (4 bytes), hashed from the path the item already holds — no
//! second key. A slot's number is the item's id for as long as it is kept.

use std::hash::{Hash as _, Hasher as _};
use std::path::Path;

use hashbrown::HashTable;
use xxhash_rust::xxh3::Xxh3;

/// An item that names its own file.
pub(crate) trait Pathed {
    fn path(&self) -> &Path;
}

/// Every file's item, by path and by slot number.
#[derive(Debug)]
pub(crate) struct PathSlots<T> {
    /// `None`: a slot left by a file gone, listed in `free`.
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    /// Each item's slot, found by the hash of its path.
    by_path: HashTable<u32>,
}

impl<T> Default for PathSlots<T> {
    fn default() -> Self {
        PathSlots {
            slots: Vec::new(),
            free: Vec::new(),
            by_path: HashTable::new(),
        }
    }
}

/// A path's hash for the tables that find a file by it (here and in [`crate::ledger`]): by
/// `Path`'s own `Hash`, which agrees with its `==` (`a//b` is `a/b`), as the maps did.
pub(crate) fn hash(path: &Path) -> u64 {
    let mut hasher = Xxh3::new();
    path.hash(&mut hasher);
    hasher.finish()
}

impl<T: Pathed> PathSlots<T> {
    /// Room for `files` entries made ahead (a walk knows how many it will keep).
    pub(crate) fn with_capacity(files: usize) -> PathSlots<T> {
        PathSlots {
            slots: Vec::with_capacity(files),
            free: Vec::new(),
            by_path: HashTable::with_capacity(files),
        }
    }

    /// Room for `more` items made ahead, exactly (a list grown by doubling from empty holds up
    /// to twice its length: 1 MB of the ledger's slots left spare at 111,000 files).
    pub(crate) fn reserve(&mut self, more: usize) {
        self.slots.reserve_exact(more);
        let slots = &self.slots;
        self.by_path.reserve(more, |&at| {
            slots[at as usize]
                .as_ref()
                .map_or(0, |item| hash(item.path()))
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.by_path.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }

    /// The slot number of the item kept for `path`.
    pub(crate) fn slot_of(&self, path: &Path) -> Option<u32> {
        let slots = &self.slots;
        self.by_path
            .find(hash(path), |&at| {
                slots[at as usize]
                    .as_ref()
                    .is_some_and(|item| item.path() == path)
            })
            .copied()
    }

    pub(crate) fn get(&self, path: &Path) -> Option<&T> {
        self.at(self.slot_of(path)?)
    }

    /// The item in slot `at`, if one is kept there.
    pub(crate) fn at(&self, at: u32) -> Option<&T> {
        self.slots.get(at as usize).and_then(Option::as_ref)
    }

    pub(crate) fn at_mut(&mut self, at: u32) -> Option<&mut T> {
        self.slots.get_mut(at as usize).and_then(Option::as_mut)
    }

    /// How many slots there are, kept or free: every slot number is below it.
    pub(crate) fn slot_count(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Keeps `item` under its path, in place of any item kept there; its slot number.
    pub(crate) fn insert(&mut self, item: T) -> u32 {
        drop(self.remove(item.path()));
        let at = match self.free.pop() {
            Some(at) => {
                self.slots[at as usize] = Some(item);
                at
            }
            None => {
                self.slots.push(Some(item));
                (self.slots.len() - 1) as u32
            }
        };
        let slots = &self.slots;
        let path = |at: &u32| {
            slots[*at as usize]
                .as_ref()
                .map_or(0, |item| hash(item.path()))
        };
        let hashed = path(&at);
        self.by_path.insert_unique(hashed, at, path);
        at
    }

    /// The item kept for `path`, taken out.
    pub(crate) fn remove(&mut self, path: &Path) -> Option<T> {
        self.remove_at(self.slot_of(path)?)
    }

    /// The item in slot `at`, taken out (its slot free for the next new one).
    pub(crate) fn remove_at(&mut self, at: u32) -> Option<T> {
        let hashed = hash(self.at(at)?.path());
        if let Ok(found) = self.by_path.find_entry(hashed, |&other| other == at) {
            found.remove();
        }
        self.free.push(at);
        self.slots[at as usize].take()
    }

    pub(crate) fn clear(&mut self) {
        *self = PathSlots::default();
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().flatten()
    }

    /// Every item, taken out (their list let go).
    pub(crate) fn into_values(self) -> impl Iterator<Item = T> {
        self.slots.into_iter().flatten()
    }

    /// The room left spare given back once a refresh is done, when a quarter or more of the
    /// list is ([`crate::states::trim`]: a list grown by doubling holds up to twice its length,
    /// 13 MB of entries at 111,000 files), the free slots at its end dropped first (no item's
    /// slot number changes).
    pub(crate) fn trim(&mut self) {
        while self.slots.last().is_some_and(Option::is_none) {
            self.slots.pop();
        }
        let len = self.slots.len() as u32;
        self.free.retain(|&at| at < len);
        crate::states::trim(&mut self.slots);
        crate::states::trim(&mut self.free);
    }

    /// The heap bytes of the list and the table (the items' own allocations not counted).
    pub(crate) fn heap_bytes(&self) -> usize {
        let buckets = if self.by_path.capacity() == 0 {
            0
        } else {
            (self.by_path.capacity() * 8 / 7).next_power_of_two()
        };
        self.slots.capacity() * std::mem::size_of::<Option<T>>()
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
            std::mem::size_of::<Option<crate::entry::Entry>>(),
            std::mem::size_of::<crate::entry::Entry>()
        );
    }

    struct Named(std::path::PathBuf);

    impl super::Pathed for Named {
        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    /// A removed item's slot goes to the next new one; the others keep their numbers and are
    /// still found by path; trimming drops only free slots at the end.
    #[test]
    fn slots_are_reused_and_numbers_kept() {
        let mut slots = super::PathSlots::default();
        let a = slots.insert(Named("/s/a".into()));
        let b = slots.insert(Named("/s/b".into()));
        let c = slots.insert(Named("/s/c".into()));
        assert_eq!(slots.remove_at(b).map(|n| n.0), Some("/s/b".into()));
        assert_eq!(slots.slot_of("/s/b".as_ref()), None);
        let d = slots.insert(Named("/s/d".into()));
        assert_eq!(d, b, "the free slot is taken");
        assert_eq!(slots.slot_of("/s/a".as_ref()), Some(a));
        assert_eq!(slots.slot_of("/s/c".as_ref()), Some(c));
        // The same path again replaces, not adds.
        slots.insert(Named("/s/a".into()));
        assert_eq!(slots.len(), 3);
        assert!(slots.remove("/s/c".as_ref()).is_some());
        slots.trim();
        assert_eq!(slots.slot_count(), 2, "the last slot, free, dropped");
        assert_eq!(slots.slot_of("/s/d".as_ref()), Some(d));
    }
}
