//! The hashing of the index's in-memory tables and checks: [`hash64`] (xxh3) for bytes, and a
//! `HashMap` ([`FastMap`]) that takes a `u64` key as already hashed.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for in-memory tables of this crate: a `u64` key is taken as already hashed, bytes
/// (a `str` key) go through [`hash64`]. SipHash's protection against chosen keys is not
/// needed for paths and ids read from the user's own disk, and it showed up in profiles.
#[derive(Default)]
pub(crate) struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = hash64(bytes) ^ self.0.rotate_left(5);
    }

    fn write_u8(&mut self, n: u8) {
        // `str` keys end with a 0xff marker byte; fold it in cheaply.
        self.0 = self.0.rotate_left(8) ^ u64::from(n);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

/// A `HashMap` with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// The crate's one hash: xxHash's XXH3, 64 bits. Its output is fixed by its specification (the
/// same on every platform and version, unlike `DefaultHasher`), which a persisted cache needs,
/// and it is a well-tested checksum: it guards the cache file, its journal records and each
/// stored fold, identifies a file's head, and keys the in-memory path tables. Not for anything
/// an adversary controls.
pub(crate) fn hash64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}
