//! The ledger's key table ([`crate::ledger`]): each call identity's state's place
//! ([`KeyId`]), found by the key, which the table does not hold (it is read from the key's
//! first copy: the caller's `eq` and `hasher`). At 111,000 sessions it holds 1.7 million places
//! in 2 million buckets; a place is kept in 3 bytes while every one fits (16 million keys, ten
//! times the largest stores), 4 bytes and a control byte a bucket where it took 5 — 2 MB less
//! (issue 30). Past that the table is made again with 4-byte places, once.

use hashbrown::HashTable;

use crate::states::KeyId;

/// A place in 3 bytes.
type Narrow = [u8; 3];

/// The first place that does not fit 3 bytes.
const NARROW_END: KeyId = 1 << 24;

/// Every key's state's place (see the module's header).
#[derive(Debug)]
pub(crate) enum KeyTable {
    Narrow(HashTable<Narrow>),
    Wide(HashTable<KeyId>),
}

impl Default for KeyTable {
    fn default() -> KeyTable {
        KeyTable::Narrow(HashTable::new())
    }
}

fn widen(k: &Narrow) -> KeyId {
    KeyId::from_le_bytes([k[0], k[1], k[2], 0])
}

fn narrow(k: KeyId) -> Narrow {
    let [a, b, c, _] = k.to_le_bytes();
    [a, b, c]
}

impl KeyTable {
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match self {
            KeyTable::Narrow(table) => table.len(),
            KeyTable::Wide(table) => table.len(),
        }
    }

    /// The place with hash `hash` for which `eq` holds.
    pub(crate) fn find(&self, hash: u64, eq: impl Fn(KeyId) -> bool) -> Option<KeyId> {
        match self {
            KeyTable::Narrow(table) => table.find(hash, |k| eq(widen(k))).map(widen),
            KeyTable::Wide(table) => table.find(hash, |&k| eq(k)).copied(),
        }
    }

    /// Puts `k` in (not there before); `hasher` gives any place's hash when the table grows.
    pub(crate) fn insert(&mut self, hash: u64, k: KeyId, hasher: impl Fn(KeyId) -> u64) {
        if k >= NARROW_END
            && let KeyTable::Narrow(table) = self
        {
            let mut wide = HashTable::with_capacity(table.len() + 1);
            for &place in table.iter() {
                let place = widen(&place);
                wide.insert_unique(hasher(place), place, |&k| hasher(k));
            }
            *self = KeyTable::Wide(wide);
        }
        match self {
            KeyTable::Narrow(table) => {
                table.insert_unique(hash, narrow(k), |k| hasher(widen(k)));
            }
            KeyTable::Wide(table) => {
                table.insert_unique(hash, k, |&k| hasher(k));
            }
        }
    }

    /// Takes `k` out (found by its hash `hash`); whether it was there.
    pub(crate) fn remove(&mut self, hash: u64, k: KeyId) -> bool {
        match self {
            KeyTable::Narrow(table) => table
                .find_entry(hash, |&other| widen(&other) == k)
                .map(|found| found.remove())
                .is_ok(),
            KeyTable::Wide(table) => table
                .find_entry(hash, |&other| other == k)
                .map(|found| found.remove())
                .is_ok(),
        }
    }

    /// The table's heap bytes: its buckets, each a place and a control byte.
    pub(crate) fn heap_bytes(&self) -> usize {
        let (capacity, place) = match self {
            KeyTable::Narrow(table) => (table.capacity(), std::mem::size_of::<Narrow>()),
            KeyTable::Wide(table) => (table.capacity(), std::mem::size_of::<KeyId>()),
        };
        if capacity == 0 {
            return 0;
        }
        (capacity * 8 / 7).next_power_of_two() * (place + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places are found, taken out and kept in 3 bytes until one past them comes, when every
    /// place is kept in 4 and still found.
    #[test]
    fn places_are_found_narrow_and_after_widening() {
        let hash = |k: KeyId| u64::from(k % 97).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut table = KeyTable::default();
        for k in (0..1_000).chain([NARROW_END - 1]) {
            table.insert(hash(k), k, hash);
        }
        assert!(matches!(table, KeyTable::Narrow(_)));
        assert_eq!(
            table.find(hash(NARROW_END - 1), |k| k == NARROW_END - 1),
            Some(NARROW_END - 1)
        );
        assert!(table.remove(hash(500), 500));
        assert!(!table.remove(hash(500), 500));
        assert_eq!(table.find(hash(500), |k| k == 500), None);
        table.insert(hash(NARROW_END), NARROW_END, hash);
        table.insert(hash(u32::MAX), u32::MAX, hash);
        assert!(matches!(table, KeyTable::Wide(_)));
        assert_eq!(table.len(), 1_002);
        for k in (0..1_000)
            .filter(|&k| k != 500)
            .chain([NARROW_END - 1, NARROW_END, u32::MAX])
        {
            assert_eq!(table.find(hash(k), |other| other == k), Some(k), "{k}");
        }
        assert_eq!(table.find(hash(500), |k| k == 500), None);
    }
}
