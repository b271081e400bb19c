//! A small MCP server (stdio, newline-delimited JSON-RPC) that the real agents call in tests.
//!
//! It offers two tools that both answer `echoed:<text>`: `echo`, marked read-only, and `record`,
//! which is not (so an agent asks before calling it — Codex approves read-only tools itself),
//! and appends one JSON line per call to the
//! file named by `MCP_PROBE_LOG`: the tool, its arguments, the call's `_meta`, and the agent
//! variables it was started with (`CLAUDE_CODE_SESSION_ID`, …) — so a test can see exactly what
//! reached an MCP server and who the caller said it was. Hand-rolled rather than built on an SDK
//! so the probe depends on nothing the product's own MCP server uses.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

/// Environment variables an agent hands to its MCP servers that identify the caller.
const REPORTED_ENV_PREFIXES: [&str; 4] = ["CLAUDE_CODE_", "CODEX_", "GROK_", "CROSS_AGENT_"];

fn main() {
    let log_path = std::env::var_os("MCP_PROBE_LOG");
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            eprintln!("mcp-probe: ignoring a line that is not JSON: {line}");
            continue;
        };
        if let Some(log_path) = &log_path {
            append(log_path, &json!({ "received": request }));
        }
        let Some(id) = request.get("id").cloned() else {
            continue; // a notification: nothing to answer
        };
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        let reply = match method {
            "initialize" => json!({ "jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": params.get("protocolVersion").cloned()
                    .unwrap_or_else(|| json!("2025-06-18")),
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "mcp-probe", "version": "1.0.0" },
            }}),
            "ping" => json!({ "jsonrpc": "2.0", "id": id, "result": {} }),
            "tools/list" => json!({ "jsonrpc": "2.0", "id": id, "result": { "tools": [{
                "name": "echo",
                "description": "Echo the given text back.",
                "inputSchema": {
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"],
                },
                "annotations": { "readOnlyHint": true },
            }, {
                "name": "record",
                "description": "Record the given text (not read-only: needs an approval).",
                "inputSchema": {
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"],
                },
                "annotations": { "readOnlyHint": false, "destructiveHint": false },
            }]}}),
            "tools/call" => {
                let text = params
                    .pointer("/arguments/text")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Some(log_path) = &log_path {
                    append(
                        log_path,
                        &json!({
                            "call": params.get("name"),
                            "arguments": params.get("arguments"),
                            "meta": params.get("_meta"),
                            "env": caller_env(),
                        }),
                    );
                }
                json!({ "jsonrpc": "2.0", "id": id, "result": {
                    "content": [{ "type": "text", "text": format!("echoed:{text}") }],
                    "isError": false,
                }})
            }
            other => json!({ "jsonrpc": "2.0", "id": id, "error": {
                "code": -32601, "message": format!("method not found: {other}"),
            }}),
        };
        if writeln!(stdout, "{reply}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}

fn caller_env() -> Value {
    std::env::vars()
        .filter(|(key, _)| {
            REPORTED_ENV_PREFIXES
                .iter()
                .any(|prefix| key.starts_with(prefix))
        })
        .map(|(key, value)| (key, Value::String(value)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn append(path: &std::ffi::OsStr, record: &Value) {
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| writeln!(file, "{record}"));
    if let Err(error) = written {
        eprintln!(
            "mcp-probe: cannot append to {}: {error}",
            path.to_string_lossy()
        );
    }
}
