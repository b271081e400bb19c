//! Plays an editor extension over a panel process's stdio: writes lines to its stdin as the VS
//! Code extension does and records every byte both ways, so a test can compare what each end
//! sent and received. The Claude side uses the SDK's own invocation (`docs/observed/claude.md` §1.1):
//! `--output-format stream-json --verbose --input-format stream-json
//! --permission-prompt-tool=stdio --await-initialize`, with the `initialize` control request as
//! the first line.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use parking_lot::{Condvar, Mutex};
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

/// How a host spells a stream-json line: the same JSON, written as different hosts write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// Compact, `type` first: the CLI, and the TypeScript SDK's prompts and answers.
    TypeFirst,
    /// `type` first, with a space after every `:` and `,` (`{"type": "user", "message": …}`), as
    /// Python's `json.dumps` writes it (the Python SDK).
    Spaced,
    /// Compact, with the line's last other key moved before `type`
    /// (`{"session_id":"","type":"user",…}`, `{"request_id":"i","type":"control_request",…}`):
    /// a host that builds the object in its own order (the TypeScript SDK writes its control
    /// requests `request_id` first, and a prompt's keys in the order the host gave them).
    OtherKeyFirst,
}

impl Spelling {
    pub const ALL: [Spelling; 3] = [
        Spelling::TypeFirst,
        Spelling::Spaced,
        Spelling::OtherKeyFirst,
    ];
}

/// Python's `json.dumps` separators: `", "` and `": "`, on one line.
struct SpacedFormatter;

impl serde_json::ser::Formatter for SpacedFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.begin_array_value(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

fn encode(value: &Value, spelling: Spelling) -> String {
    match spelling {
        Spelling::Spaced => {
            let mut bytes = Vec::new();
            let mut serializer =
                serde_json::Serializer::with_formatter(&mut bytes, SpacedFormatter);
            // Writing a `Value` into a Vec cannot fail.
            let _ = serde::Serialize::serialize(value, &mut serializer);
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Spelling::TypeFirst | Spelling::OtherKeyFirst => value.to_string(),
    }
}

/// A stream-json line of type `kind` with `fields` (in their order) spelt as `spelling` says.
pub fn spelt_line(kind: &str, fields: &[(&str, Value)], spelling: Spelling) -> String {
    let kind = ("type", Value::from(kind));
    let mut ordered: Vec<&(&str, Value)> = Vec::with_capacity(fields.len() + 1);
    match (spelling, fields.split_last()) {
        (Spelling::OtherKeyFirst, Some((last, rest))) => {
            ordered.push(last);
            ordered.push(&kind);
            ordered.extend(rest);
        }
        _ => {
            ordered.push(&kind);
            ordered.extend(fields);
        }
    }
    let (comma, colon) = match spelling {
        Spelling::Spaced => (", ", ": "),
        Spelling::TypeFirst | Spelling::OtherKeyFirst => (",", ":"),
    };
    let pairs: Vec<String> = ordered
        .iter()
        .map(|(key, value)| format!("{}{colon}{}", Value::from(*key), encode(value, spelling)))
        .collect();
    format!("{{{}}}", pairs.join(comma))
}

/// The `initialize` control request the SDK writes first.
pub fn claude_initialize(request_id: &str) -> String {
    spelt_line(
        "control_request",
        &[
            ("request", json!({"subtype": "initialize"})),
            ("request_id", Value::from(request_id)),
        ],
        Spelling::TypeFirst,
    )
}

/// A user message as the extension writes it.
pub fn claude_user(text: &str) -> String {
    claude_user_spelt(text, Spelling::TypeFirst)
}

/// A user message spelt as `spelling` says (`OtherKeyFirst`: `session_id` first).
pub fn claude_user_spelt(text: &str, spelling: Spelling) -> String {
    spelt_line(
        "user",
        &[
            ("message", json!({"role": "user", "content": text})),
            ("parent_tool_use_id", Value::Null),
            ("session_id", Value::from("")),
        ],
        spelling,
    )
}

/// The extension's answer to a `can_use_tool` request.
pub fn claude_permission(request_id: &str, allow: bool, input: &Value) -> String {
    claude_permission_spelt(request_id, allow, input, Spelling::TypeFirst)
}

/// The answer to a `can_use_tool` request spelt as `spelling` says (`OtherKeyFirst`:
/// `response` first).
pub fn claude_permission_spelt(
    request_id: &str,
    allow: bool,
    input: &Value,
    spelling: Spelling,
) -> String {
    let body = if allow {
        json!({"behavior": "allow", "updatedInput": input})
    } else {
        json!({"behavior": "deny", "message": "denied in the panel"})
    };
    spelt_line(
        "control_response",
        &[(
            "response",
            json!({"subtype": "success", "request_id": request_id, "response": body}),
        )],
        spelling,
    )
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
                let mut state = lock.lock();
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
        lock.lock().bytes.clone()
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
        let mut state = lock.lock();
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
            changed.wait_for(&mut state, left);
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
                let mut state = lock.lock();
                while !state.closed && Instant::now() < deadline {
                    changed.wait_for(&mut state, Duration::from_millis(50));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_is_the_same_json_written_another_way() {
        for spelling in Spelling::ALL {
            let user: Value = serde_json::from_str(&claude_user_spelt("hi", spelling)).unwrap();
            assert_eq!(
                user,
                json!({"type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": null, "session_id": ""})
            );
            let answer: Value =
                serde_json::from_str(&claude_permission_spelt("r1", false, &json!({}), spelling))
                    .unwrap();
            assert_eq!(answer["response"]["request_id"], "r1");
        }
        assert!(
            claude_user_spelt("hi", Spelling::Spaced)
                .starts_with(r#"{"type": "user", "message": {"content": "hi", "role": "user"}, "#)
        );
        assert!(
            claude_user_spelt("hi", Spelling::OtherKeyFirst)
                .starts_with(r#"{"session_id":"","type":"user","message":"#)
        );
        assert!(
            claude_permission_spelt("r1", true, &json!([1, 2]), Spelling::OtherKeyFirst)
                .starts_with(r#"{"response":{"#)
        );
        assert!(
            claude_permission_spelt("r1", true, &json!([1, 2]), Spelling::Spaced)
                .contains(r#""updatedInput": [1, 2]"#)
        );
    }

    #[test]
    fn lines_name_their_type_first_as_the_sdk_writes_them() {
        let user = claude_user("hi \"there\"");
        assert!(user.starts_with(r#"{"type":"user","message":"#), "{user}");
        let parsed: Value = serde_json::from_str(&user).unwrap();
        assert_eq!(parsed["message"]["content"], "hi \"there\"");
        assert!(claude_initialize("i").starts_with(r#"{"type":"control_request","#));
        let permission = claude_permission("r1", true, &json!({"command": "ls"}));
        assert!(permission.starts_with(r#"{"type":"control_response","#));
        let parsed: Value = serde_json::from_str(&permission).unwrap();
        assert_eq!(parsed["response"]["response"]["behavior"], "allow");
    }
}
