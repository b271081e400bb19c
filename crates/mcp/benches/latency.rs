//! Warm `bridge_status` latency through `cross-agent mcp` (a real process spoken to over its
//! stdio, as an agent does), side by side with the same call made straight on the daemon
//! socket, so the MCP layer's own cost shows as the difference. Prints figures; asserts none.
//!
//! `cargo bench -p cross-agent-mcp --bench latency` (builds `cross-agent` in the same profile);
//! `CROSS_AGENT_BENCH_BIN` points at a ready binary instead, `CROSS_AGENT_BENCH_CALLS` sets the
//! number of calls (default 300). The daemon is autostarted in a scratch home and stopped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_ipc::{ConnectOptions, connect_or_start};
use cross_agent_protocol::bridge::{BridgeStatusParams, CallerContext};
use cross_agent_protocol::rpc::ClientKind;
use serde_json::{Value, json};

fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("CROSS_AGENT_BENCH_BIN") {
        return bin.into();
    }
    let release = !cfg!(debug_assertions);
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.args([
        "build",
        "-p",
        "cross-agent",
        "--bin",
        "cross-agent",
        "--message-format=json-render-diagnostics",
    ]);
    if release {
        command.arg("--release");
    }
    let output = command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "cross-agent")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap()
}

fn summary(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    let median = at(0.5);
    println!(
        "{name:<38} n={:<4} median {:>8.3} ms  p95 {:>8.3} ms  min {:>8.3} ms",
        samples.len(),
        median.as_secs_f64() * 1e3,
        at(0.95).as_secs_f64() * 1e3,
        samples[0].as_secs_f64() * 1e3
    );
    median
}

fn main() {
    let calls: usize = std::env::var("CROSS_AGENT_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let bin = binary();
    let scratch = tempfile::Builder::new()
        .prefix("xa-bench")
        .tempdir()
        .unwrap();
    let home_dir = scratch.path().join("home");
    let xa_home = scratch.path().join("xa");
    std::fs::create_dir_all(&home_dir).unwrap();

    let mut child = Command::new(&bin)
        .arg("mcp")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home_dir)
        .env("CROSS_AGENT_HOME", &xa_home)
        .current_dir(&home_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut request = |id: u64, method: &str, params: Value| -> Value {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        loop {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == json!(id) {
                return answer;
            }
        }
    };
    request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    );
    let call = json!({"name": "bridge_status", "arguments": {}});
    // Warm-up: starts the daemon, opens the server's connection, fills caches.
    for id in 1..=20 {
        let answer = request(id, "tools/call", call.clone());
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    }
    let mut through_mcp = Vec::with_capacity(calls);
    for id in 0..calls as u64 {
        let started = Instant::now();
        request(1000 + id, "tools/call", call.clone());
        through_mcp.push(started.elapsed());
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let direct = runtime.block_on(async {
        let home = Home::at(&xa_home).unwrap();
        let connection = connect_or_start(&home, &ConnectOptions::new(ClientKind::Other))
            .await
            .unwrap();
        let params = BridgeStatusParams {
            cwd: Some(home_dir.to_string_lossy().into_owned()),
            scope: None,
            delivery_id: None,
            caller: CallerContext::default(),
        };
        for _ in 0..20 {
            connection.client.call(params.clone()).await.unwrap();
        }
        let mut samples = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = Instant::now();
            connection.client.call(params.clone()).await.unwrap();
            samples.push(started.elapsed());
        }
        samples
    });

    println!(
        "bridge_status, warm, {} build",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    let mcp = summary("through cross-agent mcp (stdio)", through_mcp);
    let raw = summary("straight on the daemon socket", direct);
    println!(
        "MCP layer overhead (median difference): {:.3} ms; ratio {:.2}x",
        (mcp.as_secs_f64() - raw.as_secs_f64()) * 1e3,
        mcp.as_secs_f64() / raw.as_secs_f64()
    );

    stop(child);
    let _ = Command::new(&bin)
        .args(["daemon", "stop"])
        .env("CROSS_AGENT_HOME", &xa_home)
        .stdout(Stdio::null())
        .status();
}

fn stop(mut child: std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}
