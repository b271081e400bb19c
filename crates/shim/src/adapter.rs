//! The contract between the shim's runtime (pipes, socket, registration) and an agent's wire
//! adapter. The runtime reads whole lines from the extension and from the agent and hands each
//! to the adapter, which says what to do with it; it never writes a byte itself.
//!
//! Rules every adapter keeps (docs/spec/cross-agent-mcp.md "Shared rules"):
//! - A line is forwarded as the exact bytes it arrived as ([`Action::Forward`]); the adapter
//!   never re-serialises someone else's line.
//! - Nothing of ours goes to the agent before the extension's first line (Claude
//!   `--await-initialize` exits otherwise): an injection asked earlier waits.
//! - Lines the adapter cannot parse are forwarded untouched and do not change its state.
//! - Injected turns never count as human input.

use cross_agent_protocol::panel::{ApprovalAnswer, Injection, PanelSession, ShimEvent};

/// The runtime's handle on one injection: events for it go to the connection that asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InjectionId(pub u64);

/// Which side a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The editor extension (toward the agent's stdin).
    Extension,
    /// The agent (toward the extension, from the agent's stdout).
    Agent,
}

/// What the runtime does after the adapter looked at a line or a request, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Pass the line just handed in to the other side, byte for byte.
    Forward,
    /// Write a line of ours to the agent's stdin (the runtime adds the newline).
    ToAgent(Vec<u8>),
    /// Write a line of ours to the extension (Grok's quoted block of a relayed message).
    ToExtension(Vec<u8>),
    /// Tell the daemon connection that asked for an injection what became of it.
    Report(InjectionId, ShimEvent),
    /// The connection of that injection is done (after its last report).
    Close(InjectionId),
    /// The sessions changed: rewrite the registration.
    SessionsChanged,
}

/// One agent's wire, as a state machine. `now_ms` is milliseconds since the Unix epoch.
pub trait PanelAdapter: Send {
    /// A whole line (without its newline) from one side. Pushing nothing drops the line: only
    /// an adapter's own traffic (responses to its `xagent-` requests, a bridged turn's held
    /// back thinking) is ever dropped.
    fn on_line(&mut self, side: Side, line: &[u8], now_ms: u64, out: &mut Vec<Action>);

    /// The daemon asks for an injection; the adapter writes it now or queues it until the
    /// session is idle, and reports `accepted` (or `failed`) at once.
    fn on_inject(
        &mut self,
        id: InjectionId,
        injection: Injection,
        now_ms: u64,
        out: &mut Vec<Action>,
    );

    /// Answer a pending approval as the panel would; first answer wins.
    fn on_answer_approval(
        &mut self,
        id: InjectionId,
        answer: ApprovalAnswer,
        now_ms: u64,
        out: &mut Vec<Action>,
    );

    /// The connection of an injection went away (the daemon stopped listening): forget where to
    /// report, keep the turn.
    fn on_disconnect(&mut self, id: InjectionId);

    /// Called now and then (about once a second) for waits with a deadline.
    fn on_tick(&mut self, now_ms: u64, out: &mut Vec<Action>);

    /// The agent's stdout closed (the process is ending): every injection still open fails.
    fn on_agent_exit(&mut self, out: &mut Vec<Action>);

    /// The sessions the process hosts, for the registration.
    fn sessions(&self) -> Vec<PanelSession>;

    /// Whether a long line from `side` still arriving (`head` is what came so far, without a
    /// newline) may pass on before it is whole: true only when its head alone tells the adapter
    /// all it takes from the line, and the line is not dropped. The runtime then streams a 1 MB
    /// line through instead of holding it, and still hands it to [`PanelAdapter::on_line`] once
    /// it ends — as its first 16 KB (the head it streamed by; the rest is not kept). An adapter that learns something from the head acts on it here, before saying
    /// true (Claude counts a human's turn from a pasted image's head), and not again in
    /// `on_line`: lines of ours decided while the line streams reach the wire after it, so the
    /// adapter's state must already have it. A line whose rest matters waits to be whole. The
    /// default holds every line.
    fn streams_from_head(
        &mut self,
        side: Side,
        head: &[u8],
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> bool {
        let _ = (side, head, now_ms, out);
        false
    }
}

/// The last words on an `answer_approval` connection: taken (`refused` is `None`) or why not,
/// then the close.
pub(crate) fn approval_answered(id: InjectionId, refused: Option<String>, out: &mut Vec<Action>) {
    out.push(Action::Report(
        id,
        ShimEvent::ApprovalAnswered {
            accepted: refused.is_none(),
            reason: refused,
        },
    ));
    out.push(Action::Close(id));
}
