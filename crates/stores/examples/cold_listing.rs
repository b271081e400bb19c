//! A cold listing without a daemon and without a session cache — what `sessions --json --scope
//! any` does when no daemon answers and no cache is there (the scale bench's `cold_child`) — on
//! the system allocator, so a heap profiler that watches `malloc` (`heaptrack`) sees every
//! allocation. `index_memory HOME STATE cold` does the same on the binaries' allocator.
//!
//! `cargo run -p cross-agent-stores --example cold_listing -- HOME`: prints the sessions, the
//! rendered listing's size and a hash of its bytes (`now` fixed, so two builds can be compared
//! byte for byte), the time it took and the peak resident set.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use cross_agent_stores::render::{self, Chosen};
use cross_agent_stores::resolve::ActiveWindow;
use cross_agent_stores::scan::{self, ScanOptions};
use cross_agent_stores::{Agent, StoreRoots, UnixMillis};

fn main() -> Result<()> {
    let home = PathBuf::from(
        std::env::args()
            .nth(1)
            .context("usage: cold_listing HOME")?,
    );
    let started = Instant::now();
    let listing = scan::list_sessions(&StoreRoots::under_home(&home), &ScanOptions::default());
    let listed = started.elapsed();
    let chosen: Vec<(Agent, Chosen<'_>)> = Agent::ALL
        .iter()
        .map(|&agent| (agent, Chosen::Sessions(listing.of(agent).collect())))
        .collect();
    let mut sink = render::WriteSink::new(Hashed(0, 0xcbf2_9ce4_8422_2325));
    render::write_listing(
        &mut sink,
        &chosen,
        ActiveWindow::from_minutes(240),
        UnixMillis(1_800_000_000_000),
        None,
    );
    let written = sink.finish()?;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap_or("?")
        .trim();
    println!(
        "{} sessions, {} warnings; listing {} bytes, hash {:016x}; listed in {:.0} ms, \
         all in {:.0} ms; peak {peak}",
        listing.sessions.len(),
        listing.warnings.len(),
        written.0,
        written.1,
        listed.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3,
    );
    Ok(())
}

/// Counts and hashes (FNV-1a) what it is given.
struct Hashed(usize, u64);

impl Write for Hashed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        for &b in buf {
            self.1 = (self.1 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
