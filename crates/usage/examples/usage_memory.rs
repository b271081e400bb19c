//! Where the daemon's usage index's memory goes: the process's resident set after each step the
//! daemon takes for a listing with costs (refresh every file, decide what counts, the table of
//! each session's cost). Run it under a heap profiler (`heaptrack`) for the allocation sites.
//!
//! `cargo run -p cross-agent-usage --example usage_memory -- HOME [RECORDS]`: `HOME` holds the
//! agents' stores (a synthetic store's `home`); with `RECORDS`, a directory, the index writes its
//! call records there as the daemon does (`UsageIndex::with_records_in`), else keeps them on the
//! heap. Run it with `MIMALLOC_PURGE_DELAY=0` for the daemon's
//! resident set: the daemon tells mimalloc to give freed pages back at once (`daemon::memory`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use cross_agent_stores::StoreRoots;
use cross_agent_usage::{GroupBy, PriceTable, Report, UsageIndex};

#[path = "../tests/counted/mod.rs"]
mod counted;
use counted::Counted;

/// The `cross-agent` binary's allocator, so the figures are the daemon's, counting the bytes
/// and blocks live on the heap: the resident set also holds what the allocator keeps after a
/// free, and a heap profiler does not see mimalloc's allocations.
#[global_allocator]
static ALLOCATOR: Counted<mimalloc::MiMalloc> = Counted::new(mimalloc::MiMalloc);

/// The bytes live on the heap now.
fn live_bytes() -> usize {
    ALLOCATOR.bytes().max(0) as usize
}

fn main() -> Result<()> {
    let home = PathBuf::from(
        std::env::args()
            .nth(1)
            .context("usage: usage_memory HOME")?,
    );
    let roots = StoreRoots::under_home(&home);
    step("start", Instant::now());
    let at = Instant::now();
    let mut index = UsageIndex::new();
    if let Some(dir) = std::env::args().nth(2) {
        index = index.with_records_in(std::path::Path::new(&dir));
    }
    let mut warnings = Vec::new();
    let stats = index.refresh(&roots, &mut warnings);
    step(
        &format!(
            "refreshed ({} files, {} MB read, {} warnings, {} compacted in {} ms)",
            stats.files_seen,
            stats.bytes_read >> 20,
            warnings.len(),
            stats.files_compacted,
            stats.compacting.as_millis()
        ),
        at,
    );
    for (part, bytes) in index.heap_parts() {
        println!("  {part}: {:.2} MB", bytes as f64 / 1_048_576.0);
    }
    let at = Instant::now();
    let accounting = index.accounting();
    step(
        &format!(
            "accounted ({} charges, {} copies not counted again, {} shares)",
            accounting.charges().count(),
            accounting.duplicates_skipped,
            accounting.chunks.len()
        ),
        at,
    );
    let at = Instant::now();
    let prices = PriceTable::shipped()?;
    let report = Report::build(&accounting, &prices, GroupBy::Session, None);
    step(&format!("by session ({} rows)", report.rows.len()), at);
    // The warm report's time (`usage --since 7d --by model`, and by session over all time):
    // the median of nine.
    let week_ago = cross_agent_protocol::timestamp::UnixMillis::now().0 - 7 * 24 * 3_600_000;
    for (by, since) in [
        (GroupBy::Model, Some(week_ago)),
        (GroupBy::Model, None),
        (GroupBy::Session, None),
    ] {
        let mut times = Vec::new();
        let mut rows = 0;
        for _ in 0..9 {
            let at = Instant::now();
            let report = Report::build(
                &accounting,
                &prices,
                by,
                since.map(cross_agent_protocol::timestamp::UnixMillis),
            );
            times.push(at.elapsed().as_secs_f64() * 1e3);
            rows = report.rows.len();
        }
        times.sort_by(f64::total_cmp);
        println!(
            "report by {by:?}{} ({rows} rows): median {:.2} ms",
            if since.is_some() { " since 7d" } else { "" },
            times[4]
        );
    }
    if let Some(failure) = index.records_failure() {
        anyhow::bail!(failure);
    }
    drop(report);
    drop(accounting);
    for (part, bytes) in index.heap_parts() {
        println!("  {part}: {:.2} MB", bytes as f64 / 1_048_576.0);
    }
    step("report dropped", Instant::now());
    let at = Instant::now();
    let stats = index.refresh(&roots, &mut warnings);
    step(
        &format!("warm refresh ({} unchanged)", stats.files_unchanged),
        at,
    );
    drop(index);
    step(
        "index dropped (what stays resident with nothing kept)",
        Instant::now(),
    );
    Ok(())
}

fn step(what: &str, at: Instant) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    println!(
        "{what}: live heap {:.1} MB in {} blocks, RSS {:.1} MB, peak {:.1} MB, {:.0} ms",
        live_bytes() as f64 / 1_048_576.0,
        ALLOCATOR.blocks(),
        field("VmRSS:"),
        field("VmHWM:"),
        at.elapsed().as_secs_f64() * 1e3
    );
}
