//! A minimal MCP client over stdio (newline-delimited JSON-RPC) for tests that must drive the
//! product's own `cross-agent mcp` the way an agent host does: its environment set by the test,
//! and each `tools/call` carrying the `_meta` the test chooses (an agent host's caller metadata,
//! say). Hand-rolled, like `mcp-probe`, so it shares nothing with the server under test.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// How long one answer may take on a loaded machine.
const WAIT: Duration = Duration::from_secs(120);

/// A running MCP server and the client side of its stdio.
pub struct McpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl McpClient {
    /// Starts `command` (`program` plus its arguments) with exactly `env`, in `cwd`, and does
    /// the `initialize` handshake as `client_name`.
    pub fn start(
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        cwd: &Path,
        client_name: &str,
    ) -> Result<McpClient> {
        let mut child = Command::new(program)
            .args(args)
            .env_clear()
            .envs(env.iter().copied())
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = McpClient {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": client_name, "version": "1.0"},
            }),
        )?;
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    /// The server's pid (the caller's `pid` as the daemon sees it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Calls `tool` with `arguments` and, when given, `_meta`; the `result` (a tool's refusal is
    /// a result with `isError`), or an error for a JSON-RPC error.
    pub fn call_tool(
        &mut self,
        tool: &str,
        arguments: Value,
        meta: Option<Value>,
    ) -> Result<Value> {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        let response = self.request("tools/call", params)?;
        match response.get("result") {
            Some(result) => Ok(result.clone()),
            None => bail!("tools/call {tool} failed: {response}"),
        }
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin closed")?;
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        Ok(())
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let line = match self.lines.recv_timeout(WAIT) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => bail!("no answer to {method} within {WAIT:?}"),
                Err(RecvTimeoutError::Disconnected) => bail!("the server closed its stdout"),
            };
            let message: Value = serde_json::from_str(&line)
                .with_context(|| format!("a line that is not JSON: {line}"))?;
            if message.get("id") == Some(&json!(id)) {
                return Ok(message);
            }
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
