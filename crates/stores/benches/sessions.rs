//! The session index benchmark: figures printed beside their targets, never asserted.
//!
//! Generates (once, then reuses) a synthetic store shaped like the real ones and measures:
//! cold full listing, warm listing, exact-name resolution over all sessions warm, bytes read
//! after 1 MB is appended to one transcript, and the peak memory of a cold scan (measured in a
//! child process from `/proc/self/status` `VmHWM`, so the parent's own allocations do not count).
//!
//! Size by environment, so CI can run a small version quickly:
//! - `CROSS_AGENT_BENCH_SESSIONS=claude,codex,grok[,copilot]` (default `10000,10000,2000,1000`,
//!   about 1 GB; the Copilot sessions are the daemon's index bench's, listed here too);
//! - `CROSS_AGENT_BENCH_SIZE_SCALE` multiplies every session's size (default 1);
//! - `CROSS_AGENT_BENCH_DIR` where the store lives (default `/tmp/cross-agent-bench-…`, named
//!   for the spec so different sizes do not clobber each other);
//! - `CROSS_AGENT_BENCH_RUNS` warm repetitions (default 5; the median is shown).
//!
//! "Cold" means no session cache and no remembered folder listings: every file is read and
//! parsed. Run as root, the page cache is dropped before each cold figure, so the files come
//! from the device as after a boot; beside our figure, in the same run, are the floors: opening
//! every file and reading 4 KB of it with 16 readers and with one, and reading every byte with
//! 16. The cold listing is also checked against the generator's truth (every session listed,
//! every generated name on its session). Not root, the cold figures are from memory and say so.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_stores::index::{IO_READERS, RefreshOptions};
use cross_agent_stores::live::{LiveOptions, LiveScanner};
use cross_agent_stores::resolve::{self, Lookup, Scope};
use cross_agent_stores::scan::{Listing, ScanOptions, Scanner, list_sessions};
use cross_agent_stores::{Agent, StoreRoots};
use cross_agent_testkit::synthetic_stores::{Generated, SyntheticSpec, ensure};

const CHILD_ENV: &str = "CROSS_AGENT_BENCH_CHILD";

fn main() -> Result<()> {
    if let Ok(role) = std::env::var(CHILD_ENV) {
        return child(&role);
    }
    let spec = spec_from_env()?;
    let dir = bench_dir(&spec);
    let home = dir.join("home");
    let (generated, gen_time) = ensure(&home, &spec)?;
    let roots = StoreRoots::under_home(&home);
    let cache = dir.join("xa-home/cache/sessions-index.bin");
    // The state directory exists before its cache is written, as start-up makes it.
    std::fs::create_dir_all(dir.join("xa-home"))?;
    let runs: usize = env_or("CROSS_AGENT_BENCH_RUNS", 5)?;

    println!("session index benchmark");
    println!(
        "  store: {} ({} Claude + {} Codex + {} Grok + {} Copilot sessions, {} files, {:.1} MB{})",
        home.display(),
        spec.claude,
        spec.codex,
        spec.grok,
        spec.copilot,
        generated.files,
        generated.bytes as f64 / 1e6,
        gen_time.map_or_else(
            || ", reused".to_owned(),
            |t| format!(", generated in {:.1} s", t.as_secs_f64())
        ),
    );
    println!(
        "  threads: {} (cold reads: {IO_READERS}); page cache: {}",
        RefreshOptions::default().threads,
        if can_drop_page_cache() {
            "dropped before each cold figure"
        } else {
            "NOT dropped (not root): cold figures are from memory"
        }
    );

    // Raw read of every byte, for scale.
    let raw_started = Instant::now();
    let raw_bytes = read_everything(&home)?;
    let raw = raw_started.elapsed();

    // Cold, as a first listing after boot: no session cache and no folder listings, the page
    // cache dropped before each figure when this process may (root), and the floors measured
    // beside ours in the same run. The files are found before the floors start, so the floors
    // do not even pay for listing the folders (ours does).
    let files = all_files(&home);
    let dropped = drop_page_cache();
    let (_, floor_readers) = timed(|| read_files(&files, IO_READERS, HEAD_BYTES));
    drop_page_cache();
    let (_, floor_one) = timed(|| read_files(&files, 1, HEAD_BYTES));
    drop_page_cache();
    let (_, floor_whole) = timed(|| read_files(&files, IO_READERS, usize::MAX));
    let _ = fs::remove_file(&cache);
    let _ = fs::remove_file(cross_agent_stores::walk::dir_cache_file(&cache));
    drop_page_cache();
    let (cold_listing, cold) = timed(|| list(&roots, Some(&cache)));
    let sessions = cold_listing.sessions.len();
    let missing = completeness(&cold_listing, &spec, &generated);

    // Warm: a fresh load of the cache each time, as a new process would. Each run is preceded by
    // the baseline — a plain single-threaded `read_dir` + `stat` of every entry of the same
    // stores — so the ratio between the two means something on a busy machine.
    let claude_root = home.join(".claude");
    let mut warm_times = Vec::new();
    let mut walk_all_times = Vec::new();
    let mut warm_listing = Listing::default();
    for _ in 0..runs {
        walk_all_times.push(timed(|| plain_walk(&home)).1);
        let (listing, took) = timed(|| list(&roots, Some(&cache)));
        warm_times.push(took);
        warm_listing = listing;
    }
    let warm = median(&mut warm_times);
    let walk_all = median(&mut walk_all_times);

    // Exact-name resolution warm: a warm listing plus the lookup, as `sessions resolve` does.
    let target = generated
        .named
        .iter()
        .find(|n| n.agent == "claude")
        .context("the generated store has no named Claude session")?;
    let cwd = PathBuf::from("/");
    let lookup = Lookup {
        agent: Agent::Claude,
        scope: Scope::Any,
        cwd: &cwd,
        bound: None,
    };
    let mut resolve_times = Vec::new();
    let mut lookup_times = Vec::new();
    let mut walk_claude_times = Vec::new();
    for _ in 0..runs {
        walk_claude_times.push(timed(|| plain_walk(&claude_root)).1);
        let started = Instant::now();
        let listing = list_agents(&roots, Some(&cache), vec![Agent::Claude]);
        let lookup_started = Instant::now();
        let found = resolve::lookup(&listing.sessions, &target.name, lookup)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        lookup_times.push(lookup_started.elapsed());
        resolve_times.push(started.elapsed());
        if found.session.session_id != target.session_id {
            bail!("{} resolved to the wrong session", target.name);
        }
    }
    let resolve_warm = median(&mut resolve_times);
    let lookup_only = median(&mut lookup_times);
    let walk_claude = median(&mut walk_claude_times);

    // The same with the index kept in memory between lookups, as a long-lived daemon holds it:
    // no cache file to load, only the walk of Claude's store and the lookup.
    let mut scanner = Scanner::new(ScanOptions {
        cache_file: Some(cache.clone()),
        refresh: RefreshOptions::default(),
        agents: vec![Agent::Claude],
    });
    scanner.list(&roots);
    let mut scanner_times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let listing = scanner.list(&roots);
        let found = resolve::lookup(&listing.sessions, &target.name, lookup)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        scanner_times.push(started.elapsed());
        if found.session.session_id != target.session_id {
            bail!("{} resolved to the wrong session", target.name);
        }
    }
    let resolve_in_memory = median(&mut scanner_times);

    // The daemon's live index: kept current by notifications, so with nothing changed a lookup
    // walks nothing.
    let live = LiveScanner::new(
        ScanOptions {
            cache_file: Some(cache.clone()),
            refresh: RefreshOptions::default(),
            agents: Vec::new(),
        },
        LiveOptions::default(),
    );
    live.list_agents(&roots, &[Agent::Claude]);
    let mut live_times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let listing = live.list_agents(&roots, &[Agent::Claude]);
        let found = resolve::lookup(&listing.sessions, &target.name, lookup)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        live_times.push(started.elapsed());
        if found.session.session_id != target.session_id {
            bail!("{} resolved to the wrong session", target.name);
        }
    }
    let resolve_live = median(&mut live_times);
    // As the daemon resolves now: the held sessions lent to the lookup, only the one found
    // copied out.
    let mut lent_times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let found = live.with_sessions(&roots, Agent::Claude, |sessions, _| {
            resolve::lookup(sessions, &target.name, lookup)
                .map(|found| found.session.session_id().to_owned())
                .map_err(|e| anyhow::anyhow!("{e}"))
        })?;
        lent_times.push(started.elapsed());
        if found != target.session_id {
            bail!("{} resolved to the wrong session", target.name);
        }
    }
    let resolve_lent = median(&mut lent_times);

    // Append 1 MB (with a rename at the end) to the largest Claude transcript.
    let appended = generated
        .largest_claude
        .clone()
        .context("the generated store has no Claude transcript")?;
    let original_len = fs::metadata(&appended)?.len();
    let new_name = "bench-appended-name";
    let appended_bytes = append_megabyte(&appended, new_name)?;
    let (after_append, append_time) = timed(|| list(&roots, Some(&cache)));
    let renamed = resolve::lookup(&after_append.sessions, new_name, lookup).is_ok();
    // Put the file back so the next run starts from the same store.
    fs::OpenOptions::new()
        .write(true)
        .open(&appended)?
        .set_len(original_len)?;

    // Peak memory of a cold scan, in a child process.
    let peak_kb = cold_child_peak(&home)?;

    let ok = |good: bool| if good { "ok" } else { "MISSED" };
    println!();
    println!("  {:<46} {:>14}   {:>12}", "figure", "measured", "target");
    println!(
        "  {:<46} {:>11.0} ms   {:>12}",
        format!(
            "raw read of every byte ({:.0} MB, no parsing)",
            raw_bytes as f64 / 1e6
        ),
        ms(raw),
        "(for scale)"
    );
    let cold_goal = floor_readers.mul_f64(1.25);
    println!(
        "  {:<46} {:>11.0} ms   {:>9} {}",
        format!(
            "cold full listing ({sessions} sessions{})",
            if dropped { ", page cache dropped" } else { "" }
        ),
        ms(cold),
        format!("≤ {:.0} ms", ms(cold_goal)),
        ok(cold <= cold_goal)
    );
    println!(
        "  {:<46} {:>11.0} ms   {:>12}",
        format!("  floor: {HEAD_BYTES} B of every file, {IO_READERS} readers"),
        ms(floor_readers),
        "(goal ×1.25)"
    );
    println!(
        "  {:<46} {:>11.0} ms   {:>12}",
        format!("  floor: {HEAD_BYTES} B of every file, 1 reader"),
        ms(floor_one),
        ""
    );
    println!(
        "  {:<46} {:>11.0} ms   {:>12}",
        format!("  floor: every byte of every file, {IO_READERS} readers"),
        ms(floor_whole),
        ""
    );
    println!(
        "  {:<46} {:>14}   {:>12}",
        "  complete against the generator's truth",
        if missing.is_empty() {
            "yes".to_owned()
        } else {
            format!("NO ({})", missing.len())
        },
        "yes"
    );
    for line in missing.iter().take(5) {
        println!("    {line}");
    }
    println!(
        "  {:<46} {:>11.1} ms   {:>9} {}",
        format!("warm listing (median of {runs})"),
        ms(warm),
        "≤ 100 ms",
        ok(warm <= Duration::from_millis(100))
    );
    println!(
        "  {:<46} {:>11.1} ms   {:>12}",
        format!(
            "  baseline: read_dir+stat of all, 1 thread ({:.2}x)",
            warm.as_secs_f64() / walk_all.as_secs_f64()
        ),
        ms(walk_all),
        ""
    );
    println!(
        "  {:<46} {:>11.1} ms   {:>9} {}",
        "exact-name resolution, warm (Claude walk + lookup)",
        ms(resolve_warm),
        "≤ 50 ms",
        ok(resolve_warm <= Duration::from_millis(50))
    );
    println!(
        "  {:<46} {:>11.1} ms   {:>12}",
        format!(
            "  baseline: read_dir+stat of Claude's ({:.2}x)",
            resolve_warm.as_secs_f64() / walk_claude.as_secs_f64()
        ),
        ms(walk_claude),
        ""
    );
    println!(
        "  {:<46} {:>11.2} ms   {:>12}",
        "  of which the lookup over all sessions",
        ms(lookup_only),
        ""
    );
    println!(
        "  {:<46} {:>11.1} ms   {:>9} {}",
        "  same, index held in memory (daemon)",
        ms(resolve_in_memory),
        "≤ 50 ms",
        ok(resolve_in_memory <= Duration::from_millis(50))
    );
    println!(
        "  {:<46} {:>11.2} ms",
        "  same, live index, sessions copied (before)",
        ms(resolve_live),
    );
    println!(
        "  {:<46} {:>11.2} ms   {:>9} {}",
        "  same, live index, sessions lent (daemon)",
        ms(resolve_lent),
        "≤ 5 ms",
        ok(resolve_lent <= Duration::from_millis(5))
    );
    println!(
        "  {:<46} {:>11.2} MB   {:>9} {}",
        format!(
            "bytes read after appending {:.2} MB",
            appended_bytes as f64 / 1e6
        ),
        after_append.stats.bytes_read as f64 / 1e6,
        "≈ 1 MB",
        ok(after_append.stats.bytes_read <= appended_bytes + 64 * 1024)
    );
    println!(
        "  {:<46} {:>11.1} ms   {:>12}",
        "  listing time after that append",
        ms(append_time),
        ""
    );
    println!(
        "  {:<46} {:>14}   {:>12}",
        "  appended custom-title resolves",
        if renamed { "yes" } else { "NO" },
        "yes"
    );
    println!(
        "  {:<46} {:>11.1} MB   {:>9} {}",
        "peak memory of a cold scan (VmHWM, child)",
        peak_kb as f64 / 1024.0,
        "≤ 150 MB",
        ok(peak_kb <= 150 * 1024)
    );
    println!();
    println!(
        "  cold: {} files read, {:.1} MB; warm: {} unchanged, {} bytes read; cache {:.1} MB",
        cold_listing.stats.files_new + cold_listing.stats.files_reread,
        cold_listing.stats.bytes_read as f64 / 1e6,
        warm_listing.stats.files_unchanged,
        warm_listing.stats.bytes_read,
        fs::metadata(&cache).map_or(0.0, |m| m.len() as f64 / 1e6),
    );
    let w = warm_listing.walk;
    println!(
        "  warm walk: {} folders listed, {} remembered, {} files stat'ed",
        w.dirs_listed, w.dirs_reused, w.files_stated
    );
    let t = warm_listing.timings;
    println!(
        "  warm breakdown (last run): load cache {:.1} ms, refresh (stat) {:.1} ms, names {:.1} ms, save {:.1} ms",
        ms(t.load_cache),
        ms(t.refresh),
        ms(t.names),
        ms(t.save_cache)
    );
    let t = after_append.timings;
    println!(
        "  after the append: load cache {:.1} ms, refresh {:.1} ms, names {:.1} ms, save {:.1} ms",
        ms(t.load_cache),
        ms(t.refresh),
        ms(t.names),
        ms(t.save_cache)
    );
    if !cold_listing.warnings.is_empty() {
        println!(
            "  warnings on the cold listing: {}",
            cold_listing.warnings.len()
        );
        for w in cold_listing.warnings.iter().take(5) {
            println!("    {w}");
        }
    }
    Ok(())
}

fn list(roots: &StoreRoots, cache: Option<&Path>) -> Listing {
    list_agents(roots, cache, Vec::new())
}

/// A listing of some agents only (empty: all), as `sessions resolve <agent>` does.
fn list_agents(roots: &StoreRoots, cache: Option<&Path>, agents: Vec<Agent>) -> Listing {
    list_sessions(
        roots,
        &ScanOptions {
            cache_file: cache.map(Path::to_path_buf),
            refresh: RefreshOptions::default(),
            agents,
        },
    )
}

/// The child's job: one cold listing without a cache, then report the peak resident memory.
fn child(role: &str) -> Result<()> {
    let home = PathBuf::from(std::env::var("CROSS_AGENT_BENCH_HOME")?);
    if let Some((agents, cache)) = role
        .strip_prefix("warm:")
        .map(|cache| (Vec::new(), cache))
        .or_else(|| {
            role.strip_prefix("claude:")
                .map(|cache| (vec![Agent::Claude], cache))
        })
    {
        // For profiling: repeated warm listings (all agents, or Claude's as a resolution does)
        // against an existing cache; `CROSS_AGENT_BENCH_CHILD_RUNS=1` profiles the listing of a
        // fresh process, as the CLI's is.
        for _ in 0..env_or("CROSS_AGENT_BENCH_CHILD_RUNS", 20)? {
            let listing = list_agents(
                &StoreRoots::under_home(&home),
                Some(Path::new(cache)),
                agents.clone(),
            );
            let t = listing.timings;
            println!(
                "load {:.1} refresh {:.1} names {:.1} save {:.1}",
                ms(t.load_cache),
                ms(t.refresh),
                ms(t.names),
                ms(t.save_cache)
            );
        }
        return Ok(());
    }
    if role != "cold" {
        bail!("unknown bench child role {role:?}");
    }
    let listing = list(&StoreRoots::under_home(&home), None);
    let status = fs::read_to_string("/proc/self/status")?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().trim_end_matches("kB").trim().to_owned())
        .context("no VmHWM in /proc/self/status")?;
    println!("{hwm} {}", listing.sessions.len());
    Ok(())
}

fn cold_child_peak(home: &Path) -> Result<u64> {
    let out = Command::new(std::env::current_exe()?)
        .env(CHILD_ENV, "cold")
        .env("CROSS_AGENT_BENCH_HOME", home)
        .output()?;
    if !out.status.success() {
        bail!(
            "the cold-scan child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let kb = text
        .split_whitespace()
        .next()
        .context("the cold-scan child printed nothing")?
        .parse::<u64>()?;
    Ok(kb)
}

fn spec_from_env() -> Result<SyntheticSpec> {
    let mut spec = SyntheticSpec::full(0);
    // Run as a test (`cargo test --benches`, no `--bench` argument), a tiny store is enough to
    // show the benchmark works; the full one is for `cargo bench`.
    if !std::env::args().any(|arg| arg == "--bench") {
        (spec.claude, spec.codex, spec.grok, spec.copilot) = (30, 30, 6, 10);
    }
    if let Ok(counts) = std::env::var("CROSS_AGENT_BENCH_SESSIONS") {
        let parts: Vec<usize> = counts
            .split(',')
            .map(|p| p.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .context("CROSS_AGENT_BENCH_SESSIONS must be claude,codex,grok[,copilot] counts")?;
        match parts[..] {
            [claude, codex, grok] => (spec.claude, spec.codex, spec.grok) = (claude, codex, grok),
            [claude, codex, grok, copilot] => {
                (spec.claude, spec.codex, spec.grok, spec.copilot) = (claude, codex, grok, copilot)
            }
            _ => bail!(
                "CROSS_AGENT_BENCH_SESSIONS must be three or four counts: claude,codex,grok[,copilot]"
            ),
        }
    }
    spec.size_scale = env_or("CROSS_AGENT_BENCH_SIZE_SCALE", 1.0)?;
    Ok(spec)
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> Result<T> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("{name}={v:?} is not valid")),
        _ => Ok(default),
    }
}

fn bench_dir(spec: &SyntheticSpec) -> PathBuf {
    match std::env::var_os("CROSS_AGENT_BENCH_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(format!(
            "/tmp/cross-agent-bench-{}-{}-{}-{}-x{}",
            spec.claude, spec.codex, spec.grok, spec.copilot, spec.size_scale
        )),
    }
}

/// Appends about 1 MB of real-shaped records and a final `custom-title` to a transcript.
fn append_megabyte(path: &Path, name: &str) -> Result<u64> {
    use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, append_raw, now_millis};
    let mut t = ClaudeTranscript::new(Path::new("/"), "/home/dev/appended", "appended");
    let now = now_millis();
    let output = "x".repeat(4_000);
    let size = |t: &ClaudeTranscript| t.lines().iter().map(|l| l.len() + 1).sum::<usize>();
    while size(&t) < 1_000_000 {
        t.user("keep going", now)
            .tool_use("ls", now)
            .tool_result(&output, now)
            .assistant_text("done", now);
    }
    t.custom_title(name);
    let mut text = String::with_capacity(size(&t));
    for line in t.lines() {
        text.push_str(line);
        text.push('\n');
    }
    append_raw(path, text.as_bytes())?;
    Ok(text.len() as u64)
}

/// The baseline of a warm listing: every folder under `dir` listed and every entry `stat`ed, on
/// one thread, the plain way. Returns how many entries there were.
fn plain_walk(dir: &Path) -> usize {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            count += 1;
            if let Ok(meta) = entry.metadata()
                && meta.is_dir()
            {
                stack.push(entry.path());
            }
        }
    }
    count
}

/// Reads every file under `dir` once, to time the bare I/O.
fn read_everything(dir: &Path) -> Result<u64> {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    let mut buf = vec![0u8; 256 << 10];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                let mut file = fs::File::open(entry.path())?;
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    total += n as u64;
                }
            }
        }
    }
    Ok(total)
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// How much of each file the head floor reads: enough for any agent's first record.
const HEAD_BYTES: usize = 4096;

/// Every regular file under `dir`.
fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                Ok(kind) if kind.is_file() => files.push(entry.path()),
                _ => {}
            }
        }
    }
    files
}

/// Opens every file and reads up to `limit` bytes of each, on `readers` threads taking the
/// next file as they finish one: the floor of a listing that reads that much.
fn read_files(files: &[PathBuf], readers: usize, limit: usize) -> u64 {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let total = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..readers {
            scope.spawn(|| {
                let mut buf = vec![0u8; 256 << 10];
                while let Some(path) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let Ok(mut file) = fs::File::open(path) else {
                        continue;
                    };
                    let mut left = limit;
                    while left > 0 {
                        let want = left.min(buf.len());
                        match file.read(&mut buf[..want]) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                total.fetch_add(n as u64, Ordering::Relaxed);
                                left -= n;
                            }
                        }
                    }
                }
            });
        }
    });
    total.into_inner()
}

/// Whether this process may drop the page cache (root, with `/proc/sys/vm/drop_caches`).
fn can_drop_page_cache() -> bool {
    fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
        .is_ok()
}

/// Writes dirty pages out and drops the clean ones, so the next reads come from the device.
/// Returns false (and drops nothing) where this process may not.
fn drop_page_cache() -> bool {
    let _ = Command::new("sync").status();
    fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// What the listing lacks against the generator's truth: each agent's count of sessions, and
/// every session the generator named, by its id and its name. Empty when complete.
fn completeness(listing: &Listing, spec: &SyntheticSpec, truth: &Generated) -> Vec<String> {
    let mut missing = Vec::new();
    for (agent, want) in [
        (Agent::Claude, spec.claude),
        (Agent::Codex, spec.codex),
        (Agent::Grok, spec.grok),
        (Agent::Copilot, spec.copilot),
    ] {
        let got = listing.of(agent).count();
        if got != want {
            missing.push(format!(
                "{agent:?}: {got} sessions listed, {want} generated"
            ));
        }
    }
    for named in &truth.named {
        let found = listing.sessions.iter().any(|s| {
            s.agent.as_str() == named.agent
                && s.session_id == named.session_id
                && s.title.as_deref() == Some(named.name.as_str())
        });
        if !found {
            missing.push(format!(
                "{} {} named {:?}",
                named.agent, named.session_id, named.name
            ));
        }
    }
    missing
}
