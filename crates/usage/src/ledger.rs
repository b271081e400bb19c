//! [`crate::account`]'s decision kept current one file at a time, for the live index: what
//! counts once across files is decided again only for the calls a changed file records (or
//! recorded), not over every file's parse.
//!
//! Each call's identity ([`Key`]: a Claude reply's `message.id` + `requestId`, a Codex call's
//! thread family + running total + last usage) lists its copies, by file and position. After a
//! change, the keys the changed files touch are decided again by the same rules as
//! [`crate::account`] — the earliest copy (its rank, then the file's path, then its place in the
//! file) wins the call, a Claude reply with the largest usage any copy recorded — and only the
//! files whose won calls may differ rebuild their share of the charges. Each file's share is
//! kept whole ([`Accounting::chunks`]), so a new accounting shares every other file's.
//!
//! Codex's thread relations (forks, spawns) say each call's family, session and rank, so when a
//! changed rollout changes them every Codex file is decided again; an appended rollout keeps
//! its `session_meta`, and only its own calls are looked at.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cross_agent_protocol::Agent;

use crate::FileUsage;
use crate::account::{Accounting, Charge, Names, Precedence, Threads, precedence, stem};
use crate::codex::{CodexFile, RawUsage};
use crate::tokens::Tokens;

/// A call's identity across files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Claude(String, Option<String>),
    Codex(String, RawUsage, RawUsage),
}

/// One key's copies and what was decided for it.
#[derive(Debug, Default)]
struct KeyState {
    /// Every copy: the file and the call's place in it.
    copies: Vec<CopyAt>,
    /// The copy that wins the call, and (Claude) the usage it is counted with.
    winner: Option<CopyAt>,
    tokens: Tokens,
}

type FileId = u32;
type KeyId = u32;
/// A copy of a call: its file and its place there.
type CopyAt = (FileId, u32);

/// One file as the ledger knows it.
#[derive(Debug)]
struct FileSlot {
    path: PathBuf,
    agent: Agent,
    /// The key of each call the file recorded, in its order (Claude replies, Codex calls).
    keys: Vec<KeyId>,
    /// The calls the file wins, as charges.
    chunk: Arc<[Charge]>,
    /// What the accounting takes from the file as a whole: a Codex rollout's latest rate
    /// limits, a Grok session with no usage recorded (kept so a new accounting looks at no
    /// parse).
    limits: Option<crate::account::RateLimits>,
    no_usage: Option<String>,
}

/// What the last update looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerStats {
    /// Every Codex file decided again (their thread relations changed).
    pub codex_whole: bool,
    /// Files whose calls were taken out and put in again (changed, new or gone).
    pub files_changed: usize,
    /// Keys decided again.
    pub keys_decided: usize,
    /// Files whose share of the charges was made again.
    pub chunks_rebuilt: usize,
}

/// The accounting kept current by file (see the module's header).
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    ids: HashMap<PathBuf, FileId>,
    files: Vec<Option<FileSlot>>,
    free_files: Vec<FileId>,
    /// The files by path: the order a whole scan decides ties in.
    order: BTreeMap<PathBuf, FileId>,
    /// Each key's slot by the key's hash: the key's text is its copies' own (a map by the key
    /// itself held every message id once more).
    key_ids: HashMap<u64, KeyId>,
    /// Keys whose hash another key's slot already has (never seen in practice; kept exact).
    collided: HashMap<Key, KeyId>,
    keys: Vec<KeyState>,
    free_keys: Vec<KeyId>,
    /// Copies beyond the first of each key.
    duplicates: u64,
    /// Keys left with no copy since they were last let go (some may have copies again).
    emptied: usize,
    threads: Option<Threads>,
    /// Models and cwds, one copy each for every charge.
    names: Names,
    last: LedgerStats,
}

impl Ledger {
    /// What the last [`Ledger::update`] looked at.
    pub(crate) fn stats(&self) -> LedgerStats {
        self.last
    }

    /// Takes the files at `changed` again from `parses` (gone from it: dropped), decides again
    /// what they touch, and returns the accounting over every file.
    pub(crate) fn update<'a>(
        &mut self,
        changed: impl IntoIterator<Item = PathBuf>,
        parse: &dyn Fn(&Path) -> Option<&'a FileUsage>,
    ) -> Accounting {
        let mut stats = LedgerStats::default();
        let mut touched: HashSet<KeyId> = HashSet::new();
        // Files whose calls were taken out, to put in again; files whose charges are made again.
        let mut reput: HashSet<FileId> = HashSet::new();
        let mut rebuild: HashSet<FileId> = HashSet::new();
        let mut codex_changed = false;
        for path in changed {
            stats.files_changed += 1;
            let now = parse(&path);
            codex_changed |= matches!(now, Some(FileUsage::Codex(_)));
            let id = match self.ids.get(&path) {
                Some(&id) => {
                    codex_changed |= self.slot(id).is_some_and(|s| s.agent == Agent::Codex);
                    self.take_out(id, &mut touched);
                    id
                }
                None => match now {
                    Some(file) => self.add_file(path, agent_of(file)),
                    None => continue,
                },
            };
            match now {
                Some(file) if self.slot(id).is_some_and(|s| s.agent == agent_of(file)) => {
                    reput.insert(id);
                    rebuild.insert(id);
                }
                Some(file) => {
                    // Another agent's file at the path: another file.
                    self.drop_file(id);
                    reput.remove(&id);
                    rebuild.remove(&id);
                    let path = file.path().clone();
                    let id = self.add_file(path, agent_of(file));
                    reput.insert(id);
                    rebuild.insert(id);
                }
                None => {
                    self.drop_file(id);
                    reput.remove(&id);
                    rebuild.remove(&id);
                }
            }
        }
        if codex_changed || self.threads.is_none() {
            let threads = self.threads_now(parse);
            if self.threads.as_ref() != Some(&threads) {
                // Families and ranks may differ: every Codex call is decided again.
                stats.codex_whole = true;
                let codex: Vec<FileId> = self
                    .order
                    .values()
                    .copied()
                    .filter(|&id| self.slot(id).is_some_and(|s| s.agent == Agent::Codex))
                    .collect();
                for id in codex {
                    self.take_out(id, &mut touched);
                    reput.insert(id);
                    rebuild.insert(id);
                }
            }
            self.threads = Some(threads);
        }
        // Each file's parse looked up once (a path's hash is not cheap), however many of its
        // calls are put in or decided again.
        let mut parses: HashMap<FileId, Option<&'a FileUsage>> = HashMap::new();
        for id in reput {
            if let Some(file) = self.slot(id).and_then(|s| parse(&s.path)) {
                self.put_in(id, file, &mut touched, &mut parses, parse);
            }
        }
        stats.keys_decided = touched.len();
        for key in touched {
            let before = self.keys[key as usize].winner;
            let decided = self.decide(key, &mut |ledger, id| {
                *parses
                    .entry(id)
                    .or_insert_with(|| ledger.slot(id).and_then(|s| parse(&s.path)))
            });
            let state = &mut self.keys[key as usize];
            (state.copies, state.winner, state.tokens) = decided;
            let state = &self.keys[key as usize];
            for (file, _) in before.into_iter().chain(state.winner) {
                rebuild.insert(file);
            }
            if state.copies.is_empty() {
                self.emptied += 1;
            }
        }
        // Keys no file records any more are let go now and then, not one by one: finding a
        // key's entry by its id would take a look at every key.
        if self.emptied > 1024 && self.emptied > self.key_ids.len() / 4 {
            let keys = &self.keys;
            let mut freed = Vec::new();
            let mut live = |id: KeyId| {
                let keep = !keys[id as usize].copies.is_empty();
                if !keep {
                    freed.push(id);
                }
                keep
            };
            self.key_ids.retain(|_, &mut id| live(id));
            self.collided.retain(|_, &mut id| live(id));
            self.free_keys.extend(freed);
            self.emptied = 0;
        }
        for id in rebuild {
            if self.slot(id).is_some() {
                stats.chunks_rebuilt += 1;
                self.rebuild_chunk(id, parse);
            }
        }
        self.last = stats;
        self.accounting()
    }

    fn slot(&self, id: FileId) -> Option<&FileSlot> {
        self.files.get(id as usize).and_then(Option::as_ref)
    }

    fn add_file(&mut self, path: PathBuf, agent: Agent) -> FileId {
        let slot = FileSlot {
            path: path.clone(),
            agent,
            keys: Vec::new(),
            chunk: Arc::from(Vec::new()),
            limits: None,
            no_usage: None,
        };
        let id = match self.free_files.pop() {
            Some(id) => {
                self.files[id as usize] = Some(slot);
                id
            }
            None => {
                self.files.push(Some(slot));
                (self.files.len() - 1) as FileId
            }
        };
        self.ids.insert(path.clone(), id);
        self.order.insert(path, id);
        id
    }

    fn drop_file(&mut self, id: FileId) {
        if let Some(slot) = self.files.get_mut(id as usize).and_then(Option::take) {
            self.ids.remove(&slot.path);
            self.order.remove(&slot.path);
            self.free_files.push(id);
        }
    }

    /// Takes the file's copies out of their keys (marked to decide again).
    fn take_out(&mut self, id: FileId, touched: &mut HashSet<KeyId>) {
        let Some(slot) = self.files.get_mut(id as usize).and_then(Option::as_mut) else {
            return;
        };
        for key in std::mem::take(&mut slot.keys) {
            let state = &mut self.keys[key as usize];
            let before = dup(state.copies.len());
            state.copies.retain(|&(file, _)| file != id);
            self.duplicates = self.duplicates - before + dup(state.copies.len());
            touched.insert(key);
        }
    }

    /// Puts the file's calls into their keys.
    fn put_in<'a>(
        &mut self,
        id: FileId,
        file: &FileUsage,
        touched: &mut HashSet<KeyId>,
        parses: &mut HashMap<FileId, Option<&'a FileUsage>>,
        parse: &dyn Fn(&Path) -> Option<&'a FileUsage>,
    ) {
        let keys: Vec<Key> = match file {
            FileUsage::Claude(f) => f
                .messages
                .iter()
                .map(|m| Key::Claude(m.message_id.clone(), m.request_id.clone()))
                .collect(),
            FileUsage::Codex(f) => {
                let family = self.family(f);
                f.calls
                    .iter()
                    .map(|c| Key::Codex(family.clone(), c.total, c.last))
                    .collect()
            }
            FileUsage::Grok(_) => Vec::new(),
        };
        let mut ids = Vec::with_capacity(keys.len());
        for (at, key) in keys.into_iter().enumerate() {
            let key_id = self.slot_of(key, parses, parse);
            let state = &mut self.keys[key_id as usize];
            self.duplicates += u64::from(!state.copies.is_empty());
            state.copies.push((id, at as u32));
            touched.insert(key_id);
            ids.push(key_id);
        }
        if let Some(slot) = self.files.get_mut(id as usize).and_then(Option::as_mut) {
            slot.keys = ids;
        }
    }

    /// The slot of `key`: found by its hash and told apart from another key with that hash by
    /// what its first copy records; a slot no copy is in any more is taken over.
    fn slot_of<'a>(
        &mut self,
        key: Key,
        parses: &mut HashMap<FileId, Option<&'a FileUsage>>,
        parse: &dyn Fn(&Path) -> Option<&'a FileUsage>,
    ) -> KeyId {
        let hash = {
            let mut hasher = std::hash::DefaultHasher::new();
            key.hash(&mut hasher);
            hasher.finish()
        };
        let hashed = self.key_ids.get(&hash).copied();
        if let Some(k) = hashed
            && let Some(&(file, at)) = self.keys[k as usize].copies.first()
        {
            let first = *parses
                .entry(file)
                .or_insert_with(|| self.slot(file).and_then(|s| parse(&s.path)));
            if first.is_some_and(|f| self.records(f, at as usize, &key)) {
                return k;
            }
        }
        if let Some(&k) = self.collided.get(&key) {
            return k;
        }
        if let Some(k) = hashed
            && self.keys[k as usize].copies.is_empty()
        {
            return k;
        }
        let k = match self.free_keys.pop() {
            Some(k) => {
                self.keys[k as usize] = KeyState::default();
                k
            }
            None => {
                self.keys.push(KeyState::default());
                (self.keys.len() - 1) as KeyId
            }
        };
        match hashed {
            None => {
                self.key_ids.insert(hash, k);
            }
            Some(_) => {
                self.collided.insert(key, k);
            }
        }
        k
    }

    /// Whether the call at `at` in `file` is `key`.
    fn records(&self, file: &FileUsage, at: usize, key: &Key) -> bool {
        match (file, key) {
            (FileUsage::Claude(f), Key::Claude(id, request)) => f
                .messages
                .get(at)
                .is_some_and(|m| m.message_id == *id && m.request_id == *request),
            (FileUsage::Codex(f), Key::Codex(family, total, last)) => {
                f.calls
                    .get(at)
                    .is_some_and(|c| c.total == *total && c.last == *last)
                    && self.family(f) == *family
            }
            _ => false,
        }
    }

    fn family(&self, f: &CodexFile) -> String {
        let own = f.thread_id.clone().unwrap_or_else(|| stem(&f.path));
        match &self.threads {
            Some(threads) => threads.family(&own),
            None => own,
        }
    }

    fn threads_now<'a>(&self, parse: &dyn Fn(&Path) -> Option<&'a FileUsage>) -> Threads {
        let codex: Vec<&CodexFile> = self
            .order
            .keys()
            .filter_map(|path| match parse(path) {
                Some(FileUsage::Codex(f)) => Some(f),
                _ => None,
            })
            .collect();
        Threads::new(&codex)
    }

    /// The copy that wins the key, as [`crate::account`] decides it over files in path order:
    /// the first with the least rank; a Claude reply counted with the first largest usage.
    /// Returns the key's copies in that order, the winner and its usage.
    fn decide<'a>(
        &self,
        key: KeyId,
        parse: &mut dyn FnMut(&Ledger, FileId) -> Option<&'a FileUsage>,
    ) -> (Vec<CopyAt>, Option<CopyAt>, Tokens) {
        let mut copies = self.keys[key as usize].copies.clone();
        copies.sort_by(|a, b| {
            let path = |id: FileId| self.slot(id).map(|s| &s.path);
            path(a.0).cmp(&path(b.0)).then(a.1.cmp(&b.1))
        });
        let mut best: Option<(Precedence, CopyAt)> = None;
        let mut tokens: Option<Tokens> = None;
        for &(file, at) in &copies {
            let Some(f) = parse(self, file) else {
                continue;
            };
            let Some((rank, copy_tokens)) = self.rank(f, at as usize) else {
                continue;
            };
            if best.as_ref().is_none_or(|(r, _)| rank < *r) {
                best = Some((rank, (file, at)));
            }
            if tokens.is_none_or(|t| copy_tokens.total() > t.total()) {
                tokens = Some(copy_tokens);
            }
        }
        (
            copies,
            best.map(|(_, copy)| copy),
            tokens.unwrap_or_default(),
        )
    }

    /// A copy's rank and recorded usage.
    fn rank(&self, file: &FileUsage, at: usize) -> Option<(Precedence, Tokens)> {
        match file {
            FileUsage::Claude(f) => {
                let m = f.messages.get(at)?;
                let own = f.session_id.clone().unwrap_or_else(|| stem(&f.path));
                Some((
                    precedence(
                        m.timestamp,
                        u32::from(f.parent_session.is_some()),
                        f.started,
                        &own,
                    ),
                    m.tokens,
                ))
            }
            FileUsage::Codex(f) => {
                let call = f.calls.get(at)?;
                let own = f.thread_id.clone().unwrap_or_else(|| stem(&f.path));
                let threads = self.threads.as_ref()?;
                let (_, depth) = threads.session(&own);
                let rank = precedence(
                    call.timestamp,
                    threads.fork_depth(&own) + depth,
                    f.started,
                    &own,
                );
                Some((rank, call.last.tokens()))
            }
            FileUsage::Grok(_) => None,
        }
    }

    /// The charges of the calls the file wins.
    fn rebuild_chunk<'a>(&mut self, id: FileId, parse: &dyn Fn(&Path) -> Option<&'a FileUsage>) {
        let mut names = std::mem::take(&mut self.names);
        self.make_chunk(id, parse, &mut names);
        self.names = names;
    }

    fn make_chunk<'a>(
        &mut self,
        id: FileId,
        parse: &dyn Fn(&Path) -> Option<&'a FileUsage>,
        names: &mut Names,
    ) {
        let Some(slot) = self.slot(id) else { return };
        let Some(file) = parse(&slot.path) else {
            return;
        };
        let wins = |at: usize| -> Option<&KeyState> {
            let key = *slot.keys.get(at)?;
            let state = &self.keys[key as usize];
            (state.winner == Some((id, at as u32))).then_some(state)
        };
        let mut charges = Vec::new();
        match file {
            FileUsage::Claude(f) => {
                let own = f.session_id.clone().unwrap_or_else(|| stem(&f.path));
                let (session, subagent): (Arc<str>, _) = match &f.parent_session {
                    Some(parent) => (parent.as_str().into(), Some(Arc::from(own))),
                    None => (own.into(), None),
                };
                let cwd = names.opt(f.cwd.as_deref());
                for (at, m) in f.messages.iter().enumerate() {
                    let Some(state) = wins(at) else { continue };
                    charges.push(Charge {
                        agent: Agent::Claude,
                        session_id: session.clone(),
                        subagent: subagent.clone(),
                        timestamp: m.timestamp,
                        model: names.opt(m.model.as_deref()),
                        cwd: cwd.clone(),
                        tokens: state.tokens,
                    });
                }
            }
            FileUsage::Codex(f) => {
                let own = f.thread_id.clone().unwrap_or_else(|| stem(&f.path));
                let session = match &self.threads {
                    Some(threads) => threads.session(&own).0,
                    None => own.clone(),
                };
                let subagent: Option<Arc<str>> = (session != own).then(|| own.into());
                let session: Arc<str> = session.into();
                let cwd = names.opt(f.cwd.as_deref());
                for (at, call) in f.calls.iter().enumerate() {
                    if wins(at).is_none() {
                        continue;
                    }
                    charges.push(Charge {
                        agent: Agent::Codex,
                        session_id: session.clone(),
                        subagent: subagent.clone(),
                        timestamp: call.timestamp,
                        model: names.opt(call.model.as_deref()),
                        cwd: cwd.clone(),
                        tokens: call.last.tokens(),
                    });
                }
            }
            FileUsage::Grok(f) => {
                let session: Arc<str> =
                    f.session_id.clone().unwrap_or_else(|| stem(&f.path)).into();
                let cwd = names.opt(f.cwd.as_deref());
                for turn in &f.turns {
                    charges.push(Charge {
                        agent: Agent::Grok,
                        session_id: session.clone(),
                        subagent: None,
                        timestamp: turn.timestamp,
                        model: None,
                        cwd: cwd.clone(),
                        tokens: turn.tokens,
                    });
                }
            }
        }
        let (limits, no_usage) = match file {
            FileUsage::Codex(f) => (f.rate_limits.clone(), None),
            FileUsage::Grok(f) if f.turns.is_empty() => (
                None,
                Some(f.session_id.clone().unwrap_or_else(|| stem(&f.path))),
            ),
            _ => (None, None),
        };
        if let Some(slot) = self.files.get_mut(id as usize).and_then(Option::as_mut) {
            slot.chunk = Arc::from(charges);
            slot.limits = limits;
            slot.no_usage = no_usage;
        }
    }

    /// Every file's share, with what is decided over all files at once (cheap: no call and no
    /// parse is looked at).
    fn accounting(&self) -> Accounting {
        let mut out = Accounting {
            duplicates_skipped: self.duplicates,
            ..Accounting::default()
        };
        let mut latest: Option<&crate::account::RateLimits> = None;
        for &id in self.order.values() {
            let Some(slot) = self.slot(id) else { continue };
            if !slot.chunk.is_empty() {
                out.chunks.push(slot.chunk.clone());
            }
            if let Some(limits) = &slot.limits
                && latest.is_none_or(|l| l.observed_at <= limits.observed_at)
            {
                latest = Some(limits);
            }
            if let Some(session) = &slot.no_usage {
                out.no_usage_recorded.push((Agent::Grok, session.clone()));
            }
        }
        out.rate_limits = latest.cloned();
        out
    }
}

fn agent_of(file: &FileUsage) -> Agent {
    match file {
        FileUsage::Claude(_) => Agent::Claude,
        FileUsage::Codex(_) => Agent::Codex,
        FileUsage::Grok(_) => Agent::Grok,
    }
}

/// Copies beyond a key's first.
fn dup(copies: usize) -> u64 {
    copies.saturating_sub(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claude;

    fn transcript(path: &str, msg: &str, output: u64) -> FileUsage {
        let line = format!(
            r#"{{"type":"assistant","requestId":"r","timestamp":"2026-12-01T10:00:00.000Z","message":{{"id":"{msg}","model":"m","usage":{{"input_tokens":1,"output_tokens":{output}}}}}}}"#
        );
        FileUsage::Claude(claude::read(
            Path::new(path),
            format!("{line}\n").as_bytes(),
        ))
    }

    /// Two calls whose keys share a hash are two calls, each counted once, and each found again
    /// by its own key when its file changes (a collision is forced: none is known).
    #[test]
    fn calls_whose_keys_share_a_hash_stay_apart() {
        let mut files: HashMap<PathBuf, FileUsage> = HashMap::new();
        files.insert("/a.jsonl".into(), transcript("/a.jsonl", "a", 1));
        let mut ledger = Ledger::default();
        let update = |ledger: &mut Ledger, files: &HashMap<PathBuf, FileUsage>, path: &str| {
            ledger.update([PathBuf::from(path)], &|p| files.get(p))
        };
        update(&mut ledger, &files, "/a.jsonl");
        // `b`'s hash taken by `a`'s slot, as a collision would.
        let mut hasher = std::hash::DefaultHasher::new();
        Key::Claude("b".into(), Some("r".into())).hash(&mut hasher);
        let a_slot = *ledger.key_ids.values().next().unwrap();
        ledger.key_ids.insert(hasher.finish(), a_slot);
        files.insert("/b.jsonl".into(), transcript("/b.jsonl", "b", 2));
        update(&mut ledger, &files, "/b.jsonl");
        files.insert("/b.jsonl".into(), transcript("/b.jsonl", "b", 5));
        let accounting = update(&mut ledger, &files, "/b.jsonl");
        let mut got: Vec<(String, u64)> = accounting
            .charges()
            .map(|c| (c.session_id.to_string(), c.tokens.output))
            .collect();
        got.sort();
        assert_eq!(got, vec![("a".to_owned(), 1), ("b".to_owned(), 5)]);
        assert_eq!(accounting.duplicates_skipped, 0);
    }
}
