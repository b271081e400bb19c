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
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_protocol::hook::{HookParams, HookResponse};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{ChildStdin, Command};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

#[cfg(feature = "testing")]
use crate::endpoint::Misbehave;
use crate::endpoint::{Endpoint, SendTurn};
use crate::error::RelayError;
use crate::gate::{gate_allow, gate_decision, gate_denial, inbound_block};
use crate::inbound::{InboundKind, InboundMail, parse_inbound_text};
use crate::receipt::{
    QueuedSend, RelayReceipt, queue_path, read_receipt, write_json, write_receipt_once, write_whole,
};
use crate::{permission_class, relay_name_for};

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
        if let Some(reaper) = lock(&self.reaper).take() {
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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is a few field updates; a poisoned lock still holds usable data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
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
        *lock(&inner.reaper) = Some(tokio::spawn(reap(weak, tick)));
        Ok(RelayHost { inner })
    }

    /// The relay endpoint's base URL (`ANTHROPIC_BASE_URL` of every relay).
    pub fn endpoint_url(&self) -> String {
        self.inner.endpoint.base_url()
    }

    /// The running relays.
    pub fn relays(&self) -> Vec<RelayInfo> {
        let relays: Vec<Arc<Relay>> = lock(&self.inner.relays).values().cloned().collect();
        relays
            .iter()
            .map(|relay| RelayInfo {
                name: relay.name.clone(),
                represented: relay.represented.clone(),
                pid: relay.pid,
                dir: relay.dir.clone(),
                permission_mode: relay.mode.clone(),
                permission_class: relay.class.to_owned(),
                socket: lock(&relay.state).socket.clone(),
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
        lock(&self.inner.inbound_rx).take()
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

    async fn send_in_task(&self, send: NativeSend) -> Result<RelayReceipt, RelayError> {
        if send.to.is_empty()
            || send.to.contains(['\n', '\r'])
            || send.to.chars().count() > MAX_TO_CHARS
        {
            return Err(RelayError::Invalid(format!(
                "the recipient {:?} is not one SendMessage takes (one line, 1 to {MAX_TO_CHARS} characters)",
                send.to
            )));
        }
        let limit = self.inner.config.send_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        let name = relay_name_for(
            &send.represented,
            &self.inner.config.machine,
            send.permission_mode.as_deref(),
        );
        let (relay, guard) = tokio::time::timeout_at(deadline, self.relay_for(&send))
            .await
            .map_err(|_| RelayError::Timeout {
                relay: name.clone(),
                send_id: String::new(),
                limit,
            })??;

        let send_id = uuid::Uuid::now_v7().to_string();
        let queued = QueuedSend {
            send_id: send_id.clone(),
            delivery_id: send.delivery_id.clone(),
            to: send.to.clone(),
            message: send.message.clone(),
            queued_at_ms: now_ms(),
        };
        write_json(&queue_path(&relay.dir, &send_id), &queued)?;
        let prompt = send_turn(&relay.name, &send_id);
        let (receipt_tx, mut receipt_rx) = watch::channel(None);
        let turns_before = *relay.turns_ended.borrow();
        {
            let mut state = lock(&relay.state);
            state.current = Some(Current {
                send: queued,
                prompt: prompt.clone(),
                allowed: false,
                allowed_call: None,
                receipt: receipt_tx,
            });
            state.last_activity = Instant::now();
        }
        self.inner.endpoint.state.set_turn(
            &relay.key,
            Some(SendTurn {
                prompt: prompt.clone(),
                to: send.to.clone(),
                message: send.message.clone(),
                tool_use_id: format!("toolu_relay_{}", send_id.replace('-', "")),
            }),
        );

        let line = json!({"type":"user","message":{"role":"user","content":prompt}}).to_string();
        let written = {
            let mut stdin = relay.stdin.lock().await;
            match stdin.as_mut() {
                Some(stdin) => match stdin.write_all(format!("{line}\n").as_bytes()).await {
                    Ok(()) => stdin.flush().await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                },
                None => Err("its stdin is closed".to_owned()),
            }
        };
        if let Err(why) = written {
            relay.settle(RelayReceipt::RelayDied {
                detail: format!("the relay took no send turn: {why}"),
            });
        }

        let mut exited = relay.exited.clone();
        let outcome = tokio::select! {
            got = receipt_rx.wait_for(Option::is_some) => got.is_ok(),
            _ = exited.wait_for(Option::is_some) => true,
            () = tokio::time::sleep_until(deadline) => false,
        };
        if !outcome
            && lock(&relay.state)
                .current
                .as_ref()
                .is_some_and(|c| c.receipt.borrow().is_none())
        {
            // No receipt in time: stop the relay, so the queued message cannot go out later.
            self.stop_relay(&relay, "no receipt in time").await;
            self.finish_turn(&relay, guard);
            return Err(RelayError::Timeout {
                relay: relay.name.clone(),
                send_id,
                limit,
            });
        }
        if let Some(detail) = relay.exited.borrow().clone() {
            relay.settle(RelayReceipt::RelayDied { detail });
        }
        let receipt =
            read_receipt(&relay.dir, &send_id)?.ok_or_else(|| RelayError::BadReceipt {
                path: crate::receipt::receipt_path(&relay.dir, &send_id),
                reason: "signalled but not written".to_owned(),
            })?;
        if let RelayReceipt::Sent { msg_id, .. } = &receipt {
            lock(&relay.state).awaiting.push(Awaited {
                to: send.to.clone(),
                msg_id: msg_id.clone(),
                sent_at: Instant::now(),
            });
        }

        // The turn finishes behind the caller; the next send waits for it.
        let host = self.clone();
        let relay_for_turn = Arc::clone(&relay);
        tokio::spawn(async move {
            let mut ended = relay_for_turn.turns_ended.subscribe();
            let mut exited = relay_for_turn.exited.clone();
            tokio::select! {
                _ = ended.wait_for(|n| *n > turns_before) => {}
                _ = exited.wait_for(Option::is_some) => {}
                () = tokio::time::sleep(TURN_END_WAIT) => {
                    tracing::warn!(relay = %relay_for_turn.name, "a relay's send turn did not end in time");
                }
            }
            host.finish_turn(&relay_for_turn, guard);
        });
        Ok(receipt)
    }

    /// Ends the send in hand: no queued turn at the endpoint, no current send.
    fn finish_turn(&self, relay: &Relay, guard: tokio::sync::OwnedMutexGuard<()>) {
        self.inner.endpoint.state.set_turn(&relay.key, None);
        let mut state = lock(&relay.state);
        state.current = None;
        state.last_activity = Instant::now();
        drop(state);
        drop(guard);
    }

    /// The running relay for this send — the one of its represented sender in the target's
    /// permission class — with its send lock held, started if needed. A relay of the other
    /// class is left alone: it stays up while it awaits replies (the reaper's rule).
    async fn relay_for(
        &self,
        send: &NativeSend,
    ) -> Result<(Arc<Relay>, tokio::sync::OwnedMutexGuard<()>), RelayError> {
        let name = relay_name_for(
            &send.represented,
            &self.inner.config.machine,
            send.permission_mode.as_deref(),
        );
        loop {
            if self.inner.stopping.load(Ordering::SeqCst) {
                return Err(RelayError::ShuttingDown);
            }
            let existing = lock(&self.inner.relays).get(&name).cloned();
            let relay = match existing {
                Some(relay) => relay,
                None => {
                    let _starting = self.inner.starting.lock().await;
                    let started = lock(&self.inner.relays).get(&name).cloned();
                    match started {
                        Some(relay) => relay,
                        None => self.start_relay(&name, send).await?,
                    }
                }
            };
            let guard = Arc::clone(&relay.send_lock).lock_owned().await;
            if relay.exited.borrow().is_some() {
                self.forget(&relay);
                continue;
            }
            return Ok((relay, guard));
        }
    }

    async fn start_relay(&self, name: &str, send: &NativeSend) -> Result<Arc<Relay>, RelayError> {
        let config = &self.inner.config;
        let dir = self.inner.relays_dir.join(name);
        // A home deleted under the daemon (and `relays/` with it) is not made again here.
        if !self.inner.relays_dir.is_dir() {
            return Err(RelayError::io(
                "creating the relay directory",
                &self.inner.relays_dir,
                std::io::Error::new(std::io::ErrorKind::NotFound, "the home is gone"),
            ));
        }
        for sub in ["queue", "receipts", "inbox"] {
            let path = dir.join(sub);
            std::fs::create_dir_all(&path)
                .map_err(|e| RelayError::io("creating the relay directory", &path, e))?;
        }
        let pruned = crate::receipt::prune(&dir, crate::receipt::RETENTION);
        if pruned > 0 {
            tracing::debug!(relay = %name, pruned, "old relay files removed");
        }
        let settings_path = dir.join("hooks.json");
        write_whole(
            &settings_path,
            relay_settings(&config.cross_agent).to_string().as_bytes(),
        )?;
        // The key names the relay at the endpoint; the random part keeps any other local
        // process from speaking as it.
        let key = format!("xa-relay-{name}-{}", uuid::Uuid::new_v4().simple());
        let stderr_path = dir.join("stderr.log");
        let stderr = std::fs::File::create(&stderr_path)
            .map_err(|e| RelayError::io("creating", &stderr_path, e))?;

        let mut command = Command::new(&config.claude);
        command
            .arg("-p")
            .args(crate::CLAUDE_STREAM_JSON_ARGS)
            .args(["--name", name, "--settings"])
            .arg(&settings_path)
            // The account's and the user's MCP servers stay out: a relay calls no tools but one.
            .args([
                "--strict-mcp-config",
                "--mcp-config",
                r#"{"mcpServers":{}}"#,
            ])
            // Only the relay's own settings: the user's hooks (cross-agent's own among them,
            // when installed with `--hooks`) and permission rules must not run in a relay.
            .args(["--setting-sources", "local"])
            // A relay's turns are bookkeeping, not a conversation: none lands in the user's
            // Claude store.
            .arg("--no-session-persistence");
        // The relay runs in its class's mode (Claude holds a message across classes); within
        // a class the mode changes nothing for peers, so `prompting` relays keep the default.
        let class = permission_class(send.permission_mode.as_deref());
        let mode = (class == "bypass").then(|| "bypassPermissions".to_owned());
        if let Some(mode) = &mode {
            command.args(["--permission-mode", mode]);
        }
        command.current_dir(&dir).env_clear();
        if !config.claude_env.iter().any(|(k, _)| k == "PATH")
            && let Some(path) = std::env::var_os("PATH")
        {
            command.env("PATH", path);
        }
        for (key, value) in &config.claude_env {
            if !key.starts_with("ANTHROPIC_") && key != "CROSS_AGENT_HOME" {
                command.env(key, value);
            }
        }
        command
            .env("ANTHROPIC_BASE_URL", self.inner.endpoint.base_url())
            .env("ANTHROPIC_API_KEY", &key)
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            // The hooks' `cross-agent hook` must reach this daemon.
            .env("CROSS_AGENT_HOME", &config.home);
        if mode.is_some() && rustix::process::geteuid().is_root() {
            // Claude refuses bypass mode as root otherwise; the relay runs no model and its
            // gate passes one SendMessage, so the mode only sets its peer class.
            command.env("IS_SANDBOX", "1");
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| RelayError::Spawn {
            relay: name.to_owned(),
            program: config.claude.clone(),
            source,
        })?;
        let pid = child.id().unwrap_or(0);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (exited_tx, exited_rx) = watch::channel(None);
        let (turns_ended, _) = watch::channel(0);
        let relay = Arc::new(Relay {
            name: name.to_owned(),
            represented: send.represented.clone(),
            dir,
            key: key.clone(),
            mode: mode.clone(),
            class,
            pid,
            stdin: tokio::sync::Mutex::new(stdin),
            send_lock: Arc::new(tokio::sync::Mutex::new(())),
            state: Mutex::new(RelayState {
                current: None,
                last_activity: Instant::now(),
                awaiting: Vec::new(),
                socket: None,
                last_filed: None,
            }),
            exited: exited_rx,
            turns_ended,
        });
        self.inner.endpoint.state.register(&key, name);
        lock(&self.inner.relays).insert(name.to_owned(), Arc::clone(&relay));

        if let Some(stdout) = stdout {
            let weak = Arc::downgrade(&relay);
            tokio::spawn(read_stdout(stdout, weak));
        }
        let host = Arc::downgrade(&self.inner);
        let watched = Arc::clone(&relay);
        tokio::spawn(async move {
            let detail = match child.wait().await {
                Ok(status) => format!("the relay process {pid} exited ({status})"),
                Err(e) => format!("the relay process {pid} could not be waited on: {e}"),
            };
            watched.settle(RelayReceipt::RelayDied {
                detail: detail.clone(),
            });
            let _ = exited_tx.send(Some(detail.clone()));
            if let Some(inner) = host.upgrade() {
                RelayHost { inner }.forget(&watched);
            }
        });
        config.decisions.record(
            decision("relay_started", "started", name)
                .detail("relay_pid", pid)
                .detail("permission_mode", mode.unwrap_or_default())
                .detail("permission_class", class),
        );
        tracing::info!(relay = %name, pid, "relay started");
        Ok(relay)
    }

    /// Drops a relay from the map if it is still this one.
    fn forget(&self, relay: &Arc<Relay>) {
        let mut relays = lock(&self.inner.relays);
        if relays
            .get(&relay.name)
            .is_some_and(|r| Arc::ptr_eq(r, relay))
        {
            relays.remove(&relay.name);
        }
    }

    /// Stops a relay: stdin closed (Claude then exits 0), killed with its process group after a
    /// grace period.
    async fn stop_relay(&self, relay: &Arc<Relay>, why: &str) {
        self.forget(relay);
        relay.stdin.lock().await.take();
        let mut exited = relay.exited.clone();
        if tokio::time::timeout(STOP_GRACE, exited.wait_for(Option::is_some))
            .await
            .is_err()
            && let Some(pid) = i32::try_from(relay.pid)
                .ok()
                .filter(|pid| *pid > 1)
                .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            let _ = tokio::time::timeout(STOP_GRACE, exited.wait_for(Option::is_some)).await;
        }
        self.inner
            .config
            .decisions
            .record(decision("relay_stopped", "stopped", &relay.name).reason(why.to_owned()));
        tracing::info!(relay = %relay.name, why, "relay stopped");
    }

    /// Stops every relay (the daemon is stopping). Sends in hand get their relay's death as
    /// receipt; nothing is re-sent.
    pub async fn shutdown(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        if let Some(reaper) = lock(&self.inner.reaper).take() {
            reaper.abort();
        }
        let relays: Vec<Arc<Relay>> = lock(&self.inner.relays).values().cloned().collect();
        for relay in relays {
            self.stop_relay(&relay, "host shutting down").await;
        }
    }

    /// Test-only: the relay endpoint answers the next send turn of `represented`'s relay with
    /// this tool call instead of the queued `SendMessage` (a misbehaving endpoint, to prove the
    /// gate). The relay must be running.
    #[cfg(feature = "testing")]
    pub fn testing_answer_next_send_with(&self, represented: &str, tool: &str, input: Value) {
        self.testing_misbehave(represented, Misbehave::Tool(tool.to_owned(), input));
    }

    /// Test-only: the relay endpoint never answers the next send turn of `represented`'s relay
    /// (so a test can kill the relay mid-send).
    #[cfg(feature = "testing")]
    pub fn testing_hang_next_send(&self, represented: &str) {
        self.testing_misbehave(represented, Misbehave::Hang);
    }

    /// The misbehaviour goes to `represented`'s `prompting`-class relay ([`crate::relay_name`]).
    #[cfg(feature = "testing")]
    fn testing_misbehave(&self, represented: &str, how: Misbehave) {
        let name = crate::relay_name(represented, &self.inner.config.machine);
        if let Some(relay) = lock(&self.inner.relays).get(&name) {
            self.inner.endpoint.state.misbehave(&relay.key, how);
        }
    }

    /// Answers a hook call if it comes from a relay (its `cwd` is under `<home>/relays/`):
    /// `Some(answer)`; `None` for any other session's hook.
    pub async fn hook(&self, params: &HookParams) -> Option<HookResponse> {
        let cwd = Path::new(params.payload.get("cwd")?.as_str()?);
        let rest = cwd
            .strip_prefix(&self.inner.relays_dir_canonical)
            .or_else(|_| cwd.strip_prefix(&self.inner.relays_dir))
            .ok()?;
        let name = rest
            .components()
            .next()?
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let relay = lock(&self.inner.relays).get(&name).cloned();
        let payload = &params.payload;
        let output = match relay {
            Some(relay) => self.relay_hook(&relay, &params.event, payload),
            // A relay this host does not run (left from an earlier daemon): it may do nothing.
            None => match params.event.as_str() {
                "PreToolUse" => Some(gate_denial(
                    "this relay is not hosted by the running cross-agent daemon",
                )),
                "UserPromptSubmit" => {
                    self.file_orphan_inbound(&name, payload);
                    Some(inbound_block())
                }
                _ => None,
            },
        };
        Some(HookResponse { output })
    }

    fn relay_hook(&self, relay: &Arc<Relay>, event: &str, payload: &Value) -> Option<Value> {
        match event {
            "PreToolUse" => {
                let tool = payload
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let input = payload.get("tool_input").cloned().unwrap_or(Value::Null);
                let call = payload.get("tool_use_id").and_then(Value::as_str);
                let mut state = lock(&relay.state);
                if call.is_some()
                    && state
                        .current
                        .as_ref()
                        .is_some_and(|c| c.allowed_call.as_deref() == call)
                {
                    return Some(gate_allow());
                }
                let queued = state
                    .current
                    .as_ref()
                    .filter(|c| !c.allowed && c.receipt.borrow().is_none())
                    .map(|c| (c.send.to.clone(), c.send.message.clone()));
                let verdict = gate_decision(
                    queued
                        .as_ref()
                        .map(|(to, message)| (to.as_str(), message.as_str())),
                    tool,
                    &input,
                );
                match verdict {
                    None => {
                        if let Some(current) = state.current.as_mut() {
                            current.allowed = true;
                            current.allowed_call = call.map(str::to_owned);
                        }
                        Some(gate_allow())
                    }
                    Some(reason) => {
                        let in_hand = state.current.as_ref().map(|c| c.send.delivery_id.clone());
                        drop(state);
                        // Recorded before the receipt wakes the sender, so whoever reads the
                        // receipt finds the denial in the log.
                        let mut record = decision("relay_gate", "denied", &relay.name)
                            .guard("relay_gate")
                            .reason(reason.clone())
                            .detail("tool", tool.to_owned());
                        if let Some(delivery) = in_hand {
                            record = record.delivery(delivery);
                        }
                        self.inner.config.decisions.record(record);
                        if queued.is_some() {
                            relay.settle(RelayReceipt::Denied {
                                reason: reason.clone(),
                            });
                        }
                        Some(gate_denial(&reason))
                    }
                }
            }
            "PostToolUse" => {
                let tool = payload
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let allowed = lock(&relay.state)
                    .current
                    .as_ref()
                    .is_some_and(|c| c.allowed);
                if tool == "SendMessage" && allowed {
                    let response = payload.get("tool_response").cloned().unwrap_or(Value::Null);
                    relay.settle(RelayReceipt::from_claude(&response));
                }
                None
            }
            "UserPromptSubmit" => {
                let prompt = payload.get("prompt").and_then(Value::as_str).unwrap_or("");
                let ours = lock(&relay.state)
                    .current
                    .as_ref()
                    .is_some_and(|c| c.prompt == prompt);
                if ours {
                    return None;
                }
                // The same prompt offered twice (a hook installed twice) is filed once.
                let prompt_id = payload.get("prompt_id").and_then(Value::as_str);
                let seen = {
                    let mut state = lock(&relay.state);
                    let seen = prompt_id.is_some() && state.last_filed.as_deref() == prompt_id;
                    state.last_filed = prompt_id.map(str::to_owned);
                    seen
                };
                if !seen {
                    self.file_inbound(relay, prompt);
                }
                Some(inbound_block())
            }
            "Stop" => {
                relay.settle(RelayReceipt::NoSend);
                relay.turns_ended.send_modify(|n| *n += 1);
                None
            }
            _ => None,
        }
    }

    fn file_inbound(&self, relay: &Relay, prompt: &str) {
        let kind = parse_inbound_text(prompt).unwrap_or(InboundKind::Other);
        let received_at_ms = now_ms();
        {
            let mut state = lock(&relay.state);
            state.last_activity = Instant::now();
            settle_awaiting(&mut state.awaiting, &kind);
        }
        self.write_inbox(&relay.dir, prompt, received_at_ms);
        let _ = self.inner.inbound_tx.send(InboundMail {
            relay: relay.name.clone(),
            represented: relay.represented.clone(),
            text: prompt.to_owned(),
            kind,
            received_at_ms,
        });
    }

    fn file_orphan_inbound(&self, name: &str, payload: &Value) {
        let prompt = payload.get("prompt").and_then(Value::as_str).unwrap_or("");
        self.write_inbox(&self.inner.relays_dir.join(name), prompt, now_ms());
    }

    fn write_inbox(&self, dir: &Path, prompt: &str, at_ms: i64) {
        let seq = self.inner.inbound_seq.fetch_add(1, Ordering::Relaxed);
        let path = dir.join("inbox").join(format!("{at_ms}-{seq}.txt"));
        if let Err(error) = write_whole(&path, prompt.as_bytes()) {
            tracing::warn!(%error, "a relay's inbound mail could not be written to its inbox");
        }
    }
}

impl Relay {
    /// Gives the send in hand this receipt unless it has one: written to its file first (the
    /// first receipt wins), then signalled to the waiting sender.
    fn settle(&self, receipt: RelayReceipt) {
        let state = lock(&self.state);
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

/// Reads a relay's stream-json stdout: its `system/init` names its messaging socket.
async fn read_stdout(stdout: tokio::process::ChildStdout, relay: Weak<Relay>) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if value.get("type").and_then(Value::as_str) == Some("system")
            && value.get("subtype").and_then(Value::as_str) == Some("init")
            && let Some(socket) = value.get("messaging_socket_path").and_then(Value::as_str)
            && let Some(relay) = relay.upgrade()
        {
            lock(&relay.state).socket = Some(format!("uds:{socket}"));
        }
    }
}

/// Stops relays with nothing in hand, no reply awaited (within `reply_wait`) and no activity
/// for `idle_stop`.
async fn reap(host: Weak<Inner>, tick: Duration) {
    loop {
        tokio::time::sleep(tick).await;
        let Some(inner) = host.upgrade() else { return };
        let host = RelayHost { inner };
        let config = &host.inner.config;
        let relays: Vec<Arc<Relay>> = lock(&host.inner.relays).values().cloned().collect();
        for relay in relays {
            let idle = {
                let mut state = lock(&relay.state);
                let reply_wait = config.reply_wait;
                state.awaiting.retain(|a| a.sent_at.elapsed() < reply_wait);
                state.current.is_none()
                    && state.awaiting.is_empty()
                    && state.last_activity.elapsed() >= config.idle_stop
            };
            if idle && relay.send_lock.try_lock().is_ok() {
                host.stop_relay(&relay, "idle").await;
            }
        }
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
