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
    // What the listing itself holds: its vector's capacity and its sessions' strings.
    let held = listing.sessions.capacity() * std::mem::size_of::<cross_agent_stores::Session>()
        + listing
            .sessions
            .iter()
            .map(cross_agent_stores::Session::heap_bytes)
            .sum::<usize>();
    let resident_listed = status_field("VmRSS:");
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
    let peak = status_field("VmHWM:");
    println!(
        "{} sessions, {} warnings; listing {} bytes, hash {:016x}; listed in {:.0} ms, \
         all in {:.0} ms; peak {peak}; once listed: resident {resident_listed}, the sessions \
         hold {:.1} MB ({} B a session)",
        listing.sessions.len(),
        listing.warnings.len(),
        written.0,
        written.1,
        listed.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3,
        held as f64 / 1e6,
        held / listing.sessions.len().max(1),
    );
    Ok(())
}

/// A field of `/proc/self/status` (`VmRSS:`, `VmHWM:`), as written there.
fn status_field(name: &str) -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .unwrap_or("?")
        .trim()
        .to_owned()
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
