//! The live session index through a real daemon (`cargo bench -p cross-agent-daemon --bench
//! index`): what `cross-agent sessions` and `sessions resolve` pay when the daemon answers,
//! printed beside a floor measured in the same run. No assertions: targets are read off the
//! output.
//!
//! The store is the session benchmark's synthetic one (10,000 Claude + 10,000 Codex + 2,000
//! Grok sessions, about 1 GB, and 1,000 Copilot sessions in VS Code's and the Copilot SDK's
//! default places under it; generated on first use, then reused from the same folder as `cargo
//! bench -p cross-agent-stores --bench sessions`). The daemon runs in a child process (this
//! bench binary re-executed, running the daemon's own entry point), its `HOME` the store.
//! Measured, each a new client as a CLI command is (runtime + connect + `hello` + the call):
//!
//! - every session of every agent (`sessions --json --scope any` asks this), beside `find
//!   -printf` of the same tree (the peer: what listing the files alone costs);
//! - an exact name resolved in the daemon (`sessions resolve claude NAME`), beside a bare
//!   `status` round trip (the floor of any daemon call);
//! - a rename appended to a transcript: how long until the next resolution sees it;
//! - the same listing as `index_listing` (the daemon's kept rendering, its bytes after the
//!   frame) through the runtime-free one-shot client, and the resolution through it too,
//!   beside the older path (`index_sessions` through the async client) in the same run;
//! - Copilot's share (issue 25: 1,000 Copilot sessions beside the 22,000 others add ≤ 5 ms to
//!   a listing through the daemon): the kept rendering and `index_sessions` from this daemon,
//!   beside the same from a second daemon on the same store whose caller points VS Code's and
//!   the SDK's folders (`XDG_CONFIG_HOME`, `COPILOT_HOME`) at an empty one, asked in turn, and
//!   the difference of their medians; with, in process, the catalog read alone, a cold walk of
//!   the Copilot sessions (catalog + every `session.db` opened + every `events.jsonl` tail) and
//!   a warm re-walk (nothing changed: stamps only), so the difference can be placed;
//! - end to end, when the release CLI is built beside this bench (`cargo build --release -p
//!   cross-agent`, or `CROSS_AGENT_BENCH_CLI`): `cross-agent sessions --json --scope any` and
//!   `cross-agent sessions resolve claude NAME` as new processes, beside `find -printf` and a
//!   bare process start (`true`).
//!
//! - issue 30's table (`index/scale.rs`), for this store and, with
//!   `CROSS_AGENT_BENCH_SCALE_DIR=DIR`, for five times it (50,000 + 50,000 + 10,000 sessions and
//!   1,000 Copilot, about 6 GB, made in `DIR/home` when absent — `cargo run -p
//!   cross-agent-testkit --example synthetic_store -- DIR` makes it ahead): the daemon's resident
//!   memory once the index is built and listed, the full listing and an exact-name resolution
//!   through the daemon, and the peak memory of a cold listing without one, each beside its goal;
//!
//! - `CROSS_AGENT_BENCH_SESSIONS=claude,codex,grok[,copilot]` (default `10000,10000,2000,1000`;
//!   30,30,6,10 when run as a test, `cargo test -p cross-agent-daemon --bench index`),
//!   `CROSS_AGENT_BENCH_DIR`, `CROSS_AGENT_BENCH_RUNS` (default 20): as the session benchmark.
//!   The one correctness check: every generated Copilot session is in the listing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_daemon::entry::{Mode, run_process};
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_ipc::oneshot::OneShot;
use cross_agent_protocol::bridge::{
    Agent, CallerContext, IndexListingParams, IndexResolve, IndexSessionsParams,
    IndexSessionsResponse, Scope,
};
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams, StatusParams};
use cross_agent_testkit::synthetic_stores::{SyntheticSpec, ensure};

#[path = "index/copilot.rs"]
mod copilot;
#[path = "index/scale.rs"]
mod scale;
#[path = "common/socket_floor.rs"]
mod socket_floor;

/// The `cross-agent` binary's allocator, so the daemon and the cold listing measured here
/// hold memory as the shipped binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if std::env::var_os(CHILD_VAR).is_some() {
        run_process(Home::from_env().unwrap(), Mode::Detached).unwrap();
        return;
    }
    if let Some(home) = std::env::var_os(scale::COLD_CHILD_VAR) {
        scale::cold_child(Path::new(&home));
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
    let first = wait_for_daemon(&home, &options);
    let caller = CallerContext {
        child_env: [("HOME".to_owned(), store_text.clone())].into(),
        ..CallerContext::default()
    };
    let everything = IndexSessionsParams {
        agents: Vec::new(),
        resolve: None,
        caller: caller.clone(),
    };
    let started = Instant::now();
    let listing: IndexSessionsResponse = first.call(everything.clone()).unwrap();
    let first_listing = started.elapsed();
    drop(first);
    let named = listing
        .sessions
        .iter()
        .find(|s| s.agent == Agent::Claude && s.title_is_assigned && s.title.is_some())
        .expect("the store has a named Claude session")
        .clone();
    let name = named.title.clone().unwrap();
    let copilot_listed = listing
        .sessions
        .iter()
        .filter(|s| s.agent == Agent::Copilot)
        .count();
    assert_eq!(
        copilot_listed, spec.copilot,
        "every generated Copilot session is listed"
    );

    println!("live session index benchmark (through a daemon)");
    println!(
        "  store: {} ({} sessions listed; the daemon's first listing took {:.0} ms, from the \
         session cache when one is there)",
        store.display(),
        listing.sessions.len(),
        first_listing.as_secs_f64() * 1e3
    );
    println!(
        "  load average: {}",
        fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );

    let call = |params: &IndexSessionsParams| {
        let client = BlockingClient::connect(&home, &options).unwrap();
        client.call(params.clone()).unwrap()
    };
    let resolve = IndexSessionsParams {
        agents: Vec::new(),
        resolve: Some(IndexResolve {
            agent: Agent::Claude,
            query: name.clone(),
            scope: Scope::Any,
            cwd: "/".to_owned(),
            bound: None,
        }),
        caller: caller.clone(),
    };

    let oneshot = || OneShot::connect(&home, ClientKind::Cli, Duration::from_secs(5)).unwrap();
    let listing_params = IndexListingParams {
        agents: Vec::new(),
        scope: Scope::Any,
        cwd: "/".to_owned(),
        limit: None,
        now: cross_agent_protocol::timestamp::UnixMillis::now().0,
        active_window_min: 240,
        caller: caller.clone(),
    };
    let mut rendered_bytes = 0;
    let mut rendered_times = Vec::new();
    let mut oneshot_resolve_times = Vec::new();
    let mut oneshot_status_times = Vec::new();
    let mut list_times = Vec::new();
    let mut find_times = Vec::new();
    let mut resolve_times = Vec::new();
    let mut status_times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let mut sink = Vec::with_capacity(rendered_bytes);
        let answer = oneshot()
            .call_with_trailer(listing_params.clone(), |a| a.bytes, &mut sink)
            .unwrap();
        rendered_times.push(started.elapsed());
        assert_eq!(answer.sessions as usize, listing.sessions.len());
        rendered_bytes = sink.len();

        let started = Instant::now();
        let found = oneshot().call(resolve.clone()).unwrap();
        oneshot_resolve_times.push(started.elapsed());
        assert_eq!(found.sessions[0].session_id, named.session_id);

        let started = Instant::now();
        oneshot().call(StatusParams {}).unwrap();
        oneshot_status_times.push(started.elapsed());

        let started = Instant::now();
        let out = Command::new("find")
            .arg(&store)
            .args(["-printf", "%s %T@ %p\n"])
            .output()
            .unwrap();
        assert!(out.status.success());
        find_times.push(started.elapsed());

        let started = Instant::now();
        let all = call(&everything);
        list_times.push(started.elapsed());
        assert_eq!(all.sessions.len(), listing.sessions.len());

        let started = Instant::now();
        let client = BlockingClient::connect(&home, &options).unwrap();
        client.call(StatusParams {}).unwrap();
        status_times.push(started.elapsed());

        let started = Instant::now();
        let found = call(&resolve);
        resolve_times.push(started.elapsed());
        assert_eq!(found.sessions[0].session_id, named.session_id);
    }

    // A rename appended while the daemon runs: the time until a resolution sees it.
    let renamed = format!("bench-renamed-{}", std::process::id());
    let transcript = PathBuf::from(&named.path);
    let original_len = fs::metadata(&transcript).unwrap().len();
    let by_new_name = IndexSessionsParams {
        resolve: Some(IndexResolve {
            query: renamed.clone(),
            ..resolve.resolve.clone().unwrap()
        }),
        ..resolve.clone()
    };
    let started = Instant::now();
    append_rename(&transcript, &named.session_id, &renamed);
    let seen_after = loop {
        let found = call(&by_new_name);
        if found.matched_by.is_some() {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the rename was never seen"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    fs::OpenOptions::new()
        .write(true)
        .open(&transcript)
        .unwrap()
        .set_len(original_len)
        .unwrap();

    println!();
    report(
        "  every session, new client (index_sessions)   ",
        &list_times,
    );
    report(
        "    peer: find -printf of the same tree         ",
        &find_times,
    );
    report(
        "  exact-name resolution, new client              ",
        &resolve_times,
    );
    report(
        "    floor: status round trip, new client        ",
        &status_times,
    );
    println!(
        "  a rename appended to a transcript is resolved {:.0} ms later (goal: within 1 s)",
        seen_after.as_secs_f64() * 1e3
    );
    report(
        &format!(
            "  every session, kept rendering ({:.1} MB, one-shot)",
            rendered_bytes as f64 / 1e6
        ),
        &rendered_times,
    );
    report(
        "  exact-name resolution, one-shot client          ",
        &oneshot_resolve_times,
    );
    report(
        "    floor: status round trip, one-shot client   ",
        &oneshot_status_times,
    );
    if let Some(cli) = release_cli() {
        end_to_end(&cli, &home, &store_text, &name, runs);
    } else {
        println!(
            "  (end to end: build the release CLI, `cargo build --release -p cross-agent`, or set \
             CROSS_AGENT_BENCH_CLI)"
        );
    }
    println!("  goals: the listing ≤ 20 ms, the resolution ≤ 5 ms (through the daemon)");

    copilot::beside(
        &copilot::Daemon {
            home: &home,
            caller: &caller,
        },
        &dir,
        &store,
        &listing_params,
        runs,
    );

    rewalks(
        &store,
        &caller,
        &listing_params,
        &resolve,
        &named.session_id,
        full,
    );

    let client = BlockingClient::connect(&home, &options).unwrap();
    let _ = client.call(ShutdownParams {
        reason: Some("bench done".to_owned()),
    });
    let _ = daemon.wait();

    // Issue 30's table: this store, and five times it when asked.
    println!();
    println!("  the figures that grow with the store (issue 30), each daemon new on its store:");
    scale::table("this store", &store, &spec, &generated, runs);
    match std::env::var_os(SCALE_DIR_VAR).filter(|v| !v.is_empty()) {
        Some(scale_dir) => {
            let five = SyntheticSpec::five_times(0);
            let scale_store = PathBuf::from(scale_dir).join("home");
            let (truth, took) = ensure(&scale_store, &five).unwrap();
            if let Some(took) = took {
                println!(
                    "  (the five-times store generated in {:.0} s)",
                    took.as_secs_f64()
                );
            }
            scale::table("five times the store", &scale_store, &five, &truth, runs);
        }
        None => println!(
            "  (five times the store: set {SCALE_DIR_VAR}=DIR; the store is made in DIR/home when \
             absent, about 6 GB)"
        ),
    }
}

/// Where the five-times store is (`DIR/home`), made there when absent; unset, that part is
/// skipped (it takes minutes and 6 GB).
const SCALE_DIR_VAR: &str = "CROSS_AGENT_BENCH_SCALE_DIR";

/// Requests while the periodic re-walk runs (`CROSS_AGENT_INDEX_REWALK_MS` low, so each second
/// of the index loop walks every store): the listing and the resolution through two daemons on
/// the same store, one as before (`CROSS_AGENT_INDEX_SERIAL_WALKS=1`: a request waits for a
/// running walk) and one as now (walks beside requests), asked in turn so both share the
/// machine's load. Their tails are the figure: a request that waits on a walk shows in p90/p99.
fn rewalks(
    store: &Path,
    caller: &CallerContext,
    listing: &IndexListingParams,
    resolve: &IndexSessionsParams,
    expected: &str,
    full: bool,
) {
    let store_text = store.to_string_lossy().into_owned();
    let mut daemons = Vec::new();
    for serial in ["1", "0"] {
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
        let child = spawn(
            &home,
            &[
                ("HOME", &store_text),
                ("CROSS_AGENT_INDEX_REWALK_MS", "100"),
                ("CROSS_AGENT_INDEX_SERIAL_WALKS", serial),
            ],
        );
        let client = wait_for_daemon(&home, &ConnectOptions::new(ClientKind::Cli));
        // The first listing (no session cache in a new state folder) before the clock starts.
        let _: IndexSessionsResponse = client
            .call(IndexSessionsParams {
                agents: Vec::new(),
                resolve: None,
                caller: caller.clone(),
            })
            .unwrap();
        daemons.push((state, home, child));
    }
    let oneshot =
        |home: &Home| OneShot::connect(home, ClientKind::Cli, Duration::from_secs(5)).unwrap();
    let mut lists = [Vec::new(), Vec::new()];
    let mut resolves = [Vec::new(), Vec::new()];
    let span = Duration::from_secs(if full { 20 } else { 2 });
    let started = Instant::now();
    while started.elapsed() < span {
        for (i, (_, home, _)) in daemons.iter().enumerate() {
            let at = Instant::now();
            let mut sink = Vec::new();
            oneshot(home)
                .call_with_trailer(listing.clone(), |a| a.bytes, &mut sink)
                .unwrap();
            lists[i].push(at.elapsed());
            let at = Instant::now();
            let found = oneshot(home).call(resolve.clone()).unwrap();
            resolves[i].push(at.elapsed());
            assert_eq!(found.sessions[0].session_id, expected);
        }
    }
    println!();
    println!(
        "  with the store re-walked every second (CROSS_AGENT_INDEX_REWALK_MS=100), same run, \
         requests in turn:"
    );
    report_tail(
        "    every session, kept rendering, walks beside requests (now)",
        &lists[1],
    );
    report_tail(
        "      before: requests wait for a running walk             ",
        &lists[0],
    );
    report_tail(
        "    exact-name resolution, walks beside requests (now)       ",
        &resolves[1],
    );
    report_tail(
        "      before: requests wait for a running walk             ",
        &resolves[0],
    );
    for (_, home, mut child) in daemons {
        if let Ok(client) = BlockingClient::connect(&home, &ConnectOptions::new(ClientKind::Cli)) {
            let _ = client.call(ShutdownParams {
                reason: Some("bench done".to_owned()),
            });
        }
        let _ = child.wait();
    }
}

/// A figure's median and tail.
fn report_tail(label: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    println!(
        "{label}: median {:.2?}, p90 {:.2?}, p99 {:.2?}, max {:.2?} ({} samples)",
        at(0.5),
        at(0.9),
        at(0.99),
        sorted[sorted.len() - 1],
        sorted.len()
    );
}

/// The release CLI: `CROSS_AGENT_BENCH_CLI`, else `cross-agent` beside this bench's folder
/// (`target/release/deps/index-…` → `target/release/cross-agent`).
fn release_cli() -> Option<PathBuf> {
    if let Some(cli) = std::env::var_os("CROSS_AGENT_BENCH_CLI").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(cli));
    }
    let exe = std::env::current_exe().ok()?;
    let cli = exe.parent()?.parent()?.join("cross-agent");
    cli.is_file().then_some(cli)
}

/// The CLI as a person runs it, a new process each time, beside a bare process start and
/// `find -printf` of the same store, interleaved so a busy machine weighs on all alike.
fn end_to_end(cli: &Path, home: &Home, store: &str, name: &str, runs: usize) {
    let run = |args: &[&str]| {
        let started = Instant::now();
        let out = Command::new(cli)
            .args(args)
            .env("HOME", store)
            .env("CROSS_AGENT_HOME", home.root())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("GROK_HOME")
            .current_dir("/")
            .output()
            .unwrap();
        let took = started.elapsed();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{args:?} did not go through the daemon: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (took, out.stdout.len())
    };
    let (mut list, mut resolve, mut find, mut process) = (vec![], vec![], vec![], vec![]);
    let mut printed = 0;
    for _ in 0..runs {
        let started = Instant::now();
        Command::new("true").status().unwrap();
        process.push(started.elapsed());
        let started = Instant::now();
        Command::new("find")
            .arg(store)
            .args(["-printf", "%s %T@ %p\n"])
            .output()
            .unwrap();
        find.push(started.elapsed());
        let (took, bytes) = run(&["sessions", "--json", "--scope", "any"]);
        list.push(took);
        printed = bytes;
        resolve.push(run(&["sessions", "resolve", "claude", name]).0);
    }
    println!("  end to end, a new process each ({}):", cli.display());
    report(
        &format!(
            "  `sessions --json --scope any` ({:.1} MB)  ",
            printed as f64 / 1e6
        ),
        &list,
    );
    report("    peer: find -printf of the same tree         ", &find);
    report("  `sessions resolve claude NAME`               ", &resolve);
    report("    floor: a process start (`true`)             ", &process);
}

/// Appends a Claude `custom-title` record, as `/rename` does.
fn append_rename(path: &Path, session_id: &str, name: &str) {
    let line = serde_json::json!({
        "type": "custom-title",
        "customTitle": name,
        "sessionId": session_id,
    });
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
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

/// The session benchmark's folder for this spec, so both reuse one store.
fn bench_dir(spec: &SyntheticSpec) -> PathBuf {
    match std::env::var_os("CROSS_AGENT_BENCH_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(format!(
            "/tmp/cross-agent-bench-{}-{}-{}-{}-x{}",
            spec.claude, spec.codex, spec.grok, spec.copilot, spec.size_scale
        )),
    }
}

/// Set in the child: the bench binary runs the daemon instead of the bench. (The other daemon
/// benches share these few helpers in `common`, with a temporary place and a peer stand-in this
/// one has no use for: a bench that left those unused would not build warning-free.)
const CHILD_VAR: &str = "CROSS_AGENT_BENCH_DAEMON";

/// The bench binary again, as a daemon on `home`, with `env` added.
fn spawn(home: &Home, env: &[(&str, &str)]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env(CHILD_VAR, "1")
        .env("CROSS_AGENT_HOME", home.root())
        .envs(env.iter().copied())
        .env_remove("CROSS_AGENT_DEBUG")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for_daemon(home: &Home, options: &ConnectOptions) -> BlockingClient {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(client) = BlockingClient::connect(home, options) {
            return client;
        }
        assert!(Instant::now() < deadline, "the daemon did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A figure's median and spread.
fn report(label: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    println!(
        "{label}: median {:.2?}, p90 {:.2?}, max {:.2?} ({} samples)",
        at(0.5),
        at(0.9),
        sorted[sorted.len() - 1],
        sorted.len()
    );
}
