//! A file's own id — a Claude session's, a Codex thread's, a Grok session's — as its parse, its
//! share of the calls and the listing's totals hold it (issue 30). A session's file is nearly
//! always named by its id (`<session>.jsonl`, `rollout-<time>-<thread>.jsonl`,
//! `<session>/updates.jsonl`), so the id is kept as that part of the file's path, sharing the
//! path's allocation: at 111,000 files a copy of each id was a block of its own a file (36
//! bytes of text and an `Arc`'s counts). An id the path does not hold has its own text.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

/// An id, shared (see the module's header): compared, hashed and ordered as its text.
#[derive(Clone)]
pub struct Name(Held);

#[derive(Clone)]
enum Held {
    Own(Arc<str>),
    /// Bytes `start..end` of the path's text (whole UTF-8, checked when made).
    InPath {
        path: Arc<Path>,
        start: u16,
        end: u16,
    },
}

impl Name {
    /// `text`, held as part of `path` when the path's text has it (its last place there), else
    /// a copy of its own.
    pub fn in_path(text: &str, path: &Arc<Path>) -> Name {
        let bytes = path.as_os_str().as_encoded_bytes();
        let needle = text.as_bytes();
        let found = (!needle.is_empty() && needle.len() <= bytes.len())
            .then(|| bytes.windows(needle.len()).rposition(|w| w == needle))
            .flatten();
        match found.and_then(|start| {
            Some((
                u16::try_from(start).ok()?,
                u16::try_from(start + needle.len()).ok()?,
            ))
        }) {
            Some((start, end)) => Name(Held::InPath {
                path: path.clone(),
                start,
                end,
            }),
            None => Name::from(text),
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            Held::Own(text) => text,
            Held::InPath { path, start, end } => path
                .as_os_str()
                .as_encoded_bytes()
                .get(usize::from(*start)..usize::from(*end))
                .and_then(|bytes| std::str::from_utf8(bytes).ok())
                .unwrap_or_default(),
        }
    }

    /// Whether the two are the same id held once (not two copies of it).
    pub fn same_held(a: &Name, b: &Name) -> bool {
        match (&a.0, &b.0) {
            (Held::Own(a), Held::Own(b)) => Arc::ptr_eq(a, b),
            (
                Held::InPath {
                    path: a, start: s, ..
                },
                Held::InPath {
                    path: b, start: t, ..
                },
            ) => Arc::ptr_eq(a, b) && s == t,
            _ => false,
        }
    }

    /// The heap bytes the name holds alone: its own text when nothing else holds it (a name in
    /// a path is the path's).
    pub(crate) fn own_heap_bytes(&self) -> usize {
        match &self.0 {
            Held::Own(text) if Arc::strong_count(text) == 1 => text.len() + 16,
            Held::Own(_) | Held::InPath { .. } => 0,
        }
    }

    /// Whether the name is held in `path`'s allocation.
    fn is_in(&self, path: &Arc<Path>) -> bool {
        matches!(&self.0, Held::InPath { path: p, .. } if Arc::ptr_eq(p, path))
    }
}

/// A file's path and the names held in it (or on their own) put in fresh allocations of
/// exactly their size, when nothing else holds them ([`crate::calls::renew`] for why).
pub(crate) fn renew(path: &mut Arc<Path>, names: &mut [&mut Option<Name>]) {
    let in_path = names
        .iter()
        .filter(|name| name.as_ref().is_some_and(|n| n.is_in(path)))
        .count();
    if Arc::strong_count(path) == 1 + in_path {
        let fresh: Arc<Path> = Arc::from(&**path);
        for name in names.iter_mut() {
            if let Some(Name(Held::InPath { path: held, .. })) = name
                && Arc::ptr_eq(held, path)
            {
                *held = fresh.clone();
            }
        }
        *path = fresh;
    }
    for name in names.iter_mut() {
        if let Some(Name(Held::Own(text))) = name
            && Arc::strong_count(text) == 1
        {
            *text = Arc::from(&**text);
        }
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Name {
        Name(Held::Own(Arc::from(text)))
    }
}

impl From<Arc<str>> for Name {
    fn from(text: Arc<str>) -> Name {
        Name(Held::Own(text))
    }
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// As its text, so a map keyed by names is looked up by `&str`.
impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's id its file is named by is held in the path's own allocation, read back
    /// whole; one the path does not have is its own; both compare, hash and look up as text.
    #[test]
    fn an_id_in_its_files_path_shares_the_path() {
        let path: Arc<Path> = Arc::from(Path::new("/h/.codex/sessions/rollout-2026-t-abc-1.jsonl"));
        let id = Name::in_path("abc-1", &path);
        assert_eq!(&*id, "abc-1");
        assert_eq!(Arc::strong_count(&path), 2, "held in the path");
        assert_eq!(id.own_heap_bytes(), 0);
        let other = Name::in_path("zzz", &path);
        assert_eq!(&*other, "zzz");
        assert_eq!(Arc::strong_count(&path), 2, "not in the path: its own text");
        assert_eq!(other.own_heap_bytes(), 3 + 16);
        assert_eq!(id, Name::from("abc-1"));
        assert!(!Name::same_held(&id, &Name::from("abc-1")));
        assert!(Name::same_held(&id, &id.clone()));
        let mut map = std::collections::HashMap::new();
        map.insert(id.clone(), 1);
        assert_eq!(map.get("abc-1"), Some(&1));
        assert_eq!(&*Name::in_path("", &path), "");
    }

    /// Renewing a path moves the names held in it to the fresh one; a path something else
    /// holds is left as it is.
    #[test]
    fn renewing_a_path_moves_its_names() {
        let mut path: Arc<Path> = Arc::from(Path::new("/p/s1.jsonl"));
        let mut id = Some(Name::in_path("s1", &path));
        let mut own = Some(Name::from("x"));
        let before = Arc::as_ptr(&path);
        renew(&mut path, &mut [&mut id, &mut own]);
        assert_ne!(Arc::as_ptr(&path), before, "renewed");
        assert!(id.as_ref().is_some_and(|n| n.is_in(&path)));
        assert_eq!(id.as_deref(), Some("s1"));
        let held = path.clone();
        let kept = Arc::as_ptr(&path);
        renew(&mut path, &mut [&mut id]);
        assert_eq!(Arc::as_ptr(&path), kept, "held elsewhere: left");
        drop(held);
    }
}
