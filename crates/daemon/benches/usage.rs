//! `cross-agent usage --since 7d --by model` through a real daemon (`cargo bench -p
//! cross-agent-daemon --bench usage`), each figure printed beside its floor, with `ccusage` timed
//! on the same store in the same run (issue 29). No assertions: targets are read off the output.
//!
//! The store is the session benchmark's synthetic one (10,000 Claude + 10,000 Codex + 2,000
//! Grok sessions, about 1 GB; the same folder as `cargo bench --bench index`), whose Claude
//! replies carry `message.usage` and whose Codex turns carry `token_count` events. Measured:
//!
//! - the daemon's first listing (`index_sessions`: the session index's cold walk, which hands
//!   every transcript it reads to the usage index), then its first `usage_report` (what is left:
//!   the sub-agent transcripts, the accounting): a cold first run beside the listing's floor, and
//!   the every-byte floor (every usage file read once, nothing parsed, on the index's readers);
//! - warm `usage_report` (nothing changed: no file opened), target ≤ 50 ms, beside a bare
//!   `status` round trip (the floor of any daemon call);
//! - a turn appended to the largest Claude transcript: the next `usage_report` (it reads the
//!   appended bytes only);
//! - the listing with costs (`index_listing`, issue 29): a fresh daemon's first listing without
//!   costs (`index_sessions`) beside another's first listing with them (the usage index's first
//!   read beside the session index's cold build), then the warm listing with a reply appended
//!   to a Claude transcript before each (the usage index reads what the session index's walk
//!   found changed, no walk of its own) and with nothing changed, each beside floors taken in
//!   turn with it (the same bytes through a new Unix socket, a `status` round trip; the same
//!   append, then the session index's walk alone) and its ratio to them;
//! - the CLI's direct read without a daemon (every file, whole), in process;
//! - `ccusage claude daily` and `ccusage codex daily` (`--since`, `--offline`, `--json`) on the
//!   same files, once each, when the pinned `ccusage` is installed (`scripts/install-agents`).
//!
//! `CROSS_AGENT_BENCH_SESSIONS`, `CROSS_AGENT_BENCH_DIR`, `CROSS_AGENT_BENCH_RUNS` as the index
//! bench; 30,30,6,10 sessions when run as a test (`cargo test -p cross-agent-daemon --bench
//! usage`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use cross_agent_daemon::entry::{Mode, run_process};
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::oneshot::OneShot;
use cross_agent_protocol::bridge::{
    Agent, CallerContext, IndexListingParams, IndexResolve, IndexSessionsParams, Scope,
};
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams, StatusParams};
use cross_agent_protocol::timestamp::UnixMillis;
use cross_agent_protocol::usage::{UsageGroupBy, UsageReportParams};
use cross_agent_testkit::synthetic_stores::{SyntheticSpec, ensure};

// The shared helpers; this bench has no use for the peer stand-in.
#[allow(dead_code)]
mod common;
#[path = "common/socket_floor.rs"]
mod socket_floor;

use common::{CHILD_VAR, median, report, spawn, wait_for_daemon};
use socket_floor::SocketFloor;

const WEEK_MS: i64 = 7 * 24 * 3600 * 1000;

fn main() {
    if std::env::var_os(CHILD_VAR).is_some() {
        run_process(Home::from_env().unwrap(), Mode::Detached).unwrap();
        return;
    }
    let full = std::env::args().any(|arg| arg == "--bench");
    let spec = spec(full);
    let dir = bench_dir(&spec);
    let store = dir.join("home");
    let (generated, _) = ensure(&store, &spec).unwrap();
    let runs: usize = std::env::var("CROSS_AGENT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(if full { 20 } else { 3 });

    println!("usage benchmark (`usage --since 7d --by model` through a daemon)");
    println!(
        "  store: {} ({} files, {:.0} MB)",
        store.display(),
        generated.files,
        generated.bytes as f64 / 1e6
    );
    println!(
        "  load average: {}",
        fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );

    listing_with_costs(&store, generated.largest_claude.as_deref(), runs);

    let state = tempfile::tempdir().unwrap();
    let home = {
        let (state, user) = (state.path().to_owned(), store.clone());
        Home::from_vars(move |name| match name {
            "CROSS_AGENT_HOME" => Some(state.clone().into_os_string()),
            "HOME" => Some(user.clone().into_os_string()),
            _ => None,
        })
        .unwrap()
    };
    let store_text = store.to_string_lossy().into_owned();
    let mut daemon = spawn(&home, &[("HOME", &store_text)]);
    let options = ConnectOptions::new(ClientKind::Cli);
    drop(wait_for_daemon(&home, &options));
    let caller = CallerContext {
        child_env: [("HOME".to_owned(), store_text.clone())].into(),
        ..CallerContext::default()
    };
    let oneshot = || OneShot::connect(&home, ClientKind::Cli, Duration::from_secs(5)).unwrap();
    let usage = UsageReportParams {
        by: UsageGroupBy::Model,
        since: Some(UnixMillis::now().0 - WEEK_MS),
        caller: caller.clone(),
    };

    println!(
        "  load average before the daemon's own figures: {}",
        fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    // Cold: the listing first (the session index's walk), then usage (every file read once).
    let started = Instant::now();
    let listing = oneshot()
        .call(IndexSessionsParams {
            agents: Vec::new(),
            resolve: None,
            caller: caller.clone(),
        })
        .unwrap();
    let cold_listing = started.elapsed();
    let started = Instant::now();
    let first = oneshot().call(usage.clone()).unwrap();
    let cold_usage = started.elapsed();
    println!(
        "  cold: first listing {:.0} ms ({} sessions) — the floor; first usage after it {:.0} ms ({} models, {} calls)",
        cold_listing.as_secs_f64() * 1e3,
        listing.sessions.len(),
        cold_usage.as_secs_f64() * 1e3,
        first.rows.len(),
        first.total.calls,
    );
    let (took, files, bytes) = every_byte(&cross_agent_stores_roots(&store));
    println!(
        "  every-byte floor: reading every usage file once, no parse, the index's readers: {:.0} ms ({files} files, {:.0} MB)",
        took.as_secs_f64() * 1e3,
        bytes as f64 / 1e6
    );

    let mut warm = Vec::new();
    let mut status = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let answer = oneshot().call(usage.clone()).unwrap();
        warm.push(started.elapsed());
        assert_eq!(
            answer.total, first.total,
            "nothing changed, the same totals"
        );
        let started = Instant::now();
        oneshot().call(StatusParams {}).unwrap();
        status.push(started.elapsed());
    }
    report("  warm usage_report (target ≤ 50 ms)", &warm);
    report("  floor: status round trip", &status);

    // One turn appended to the largest Claude transcript: read are the appended bytes only.
    if let Some(path) = &generated.largest_claude {
        let mut appended = Vec::new();
        for n in 0..runs {
            let line = serde_json::json!({"type": "assistant", "sessionId": "bench",
                "requestId": format!("req-bench-{n}"), "timestamp": UnixMillis::now().to_rfc3339(),
                "message": {"id": format!("msg-bench-{n}-{}", UnixMillis::now().0),
                    "model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 5}}});
            let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
            writeln!(file, "{line}").unwrap();
            drop(file);
            // The notification reaches the daemon's watcher on its own thread.
            std::thread::sleep(Duration::from_millis(100));
            let started = Instant::now();
            oneshot().call(usage.clone()).unwrap();
            appended.push(started.elapsed());
        }
        report(
            "  after a reply appended to the largest transcript",
            &appended,
        );
    }

    // The CLI's path without a daemon: every file read whole.
    let roots = cross_agent_stores_roots(&store);
    let started = Instant::now();
    let found = cross_agent_usage::scan::scan(&roots);
    let accounting = cross_agent_usage::account(&found.files);
    let prices = cross_agent_usage::PriceTable::shipped().unwrap();
    let direct = cross_agent_usage::Report::build(
        &accounting,
        &prices,
        cross_agent_usage::GroupBy::Model,
        usage.since.map(UnixMillis),
    );
    println!(
        "  direct read (no daemon), in process: {:.0} ms ({} calls)",
        started.elapsed().as_secs_f64() * 1e3,
        direct.total.calls
    );

    match cross_agent_testkit::ccusage::binary() {
        Ok(bin) => {
            let since = UnixMillis(UnixMillis::now().0 - WEEK_MS).to_rfc3339();
            let since = since.get(..10).unwrap_or_default().replace('-', "");
            for (name, var, folder) in [
                ("claude", "CLAUDE_CONFIG_DIR", store.join(".claude")),
                ("codex", "CODEX_HOME", store.join(".codex")),
            ] {
                let started = Instant::now();
                let out = Command::new(&bin)
                    .args([name, "daily", "--json", "--offline", "-z", "UTC", "--since"])
                    .arg(&since)
                    .env_clear()
                    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                    .env("HOME", &store)
                    .env(var, &folder)
                    .env("NO_COLOR", "1")
                    .output()
                    .unwrap();
                println!(
                    "  ccusage {name} daily --since {since}: {:.0} ms ({})",
                    started.elapsed().as_secs_f64() * 1e3,
                    if out.status.success() {
                        "ok".to_owned()
                    } else {
                        format!("failed: {}", String::from_utf8_lossy(&out.stderr).trim())
                    }
                );
            }
        }
        Err(why) => println!("  ccusage: not timed ({why})"),
    }

    let _ = oneshot().call(ShutdownParams {
        reason: Some("bench done".to_owned()),
    });
    let _ = daemon.wait();
}

/// A daemon on `store` with a state folder of its own (a cold session index), and its caller.
fn start_daemon(
    store: &std::path::Path,
) -> (tempfile::TempDir, Home, std::process::Child, CallerContext) {
    let state = tempfile::tempdir().unwrap();
    let home = {
        let (state, user) = (state.path().to_owned(), store.to_owned());
        Home::from_vars(move |name| match name {
            "CROSS_AGENT_HOME" => Some(state.clone().into_os_string()),
            "HOME" => Some(user.clone().into_os_string()),
            _ => None,
        })
        .unwrap()
    };
    let store_text = store.to_string_lossy().into_owned();
    let daemon = spawn(&home, &[("HOME", &store_text)]);
    drop(wait_for_daemon(
        &home,
        &ConnectOptions::new(ClientKind::Cli),
    ));
    let caller = CallerContext {
        child_env: [("HOME".to_owned(), store_text)].into(),
        ..CallerContext::default()
    };
    (state, home, daemon, caller)
}

fn stop_daemon(home: &Home, mut daemon: std::process::Child) {
    let _ = OneShot::connect(home, ClientKind::Cli, Duration::from_secs(5))
        .unwrap()
        .call(ShutdownParams {
            reason: Some("bench done".to_owned()),
        });
    let _ = daemon.wait();
}

/// The `sessions` listing with each session's cost: first listings with and without costs (a
/// fresh daemon each), then warm ones with a reply appended before each, and with none. Each
/// warm row is printed beside floors taken in the same run, sample for sample in turn with it:
/// the same bytes through a new Unix socket into the same kind of buffer, and a `status` round
/// trip of the same daemon (the daemon has no listing without costs: `index_listing` always
/// splices them in); after an append, the same append followed by an exact-id resolution of
/// the appended session (the session index's walk of the changed store, no usage read).
fn listing_with_costs(store: &std::path::Path, claude: Option<&std::path::Path>, runs: usize) {
    let (_state, home, daemon, caller) = start_daemon(store);
    let started = Instant::now();
    OneShot::connect(&home, ClientKind::Cli, Duration::from_secs(5))
        .unwrap()
        .call(IndexSessionsParams {
            agents: Vec::new(),
            resolve: None,
            caller: caller.clone(),
        })
        .unwrap();
    let bare = started.elapsed();
    stop_daemon(&home, daemon);

    let (_state, home, daemon, caller) = start_daemon(store);
    let oneshot = || OneShot::connect(&home, ClientKind::Cli, Duration::from_secs(5)).unwrap();
    let params = IndexListingParams {
        agents: Vec::new(),
        scope: Scope::Any,
        cwd: "/".to_owned(),
        limit: None,
        now: UnixMillis::now().0,
        active_window_min: 240,
        caller: caller.clone(),
    };
    let list = || {
        let mut sink = Vec::new();
        let started = Instant::now();
        oneshot()
            .call_with_trailer(params.clone(), |a| a.bytes, &mut sink)
            .unwrap();
        let took = started.elapsed();
        assert!(
            sink.windows(8).any(|w| w == b"cost_usd"),
            "the listing carries costs"
        );
        (took, sink)
    };
    let status = || {
        let started = Instant::now();
        oneshot().call(StatusParams {}).unwrap();
        started.elapsed()
    };
    let (first, listed) = list();
    println!(
        "  first listing: without costs {:.0} ms, with costs {:.0} ms (x{:.2})",
        bare.as_secs_f64() * 1e3,
        first.as_secs_f64() * 1e3,
        first.as_secs_f64() / bare.as_secs_f64()
    );
    let floor = SocketFloor::start(listed, runs);
    let (mut warm, mut moved, mut round_trips) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        warm.push(list().0);
        moved.push(floor.sample(&mut Vec::new()));
        round_trips.push(status());
    }
    floor.stop();
    report("  warm listing with costs, nothing changed", &warm);
    report(
        "    floor: the same bytes through a new Unix socket",
        &moved,
    );
    report("    floor: status round trip, same daemon", &round_trips);
    println!(
        "    with costs ÷ the socket floor (medians): x{:.2}",
        ratio(&warm, &moved)
    );
    if let Some(path) = claude {
        let append = |tag: &str, n: usize| {
            let line = serde_json::json!({"type": "assistant", "sessionId": "bench",
                "requestId": format!("req-{tag}-{n}"), "timestamp": UnixMillis::now().to_rfc3339(),
                "message": {"id": format!("msg-{tag}-{n}-{}", UnixMillis::now().0),
                    "model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 5}}});
            let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
            writeln!(file, "{line}").unwrap();
            drop(file);
            // The notification reaches the daemon's watcher on its own thread.
            std::thread::sleep(Duration::from_millis(100));
        };
        let session_id = path.file_stem().unwrap().to_string_lossy().into_owned();
        let resolve = IndexSessionsParams {
            agents: vec![Agent::Claude],
            resolve: Some(IndexResolve {
                agent: Agent::Claude,
                query: session_id.clone(),
                scope: Scope::Any,
                cwd: "/".to_owned(),
                bound: None,
            }),
            caller,
        };
        let (mut appended, mut walked) = (Vec::new(), Vec::new());
        for n in 0..runs {
            append("list", n);
            appended.push(list().0);

            append("walk", n);
            let started = Instant::now();
            let found = oneshot().call(resolve.clone()).unwrap();
            walked.push(started.elapsed());
            assert_eq!(found.sessions[0].session_id, session_id);
            // The floor's append read into the costs untimed, so the next timed listing reads
            // only its own.
            list();
        }
        report(
            "  warm listing with costs, a reply appended before each",
            &appended,
        );
        report(
            "    floor: the same append, then resolving its session by id (the walk, no costs)",
            &walked,
        );
        println!(
            "    with costs ÷ that floor (medians): x{:.2}",
            ratio(&appended, &walked)
        );
    }
    stop_daemon(&home, daemon);
}

/// The ratio of two figures' medians.
fn ratio(figure: &[Duration], floor: &[Duration]) -> f64 {
    median(figure).as_secs_f64() / median(floor).as_secs_f64()
}

/// Reads every file the usage index reads (the listed transcripts and the Claude sub-agents'),
/// whole, parsing nothing, on the session index's readers: what no cold read can go below.
fn every_byte(roots: &cross_agent_stores::StoreRoots) -> (Duration, usize, u64) {
    use std::io::Read as _;
    let started = Instant::now();
    let mut found = cross_agent_stores::Warnings::default();
    let mut paths: Vec<PathBuf> = cross_agent_usage::scan::sources(roots, &mut found)
        .into_iter()
        .map(|source| source.path)
        .collect();
    if let Some(config) = &roots.claude_config {
        let mut warnings = Vec::new();
        paths.extend(cross_agent_usage::scan::claude_subagent_files(
            &cross_agent_stores::claude::projects_dir(config),
            &mut warnings,
        ));
    }
    let files = paths.len();
    let sizes = cross_agent_stores::parallel::read_files(paths, |path| {
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        if let Ok(mut file) = fs::File::open(&path) {
            while let Ok(n) = file.read(&mut buf) {
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
        }
        total
    });
    (started.elapsed(), files, sizes.iter().sum())
}

/// Where the agents' stores are under the synthetic HOME (the default places).
fn cross_agent_stores_roots(store: &std::path::Path) -> cross_agent_stores::StoreRoots {
    cross_agent_stores::StoreRoots::from_vars(Some(store), |_| None)
}

fn spec(full: bool) -> SyntheticSpec {
    let mut spec = SyntheticSpec::full(0);
    if !full {
        (spec.claude, spec.codex, spec.grok, spec.copilot) = (30, 30, 6, 10);
    }
    if let Ok(counts) = std::env::var("CROSS_AGENT_BENCH_SESSIONS") {
        let parts: Vec<usize> = counts
            .split(',')
            .map(|p| p.trim().parse::<usize>().unwrap())
            .collect();
        (spec.claude, spec.codex, spec.grok) = (parts[0], parts[1], parts[2]);
        if let Some(copilot) = parts.get(3) {
            spec.copilot = *copilot;
        }
    }
    spec
}

/// The session benchmark's folder for this spec, so every bench reuses one store.
fn bench_dir(spec: &SyntheticSpec) -> PathBuf {
    match std::env::var_os("CROSS_AGENT_BENCH_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(format!(
            "/tmp/cross-agent-bench-{}-{}-{}-{}-x{}",
            spec.claude, spec.codex, spec.grok, spec.copilot, spec.size_scale
        )),
    }
}
