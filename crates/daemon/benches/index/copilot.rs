//! Copilot's share of a listing through the daemon (issue 25: 1,000 Copilot sessions beside
//! the 22,000 others add ≤ 5 ms). Two daemons on the same store, asked in turn so both share
//! the machine's load: the bench's own, whose caller's `HOME` puts VS Code's and the SDK's
//! default folders on the generated Copilot sessions, and one whose caller points
//! `XDG_CONFIG_HOME` and `COPILOT_HOME` at an empty folder (the same Claude, Codex and Grok
//! stores, no Copilot). Beside the difference, the Copilot walk alone in this process: the
//! catalog read, a cold walk (every `session.db` opened, every `events.jsonl` tail read) and a
//! warm re-walk (nothing changed), so a reader sees where the time goes.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_ipc::oneshot::OneShot;
use cross_agent_protocol::bridge::{
    Agent, CallerContext, IndexListingParams, IndexSessionsParams, IndexSessionsResponse,
};
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams};
use cross_agent_stores::copilot::{self as stores_copilot, Cache, CopilotPlaces, catalog};
use cross_agent_stores::model::Warnings;

use super::{report, spawn, wait_for_daemon};

/// The bench's daemon (the one that lists Copilot) and its caller.
pub struct Daemon<'a> {
    pub home: &'a Home,
    pub caller: &'a CallerContext,
}

/// Prints the Copilot figures: the walk in process, then the two daemons' listings in turn.
pub fn beside(
    with: &Daemon<'_>,
    bench_dir: &Path,
    store: &Path,
    listing: &IndexListingParams,
    runs: usize,
) {
    let copilot_count = walks(store, runs);

    // The daemon without Copilot: its caller's editor and SDK folders are an empty one.
    let empty = bench_dir.join("no-copilot");
    fs::create_dir_all(&empty).unwrap();
    let empty_text = empty.to_string_lossy().into_owned();
    let store_text = store.to_string_lossy().into_owned();
    let mut caller = with.caller.clone();
    for name in ["XDG_CONFIG_HOME", "COPILOT_HOME"] {
        caller.child_env.insert(name.to_owned(), empty_text.clone());
    }
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
    let mut child = spawn(
        &home,
        &[
            ("HOME", &store_text),
            ("XDG_CONFIG_HOME", &empty_text),
            ("COPILOT_HOME", &empty_text),
        ],
    );
    let options = ConnectOptions::new(ClientKind::Cli);
    let everything = |caller: &CallerContext| IndexSessionsParams {
        agents: Vec::new(),
        resolve: None,
        caller: caller.clone(),
    };
    let first: IndexSessionsResponse = wait_for_daemon(&home, &options)
        .call(everything(&caller))
        .unwrap();
    assert!(
        first.sessions.iter().all(|s| s.agent != Agent::Copilot),
        "the daemon without Copilot lists none"
    );
    let without = Daemon {
        home: &home,
        caller: &caller,
    };

    let rendered = |daemon: &Daemon<'_>| {
        let params = IndexListingParams {
            caller: daemon.caller.clone(),
            ..listing.clone()
        };
        let started = Instant::now();
        let mut sink = Vec::new();
        let answer = OneShot::connect(daemon.home, ClientKind::Cli, Duration::from_secs(5))
            .unwrap()
            .call_with_trailer(params, |a| a.bytes, &mut sink)
            .unwrap();
        (started.elapsed(), answer.sessions as usize, sink.len())
    };
    let sessions = |daemon: &Daemon<'_>| {
        let started = Instant::now();
        let client = BlockingClient::connect(daemon.home, &options).unwrap();
        let all: IndexSessionsResponse = client.call(everything(daemon.caller)).unwrap();
        (started.elapsed(), all.sessions.len())
    };
    let (mut rendered_with, mut rendered_without) = (Vec::new(), Vec::new());
    let (mut sessions_with, mut sessions_without) = (Vec::new(), Vec::new());
    let (mut counts, mut bytes) = ((0, 0), (0, 0));
    for run in 0..runs.max(1) * 2 {
        // Which goes first alternates, so neither always follows the other's work.
        let order: [(&Daemon<'_>, bool); 2] = if run % 2 == 0 {
            [(with, true), (&without, false)]
        } else {
            [(&without, false), (with, true)]
        };
        for (daemon, is_with) in order {
            let (took, listed, size) = rendered(daemon);
            let (list_took, all) = sessions(daemon);
            assert_eq!(listed, all);
            if is_with {
                rendered_with.push(took);
                sessions_with.push(list_took);
                (counts.0, bytes.0) = (listed, size);
            } else {
                rendered_without.push(took);
                sessions_without.push(list_took);
                (counts.1, bytes.1) = (listed, size);
            }
        }
    }
    assert_eq!(
        counts.0 - counts.1,
        copilot_count,
        "the listing with Copilot holds every Copilot session more"
    );

    println!(
        "  with the {copilot_count} Copilot sessions ({} listed, {:.1} MB rendered) and without \
         them ({} listed, {:.1} MB), two daemons asked in turn:",
        counts.0,
        bytes.0 as f64 / 1e6,
        counts.1,
        bytes.1 as f64 / 1e6
    );
    report(
        "    every session, kept rendering, with Copilot ",
        &rendered_with,
    );
    report(
        "      without Copilot                            ",
        &rendered_without,
    );
    report(
        "    every session, index_sessions, with Copilot ",
        &sessions_with,
    );
    report(
        "      without Copilot                            ",
        &sessions_without,
    );
    println!(
        "    Copilot adds {:+.2} ms to the kept rendering, {:+.2} ms to index_sessions (medians; \
         goal: ≤ 5 ms)",
        ms(median(&rendered_with)) - ms(median(&rendered_without)),
        ms(median(&sessions_with)) - ms(median(&sessions_without)),
    );

    if let Ok(client) = BlockingClient::connect(&home, &options) {
        let _ = client.call(ShutdownParams {
            reason: Some("bench done".to_owned()),
        });
    }
    let _ = child.wait();
}

/// The Copilot walk in this process, as the daemon's index walks it: the catalog alone, a cold
/// walk (a new cache: every `session.db` opened), a warm one (the cache kept: stamps only).
/// Returns how many sessions the walk lists.
fn walks(store: &Path, runs: usize) -> usize {
    let places = CopilotPlaces::under_home(store);
    let host_db = places.places[0].host_db.clone().unwrap();
    let mut catalog_times = Vec::new();
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut listed = 0;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let rows = catalog::read_host_db(&host_db).unwrap();
        catalog_times.push(started.elapsed());

        let mut cache = Cache::default();
        let mut warnings = Warnings::default();
        let started = Instant::now();
        let sessions = stores_copilot::list_cached(&places, &mut cache, &mut warnings);
        cold.push(started.elapsed());
        assert!(warnings.items.is_empty(), "{:?}", warnings.items);
        assert_eq!(sessions.len(), rows.len());
        listed = sessions.len();

        let started = Instant::now();
        let again = stores_copilot::list_cached(&places, &mut cache, &mut warnings);
        warm.push(started.elapsed());
        assert_eq!(again.len(), listed);
    }
    println!();
    println!("  the {listed} Copilot sessions walked in this process:");
    report(
        "    catalog alone (agent-host.db)                ",
        &catalog_times,
    );
    report("    cold walk (every session.db, events tail)    ", &cold);
    report("    warm re-walk (nothing changed: stamps only)  ", &warm);
    listed
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[(sorted.len() - 1) / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
