//! Plays an editor extension over a panel process's stdio: writes lines to its stdin as the VS
//! Code extension does and records every byte both ways, so a test can compare what each end
//! sent and received. The Claude side uses the SDK's own invocation (`observed/claude.md` §1.1):
//! `--output-format stream-json --verbose --input-format stream-json
//! --permission-prompt-tool=stdio --await-initialize`, with the `initialize` control request as
//! the first line.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// The arguments the Claude Agent SDK (and so the VS Code extension) passes for a panel.
pub const CLAUDE_SDK_ARGS: &[&str] = &[
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
    "--permission-prompt-tool=stdio",
    "--setting-sources=user,project,local",
    "--await-initialize",
];

/// The arguments of a long-lived headless Claude session that its host (an SDK host, a terminal)
/// keeps open on stdin: user turns in and events out, one stream-json line each.
pub const CLAUDE_LIVE_ARGS: &[&str] = &[
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

/// The `initialize` control request the SDK writes first.
pub fn claude_initialize(request_id: &str) -> String {
    json!({"type": "control_request", "request_id": request_id, "request": {"subtype": "initialize"}})
        .to_string()
}

/// A user message as the extension writes it.
pub fn claude_user(text: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": null, "session_id": ""})
        .to_string()
}

/// The extension's answer to a `can_use_tool` request.
pub fn claude_permission(request_id: &str, allow: bool, input: &Value) -> String {
    let body = if allow {
        json!({"behavior": "allow", "updatedInput": input})
    } else {
        json!({"behavior": "deny", "message": "denied in the panel"})
    };
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": request_id, "response": body}})
        .to_string()
}

#[derive(Debug, Default)]
struct Received {
    bytes: Vec<u8>,
    closed: bool,
}

/// A running panel process with the test as its extension.
#[derive(Debug)]
pub struct PanelDriver {
    child: Child,
    stdin: Option<ChildStdin>,
    sent: Vec<u8>,
    received: Arc<(Mutex<Received>, Condvar)>,
    /// How many received lines the `next_*` waits have consumed.
    cursor: usize,
}

impl PanelDriver {
    /// Starts `command` with piped stdin and stdout (stderr inherited), in a process group of
    /// its own, so whatever it started (the shim, the real agent) is ended with it.
    pub fn start(mut command: Command) -> Result<PanelDriver> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .process_group(0);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {:?}", command.get_program()))?;
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().context("no stdout pipe")?;
        let received = Arc::new((Mutex::new(Received::default()), Condvar::new()));
        let sink = received.clone();
        thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                let n = stdout.read(&mut chunk).unwrap_or(0);
                let (lock, changed) = &*sink;
                let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
                if n == 0 {
                    state.closed = true;
                    changed.notify_all();
                    return;
                }
                state.bytes.extend_from_slice(&chunk[..n]);
                changed.notify_all();
            }
        });
        Ok(PanelDriver {
            child,
            stdin,
            sent: Vec::new(),
            received,
            cursor: 0,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one line (a newline is added) and records it.
    pub fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin is closed")?;
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        stdin
            .write_all(&bytes)
            .context("writing to the panel process")?;
        stdin.flush()?;
        self.sent.extend_from_slice(&bytes);
        Ok(())
    }

    /// Writes bytes as they are (no newline added) and records them.
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin is closed")?;
        stdin
            .write_all(bytes)
            .context("writing to the panel process")?;
        stdin.flush()?;
        self.sent.extend_from_slice(bytes);
        Ok(())
    }

    /// Closes stdin, as the extension does when the panel closes.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Every byte written so far.
    pub fn sent(&self) -> &[u8] {
        &self.sent
    }

    /// Every byte received so far.
    pub fn received(&self) -> Vec<u8> {
        let (lock, _) = &*self.received;
        lock.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes
            .clone()
    }

    /// The complete lines received so far, parsed where they are JSON.
    pub fn lines(&self) -> Vec<Value> {
        complete_lines(&self.received())
            .iter()
            .map(|line| serde_json::from_slice(line).unwrap_or(Value::Null))
            .collect()
    }

    /// Waits for the next received line (after those already consumed) that `wanted` accepts.
    pub fn next_line(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        let (lock, changed) = &*self.received;
        let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let lines = complete_lines(&state.bytes);
            while self.cursor < lines.len() {
                let value: Value =
                    serde_json::from_slice(lines[self.cursor]).unwrap_or(Value::Null);
                self.cursor += 1;
                if wanted(&value) {
                    return Ok(value);
                }
            }
            if state.closed {
                bail!(
                    "the panel process closed its stdout before the line came; it sent:\n{}",
                    String::from_utf8_lossy(&state.bytes)
                );
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "no such line within {timeout:?}; received:\n{}",
                    String::from_utf8_lossy(&state.bytes)
                );
            }
            state = changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Waits for the next line of this `type`.
    pub fn next_of_type(&mut self, kind: &str, timeout: Duration) -> Result<Value> {
        self.next_line(timeout, |line| line["type"] == kind)
    }

    /// Waits for the process to exit (killing it after `timeout`), and for its stdout to close.
    pub fn wait(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                let (lock, changed) = &*self.received;
                let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
                while !state.closed && Instant::now() < deadline {
                    state = changed
                        .wait_timeout(state, Duration::from_millis(50))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                return Ok(status);
            }
            if Instant::now() >= deadline {
                crate::agents::kill_group(self.child.id());
                bail!("the panel process did not exit within {timeout:?}");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for PanelDriver {
    fn drop(&mut self) {
        // The whole group, even when its leader has exited: a test that killed the shim (or a
        // window process standing for the extension host) may have left its children running.
        crate::agents::kill_group(self.child.id());
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.wait();
        }
    }
}

/// The newline-terminated lines of `bytes` (a partial last line is left out).
fn complete_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    lines.pop();
    lines
}
