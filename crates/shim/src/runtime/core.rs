//! The shim's shared state behind one lock: the adapter, the connections waiting for reports,
//! the registration, and the routing of the adapter's [`Action`]s to the pipes and sockets.
//!
//! Fail-open lives here: an adapter that panics, or a registration that cannot be written, turns
//! interception off for good — every line is then forwarded untouched, the registration says
//! `intercepting: false` (or is removed), and the socket takes no more requests.

use std::collections::HashMap;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, MutexGuard, PoisonError};

use cross_agent_protocol::panel::{PanelRegistration, ShimEvent};

use super::outbox::Outbox;
use crate::adapter::{Action, InjectionId, PanelAdapter, Side};
use crate::log::ShimLog;
use crate::registration::{self, Paths, now_ms};

/// What goes to one pipe from one batch: ranges of the batch's buffer and lines of our own.
#[derive(Debug, Default)]
pub struct Pieces {
    pieces: Vec<Piece>,
}

#[derive(Debug)]
pub enum Piece {
    Range(Range<usize>),
    Owned(Vec<u8>),
}

impl Pieces {
    fn push_range(&mut self, range: Range<usize>) {
        if let Some(Piece::Range(last)) = self.pieces.last_mut()
            && last.end == range.start
        {
            last.end = range.end;
            return;
        }
        self.pieces.push(Piece::Range(range));
    }

    fn push_line(&mut self, mut line: Vec<u8>) {
        line.push(b'\n');
        self.pieces.push(Piece::Owned(line));
    }

    /// The pieces in order.
    pub fn into_pieces(self) -> Vec<Piece> {
        self.pieces
    }

    /// True when the pieces are exactly `buf[..end]`: the buffer itself can be handed over.
    pub fn is_whole(&self, end: usize) -> bool {
        matches!(self.pieces.as_slice(), [Piece::Range(r)] if r.start == 0 && r.end == end)
    }

    /// Pushes the pieces to `outbox` as one chunk (copying the ranges out of `buf`).
    pub fn send(self, buf: &[u8], outbox: &Outbox) {
        match self.pieces.as_slice() {
            [] => {}
            [Piece::Owned(_)] => {
                if let Some(Piece::Owned(line)) = self.pieces.into_iter().next() {
                    outbox.push(line);
                }
            }
            pieces => {
                let size = pieces
                    .iter()
                    .map(|p| match p {
                        Piece::Range(r) => r.len(),
                        Piece::Owned(v) => v.len(),
                    })
                    .sum();
                let mut chunk = Vec::with_capacity(size);
                for piece in pieces {
                    match piece {
                        Piece::Range(r) => chunk.extend_from_slice(&buf[r.clone()]),
                        Piece::Owned(v) => chunk.extend_from_slice(v),
                    }
                }
                outbox.push(chunk);
            }
        }
    }
}

/// Where a line is in its batch, and when it was read.
#[derive(Debug, Clone)]
pub struct LineAt {
    pub range: Range<usize>,
    /// One clock reading per batch.
    pub now: u64,
    /// Its head has passed on already ([`PanelAdapter::streams_from_head`]): it is forwarded
    /// whatever the adapter says.
    pub committed: bool,
}

/// Where one batch's output goes.
#[derive(Debug, Default)]
pub struct Routed {
    pub to_agent: Pieces,
    pub to_extension: Pieces,
}

pub struct Core {
    adapter: Box<dyn PanelAdapter>,
    intercepting: bool,
    /// The extension's first line has gone to the agent: lines of ours may follow.
    extension_spoke: bool,
    /// Lines of ours that wait for the extension's first line.
    held: Vec<Vec<u8>>,
    connections: HashMap<InjectionId, Sender<Vec<u8>>>,
    next_id: u64,
    registration: PanelRegistration,
    /// The sessions changed since the registration was last written.
    registration_stale: bool,
    /// The registration's writer was woken for the current staleness (a wake-up is a syscall,
    /// and a busy stream marks it stale with nearly every batch).
    stale_signalled: bool,
    paths: Paths,
    scratch: Vec<Action>,
}

impl Core {
    pub fn new(
        adapter: Box<dyn PanelAdapter>,
        registration: PanelRegistration,
        paths: Paths,
    ) -> Core {
        Core {
            adapter,
            intercepting: true,
            extension_spoke: false,
            held: Vec::new(),
            connections: HashMap::new(),
            next_id: 1,
            registration,
            registration_stale: false,
            stale_signalled: false,
            paths,
            scratch: Vec::new(),
        }
    }

    pub fn intercepting(&self) -> bool {
        self.intercepting
    }

    /// The registration as it is now, sessions included.
    pub fn registration(&self) -> PanelRegistration {
        let mut registration = self.registration.clone();
        if self.intercepting {
            registration.sessions = self.adapter.sessions();
        }
        registration
    }

    /// A line of `side` (without its newline) at `at.range` of the batch buffer.
    pub fn on_line(
        &mut self,
        side: Side,
        line: &[u8],
        at: LineAt,
        routed: &mut Routed,
        log: &ShimLog,
    ) {
        let LineAt {
            range,
            now,
            committed,
        } = at;
        if !self.intercepting {
            forward(side, range, routed);
            return;
        }
        let mut actions = std::mem::take(&mut self.scratch);
        actions.clear();
        let adapter = &mut self.adapter;
        let result = catch_unwind(AssertUnwindSafe(|| {
            adapter.on_line(side, line, now, &mut actions)
        }));
        if result.is_err() {
            self.stop_intercepting("the wire adapter failed on a line", log);
            forward(side, range, routed);
            return;
        }
        if committed && !actions.contains(&Action::Forward) {
            actions.insert(0, Action::Forward);
        }
        self.apply(&mut actions, Some((side, range)), routed);
        self.scratch = actions;
    }

    /// Whether the head of a line still arriving may pass on before the line is whole (always,
    /// once interception stopped: every byte passes then); what the adapter decided from the
    /// head is routed before it.
    pub fn streams_from_head(
        &mut self,
        side: Side,
        head: &[u8],
        now: u64,
        routed: &mut Routed,
        log: &ShimLog,
    ) -> bool {
        if !self.intercepting {
            return true;
        }
        let mut actions = Vec::new();
        let adapter = &mut self.adapter;
        match catch_unwind(AssertUnwindSafe(|| {
            adapter.streams_from_head(side, head, now, &mut actions)
        })) {
            Ok(streams) => {
                self.apply(&mut actions, None, routed);
                streams
            }
            Err(_) => {
                self.stop_intercepting("the wire adapter failed on a line's head", log);
                true
            }
        }
    }

    /// Registers a connection that waits for reports; its id.
    pub fn connect(&mut self, events: Sender<Vec<u8>>) -> InjectionId {
        let id = InjectionId(self.next_id);
        self.next_id += 1;
        self.connections.insert(id, events);
        id
    }

    /// Runs `call` on the adapter (an injection, an answer, a tick, the agent's exit) and routes
    /// what it asks for.
    pub fn call(
        &mut self,
        routed: &mut Routed,
        log: &ShimLog,
        call: impl FnOnce(&mut dyn PanelAdapter, u64, &mut Vec<Action>),
    ) {
        if !self.intercepting {
            return;
        }
        let mut actions = Vec::new();
        let now = now_ms();
        let adapter = &mut self.adapter;
        if catch_unwind(AssertUnwindSafe(|| {
            call(adapter.as_mut(), now, &mut actions)
        }))
        .is_err()
        {
            self.stop_intercepting("the wire adapter failed", log);
            return;
        }
        self.apply(&mut actions, None, routed);
    }

    /// The connection of `id` went away.
    pub fn disconnect(&mut self, id: InjectionId) {
        if self.connections.remove(&id).is_some() && self.intercepting {
            let adapter = &mut self.adapter;
            let _ = catch_unwind(AssertUnwindSafe(|| adapter.on_disconnect(id)));
        }
    }

    fn apply(
        &mut self,
        actions: &mut Vec<Action>,
        line: Option<(Side, Range<usize>)>,
        routed: &mut Routed,
    ) {
        let mut sessions_changed = false;
        for action in actions.drain(..) {
            match action {
                Action::Forward => {
                    let Some((side, range)) = line.clone() else {
                        continue;
                    };
                    forward(side, range, routed);
                    if side == Side::Extension && !self.extension_spoke {
                        self.extension_spoke = true;
                        for held in self.held.drain(..) {
                            routed.to_agent.push_line(held);
                        }
                    }
                }
                Action::ToAgent(bytes) => {
                    if self.extension_spoke {
                        routed.to_agent.push_line(bytes);
                    } else {
                        self.held.push(bytes);
                    }
                }
                Action::ToExtension(bytes) => routed.to_extension.push_line(bytes),
                Action::Report(id, event) => self.report(id, &event),
                Action::Close(id) => {
                    self.connections.remove(&id);
                }
                Action::SessionsChanged => sessions_changed = true,
            }
        }
        if sessions_changed && self.intercepting {
            // Written by the registration thread, off the forwarding path ([`super`]).
            self.registration_stale = true;
        }
    }

    fn report(&mut self, id: InjectionId, event: &ShimEvent) {
        let Some(events) = self.connections.get(&id) else {
            return;
        };
        if let Ok(mut line) = serde_json::to_vec(event) {
            line.push(b'\n');
            if events.send(line).is_err() {
                self.connections.remove(&id);
            }
        }
    }

    /// Sets the agent's pid once it runs; the registration is rewritten.
    pub fn set_agent_pid(&mut self, pid: u32) {
        self.registration.agent_pid = Some(pid);
        self.registration_stale = true;
    }

    pub fn registration_stale(&self) -> bool {
        self.registration_stale && self.intercepting
    }

    /// True once per staleness: whether the registration's writer is to be woken now.
    pub fn signal_stale(&mut self) -> bool {
        let signal = self.registration_stale() && !self.stale_signalled;
        self.stale_signalled |= signal;
        signal
    }

    /// The registration to write now (the sessions as they are), if it changed.
    pub fn take_registration(&mut self) -> Option<PanelRegistration> {
        if !self.registration_stale() {
            return None;
        }
        self.registration_stale = false;
        self.stale_signalled = false;
        self.registration.sessions = self.adapter.sessions();
        self.registration.updated_at_ms = now_ms();
        Some(self.registration.clone())
    }

    /// Fail-open after the start: pass every byte from now on, take no more requests.
    pub fn stop_intercepting(&mut self, reason: &str, log: &ShimLog) {
        if !self.intercepting {
            return;
        }
        self.intercepting = false;
        log.line(format_args!(
            "stopped intercepting, passing bytes only: {reason}"
        ));
        self.connections.clear();
        self.registration.intercepting = false;
        self.registration.sessions.clear();
        self.registration.updated_at_ms = now_ms();
        let _ = std::fs::remove_file(&self.paths.socket);
        if registration::write(&self.paths.json, &self.registration).is_err() {
            let _ = std::fs::remove_file(&self.paths.json);
        }
        // Lines of ours still held are dropped: nothing of ours goes in any more.
        self.held.clear();
    }
}

fn forward(side: Side, range: Range<usize>, routed: &mut Routed) {
    match side {
        Side::Extension => routed.to_agent.push_range(range),
        Side::Agent => routed.to_extension.push_range(range),
    }
}

/// The lock, usable after a panic elsewhere (the state stays consistent between calls).
pub fn lock(core: &Mutex<Core>) -> MutexGuard<'_, Core> {
    core.lock().unwrap_or_else(PoisonError::into_inner)
}
