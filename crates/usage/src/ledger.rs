//! [`crate::account`]'s decision kept current one file at a time, for the live index: what
//! counts once across files is decided again only for the calls a changed file records (or
//! recorded), not over every file's parse.
//!
//! Each call's identity (a [`CallKey`]: a Claude reply's `message.id` + `requestId`, a Codex
//! call's thread family + running total + last usage, hashed to 128 bits — see [`crate::keys`]
//! for why a key is compared, never the text) lists its copies, by file and position. After a
//! change, the keys the changed files touch are decided again by the same rules as
//! [`crate::account`] — the earliest copy (its rank, then the file's path, then its place in the
//! file) wins the call, a Claude reply with the largest usage any copy recorded — and only the
//! files whose won calls may differ rebuild their share of the calls. Each file's share is
//! kept whole ([`Accounting::chunks`]), so a new accounting shares every other file's.
//!
//! What is kept per call is small and fixed, nothing on the heap per call: a key's state is its
//! first copy and its winner (16 bytes, [`KeyStates`]: on disk between updates when the index
//! has a directory for its records; the key table holds only the state's place). The key itself is not kept here: each file's slot holds the file's list of calls as
//! it was put in (the [`Calls`] its reader and share hold, not a copy), and a copy's key is read
//! from its record there — a Codex call's in the family its file was keyed in, also held by the
//! slot — when the key table is searched or grown, and when the file is taken out again (from
//! the list as put in, whatever its reader read since). Nor is each call's key state kept per
//! file: a file's calls find theirs in the key table. The copies beyond the first (a resumed
//! session's copies of its base) and a Claude reply counted with a larger usage than its
//! winner's own line recorded are the rare cases, in side tables. A file's path is held by its
//! slot (the parse's own [`Arc<Path>`], not a copy); a table of slot numbers finds a file by it.
//!
//! Codex's thread relations (forks, spawns) say each call's family, session and rank, so when a
//! changed rollout changes them every Codex file is decided again; an appended rollout keeps
//! its `session_meta`, and only its own calls are looked at.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use cross_agent_protocol::Agent;

use crate::FileRef;
use crate::account::{
    Accounting, Precedence, RateLimits, Share, ShareNames, Threads, grok_calls, precedence, stem,
};
use crate::calls::{Call, CallList, Calls};
use crate::codex::{CodexFile, family_hash, key_in};
use crate::key_table::KeyTable;
use crate::keys::{CallKey, ModelNames};
use crate::names::Name;
use crate::path_slots::PathSlots;
use crate::shares::Shares;
use crate::spill::Spill;
use crate::states::{CopyAt, FileId, KeyId, KeyState, KeyStates, NO_COPY};
use crate::tokens::Tokens;

/// One file as the ledger knows it.
#[derive(Debug)]
struct FileSlot {
    path: Arc<Path>,
    agent: Agent,
    /// The file's calls as last put in (Claude replies, Codex calls; `None` for Grok): each
    /// call's key is read from its record here ([`key_at`]).
    calls: Option<Calls>,
    /// A Codex rollout's thread family when its calls were put in ([`family_hash`]).
    family: u64,
    /// What the accounting takes from the file as a whole: a Codex rollout's latest rate
    /// limits, a Grok session with no usage recorded (kept so a new accounting looks at no
    /// parse).
    limits: Option<Arc<RateLimits>>,
    /// A Grok session with no usage recorded (named by its path: [`crate::grok::session_of`]).
    no_usage: bool,
}

/// An update that changes this many files holds every key state in memory while it runs (read
/// at once, not a block at a time: [`KeyStates::hold_all`]).
const HOLD_ALL_FROM: usize = 64;

/// What the last update looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerStats {
    /// Every Codex file decided again (their thread relations changed).
    pub codex_whole: bool,
    /// Files whose calls were taken out and put in again (changed, new or gone).
    pub files_changed: usize,
    /// Keys decided again.
    pub keys_decided: usize,
    /// Files whose share of the calls was made again.
    pub chunks_rebuilt: usize,
}

/// The accounting kept current by file (see the module's header).
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Each file's slot, its number the file's id, found by its path's hash: 5 bytes a file
    /// where a map ordered by path took ~40 in nodes of its own (issue 30). Where path order
    /// decides (copies that tie, a thread named by two rollouts, rate limits seen at the same
    /// time) the paths are compared there.
    files: PathSlots<FileSlot>,
    /// The calls each file wins, by its slot's number.
    shares: Shares,
    /// Each key's state's place, found by the key (read from the state's first copy).
    index: KeyTable,
    /// Each key's state (the key is the first copy's: [`key_at`]), on disk between updates
    /// when the index has a directory for its records.
    keys: KeyStates,
    free_keys: Vec<KeyId>,
    /// Keys an update took out of the key table with their last copy, by key, until it puts a
    /// copy in again (the same state then, as if it had stayed) or lets them go.
    orphans: HashMap<CallKey, KeyId>,
    /// The copies beyond each key's first, for the keys that have more than one.
    extra: HashMap<KeyId, Vec<CopyAt>>,
    /// The usage a Claude reply is counted with, where it is not its winner's own (a later copy
    /// recorded a larger one).
    tokens: HashMap<KeyId, Tokens>,
    /// Copies beyond the first of each key.
    duplicates: u64,
    threads: Option<Threads>,
    last: LedgerStats,
    /// Each file's keys as put in, by file, while an update that holds every key state runs
    /// (the cold one, or every Codex file decided again): the key table's searches and growth
    /// read a key here, not with a `pread` of its record each ([`key_at`]). Empty between
    /// updates.
    held_keys: Option<Vec<Vec<CallKey>>>,
}

impl crate::path_slots::Pathed for FileSlot {
    fn path(&self) -> &Path {
        &self.path
    }
}

impl Ledger {
    /// What the last [`Ledger::update`] looked at.
    pub(crate) fn stats(&self) -> LedgerStats {
        self.last
    }

    /// Takes the files at `changed` again from `parses` (gone from it: dropped), decides again
    /// what they touch, and returns the accounting over every file. The key states are kept in
    /// `spill`'s directory between updates ([`crate::states`]); `None`: in memory.
    pub(crate) fn update<'a>(
        &mut self,
        changed: impl IntoIterator<Item = Arc<Path>>,
        parse: &dyn Fn(&Path) -> Option<FileRef<'a>>,
        spill: Option<&Arc<Spill>>,
    ) -> Accounting {
        let changed: Vec<Arc<Path>> = changed.into_iter().collect();
        if self.files.is_empty() {
            // The cold update: every file is new.
            self.files.reserve(changed.len());
        }
        if changed.len() >= HOLD_ALL_FROM {
            self.hold_all();
        }
        let mut stats = LedgerStats::default();
        let mut touched: HashSet<KeyId> = HashSet::new();
        // Files whose calls were taken out, to put in again; files whose shares are made again.
        let mut reput: HashSet<FileId> = HashSet::new();
        let mut rebuild: HashSet<FileId> = HashSet::new();
        let mut codex_changed = false;
        for path in changed {
            stats.files_changed += 1;
            let now = parse(&path);
            codex_changed |= matches!(now, Some(FileRef::Codex(_)));
            let id = match self.file_of(&path) {
                Some(id) => {
                    codex_changed |= self.slot(id).is_some_and(|s| s.agent == Agent::Codex);
                    self.take_out(id, &mut touched);
                    id
                }
                None => match now {
                    Some(file) => self.add_file(file.path().clone(), agent_of(file)),
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
                    let id = self.add_file(file.path().clone(), agent_of(file));
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
                self.hold_all();
                let codex: Vec<FileId> = (0..self.files.slot_count())
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
        let mut parses: HashMap<FileId, Option<FileRef<'a>>> = HashMap::new();
        for id in reput {
            let file = self.slot(id).and_then(|s| parse(&s.path));
            parses.insert(id, file);
            if let Some(file) = file {
                self.put_in(id, file, &mut touched);
            }
        }
        // What was not put in again is let go below (no copy left).
        self.orphans.clear();
        stats.keys_decided = touched.len();
        // In the order the keys were made (a cold update: file by file, call by call), so the
        // copies' records are read back a block at a time.
        let mut touched: Vec<KeyId> = touched.into_iter().collect();
        touched.sort_unstable();
        let mut blocks = CallBlocks::default();
        for key in touched {
            let before = self.keys.get(key).winner;
            self.decide(key, &mut blocks, &mut |ledger, id| {
                *parses
                    .entry(id)
                    .or_insert_with(|| ledger.slot(id).and_then(|s| parse(&s.path)))
            });
            let after = self.keys.get(key).winner;
            for copy in [before, after] {
                if copy != NO_COPY {
                    rebuild.insert(copy.file);
                }
            }
            if self.keys.get(key).first == NO_COPY {
                self.free_key(key);
            }
        }
        for id in rebuild {
            if self.slot(id).is_some() {
                stats.chunks_rebuilt += 1;
                self.rebuild_chunk(id, parse);
            }
        }
        // The spare room of a list grown by doubling given back (after a cold read).
        self.keys.settle(spill);
        self.held_keys = None;
        self.files.trim();
        self.shares.trim();
        if stats.files_changed >= crate::live::COMPACT_AFTER {
            self.compact();
        }
        self.last = stats;
        self.accounting()
    }

    /// Every key state in memory for an update that looks at many files, and each file's keys
    /// kept as it is put in ([`Ledger::held_keys`]), until the update ends.
    fn hold_all(&mut self) {
        self.keys.hold_all();
        self.held_keys.get_or_insert_with(Vec::new);
    }

    /// The keys held for this update, by file (none outside an update that holds them).
    fn held_keys(&self) -> &[Vec<CallKey>] {
        self.held_keys.as_deref().unwrap_or(&[])
    }

    /// A file taken out or dropped: its keys held for the update go with it.
    fn let_go_of_held_keys(&mut self, id: FileId) {
        if let Some(keys) = self
            .held_keys
            .as_mut()
            .and_then(|held| held.get_mut(id as usize))
        {
            *keys = Vec::new();
        }
    }

    /// The copies beyond each key's first made again at exactly their length, one after
    /// another (after an update that put in many files: pushed one by one while the files were
    /// put in, each list holds up to twice its length, spread between the update's short-lived
    /// buffers). Only where they sit changes.
    fn compact(&mut self) {
        let mut extra = HashMap::with_capacity(self.extra.len());
        for (key, copies) in self.extra.drain() {
            extra.insert(key, copies.clone());
        }
        self.extra = extra;
    }

    fn slot(&self, id: FileId) -> Option<&FileSlot> {
        self.files.at(id)
    }

    /// The file at `path`, if the ledger has it.
    fn file_of(&self, path: &Path) -> Option<FileId> {
        self.files.slot_of(path)
    }

    /// A new file, keyed by its parse's own path (one copy of it).
    fn add_file(&mut self, path: Arc<Path>, agent: Agent) -> FileId {
        let slot = FileSlot {
            path,
            agent,
            calls: None,
            family: 0,
            limits: None,
            no_usage: false,
        };
        self.files.insert(slot)
    }

    fn drop_file(&mut self, id: FileId) {
        self.shares.set(id, None);
        if self.files.remove_at(id).is_some() {
            self.let_go_of_held_keys(id);
        }
    }

    /// Takes the file's copies out of their keys (marked to decide again); a key left with no
    /// copy leaves the key table at once, while its key can still be read, and waits in
    /// [`Ledger::orphans`] for a copy put in again.
    fn take_out(&mut self, id: FileId, touched: &mut HashSet<KeyId>) {
        let keys = self.keys_of(id);
        for (at, key) in keys.into_iter().enumerate() {
            let copy = CopyAt {
                file: id,
                at: at as u32,
            };
            let Some(k) = self.find_key(key, copy) else {
                continue;
            };
            touched.insert(k);
            let mut state = self.keys.get(k);
            let extra = self.extra.get_mut(&k);
            let before = extra.as_ref().map_or(0, |e| e.len());
            let mut rest = match extra {
                Some(extra) => {
                    extra.retain(|copy| copy.file != id);
                    std::mem::take(extra)
                }
                None => Vec::new(),
            };
            if state.first.file == id {
                state.first = if rest.is_empty() {
                    NO_COPY
                } else {
                    rest.remove(0)
                };
            }
            let gone = state.first == NO_COPY;
            self.keys.set(k, state);
            let after = rest.len();
            if rest.is_empty() {
                self.extra.remove(&k);
            } else {
                self.extra.insert(k, rest);
            }
            // `before` counted the extra copies ahead of the take; the first copy taken out
            // with an extra left moved one up.
            self.duplicates = self.duplicates + after as u64 - before as u64;
            if gone && self.index.remove(key.short(), k) {
                self.orphans.insert(key, k);
            }
        }
        if let Some(slot) = self.files.at_mut(id) {
            slot.calls = None;
        }
        self.let_go_of_held_keys(id);
    }

    /// Puts the file's calls into their keys.
    fn put_in(&mut self, id: FileId, file: FileRef<'_>, touched: &mut HashSet<KeyId>) {
        let (calls, family) = match file {
            FileRef::Claude(f) => (Some(f.messages.clone()), 0),
            FileRef::Codex(f) => (Some(f.calls.clone()), family_hash(&self.family(f))),
            FileRef::Grok(_) => (None, 0),
        };
        let Some(slot) = self.files.at_mut(id) else {
            return;
        };
        // Held before any key is put in: the key table reads its keys from here.
        slot.calls = calls;
        slot.family = family;
        let keys = self.keys_of(id);
        if let Some(held) = &mut self.held_keys {
            let place = id as usize;
            if held.len() <= place {
                held.resize_with(place + 1, Vec::new);
            }
            held[place] = keys.clone();
        }
        for (at, key) in keys.into_iter().enumerate() {
            let copy = CopyAt {
                file: id,
                at: at as u32,
            };
            let key_id = match self.find_key(key, copy) {
                Some(k) => {
                    self.duplicates += 1;
                    self.extra.entry(k).or_default().push(copy);
                    k
                }
                None => {
                    let again = self.orphans.remove(&key);
                    match self.add_key(key, copy, again) {
                        Some(k) => k,
                        None => continue,
                    }
                }
            };
            touched.insert(key_id);
        }
    }

    /// The keys of the file's calls as put in, in order (read back from disk in blocks, not
    /// one at a time), each a Codex call's in its file's family.
    fn keys_of(&self, id: FileId) -> Vec<CallKey> {
        if let Some(keys) = self.held_keys().get(id as usize)
            && !keys.is_empty()
        {
            return keys.clone();
        }
        let Some(slot) = self.slot(id) else {
            return Vec::new();
        };
        let Some(calls) = &slot.calls else {
            return Vec::new();
        };
        calls.iter().map(|call| slot_key(slot, call.key)).collect()
    }

    /// The state's place of `key`, read at `copy`: a state whose first copy is `copy` is the
    /// key's without reading its key back; another's key is read from its first copy.
    fn find_key(&self, key: CallKey, copy: CopyAt) -> Option<KeyId> {
        let (files, keys, held) = (&self.files, &self.keys, self.held_keys());
        self.index.find(key.short(), |k| {
            let first = keys.get(k).first;
            first == copy || key_at(files, held, first) == Some(key)
        })
    }

    /// The state of `key` put in the key table with `copy` its first copy: the state at `again`
    /// (taken out of the table by this update, its winner kept), else a new one.
    fn add_key(&mut self, key: CallKey, copy: CopyAt, again: Option<KeyId>) -> Option<KeyId> {
        let state = KeyState {
            first: copy,
            winner: NO_COPY,
        };
        let k = match (again, self.free_keys.last()) {
            (Some(k), _) => {
                let winner = self.keys.get(k).winner;
                self.keys.set(
                    k,
                    KeyState {
                        first: copy,
                        winner,
                    },
                );
                k
            }
            (None, Some(&k)) => {
                self.free_keys.pop();
                self.keys.set(k, state);
                k
            }
            (None, None) => self.keys.push(state),
        };
        let (files, keys) = (&self.files, &self.keys);
        let held = self.held_keys.as_deref().unwrap_or(&[]);
        self.index.insert(key.short(), k, |k| {
            key_at(files, held, keys.get(k).first).map_or(0, |key| key.short())
        });
        Some(k)
    }

    /// Lets go of a key no file records any more (out of the key table already:
    /// [`Ledger::take_out`]).
    fn free_key(&mut self, k: KeyId) {
        self.extra.remove(&k);
        self.tokens.remove(&k);
        let first = self.keys.get(k).first;
        self.keys.set(
            k,
            KeyState {
                first,
                winner: NO_COPY,
            },
        );
        self.free_keys.push(k);
    }

    fn family(&self, f: &CodexFile) -> String {
        let own = f
            .thread_id
            .as_deref()
            .map_or_else(|| stem(&f.path), str::to_owned);
        match &self.threads {
            Some(threads) => threads.family(&own),
            None => own,
        }
    }

    fn threads_now<'a>(&self, parse: &dyn Fn(&Path) -> Option<FileRef<'a>>) -> Threads {
        let codex: Vec<&CodexFile> = self
            .files
            .values()
            .filter(|slot| slot.agent == Agent::Codex)
            .filter_map(|slot| match parse(&slot.path) {
                Some(FileRef::Codex(f)) => Some(f),
                _ => None,
            })
            .collect();
        Threads::new(&codex)
    }

    /// Decides who wins the key, as [`crate::account`] decides it over files in path order:
    /// the first with the least rank; a Claude reply counted with the first largest usage.
    /// The copies are not sorted (a reply a base shares with dozens of forks has dozens, and
    /// every key of a changed file is decided again): path order is asked only between two
    /// copies that tie, which is what "the first" means.
    fn decide<'a>(
        &mut self,
        key: KeyId,
        blocks: &mut CallBlocks,
        parse: &mut dyn FnMut(&Ledger, FileId) -> Option<FileRef<'a>>,
    ) {
        let state = self.keys.get(key);
        let first = (state.first != NO_COPY).then_some(state.first);
        let extra = self.extra.get(&key).map_or(&[][..], Vec::as_slice);
        let copies: Vec<CopyAt> = first.into_iter().chain(extra.iter().copied()).collect();
        let before = |a: CopyAt, b: CopyAt| {
            let path = |id: FileId| self.slot(id).map(|s| &s.path);
            (path(a.file), a.at) < (path(b.file), b.at)
        };
        let mut best: Option<(Precedence, CopyAt, Tokens)> = None;
        let mut tokens: Option<(Tokens, CopyAt)> = None;
        let mut claude = false;
        for &copy in &copies {
            let Some(f) = parse(self, copy.file) else {
                continue;
            };
            claude |= matches!(f, FileRef::Claude(_));
            let Some((rank, copy_tokens)) = self.rank(f, copy, blocks) else {
                continue;
            };
            let wins = match &best {
                None => true,
                Some((r, at, _)) => rank < *r || (rank == *r && before(copy, *at)),
            };
            if wins {
                best = Some((rank, copy, copy_tokens));
            }
            let larger = match tokens {
                None => true,
                Some((t, at)) => {
                    copy_tokens.total() > t.total()
                        || (copy_tokens.total() == t.total() && before(copy, at))
                }
            };
            if larger {
                tokens = Some((copy_tokens, copy));
            }
        }
        let tokens = tokens.map(|(t, _)| t);
        let (winner, own) = best.map_or((NO_COPY, None), |(_, copy, own)| (copy, Some(own)));
        self.keys.set(
            key,
            KeyState {
                first: state.first,
                winner,
            },
        );
        // A Codex call counts its winner's own usage; a Claude reply the largest any copy has.
        match tokens {
            Some(tokens) if claude && Some(tokens) != own => {
                self.tokens.insert(key, tokens);
            }
            _ => {
                self.tokens.remove(&key);
            }
        }
    }

    /// A copy's rank and recorded usage.
    fn rank(
        &self,
        file: FileRef<'_>,
        copy: CopyAt,
        blocks: &mut CallBlocks,
    ) -> Option<(Precedence, Tokens)> {
        match file {
            FileRef::Claude(f) => {
                let m = blocks.get(copy, &f.messages)?;
                let own = f
                    .session_id
                    .as_deref()
                    .map_or_else(|| stem(&f.path), str::to_owned);
                Some((
                    precedence(
                        m.timestamp,
                        u32::from(f.parent_session.is_some()),
                        f.started.get(),
                        &own,
                    ),
                    m.tokens,
                ))
            }
            FileRef::Codex(f) => {
                let call = blocks.get(copy, &f.calls)?;
                let own = f
                    .thread_id
                    .as_deref()
                    .map_or_else(|| stem(&f.path), str::to_owned);
                let threads = self.threads.as_ref()?;
                let (_, depth) = threads.session(&own);
                let rank = precedence(
                    call.timestamp,
                    threads.fork_depth(&own) + depth,
                    f.started.get(),
                    &own,
                );
                Some((rank, call.tokens))
            }
            FileRef::Grok(_) => None,
        }
    }

    /// The share of the calls the file wins.
    fn rebuild_chunk<'a>(&mut self, id: FileId, parse: &dyn Fn(&Path) -> Option<FileRef<'a>>) {
        let Some(slot) = self.slot(id) else { return };
        let Some(file) = parse(&slot.path) else {
            return;
        };
        let keys = self.keys_of(id);
        let wins = |at: usize| -> Option<KeyId> {
            let copy = CopyAt {
                file: id,
                at: at as u32,
            };
            let key = self.find_key(*keys.get(at)?, copy)?;
            (self.keys.get(key).winner == copy).then_some(key)
        };
        let (agent, session, subagent, cwd, calls, counted) = match file {
            FileRef::Claude(f) => {
                let own = own_id(f.session_id.as_ref(), &f.path);
                let (session, subagent) = match &f.parent_session {
                    Some(parent) => (Name::from(parent.clone()), Some(own)),
                    None => (own, None),
                };
                // The won replies counted with another copy's larger usage.
                let counted: Vec<(u32, Tokens)> = (0..f.messages.len())
                    .filter_map(|at| {
                        let tokens = self.tokens.get(&wins(at)?)?;
                        Some((at as u32, *tokens))
                    })
                    .collect();
                let cwd = f.cwd;
                (
                    Agent::Claude,
                    session,
                    subagent,
                    cwd,
                    f.messages.clone(),
                    counted,
                )
            }
            FileRef::Codex(f) => {
                let own = own_id(f.thread_id.as_ref(), &f.path);
                let (session, subagent) = match &self.threads {
                    Some(threads) => {
                        let session = threads.session(&own).0;
                        if *session == *own {
                            (own, None)
                        } else {
                            (Name::from(session.as_str()), Some(own))
                        }
                    }
                    None => (own, None),
                };
                let cwd = f.cwd;
                (
                    Agent::Codex,
                    session,
                    subagent,
                    cwd,
                    f.calls.clone(),
                    Vec::new(),
                )
            }
            FileRef::Grok(f) => {
                let session = own_id(f.session_id.as_ref(), &f.path);
                let cwd = f.cwd;
                (Agent::Grok, session, None, cwd, grok_calls(f), Vec::new())
            }
        };
        let grok = agent == Agent::Grok;
        let names = ShareNames {
            agent,
            session_id: session,
            subagent,
            cwd,
        };
        let chunk = Share::new(names, calls, |at| grok || wins(at).is_some(), counted);
        let (limits, no_usage) = match file {
            FileRef::Codex(f) => (f.rate_limits.clone(), false),
            FileRef::Grok(f) => (None, f.turns.is_empty()),
            FileRef::Claude(_) => (None, false),
        };
        self.shares.set(id, chunk);
        if let Some(slot) = self.files.at_mut(id) {
            slot.limits = limits;
            slot.no_usage = no_usage;
        }
    }

    /// Where the ledger's heap bytes are, by part, estimated from what each table holds
    /// (`usage_memory` prints it): per-key state and its index, the copies beyond the first,
    /// the file slots with each call's key id, the shares.
    pub(crate) fn heap_parts(&self, parts: &mut Vec<(&'static str, usize)>) {
        use std::mem::size_of;
        let map_slot =
            |len: usize, slot: usize| (len * 8).div_ceil(7).next_power_of_two() * (slot + 1);
        parts.push((
            "ledger key states",
            self.keys.heap_bytes() + self.index.heap_bytes(),
        ));
        let extra: usize = self.extra.values().map(|v| v.capacity() * 8).sum::<usize>()
            + map_slot(self.extra.len(), 4 + size_of::<Vec<CopyAt>>());
        parts.push(("ledger extra copies", extra));
        parts.push((
            "ledger larger usages",
            map_slot(self.tokens.len(), 4 + size_of::<Tokens>()),
        ));
        let mut slots = self.files.heap_bytes();
        for slot in self.files.values() {
            // Shared with the parse: counted here, once.
            slots += slot
                .limits
                .as_ref()
                .map_or(0, |_| size_of::<RateLimits>() + 16);
        }
        parts.push(("ledger file slots", slots));
        parts.push(("shares", self.shares.heap_bytes()));
    }

    /// Every file's share, with what is decided over all files at once (cheap: no call and no
    /// parse is looked at).
    fn accounting(&self) -> Accounting {
        let mut out = Accounting {
            chunks: self.shares.clone(),
            duplicates_skipped: self.duplicates,
            models: ModelNames::now(),
            ..Accounting::default()
        };
        // The latest rate limits; of two seen at the same time, the later file's in path order
        // (as a whole scan, which reads files in that order, keeps the last it met).
        let mut latest: Option<(&Arc<RateLimits>, &Path)> = None;
        let mut no_usage: Vec<&Path> = Vec::new();
        for slot in self.files.values() {
            if let Some(limits) = &slot.limits
                && latest.is_none_or(|(l, path)| {
                    (l.observed_at, path) <= (limits.observed_at, &*slot.path)
                })
            {
                latest = Some((limits, &slot.path));
            }
            if slot.no_usage {
                no_usage.push(&slot.path);
            }
        }
        out.rate_limits = latest.map(|(l, _)| (**l).clone());
        no_usage.sort_unstable();
        out.no_usage_recorded = no_usage
            .into_iter()
            .map(|path| (Agent::Grok, crate::grok::session_of(path)))
            .collect();
        out
    }
}

/// A file's own id (its session's or thread's) as its share names it: the parse's own,
/// shared rather than copied (one allocation fewer a file), else the file's stem (held in
/// its path).
fn own_id(id: Option<&Name>, path: &Arc<Path>) -> Name {
    id.cloned()
        .unwrap_or_else(|| Name::in_path(&stem(path), path))
}

/// The calls of a few files' lists, each from one place on, read back together: deciding keys
/// in the order they were made looks at one file's calls one after another, and a key's other
/// copies (a resumed session's of its base) at theirs in a few other files, one after another
/// too — so each file keeps its block while the others are read, rather than reading its
/// calls again after each copy elsewhere.
#[derive(Default)]
struct CallBlocks {
    /// The blocks held, the one read last at the end.
    held: Vec<CallBlock>,
}

#[derive(Default)]
struct CallBlock {
    file: FileId,
    first: usize,
    calls: Vec<Call>,
}

/// How many calls [`CallBlocks`] reads at once.
const CALL_BLOCK: usize = 1024;

/// How many files' blocks [`CallBlocks`] holds (the one read longest ago goes first).
const CALL_BLOCKS_HELD: usize = 16;

impl CallBlocks {
    /// The call at `copy`, from `list` (its file's list now).
    fn get(&mut self, copy: CopyAt, list: &CallList) -> Option<Call> {
        let at = copy.at as usize;
        let held = self.held.iter().position(|block| {
            block.file == copy.file && at >= block.first && at < block.first + block.calls.len()
        });
        let block = match held {
            Some(b) => &self.held[b],
            None => {
                let mut block = if self.held.len() >= CALL_BLOCKS_HELD {
                    self.held.remove(0)
                } else {
                    CallBlock::default()
                };
                block.file = copy.file;
                block.first = at;
                block.calls.clear();
                block.calls.extend(list.iter_from(at).take(CALL_BLOCK));
                self.held.push(block);
                self.held.last()?
            }
        };
        block.calls.get(at - block.first).copied()
    }
}

/// The key of the call at `copy`, read from its file's list as put in: a Claude reply's own, a
/// Codex call's in its file's thread family (from `held`, the update's keys, when there).
fn key_at(files: &PathSlots<FileSlot>, held: &[Vec<CallKey>], copy: CopyAt) -> Option<CallKey> {
    if let Some(&key) = held
        .get(copy.file as usize)
        .and_then(|keys| keys.get(copy.at as usize))
    {
        return Some(key);
    }
    let slot = files.at(copy.file)?;
    let key = slot.calls.as_ref()?.key(copy.at as usize)?;
    Some(slot_key(slot, key))
}

/// A call's key as the ledger compares it: a Codex call's in its file's thread family.
fn slot_key(slot: &FileSlot, key: CallKey) -> CallKey {
    match slot.agent {
        Agent::Codex => key_in(key, slot.family),
        Agent::Claude | Agent::Grok | Agent::Copilot => key,
    }
}

fn agent_of(file: FileRef<'_>) -> Agent {
    match file {
        FileRef::Claude(_) => Agent::Claude,
        FileRef::Codex(_) => Agent::Codex,
        FileRef::Grok(_) => Agent::Grok,
    }
}

#[cfg(test)]
mod tests;
