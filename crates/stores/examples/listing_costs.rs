//! What a listing with costs and an exact-name lookup take over the live index, each beside the
//! way before it in the same run: the listing with every cost looked up and written per session
//! beside the one with the cost fields spliced into the kept text ([`RenderedAgent::recost`]), the whole walk of a lookup
//! beside the one through a [`NameIndex`]. A timing loop, for a debug build when a release one
//! cannot be afforded: the ratios say more than the times.
//!
//! `cargo run -p cross-agent-stores --example listing_costs -- HOME STATE [ROUNDS]`: `HOME`
//! holds the agents' stores (a synthetic store's `home`, only read), `STATE` the session cache.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use cross_agent_stores::held::{HeldSessions, SessionRef};
use cross_agent_stores::index::RefreshOptions;
use cross_agent_stores::live::{ListingSpent, LiveOptions, LiveScanner, SpentTable};
use cross_agent_stores::render::{
    Chosen, Chunks, ListingParts, RenderedAgent, Spent, write_listing_spent,
};
use cross_agent_stores::resolve::{self, ActiveWindow, Lookup, NameIndex, Scope};
use cross_agent_stores::scan::{self, ScanOptions};
use cross_agent_stores::{Agent, StoreRoots, UnixMillis};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: listing_costs HOME STATE [ROUNDS]";
    let home = PathBuf::from(args.next().context(usage)?);
    let state = PathBuf::from(args.next().context(usage)?);
    let rounds: usize = args.next().map_or(Ok(5), |n| n.parse())?;
    std::fs::create_dir_all(&state)?;
    let roots = StoreRoots::under_home(&home);
    let live = LiveScanner::new(
        ScanOptions {
            cache_file: Some(scan::cache_file(&state)),
            refresh: RefreshOptions::default(),
            agents: Vec::new(),
        },
        LiveOptions {
            notifications: false,
            ..LiveOptions::default()
        },
    );
    // Far in the future: nothing active, every element kept (as at rest).
    let clock = (ActiveWindow::from_minutes(0), UnixMillis::now());
    let snapshot = live.snapshot(&roots, &Agent::ALL);
    let by_agent: Vec<(Agent, &HeldSessions)> = Agent::ALL
        .iter()
        .map(|agent| (*agent, snapshot.sessions(*agent)))
        .collect();
    let all: Vec<SessionRef<'_>> = by_agent.iter().flat_map(|(_, s)| s.iter()).collect();
    println!("{} sessions", all.len());
    // As the usage index's table: a cost for most sessions, keyed by id.
    let table: HashMap<String, Spent> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 7 != 0)
        .map(|(i, s)| {
            let spent = Spent {
                cost_usd: (i % 11 != 0).then(|| format!("{}.{:06}", i % 40, i * 7919 % 1_000_000)),
                tokens: Some(i as u64 * 131),
            };
            (s.session_id().to_owned(), spent)
        })
        .collect();
    let spent_of = |s: SessionRef<'_>| table.get(s.session_id()).cloned().unwrap_or_default();
    let rendered: Vec<RenderedAgent> = by_agent
        .iter()
        .map(|(_, s)| RenderedAgent::new(*s))
        .collect();
    let listing = |kept: Option<&[RenderedAgent]>| -> Result<usize> {
        let texts = kept.unwrap_or(&rendered);
        let chosen: Vec<(Agent, Chosen<'_>)> = by_agent
            .iter()
            .enumerate()
            .map(|(n, (agent, sessions))| {
                let chosen = Chosen::Kept {
                    sessions,
                    rendered: &texts[n],
                    indices: (0..sessions.len()).collect(),
                    costs_kept: kept.is_some(),
                };
                (*agent, chosen)
            })
            .collect();
        let mut parts = ListingParts::default();
        write_listing_spent(&mut parts, &chosen, clock.0, clock.1, None, Some(&spent_of));
        send(parts.chunks(|n| texts.get(n)))
    };

    let started = Instant::now();
    let kept: Vec<RenderedAgent> = by_agent
        .iter()
        .zip(&rendered)
        .map(|((_, sessions), rendered)| {
            let mut text = std::sync::Arc::new(rendered.clone());
            RenderedAgent::recost(&mut text, *sessions, &spent_of);
            std::sync::Arc::unwrap_or_clone(text)
        })
        .collect();
    let made_once = started.elapsed();
    // Through the live index as the daemon lists: its kept fields for this table (the first
    // listing makes them, and is not counted).
    let key: SpentTable = std::sync::Arc::new(());
    let through_live = || -> Result<usize> {
        let listing = live.render_listing(
            &roots,
            &Agent::ALL,
            |_| true,
            None,
            (
                clock.0,
                clock.1,
                Some(ListingSpent {
                    table: &key,
                    of: &spent_of,
                    unmoved: None,
                }),
            ),
        );
        send(listing.bytes.chunks())
    };
    through_live()?;
    // Each round takes the three in turn, so a busy machine weighs on each alike.
    let (mut before, mut after, mut live_times) = (Vec::new(), Vec::new(), Vec::new());
    let mut bytes_after = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let bytes_before = listing(None)?;
        before.push(started.elapsed());
        let started = Instant::now();
        bytes_after = listing(Some(&kept))?;
        after.push(started.elapsed());
        let started = Instant::now();
        let bytes_live = through_live()?;
        live_times.push(started.elapsed());
        anyhow::ensure!(
            bytes_before == bytes_after && bytes_after == bytes_live,
            "the listings differ in length"
        );
    }
    println!(
        "listing with costs, {:.1} MB: each cost looked up {} · kept fields {} (made once in {:.0} ms) · through the live index {}",
        bytes_after as f64 / 1e6,
        median(&before),
        median(&after),
        made_once.as_secs_f64() * 1e3,
        median(&live_times),
    );

    let asked = Lookup {
        agent: Agent::Claude,
        scope: Scope::Any,
        cwd: std::path::Path::new("/"),
        bound: None,
    };
    let sessions = snapshot.sessions(Agent::Claude);
    let name = sessions
        .iter()
        .rev()
        .filter_map(|s| s.title())
        .find(|title| resolve::lookup(sessions, title, asked).is_ok())
        .context("no session with a unique title")?
        .to_owned();
    let started = Instant::now();
    let names = NameIndex::new(sessions);
    let index_made = started.elapsed();
    let mut walk = Vec::new();
    let mut indexed = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let whole = resolve::lookup(sessions, &name, asked)?
            .session
            .session_id()
            .to_owned();
        walk.push(started.elapsed());
        let started = Instant::now();
        let found = names
            .lookup(sessions, &name, asked)?
            .session
            .session_id()
            .to_owned();
        indexed.push(started.elapsed());
        anyhow::ensure!(whole == found, "the two lookups differ");
    }
    println!(
        "exact name among {} Claude sessions: the whole walk {} · through the index {} (made once in {:.0} ms)",
        sessions.len(),
        median(&walk),
        median(&indexed),
        index_made.as_secs_f64() * 1e3
    );
    Ok(())
}

/// Writes the chunks out as the daemon does, to nowhere; the bytes written.
fn send<'a>(mut chunks: Chunks<'a, impl Fn(usize) -> Option<&'a RenderedAgent>>) -> Result<usize> {
    let mut sink = std::io::sink();
    let mut total = 0;
    while let Some(chunk) = chunks.next() {
        let chunk = chunk?;
        total += chunk.len();
        sink.write_all(chunk)?;
    }
    Ok(total)
}

fn median(times: &[Duration]) -> String {
    let mut sorted = times.to_vec();
    sorted.sort();
    match sorted.get(sorted.len() / 2) {
        Some(t) => format!("{:.2} ms", t.as_secs_f64() * 1e3),
        None => "-".to_owned(),
    }
}
