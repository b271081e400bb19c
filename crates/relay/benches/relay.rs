//! `cargo bench -p cross-agent-relay`: the native door's figures against real Claude Code on
//! both sides (a live target session and the relay, one temporary HOME), each printed beside a
//! floor or peer measured in the same run on this machine:
//! - queue → Claude's receipt for one native send (warm relay), median and p95 — beside the
//!   route it replaces for a live session, one headless `claude -p` turn against the same
//!   scripted model, and beside one `cross-agent hook` round trip (a send runs four hooks);
//! - relay start-up: the first send (relay started on demand) minus the warm median;
//! - relay idle RSS — beside the idle target session's RSS (the same program, with a model);
//! - deliveries per minute through one relay (sends queued all at once, one turn each).
//!
//! Needs `CROSS_AGENT_TEST_BIN` (the `cross-agent` binary the hooks run), as the tests do.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use cross_agent_relay::{NativeSend, RelayReceipt};
use cross_agent_testkit::endpoint::Rule;
use support::{LONG_IDLE, Rig, bridge_send, run_hook};

const WARM_SENDS: usize = 15;
/// Claude rate-limits messages to one session ("Too many messages to this session just now:
/// 34 were sent recently"), so the burst goes round-robin to three targets.
const BURST: usize = 30;

fn send(to: &str, n: usize) -> NativeSend {
    bridge_send(
        to,
        &format!("req_1795992544448_{n:06}"),
        "bench message",
        &format!("d-{n}"),
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}

async fn bench() {
    let rig = Rig::start(LONG_IDLE).await.unwrap();
    // The target reads every message but does not answer: the figures are the sender's.
    rig.target_endpoint.clear_rules();
    rig.target_endpoint
        .push(Rule::on_any_user_text().reply_text("noted"));
    let (target, to) = rig.live_target("bravo").unwrap();
    let (_charlie, to_charlie) = rig.live_target("charlie").unwrap();
    let (_delta, to_delta) = rig.live_target("delta").unwrap();
    let (_echo, to_echo) = rig.live_target("echo").unwrap();
    let burst_targets = [to_charlie, to_delta, to_echo];

    // Cold: the relay starts on demand.
    let started = Instant::now();
    rig.send_expecting_sent(send(&to, 0)).await;
    let cold = started.elapsed();

    let mut warm = Vec::new();
    for n in 1..=WARM_SENDS {
        // One send at a time, each after the previous turn ended, as a single caller sees it.
        let started = Instant::now();
        rig.send_expecting_sent(send(&to, n)).await;
        warm.push(started.elapsed());
    }
    warm.sort();
    let median = percentile(&warm, 0.5);
    let p95 = percentile(&warm, 0.95);

    // Throughput: a burst queued at once through the one relay.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..BURST {
        let host = rig.host.clone();
        let to = burst_targets[n % burst_targets.len()].clone();
        tasks.push(tokio::spawn(
            async move { host.send(send(&to, 1000 + n)).await },
        ));
    }
    for task in tasks {
        let receipt = task.await.unwrap().unwrap();
        assert!(matches!(receipt, RelayReceipt::Sent { .. }), "{receipt:?}");
    }
    let burst = started.elapsed();
    let per_minute = BURST as f64 / burst.as_secs_f64() * 60.0;

    // Idle RSS, once both have settled.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let relay = rig.host.relays().remove(0);
    let relay_rss = rss_kib(relay.pid);
    let target_rss = rss_kib(target.pid());

    // Peer: one headless `claude -p` turn (the CLI route a live session would otherwise get).
    let project = rig.home.project("peer").unwrap();
    let mut peer = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        tokio::task::block_in_place(|| {
            rig.claude
                .turn(&project, "peer turn")
                .run()
                .unwrap()
                .expect_success()
                .unwrap()
        });
        peer.push(started.elapsed());
    }
    peer.sort();

    // Floor: one `cross-agent hook` round trip through the daemon door.
    let mut hooks = Vec::new();
    let payload = serde_json::json!({"cwd": relay.dir, "hook_event_name": "Stop"}).to_string();
    for _ in 0..20 {
        let started = Instant::now();
        run_hook(&rig.xa_home, "Notification", &payload).unwrap();
        hooks.push(started.elapsed());
    }
    hooks.sort();

    println!("relay benchmark (real Claude Code both sides, scripted target model, this machine)");
    println!(
        "  queue -> Claude's receipt, warm relay ({WARM_SENDS} sends): median {:.0} ms, p95 {:.0} ms",
        ms(median),
        ms(p95)
    );
    println!(
        "    peer: one headless `claude -p` turn (5 runs): median {:.0} ms",
        ms(percentile(&peer, 0.5))
    );
    println!(
        "    floor: one `cross-agent hook` round trip (20 runs): median {:.1} ms (a send runs 4 hooks)",
        ms(percentile(&hooks, 0.5))
    );
    println!(
        "  relay start-up: first send {:.0} ms - warm median {:.0} ms = {:.0} ms",
        ms(cold),
        ms(median),
        ms(cold.saturating_sub(median))
    );
    println!(
        "  idle RSS: relay {:.1} MiB; peer: idle target session {:.1} MiB",
        relay_rss as f64 / 1024.0,
        target_rss as f64 / 1024.0
    );
    println!(
        "  throughput through one relay: {BURST} sends queued at once (3 targets) in {:.1} s = {per_minute:.0} deliveries/min",
        burst.as_secs_f64()
    );
    rig.host.shutdown().await;
}
