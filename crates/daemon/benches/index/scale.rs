//! Issue 30's table: the figures that grow with the store, for one store at a time — the
//! bench's own (22,000 sessions) and, when asked, five times it (50,000 Claude + 50,000 Codex +
//! 10,000 Grok sessions, 1,000 Copilot) — each beside its goal and, where there is one, its
//! floor measured in the same run:
//!
//! - the daemon's resident memory (`VmRSS` of its process) once it has built the index (no
//!   session cache: a new state folder) and answered a full listing, and its peak (`VmHWM`),
//!   beside the same daemon's before it was asked anything (the floor: what holds no session);
//! - the full `sessions --json --scope any --agent all` listing through the daemon (the kept
//!   rendering, one-shot client, to `/dev/null`), beside the same bytes sent through a new Unix
//!   socket connection and copied to `/dev/null` (the floor: moving the listing, no work);
//! - exact-name resolution through the daemon (one-shot) — as `sessions NAME` asks it, and as a
//!   send does (a pin by the same name: the lookup and one write) — and `bridge_status`, beside
//!   a bare `status` round trip;
//! - the peak memory (`VmHWM`) of a cold listing without the daemon: a child process doing what
//!   `sessions --json` does when no daemon answers and no session cache is there (every file
//!   read, the listing written out as it is made), beside the same child's before it lists,
//!   and its time beside `find -printf` of the store.
//!
//! The listing is checked against the generator's truth: every generated session listed, each
//! named one under its name. Memory figures do not depend on the build; the timing rows do, so
//! read them from `cargo bench` (release).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_ipc::oneshot::OneShot;
use cross_agent_protocol::bridge::{
    Agent, BridgeStatusParams, CallerContext, IndexListingParams, IndexResolve,
    IndexSessionsParams, PinParams, PinResponse, Scope,
};
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams, StatusParams};
use cross_agent_testkit::synthetic_stores::{Generated, SyntheticSpec};

use super::socket_floor::SocketFloor;
use super::{report, spawn, wait_for_daemon};

/// Set in the child that lists cold without a daemon: the store's home.
pub const COLD_CHILD_VAR: &str = "CROSS_AGENT_BENCH_COLD_LISTING";

/// Prints the table for the store at `store`, generated as `spec` (`truth`).
pub fn table(label: &str, store: &Path, spec: &SyntheticSpec, truth: &Generated, runs: usize) {
    let load_before = load_average();
    let store_text = store.to_string_lossy().into_owned();
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
    let mut daemon = spawn(&home, &[("HOME", &store_text)]);
    drop(wait_for_daemon(
        &home,
        &ConnectOptions::new(ClientKind::Cli),
    ));
    let (idle_rss, _) = memory_of(daemon.id());
    let caller = CallerContext {
        child_env: [("HOME".to_owned(), store_text.clone())].into(),
        ..CallerContext::default()
    };
    let listing = IndexListingParams {
        agents: Vec::new(),
        scope: Scope::Any,
        cwd: "/".to_owned(),
        limit: None,
        now: cross_agent_protocol::timestamp::UnixMillis::now().0,
        active_window_min: 240,
        caller: caller.clone(),
    };
    let oneshot = || OneShot::connect(&home, ClientKind::Cli, Duration::from_secs(600)).unwrap();

    // The first listing builds the index (no session cache in a new state folder).
    let started = Instant::now();
    let mut first = Vec::new();
    let answer = oneshot()
        .call_with_trailer(listing.clone(), |a| a.bytes, &mut first)
        .unwrap();
    let built = started.elapsed();
    let missing = completeness(&first, spec, truth);
    let listed_bytes = first.len();
    let (rss, hwm) = memory_of(daemon.id());

    let named = truth
        .named
        .iter()
        .find(|n| n.agent == "claude")
        .expect("the generated store has a named Claude session");
    let resolve = IndexSessionsParams {
        agents: Vec::new(),
        resolve: Some(IndexResolve {
            agent: Agent::Claude,
            query: named.name.clone(),
            scope: Scope::Any,
            cwd: "/".to_owned(),
            bound: None,
        }),
        caller: caller.clone(),
    };
    // A send resolves its target as a pin does (the same lookup, then one write).
    let pin = PinParams {
        agent: Agent::Claude,
        session_id: Some(named.name.clone()),
        cwd: Some("/".to_owned()),
        caller: caller.clone(),
    };
    let status = BridgeStatusParams {
        cwd: Some("/".to_owned()),
        scope: Some(Scope::Any),
        delivery_id: None,
        caller: caller.clone(),
    };
    let (mut lists, mut resolves, mut floors) = (Vec::new(), Vec::new(), Vec::new());
    let (mut pins, mut statuses) = (Vec::new(), Vec::new());
    let mut moves = Vec::new();
    let mut null = std::fs::File::create("/dev/null").unwrap();
    let socket = SocketFloor::start(first, runs);
    for _ in 0..runs {
        let at = Instant::now();
        let got = oneshot()
            .call_with_trailer(listing.clone(), |a| a.bytes, &mut null)
            .unwrap();
        lists.push(at.elapsed());
        assert_eq!(got.sessions, answer.sessions);

        moves.push(socket.sample(&mut null));

        let at = Instant::now();
        let found = oneshot().call(resolve.clone()).unwrap();
        resolves.push(at.elapsed());
        assert_eq!(found.sessions[0].session_id, named.session_id);

        let at = Instant::now();
        let pinned = oneshot().call(pin.clone()).unwrap();
        pins.push(at.elapsed());
        assert!(
            matches!(&pinned, PinResponse::Pinned { pin, .. } if pin.session_id == named.session_id),
            "{pinned:?}"
        );

        let at = Instant::now();
        oneshot().call(status.clone()).unwrap();
        statuses.push(at.elapsed());

        let at = Instant::now();
        oneshot().call(StatusParams {}).unwrap();
        floors.push(at.elapsed());
    }
    let (rss_after, hwm_after) = memory_of(daemon.id());
    if let Ok(client) = BlockingClient::connect(&home, &ConnectOptions::new(ClientKind::Cli)) {
        let _ = client.call(ShutdownParams {
            reason: Some("bench done".to_owned()),
        });
    }
    let _ = daemon.wait();
    socket.stop();
    let cold = cold_listing(store);
    let at = Instant::now();
    let out = Command::new("find")
        .arg(store)
        .args(["-printf", "%s %T@ %p\n"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let find_took = at.elapsed();

    println!();
    println!(
        "  {label} (load average {load_before} at the start, {} at the end):",
        load_average()
    );
    println!(
        "    {} sessions listed through the daemon ({:.1} MB of JSON; the index built \
         and listed in {:.1} s), {}",
        answer.sessions,
        listed_bytes as f64 / 1e6,
        built.as_secs_f64(),
        if missing.is_empty() {
            "complete and exact against the generator's truth".to_owned()
        } else {
            format!("NOT complete: {}", missing.join("; "))
        }
    );
    println!(
        "    daemon resident memory once the index is built and listed: {rss:.0} MB (peak {hwm:.0} \
         MB; after {runs} more listings {rss_after:.0} MB, peak {hwm_after:.0} MB); goal ≤ 150 MB \
         at 106k sessions"
    );
    println!("      floor: the same daemon before it was asked anything: {idle_rss:.0} MB");
    report(
        "    full listing through the daemon, one-shot, to /dev/null",
        &lists,
    );
    println!("      goal ≤ 25 ms at 106k sessions");
    report(
        &format!(
            "      floor: the same {:.1} MB through a new Unix socket",
            listed_bytes as f64 / 1e6
        ),
        &moves,
    );
    report(
        "    exact-name resolution through the daemon       ",
        &resolves,
    );
    println!("      goal ≤ 5 ms");
    report(
        "    a send's resolution by exact name (pin: the lookup and one write)",
        &pins,
    );
    report(
        "    bridge_status from a directory (what a send would pick, every agent)",
        &statuses,
    );
    report(
        "      floor: status round trip, one-shot           ",
        &floors,
    );
    println!(
        "    cold listing without the daemon: peak {:.0} MB ({} sessions, {:.1} s); goal ≤ 200 MB \
         at 106k sessions",
        cold.peak,
        cold.sessions,
        cold.took.as_secs_f64()
    );
    println!(
        "      floor: the same process before it lists: peak {:.0} MB; `find -printf` of the \
         store {:.1} s",
        cold.start_peak,
        find_took.as_secs_f64()
    );
    println!(
        "      where the peak is: {:.0} MB resident once the sessions are listed (before they \
         are rendered), the peak {:.0} MB by then",
        cold.listed_rss, cold.listed_peak
    );
    assert!(
        missing.is_empty(),
        "the listing is not complete: {missing:?}"
    );
    assert_eq!(cold.sessions as u64, answer.sessions);
}

/// What the cold listing child reported.
struct Cold {
    /// Its peak memory (MB) once it listed.
    peak: f64,
    /// Its peak memory (MB) before it listed: the process's own floor.
    start_peak: f64,
    /// Its resident memory (MB) once the sessions are listed, before they are rendered.
    listed_rss: f64,
    /// Its peak (MB) once the sessions are listed: the read's share of the peak.
    listed_peak: f64,
    sessions: usize,
    took: Duration,
}

/// The machine's 1, 5 and 15 minute load averages, for beside the figures (2 shared cores).
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `VmRSS` and `VmHWM` of process `pid`, in MB.
fn memory_of(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    (field_mb(&status, "VmRSS:"), field_mb(&status, "VmHWM:"))
}

fn field_mb(status: &str, name: &str) -> f64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The cold listing without a daemon, in a child process of its own: its peak memory before
/// and after, how many sessions it listed, and how long the child took.
fn cold_listing(store: &Path) -> Cold {
    let started = Instant::now();
    let out = Command::new(std::env::current_exe().unwrap())
        .env(COLD_CHILD_VAR, store)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    let mut number = || {
        words
            .next()
            .and_then(|w| w.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let (start_peak, peak, sessions) = (number(), number(), number());
    let (listed_rss, listed_peak) = (number(), number());
    Cold {
        peak,
        start_peak,
        listed_rss,
        listed_peak,
        sessions: sessions as usize,
        took,
    }
}

/// In the child: what `sessions --json --scope any` does with no daemon and no session cache,
/// the listing written to nowhere as it is made; prints the peak memory (MB) before listing and
/// after, and the count.
pub fn cold_child(home: &Path) {
    use cross_agent_stores::StoreRoots;
    use cross_agent_stores::render::{self, Chosen, WriteSink};
    use cross_agent_stores::resolve::ActiveWindow;
    use cross_agent_stores::scan::{ScanOptions, list_sessions};

    // As the `cross-agent` binary sets its allocator before it lists.
    cross_agent_daemon::memory::give_back_freed_memory_soon();
    let before = field_mb(
        &std::fs::read_to_string("/proc/self/status").unwrap(),
        "VmHWM:",
    );
    let listing = list_sessions(&StoreRoots::under_home(home), &ScanOptions::default());
    // Where the peak is: reading the files (the peak already reached once listed), or holding
    // the sessions (what is resident once listed) and rendering them.
    let listed = std::fs::read_to_string("/proc/self/status").unwrap();
    let (listed_rss, listed_peak) = (field_mb(&listed, "VmRSS:"), field_mb(&listed, "VmHWM:"));
    let chosen: Vec<(Agent, Chosen<'_>)> = Agent::ALL
        .iter()
        .map(|&agent| (agent, Chosen::Sessions(listing.of(agent).collect())))
        .collect();
    let mut sink = WriteSink::new(std::io::sink());
    render::write_listing(
        &mut sink,
        &chosen,
        ActiveWindow::from_minutes(240),
        cross_agent_protocol::timestamp::UnixMillis::now(),
        None,
    );
    sink.finish().unwrap();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    println!(
        "{before:.1} {:.1} {} {listed_rss:.1} {listed_peak:.1}",
        field_mb(&status, "VmHWM:"),
        listing.sessions.len()
    );
}

/// What the listing lacks against the generator's truth: each agent's count, and every named
/// session under its name.
fn completeness(listing: &[u8], spec: &SyntheticSpec, truth: &Generated) -> Vec<String> {
    let parsed: serde_json::Value = match serde_json::from_slice(listing) {
        Ok(parsed) => parsed,
        Err(e) => return vec![format!("the listing is not JSON: {e}")],
    };
    let entries = |agent: &str| {
        parsed
            .get(agent)
            .and_then(serde_json::Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    let mut missing = Vec::new();
    for (agent, want) in [
        ("claude", spec.claude),
        ("codex", spec.codex),
        ("grok", spec.grok),
        ("copilot", spec.copilot),
    ] {
        let got = entries(agent).len();
        if got != want {
            missing.push(format!("{agent}: {got} sessions listed, {want} generated"));
        }
    }
    let mut titles: HashMap<(&str, &str), Option<&str>> = HashMap::new();
    for agent in ["claude", "codex", "grok", "copilot"] {
        for entry in entries(agent) {
            if let Some(id) = entry.get("session_id").and_then(serde_json::Value::as_str) {
                let title = entry.get("title").and_then(serde_json::Value::as_str);
                titles.insert((agent, id), title);
            }
        }
    }
    for named in &truth.named {
        let title = titles.get(&(named.agent.as_str(), named.session_id.as_str()));
        if title != Some(&Some(named.name.as_str())) {
            missing.push(format!(
                "{} {} named {:?}",
                named.agent, named.session_id, named.name
            ));
        }
    }
    missing
}
