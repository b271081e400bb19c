//! What the daemon's usage index costs after one reply is appended (issue 29): a synthetic store
//! is made (or reused) under `DIR`, read whole once, and then a reply is appended to its largest
//! Claude transcript `RUNS` times, each followed by the refresh of that one file
//! ([`UsageIndex::refresh_changed`], as the daemon does on the session index's change), the
//! accounting decided again and each session's cost (the listing's table) made again — over
//! every charge, and kept by file ([`SessionTotals`], what the daemon does): each step
//! timed (time on a CPU), with the refresh's stats, beside the decision made over every file at
//! once ([`cross_agent_usage::account`], what each refresh after a change did before).
//!
//! `cargo run -p cross-agent-usage --example usage_refresh -- DIR [CLAUDE CODEX GROK [RUNS]]`
//! (default 2,000 + 2,000 + 400 sessions, 5 runs). With `USAGE_RECORDS=DIR2` the index
//! writes its call records and key states to unnamed files in `DIR2`, as the daemon does
//! (`UsageIndex::with_records_in`).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use cross_agent_protocol::Agent;
use cross_agent_protocol::timestamp::UnixMillis;
use cross_agent_stores::index::ChangedFiles;
use cross_agent_stores::{FileStamp, SourceFile, StoreRoots};
use cross_agent_testkit::synthetic_stores::{SyntheticSpec, ensure};
use cross_agent_usage::{GroupBy, PriceTable, Report, SessionTotals, UsageIndex};

/// The `cross-agent` binary's allocator, so the figures are the daemon's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.first()
            .context("usage: usage_refresh DIR [CLAUDE CODEX GROK [RUNS]]")?,
    );
    let count = |i: usize, default: usize| -> Result<usize> {
        args.get(i)
            .map_or(Ok(default), |v| v.parse().context("a count"))
    };
    let mut spec = SyntheticSpec::full(0);
    (spec.claude, spec.codex, spec.grok, spec.copilot) =
        (count(1, 2_000)?, count(2, 2_000)?, count(3, 400)?, 0);
    let runs = count(4, 5)?;
    let home = dir.join("home");
    let (generated, _) = ensure(&home, &spec)?;
    let largest = generated
        .largest_claude
        .context("the store has no Claude transcript")?;
    let roots = StoreRoots::under_home(&home);
    let prices = PriceTable::shipped()?;

    let mut index = UsageIndex::new();
    if let Some(records) = std::env::var_os("USAGE_RECORDS") {
        index = index.with_records_in(std::path::Path::new(&records));
    }
    let mut totals = SessionTotals::new();
    let mut warnings = Vec::new();
    let at = Cpu::now();
    let stats = index.refresh(&roots, &mut warnings);
    let accounting = index.accounting();
    let charges = accounting.charges().count();
    totals.by_session(&accounting, &prices);
    println!(
        "cold: {} files, {} charges, {:.0} ms",
        stats.files_seen,
        charges,
        ms(at)
    );

    // What a refresh after a change cost before the ledger: the decision over every parse.
    let files = cross_agent_usage::scan::scan(&roots).files;
    let at = Cpu::now();
    let whole = cross_agent_usage::account(&files);
    println!(
        "the decision over every file at once: {:.1} ms ({} charges)",
        ms(at),
        whole.charges().count()
    );
    drop((files, whole));

    for n in 0..runs {
        let line = serde_json::json!({"type": "assistant", "sessionId": "bench",
            "requestId": format!("req-refresh-{n}"), "timestamp": UnixMillis::now().to_rfc3339(),
            "message": {"id": format!("msg-refresh-{n}-{}", UnixMillis::now().0),
                "model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 5}}});
        let mut file = std::fs::OpenOptions::new().append(true).open(&largest)?;
        writeln!(file, "{line}")?;
        drop(file);
        let meta = std::fs::metadata(&largest)?;
        let changes = Arc::new(ChangedFiles {
            changed: vec![SourceFile {
                agent: Agent::Claude,
                path: largest.clone(),
                stamp: FileStamp {
                    size: meta.len(),
                    mtime_ns: std::os::unix::fs::MetadataExt::mtime(&meta)
                        .checked_mul(1_000_000_000)
                        .map(|s| s + std::os::unix::fs::MetadataExt::mtime_nsec(&meta)),
                },
                compressed: false,
                sidecar: None,
                scope_cwd: None,
            }],
            gone: Vec::new(),
        });
        let at = Cpu::now();
        let stats = index.refresh_changed(&roots, &[changes], &mut warnings);
        let refreshed = ms(at);
        let at = Cpu::now();
        let accounting = index.accounting();
        let accounted = ms(at);
        let at = Cpu::now();
        let report = Report::build(&accounting, &prices, GroupBy::Session, None);
        let by_session = ms(at);
        let at = Cpu::now();
        let (rows, shares) = totals.by_session(&accounting, &prices);
        let kept = ms(at);
        println!(
            "append {n}: refresh {refreshed:.1} ms ({} seen, {} appended, {} B), accounting \
             {accounted:.1} ms ({:?}), by session {by_session:.1} ms ({} rows), kept by file \
             {kept:.1} ms ({} rows, {shares:?})",
            stats.files_seen,
            stats.files_appended,
            stats.bytes_read,
            index.accounting_stats(),
            report.rows.len(),
            rows.len()
        );
    }
    Ok(())
}

/// This thread's time on a CPU since `at` was taken, in ms: on a loaded machine the wall clock
/// says more about the other processes.
fn ms(at: Cpu) -> f64 {
    (Cpu::now().0 - at.0) as f64 / 1e6
}

/// This thread's time on a CPU (`/proc/thread-self/schedstat`), in ns.
#[derive(Clone, Copy)]
struct Cpu(u64);

impl Cpu {
    fn now() -> Cpu {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        Cpu(text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0))
    }
}
