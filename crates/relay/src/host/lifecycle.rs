//! A relay's life: starting one (its directory, settings, `claude -p` in stream-json mode),
//! reading its stdout for its messaging socket, stopping it (one or all), and the reaper that
//! stops idle ones. With the `testing` feature, the endpoint misbehaviours a test asks for.

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;
use tokio::sync::watch;

#[cfg(feature = "testing")]
use crate::endpoint::Misbehave;
use crate::error::RelayError;
use crate::permission_class;
use crate::receipt::{RelayReceipt, write_whole};

use super::{
    Inner, NativeSend, Relay, RelayHost, RelayState, STOP_GRACE, decision, relay_settings,
};

impl RelayHost {
    pub(super) async fn start_relay(
        &self,
        name: &str,
        send: &NativeSend,
    ) -> Result<Arc<Relay>, RelayError> {
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
        self.inner
            .relays
            .lock()
            .insert(name.to_owned(), Arc::clone(&relay));

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
    pub(super) fn forget(&self, relay: &Arc<Relay>) {
        let mut relays = self.inner.relays.lock();
        if relays
            .get(&relay.name)
            .is_some_and(|r| Arc::ptr_eq(r, relay))
        {
            relays.remove(&relay.name);
        }
    }

    /// Stops a relay: stdin closed (Claude then exits 0), killed with its process group after a
    /// grace period.
    pub(super) async fn stop_relay(&self, relay: &Arc<Relay>, why: &str) {
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
        if let Some(reaper) = self.inner.reaper.lock().take() {
            reaper.abort();
        }
        let relays: Vec<Arc<Relay>> = self.inner.relays.lock().values().cloned().collect();
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
        if let Some(relay) = self.inner.relays.lock().get(&name) {
            self.inner.endpoint.state.misbehave(&relay.key, how);
        }
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
            relay.state.lock().socket = Some(format!("uds:{socket}"));
        }
    }
}

/// Stops relays with nothing in hand, no reply awaited (within `reply_wait`) and no activity
/// for `idle_stop`.
pub(super) async fn reap(host: Weak<Inner>, tick: Duration) {
    loop {
        tokio::time::sleep(tick).await;
        let Some(inner) = host.upgrade() else { return };
        let host = RelayHost { inner };
        let config = &host.inner.config;
        let relays: Vec<Arc<Relay>> = host.inner.relays.lock().values().cloned().collect();
        for relay in relays {
            let idle = {
                let mut state = relay.state.lock();
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
