//! Where the session index's memory goes, in counts that do not depend on the machine's speed:
//! the process's resident set (`VmRSS`, `VmHWM` from `/proc/self/status`) and the index's own
//! accounting ([`LiveScanner::heap_bytes`]), after each step a daemon or the CLI takes. Run it
//! under a heap profiler (`heaptrack`) for the allocation sites.
//!
//! `cargo run -p cross-agent-stores --example index_memory -- HOME STATE [daemon|cli]`: `HOME`
//! holds the agents' stores (a synthetic store's `home`), `STATE` the session cache (made when
//! missing; remove it for a cold start). `daemon` (the default) lists through a live index as
//! the daemon does, twice, and looks a name up in each agent's sessions (which makes their name
//! indexes), then starts again from the cache it saved; `cli` lists once as
//! `sessions --json` does without a daemon; `cold` as that, without a session cache either
//! (`STATE` unused; the scale bench's `cold_child`).
//!
//! The daemon tells mimalloc to give freed pages back at once (`daemon::memory`); run this with
//! `MIMALLOC_PURGE_DELAY=0` for the daemon's resident set (without it, mimalloc's default keeps
//! what the walk freed resident until its next call a second later, which an idle daemon never
//! makes).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use cross_agent_stores::index::RefreshOptions;
use cross_agent_stores::live::{LiveBytes, LiveOptions, LiveScanner};
use cross_agent_stores::render::{self, Chosen};
use cross_agent_stores::resolve::{ActiveWindow, Lookup, Scope};
use cross_agent_stores::scan::{self, ScanOptions};
use cross_agent_stores::{Agent, Session, StoreRoots, UnixMillis};

/// The `cross-agent` binary's allocator, so the figures are the daemon's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: index_memory HOME STATE [daemon|cli]";
    let home = PathBuf::from(args.next().context(usage)?);
    let state = PathBuf::from(args.next().context(usage)?);
    let mode = args.next().unwrap_or_else(|| "daemon".to_owned());
    std::fs::create_dir_all(&state)?;
    let roots = StoreRoots::under_home(&home);
    let options = ScanOptions {
        cache_file: Some(scan::cache_file(&state)),
        refresh: RefreshOptions::default(),
        agents: Vec::new(),
    };
    let clock = (ActiveWindow::from_minutes(240), UnixMillis::now());
    step("start", None, 0);
    match mode.as_str() {
        "daemon" => {
            for start in ["first start", "start from the cache"] {
                let live = LiveScanner::new(
                    options.clone(),
                    LiveOptions {
                        notifications: false,
                        ..LiveOptions::default()
                    },
                );
                for listing in ["listing", "listing again"] {
                    let started = Instant::now();
                    let rendered = live.render_listing(
                        &roots,
                        &Agent::ALL,
                        |_| true,
                        None,
                        (clock.0, clock.1, None),
                    );
                    // As the daemon does: written out a chunk at a time.
                    rendered.bytes.write_to(std::io::sink())?;
                    let out = rendered.bytes;
                    let took = started.elapsed();
                    println!(
                        "{start}, {listing}: {} sessions, {:.1} MB in {:.0} ms",
                        rendered.sessions,
                        out.len() as f64 / 1e6,
                        took.as_secs_f64() * 1e3
                    );
                    step(
                        "  rendered, not yet dropped",
                        Some(&live),
                        rendered.sessions,
                    );
                    drop(out);
                    step("  after the listing", Some(&live), rendered.sessions);
                }
                // As a send by name does: each agent's name index made by its first lookup.
                let snapshot = live.snapshot(&roots, &Agent::ALL);
                for agent in Agent::ALL {
                    let asked = Lookup {
                        agent,
                        scope: Scope::Any,
                        cwd: std::path::Path::new("/"),
                        bound: None,
                    };
                    let _ = snapshot.lookup(agent, "no session is named this", asked);
                }
                let sessions = Agent::ALL
                    .iter()
                    .map(|&agent| snapshot.sessions(agent).len())
                    .sum();
                drop(snapshot);
                step("  after a lookup by name", Some(&live), sessions);
            }
        }
        "cli" => {
            let started = Instant::now();
            let listing = scan::list_sessions(&roots, &options);
            step("listed", None, listing.sessions.len());
            let chosen: Vec<(Agent, Chosen<'_>)> = Agent::ALL
                .iter()
                .map(|&agent| {
                    let sessions: Vec<&Session> = listing.of(agent).collect();
                    (agent, Chosen::Sessions(sessions))
                })
                .collect();
            // As `sessions --json` does: written out as it is made.
            let mut sink = render::WriteSink::new(Counted(0));
            render::write_listing(&mut sink, &chosen, clock.0, clock.1, None);
            let written = sink.finish()?.0;
            println!(
                "cli: {} sessions, {:.1} MB in {:.0} ms",
                listing.sessions.len(),
                written as f64 / 1e6,
                started.elapsed().as_secs_f64() * 1e3
            );
            step("written", None, listing.sessions.len());
        }
        "cold" => {
            let started = Instant::now();
            let listing = scan::list_sessions(&roots, &ScanOptions::default());
            step("listed", None, listing.sessions.len());
            let chosen: Vec<(Agent, Chosen<'_>)> = Agent::ALL
                .iter()
                .map(|&agent| (agent, Chosen::Sessions(listing.of(agent).collect())))
                .collect();
            let mut sink = render::WriteSink::new(Counted(0));
            render::write_listing(&mut sink, &chosen, clock.0, clock.1, None);
            let written = sink.finish()?.0;
            println!(
                "cold: {} sessions, {:.1} MB in {:.0} ms",
                listing.sessions.len(),
                written as f64 / 1e6,
                started.elapsed().as_secs_f64() * 1e3
            );
            step("written", None, listing.sessions.len());
        }
        other => bail!("unknown mode {other:?}; {usage}"),
    }
    Ok(())
}

/// A sink that counts what it is given.
struct Counted(usize);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Prints the resident set, its peak and, with a live index, its accounting.
fn step(what: &str, live: Option<&LiveScanner>, sessions: usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    println!(
        "{what}: RSS {:.1} MB, peak {:.1} MB",
        field("VmRSS:"),
        field("VmHWM:")
    );
    if let Some(live) = live {
        let b: LiveBytes = live.heap_bytes();
        let per = |n: usize| n as f64 / sessions.max(1) as f64;
        let mb = |n: usize| n as f64 / 1e6;
        let i = b.index;
        println!(
            "    accounted {:.1} MB ({:.0} B/session): index {:.1} MB [{} entries: records {:.1} \
             ({:.0} B/s), paths {:.1} ({:.0}), folds {:.1} ({:.0}), session strings {:.1} ({:.0}); \
             cache entries {:.1} ({:.0}), cache folds {:.1}, folder listings {:.1} ({:.0})]; held {} sessions: records {:.1} \
             ({:.0}), strings {:.1} ({:.0}); names {:.1} ({:.0}); rendered {:.1} ({:.0}), and \
             {:.1} ({:.0}) in files",
            mb(b.total()),
            per(b.total()),
            mb(i.total()),
            i.entries,
            mb(i.records),
            per(i.records),
            mb(i.paths),
            per(i.paths),
            mb(i.folds),
            per(i.folds),
            mb(i.sessions),
            per(i.sessions),
            mb(i.stored),
            per(i.stored),
            mb(i.blob),
            mb(i.dirs),
            per(i.dirs),
            b.sessions,
            mb(b.session_records),
            per(b.session_records),
            mb(b.session_strings),
            per(b.session_strings),
            mb(b.names),
            per(b.names),
            mb(b.rendered),
            per(b.rendered),
            mb(b.rendered_in_files),
            per(b.rendered_in_files),
        );
    }
}
