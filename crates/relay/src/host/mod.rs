//! The relay host: starts one relay per represented sender and permission class (a real `claude -p` in stream-json
//! mode, its own directory as cwd, the relay endpoint as its API), queues each send, writes
//! the send turn on the relay's stdin, and answers the relay's hooks (which reach it through
//! `cross-agent hook <Event>` → the daemon → [`RelayHost::hook`]).
//!
//! One send at a time per relay: the next send turn is written only after the previous turn
//! ended (its `Stop` hook, or the relay's exit), so a turn's hooks always belong to the send in
//! hand. The sender gets Claude's receipt as soon as the hooks wrote it; the turn's last model
//! request (the status line) finishes behind it.
//!
//! A relay stays up while a send is in hand or a reply to something it sent is awaited (at most
//! `reply_wait` per send; Claude's notice that the message was refused or expired ends the
//! wait, since no reply can come), and is stopped `idle_stop` after its last activity otherwise. Its
//! exit mid-send is the send's [`RelayReceipt::RelayDied`]; nothing is ever re-sent. A send to
//! a target of the other permission class goes through the sender's relay of that class
//! (started beside the first, under its own name), so replies the first awaits still reach it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::endpoint::Endpoint;
use crate::error::RelayError;
use crate::inbound::{InboundKind, InboundMail};
use crate::receipt::{QueuedSend, RelayReceipt, read_receipt, write_receipt_once};

mod hooks;
mod lifecycle;
mod send;

/// How long a send turn may take to end after its receipt before the next send goes anyway
/// (the turn's last request is the endpoint's instant status line, so this is only a bound).
const TURN_END_WAIT: Duration = Duration::from_secs(30);

/// How long a stopping relay gets to exit after its stdin closes before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// Claude's limit on `SendMessage`'s `to` (observed schema: one line, at most 300 characters).
const MAX_TO_CHARS: usize = 300;

/// Everything the host needs.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// `CROSS_AGENT_HOME`: relays live in `<home>/relays/<relay name>/`.
    pub home: PathBuf,
    /// The real `claude` binary.
    pub claude: PathBuf,
    /// The `cross-agent` program the relay's hooks run (`<it> hook <Event>`), normally the
    /// daemon's own executable.
    pub cross_agent: PathBuf,
    /// Environment the relay must share with the target (`HOME`, `PATH`, `TMPDIR`, …): peers
    /// find each other through the same `~/.claude`. `ANTHROPIC_*` entries are ignored (the
    /// relay's API is the relay endpoint).
    pub claude_env: Vec<(String, String)>,
    /// This machine's name, in relay names.
    pub machine: String,
    /// Decisions: relay started/stopped, gate denials.
    pub decisions: DecisionLog,
    /// A relay with nothing in hand and no reply awaited is stopped this long after its last
    /// activity.
    pub idle_stop: Duration,
    /// How long a send waits for Claude's receipt (relay start-up included).
    pub send_timeout: Duration,
    /// How long a relay is kept up for the reply to one message it sent.
    pub reply_wait: Duration,
}

/// One send through a relay.
#[derive(Debug, Clone)]
pub struct NativeSend {
    /// The sender the relay represents: the caller's session title or short id, or `cli`.
    pub represented: String,
    /// `uds:<target messagingSocketPath>` (preferred) or a registry name.
    pub to: String,
    /// The full bridge envelope text.
    pub message: String,
    /// The delivery this send carries (kept in the queue file).
    pub delivery_id: String,
    /// The target's permission mode when known (`default`, `acceptEdits`, `bypassPermissions`,
    /// …): the send goes through the sender's relay of the same permission class
    /// ([`crate::permission_class`]), so the target takes the message instead of holding it
    /// (Claude holds messages from another class). `None` is the `prompting` class.
    pub permission_mode: Option<String>,
}

/// A running relay, for status and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayInfo {
    pub name: String,
    pub represented: String,
    pub pid: u32,
    pub dir: PathBuf,
    pub permission_mode: Option<String>,
    /// Its permission class (`prompting` or `bypass`); a sender has one relay per class.
    pub permission_class: String,
    /// The relay's own `uds:` socket path (from its `system/init`), once it ran a turn.
    pub socket: Option<String>,
    /// Model requests it made so far.
    pub model_requests: u64,
}

/// The relays of one daemon. Cheap to clone.
#[derive(Clone)]
pub struct RelayHost {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RelayHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayHost")
            .field("endpoint", &self.inner.endpoint.addr)
            .field("relays_dir", &self.inner.relays_dir)
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: RelayConfig,
    /// `<home>/relays`, as given and canonical (Claude reports the canonical cwd).
    relays_dir: PathBuf,
    relays_dir_canonical: PathBuf,
    endpoint: Endpoint,
    relays: Mutex<HashMap<String, Arc<Relay>>>,
    /// Serialises relay start-ups so two sends never start the same relay twice.
    starting: tokio::sync::Mutex<()>,
    inbound_tx: mpsc::UnboundedSender<InboundMail>,
    inbound_rx: Mutex<Option<mpsc::UnboundedReceiver<InboundMail>>>,
    inbound_seq: AtomicU64,
    stopping: AtomicBool,
    reaper: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(reaper) = self.reaper.lock().take() {
            reaper.abort();
        }
    }
}

struct Relay {
    name: String,
    represented: String,
    dir: PathBuf,
    key: String,
    /// The mode it runs in: `bypassPermissions` for the `bypass` class, none (default) else.
    mode: Option<String>,
    /// Its permission class ([`permission_class`]): part of its identity and name.
    class: &'static str,
    pid: u32,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    send_lock: Arc<tokio::sync::Mutex<()>>,
    state: Mutex<RelayState>,
    /// `Some(detail)` once the process exited.
    exited: watch::Receiver<Option<String>>,
    /// Counts `Stop` hooks: a send turn ended.
    turns_ended: watch::Sender<u64>,
}

struct RelayState {
    current: Option<Current>,
    last_activity: Instant,
    /// Sent messages whose reply is awaited.
    awaiting: Vec<Awaited>,
    socket: Option<String>,
    /// The `prompt_id` of the inbound prompt filed last.
    last_filed: Option<String>,
}

struct Current {
    send: QueuedSend,
    prompt: String,
    /// The gate let the queued `SendMessage` through (it passes once).
    allowed: bool,
    /// The `tool_use_id` it let through: a second hook for the same call (a hook installed
    /// twice) gets the same answer.
    allowed_call: Option<String>,
    receipt: watch::Sender<Option<RelayReceipt>>,
}

/// One sent message whose reply keeps its relay up (at most `reply_wait`).
#[derive(Debug, Clone, PartialEq)]
struct Awaited {
    /// The `to` it was sent to.
    to: String,
    /// Claude's `msg_id` for it, which its delivery notices name.
    msg_id: Option<String>,
    sent_at: Instant,
}

/// Drops what `kind` settles from the awaited replies: a peer's message settles the oldest one
/// sent to that peer (by address or name); a delivery notice that the message was refused or
/// expired settles that message (no reply can come). A held or released message is still
/// awaited.
fn settle_awaiting(awaiting: &mut Vec<Awaited>, kind: &InboundKind) {
    let at = match kind {
        InboundKind::Message {
            from, from_name, ..
        } => awaiting
            .iter()
            .position(|a| &a.to == from || &a.to == from_name),
        InboundKind::DeliveryNotice {
            status,
            msg_id,
            recipient,
        } if status == "refused" || status == "expired" => {
            awaiting.iter().position(|a| match (msg_id, &a.msg_id) {
                (Some(noticed), Some(sent)) => noticed == sent,
                _ => recipient.as_ref() == Some(&a.to),
            })
        }
        _ => None,
    };
    if let Some(at) = at {
        awaiting.remove(at);
    }
}

/// A single-quoted shell word (hooks run through the shell).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The host turn asking a relay to make its queued send; the endpoint and the
/// `UserPromptSubmit` hook recognise the turn by it.
fn send_turn(relay: &str, send_id: &str) -> String {
    format!("[cross-agent relay {relay}] make queued send {send_id}")
}

/// The settings document installing a relay's hooks (`--settings`). `crossSessionInbound:
/// accept`: a reply from a session of another permission class is taken (the hook blocks it
/// from any model anyway) instead of being held for an approval no one would give.
pub(crate) fn relay_settings(cross_agent: &Path) -> Value {
    let command = |event: &str| json!([{ "type": "command", "command": format!("{} hook {event}", shell_quote(&cross_agent.to_string_lossy())), "timeout": 30 }]);
    json!({
        "hooks": {
            "PreToolUse": [{ "matcher": "*", "hooks": command("PreToolUse") }],
            "PostToolUse": [{ "matcher": "*", "hooks": command("PostToolUse") }],
            "UserPromptSubmit": [{ "hooks": command("UserPromptSubmit") }],
            "Stop": [{ "hooks": command("Stop") }],
        },
        "crossSessionInbound": "accept",
    })
}

fn decision(kind: &'static str, outcome: &'static str, relay: &str) -> Decision {
    Decision::new(DecisionKind::new(kind), Outcome::new(outcome)).detail("relay", relay.to_owned())
}

impl RelayHost {
    /// Binds the relay endpoint on `127.0.0.1:0` and prepares `<home>/relays/`. Relays start
    /// on their first send.
    pub async fn start(config: RelayConfig) -> Result<RelayHost, RelayError> {
        let relays_dir = config.home.join(crate::RELAYS_DIR);
        // Only `relays/` itself: the home is the daemon's start-up to make, never this writer's.
        match std::fs::create_dir(&relays_dir) {
            Err(e) if !(e.kind() == std::io::ErrorKind::AlreadyExists && relays_dir.is_dir()) => {
                return Err(RelayError::io(
                    "creating the relays directory",
                    &relays_dir,
                    e,
                ));
            }
            _ => {}
        }
        let relays_dir_canonical = relays_dir
            .canonicalize()
            .map_err(|e| RelayError::io("resolving", &relays_dir, e))?;
        let endpoint = Endpoint::start().await?;
        let (inbound_tx, inbound_rx) = mpsc::unbounded_channel();
        let idle_stop = config.idle_stop;
        let inner = Arc::new(Inner {
            config,
            relays_dir,
            relays_dir_canonical,
            endpoint,
            relays: Mutex::new(HashMap::new()),
            starting: tokio::sync::Mutex::new(()),
            inbound_tx,
            inbound_rx: Mutex::new(Some(inbound_rx)),
            inbound_seq: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            reaper: Mutex::new(None),
        });
        let weak = Arc::downgrade(&inner);
        let tick = (idle_stop / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
        *inner.reaper.lock() = Some(tokio::spawn(lifecycle::reap(weak, tick)));
        Ok(RelayHost { inner })
    }

    /// The relay endpoint's base URL (`ANTHROPIC_BASE_URL` of every relay).
    pub fn endpoint_url(&self) -> String {
        self.inner.endpoint.base_url()
    }

    /// The running relays.
    pub fn relays(&self) -> Vec<RelayInfo> {
        let relays: Vec<Arc<Relay>> = self.inner.relays.lock().values().cloned().collect();
        relays
            .iter()
            .map(|relay| RelayInfo {
                name: relay.name.clone(),
                represented: relay.represented.clone(),
                pid: relay.pid,
                dir: relay.dir.clone(),
                permission_mode: relay.mode.clone(),
                permission_class: relay.class.to_owned(),
                socket: relay.state.lock().socket.clone(),
                model_requests: self.model_requests(&relay.name),
            })
            .collect()
    }

    /// Model requests the relay named `relay` made to the relay endpoint so far.
    pub fn model_requests(&self, relay: &str) -> u64 {
        self.inner.endpoint.state.requests(relay)
    }

    /// Inbound mail every relay's `UserPromptSubmit` hook filed, in arrival order. Taken once.
    pub fn take_inbound(&self) -> Option<mpsc::UnboundedReceiver<InboundMail>> {
        self.inner.inbound_rx.lock().take()
    }

    /// Queues one send, starts (or reuses) the relay for `send.represented`, runs its send turn
    /// and waits, at most `send_timeout`, for Claude's receipt, read back from its file.
    ///
    /// The work runs in a task of its own: a caller that stops waiting leaves the send to end as
    /// it would have (its receipt still written), so the next send never inherits its turn.
    pub async fn send(&self, send: NativeSend) -> Result<RelayReceipt, RelayError> {
        let host = self.clone();
        tokio::spawn(async move { host.send_in_task(send).await })
            .await
            .map_err(|e| RelayError::Internal(format!("the send task failed: {e}")))?
    }
}

impl Relay {
    /// Gives the send in hand this receipt unless it has one: written to its file first (the
    /// first receipt wins), then signalled to the waiting sender.
    fn settle(&self, receipt: RelayReceipt) {
        let state = self.state.lock();
        let Some(current) = state.current.as_ref() else {
            return;
        };
        if current.receipt.borrow().is_some() {
            return;
        }
        match write_receipt_once(&self.dir, &current.send.send_id, &receipt) {
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, relay = %self.name, "a relay receipt could not be written");
            }
        }
        let written = read_receipt(&self.dir, &current.send.send_id)
            .ok()
            .flatten()
            .unwrap_or(receipt);
        current.receipt.send_replace(Some(written));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn awaited(to: &str, msg_id: &str) -> Awaited {
        Awaited {
            to: to.to_owned(),
            msg_id: Some(msg_id.to_owned()),
            sent_at: Instant::now(),
        }
    }

    fn notice(status: &str, msg_id: &str, recipient: &str) -> InboundKind {
        InboundKind::DeliveryNotice {
            status: status.to_owned(),
            msg_id: Some(msg_id.to_owned()),
            recipient: Some(recipient.to_owned()),
        }
    }

    #[test]
    fn replies_and_final_notices_settle_what_a_relay_awaits() {
        let mut awaiting = vec![
            awaited("uds:/s/1.sock", "m1"),
            awaited("uds:/s/2.sock", "m2"),
            awaited("uds:/s/2.sock", "m3"),
        ];
        // Held and released messages may still be answered.
        settle_awaiting(&mut awaiting, &notice("held", "m2", "uds:/s/2.sock"));
        settle_awaiting(&mut awaiting, &notice("released", "m2", "uds:/s/2.sock"));
        assert_eq!(awaiting.len(), 3);
        // An expired one cannot: exactly that message is settled.
        settle_awaiting(&mut awaiting, &notice("expired", "m3", "uds:/s/2.sock"));
        let left: Vec<_> = awaiting.iter().filter_map(|a| a.msg_id.clone()).collect();
        assert_eq!(left, ["m1", "m2"]);
        // A reply settles the oldest message to its sender.
        settle_awaiting(
            &mut awaiting,
            &InboundKind::Message {
                from: "uds:/s/2.sock".into(),
                from_name: "bravo".into(),
                from_mode: "prompting".into(),
                body: "answer".into(),
            },
        );
        let left: Vec<_> = awaiting.iter().filter_map(|a| a.msg_id.clone()).collect();
        assert_eq!(left, ["m1"]);
        // Mail that settles nothing leaves the rest.
        settle_awaiting(&mut awaiting, &InboundKind::Other);
        settle_awaiting(&mut awaiting, &notice("refused", "m9", "uds:/s/9.sock"));
        assert_eq!(awaiting.len(), 1);
        settle_awaiting(&mut awaiting, &notice("refused", "m1", "uds:/s/1.sock"));
        assert!(awaiting.is_empty());
    }
}
