//! The small fixed pieces the usage index keeps per call instead of text: a call's identity as
//! a 128-bit hash ([`CallKey`]) and its model as an interned id ([`ModelId`]).
//!
//! A key is `xxh3_128` of the identity's parts (a Claude reply's `message.id` + `requestId`; a
//! Codex call's thread family + running total + last usage), each part length-prefixed so no
//! two identities write the same bytes. Two different calls share a key only by a hash
//! collision: among `n` calls the odds are about `n² / 2¹²⁹` — at 10 million calls about
//! 1.5 × 10⁻²⁵, at a billion 1.5 × 10⁻²¹ — far below the odds of the disk flipping a bit in a
//! transcript, so keys are compared, never the text they came from (which is not kept: at
//! 100,000 sessions the ids alone were ~100 bytes a call, held three or four times over).
//!
//! Model names are a few dozen in any store: each is kept once for the process's life, and a
//! call holds its 4-byte id. Ids are never reused, so an id kept anywhere always names the same
//! model, whatever files were dropped since.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};

use xxhash_rust::xxh3::Xxh3;

/// A call's identity across files: a 128-bit hash of it (see the module's header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CallKey([u64; 2]);

impl CallKey {
    /// The key of the identity written by `parts` into a [`KeyWriter`].
    pub fn of(parts: impl FnOnce(&mut KeyWriter)) -> CallKey {
        let mut writer = KeyWriter(Xxh3::new());
        parts(&mut writer);
        let hash = writer.0.digest128();
        CallKey([hash as u64, (hash >> 64) as u64])
    }

    /// 64 bits of the key, for a hash table (the key is a hash already).
    pub fn short(&self) -> u64 {
        self.0[0]
    }

    /// The key as four 4-byte words (a list of keys in 4-byte words holds no padding).
    pub(crate) fn words(self) -> [u32; 4] {
        let [low, high] = self.0;
        [
            low as u32,
            (low >> 32) as u32,
            high as u32,
            (high >> 32) as u32,
        ]
    }

    /// The key of [`CallKey::words`].
    pub(crate) fn from_words(w: [u32; 4]) -> CallKey {
        let word = |low: u32, high: u32| u64::from(low) | (u64::from(high) << 32);
        CallKey([word(w[0], w[1]), word(w[2], w[3])])
    }

    /// The key's 16 bytes, to hash into another key.
    pub fn bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.0[0].to_le_bytes());
        out[8..].copy_from_slice(&self.0[1].to_le_bytes());
        out
    }
}

/// Writes an identity's parts, each told apart from the next.
pub struct KeyWriter(Xxh3);

impl KeyWriter {
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.0.update(&(s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
        self
    }

    pub fn opt_str(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            Some(s) => {
                self.0.update(&[1]);
                self.str(s)
            }
            None => {
                self.0.update(&[0]);
                self
            }
        }
    }

    pub fn u64(&mut self, n: u64) -> &mut Self {
        self.0.update(&n.to_le_bytes());
        self
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.update(b);
        self
    }
}

/// A model name, interned: 4 bytes where a call held the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelId(NonZeroU32);

/// Every model name seen, in the order seen; an id is its place + 1.
#[derive(Debug, Default)]
struct Models {
    by_name: HashMap<Arc<str>, ModelId>,
    names: Vec<Arc<str>>,
    /// The names as last handed out whole, while no name was added since.
    snapshot: Option<Arc<[Arc<str>]>>,
}

static MODELS: Mutex<Option<Models>> = Mutex::new(None);

fn with_models<T>(f: impl FnOnce(&mut Models) -> T) -> T {
    let mut guard = MODELS.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(Models::default))
}

impl ModelId {
    /// The id of `name`, given one the first time it is seen.
    pub fn intern(name: &str) -> ModelId {
        // A file's lines nearly all name the model the line before named: that one is looked
        // up without the lock the readers share.
        thread_local! {
            static LAST: std::cell::RefCell<Option<(Arc<str>, ModelId)>> =
                const { std::cell::RefCell::new(None) };
        }
        if let Some(id) = LAST.with_borrow(|last| {
            last.as_ref()
                .filter(|(kept, _)| &**kept == name)
                .map(|&(_, id)| id)
        }) {
            return id;
        }
        let (kept, id) = Self::intern_shared(name);
        LAST.set(Some((kept, id)));
        id
    }

    /// The id of `name` from the names every thread shares, with the name as kept there.
    fn intern_shared(name: &str) -> (Arc<str>, ModelId) {
        with_models(|models| {
            if let Some((kept, &id)) = models.by_name.get_key_value(name) {
                return (kept.clone(), id);
            }
            let name: Arc<str> = Arc::from(name);
            models.names.push(name.clone());
            // More than 4 billion model names is not a store; the last id is given again.
            let id = ModelId(
                NonZeroU32::new(u32::try_from(models.names.len()).unwrap_or(u32::MAX))
                    .unwrap_or(NonZeroU32::MIN),
            );
            models.by_name.insert(name.clone(), id);
            models.snapshot = None;
            (name, id)
        })
    }

    /// The id's place in [`ModelNames`] (0, 1, …).
    pub fn index(self) -> usize {
        self.0.get() as usize - 1
    }

    /// The id at place `index` ([`ModelId::index`]), as given: an id is kept as its place.
    pub(crate) fn from_index(index: usize) -> Option<ModelId> {
        u32::try_from(index + 1)
            .ok()
            .and_then(NonZeroU32::new)
            .map(ModelId)
    }

    /// The model's name.
    pub fn name(self) -> Arc<str> {
        ModelNames::now().get(self).unwrap_or_else(|| Arc::from(""))
    }
}

/// Working directories (a session's cwd), kept once for the process's life like model names:
/// a store names a few dozen projects, and every transcript of one holds the same name.
static CWDS: Mutex<Option<HashSet<Cwd>>> = Mutex::new(None);

/// A working directory as every file and share that names it holds it: the one copy kept for
/// the process's life ([`shared_cwd`]), by a thin pointer — 8 bytes where an `Arc<str>` took 16,
/// in a parse and a share kept for every file (issue 30).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cwd(&'static String);

impl std::ops::Deref for Cwd {
    type Target = str;

    fn deref(&self) -> &str {
        self.0
    }
}

impl std::borrow::Borrow<str> for Cwd {
    fn borrow(&self) -> &str {
        self.0
    }
}

impl std::fmt::Debug for Cwd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self.0, f)
    }
}

/// `cwd`, as every file that names it holds it (one copy, never let go).
pub fn shared_cwd(cwd: &str) -> Cwd {
    let mut guard = CWDS.lock().unwrap_or_else(PoisonError::into_inner);
    let cwds = guard.get_or_insert_with(HashSet::new);
    if let Some(kept) = cwds.get(cwd) {
        return *kept;
    }
    // Kept for the process's life, as the set held every name before: a few dozen a store.
    let kept = Cwd(Box::leak(Box::new(cwd.to_owned())));
    cwds.insert(kept);
    kept
}

/// Every model name interned so far, to look many ids up without taking a lock for each.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelNames(Arc<[Arc<str>]>);

impl ModelNames {
    pub fn now() -> ModelNames {
        ModelNames(with_models(|models| {
            models
                .snapshot
                .get_or_insert_with(|| Arc::from(models.names.clone()))
                .clone()
        }))
    }

    /// The name of `id` (every id given before this list was taken is in it).
    pub fn get(&self, id: ModelId) -> Option<Arc<str>> {
        self.0.get(id.0.get() as usize - 1).cloned()
    }

    /// How many names there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The name of `id` as a borrowed `str`.
    pub fn str(&self, id: ModelId) -> Option<&str> {
        self.0.get(id.0.get() as usize - 1).map(|n| &**n)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Transcripts of one project hold one copy of its cwd, whichever agent wrote them; another
    /// cwd is its own.
    #[test]
    fn files_naming_one_cwd_hold_one_copy_of_it() {
        let claude = |path: &str, cwd: &str| {
            let line = format!(
                r#"{{"type":"user","sessionId":"s","cwd":"{cwd}","timestamp":"2026-12-01T10:00:00.000Z"}}"#
            );
            crate::claude::read(Path::new(path), format!("{line}\n").as_bytes()).cwd
        };
        let codex = |path: &str, cwd: &str| {
            let line = format!(
                r#"{{"timestamp":"2026-12-01T10:00:00.000Z","type":"session_meta","payload":{{"id":"t","cwd":"{cwd}"}}}}"#
            );
            crate::codex::read(Path::new(path), format!("{line}\n").as_bytes()).cwd
        };
        let (a, b) = (
            claude("/a.jsonl", "/work/keys-test"),
            claude("/b.jsonl", "/work/keys-test"),
        );
        let c = codex("/c.jsonl", "/work/keys-test");
        let other = claude("/d.jsonl", "/work/keys-test-other");
        let (Some(a), Some(b), Some(c), Some(other)) = (a, b, c, other) else {
            panic!("every file names its cwd");
        };
        assert!(std::ptr::eq(a.0, b.0) && std::ptr::eq(a.0, c.0));
        assert_eq!(&*a, "/work/keys-test");
        assert!(!std::ptr::eq(a.0, other.0));
        assert_eq!(&*other, "/work/keys-test-other");
    }
}
