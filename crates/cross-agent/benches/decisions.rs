//! The decisions log benchmark (docs/spec/vsc-relay.txt): `cross-agent decisions --since 24h --by kind` over
//! 1,000,000 lines, target ≤ 1 s. Figures are printed beside the target, never asserted.
//!
//! Generates realistic records (the engine's kinds in plausible proportions, with ids, guards
//! and details) spread evenly over the last three days, written as the writer would leave them:
//! rotated files of 16 MiB (`decisions.1.jsonl`, …) and the current `decisions.jsonl`. Then it
//! measures the query in-process (the library) and through the real binary, the same query over
//! the whole log (no window: every file read), a listing of the last hour, and the writer's
//! append cost.
//!
//! Size by environment, so a small version runs fast:
//! - `CROSS_AGENT_BENCH_DECISIONS` lines (default 1,000,000 under `cargo bench`; 20,000 when run
//!   as a test by `cargo test --benches`);
//! - `CROSS_AGENT_BENCH_RUNS` repetitions of each timing (default 5; median and best shown);
//! - `CROSS_AGENT_BENCH_DIR` where the log is written (default a temporary directory).
//!
//! The files are in the OS page cache when queried (just written); the raw read of every byte is
//! printed for scale. Beside ours, in the same run: DuckDB's `read_json` answering the same
//! question over the same files (when a Python with the `duckdb` package is found: the bench
//! tools' venv `.tools/bench-venv`, which `scripts/bench-tools` makes, else `python3`), and
//! `grep -c` passing over every byte, the floor.

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_decisions::query::{self, Answer, FieldPath, Query};
use cross_agent_decisions::rotate::{DEFAULT_MAX_BYTES, rotated_path};
use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, LogConfig, Outcome, clock};

const TARGET: Duration = Duration::from_secs(1);
const SPAN_MS: i64 = 3 * 86_400_000;

fn main() -> Result<()> {
    let full = std::env::args().any(|arg| arg == "--bench");
    let lines: u64 = env_or(
        "CROSS_AGENT_BENCH_DECISIONS",
        if full { 1_000_000 } else { 20_000 },
    )?;
    let runs: usize = env_or("CROSS_AGENT_BENCH_RUNS", if full { 5 } else { 1 })?;
    let _temp;
    let dir = match std::env::var_os("CROSS_AGENT_BENCH_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            _temp = tempfile::Builder::new()
                .prefix("cross-agent-bench-decisions-")
                .tempdir()?;
            _temp.path().to_owned()
        }
    };
    fs::create_dir_all(&dir)?;

    let started = Instant::now();
    let generated = generate(&dir, lines)?;
    let gen_time = started.elapsed();
    println!("decisions log benchmark");
    println!(
        "  log: {} — {lines} lines over 3 days, {} files ({} rotated of {} MiB), {:.1} MB, \
         generated in {:.1} s",
        dir.display(),
        generated.files,
        generated.files - 1,
        DEFAULT_MAX_BYTES / (1024 * 1024),
        generated.bytes as f64 / 1e6,
        gen_time.as_secs_f64()
    );
    println!(
        "  threads: {}; load average before: {}",
        std::thread::available_parallelism().map_or(1, usize::from),
        load_average()
    );

    let (raw_bytes, raw) = timed(|| read_everything(&dir));
    let raw_bytes = raw_bytes?;

    let now = clock::now_millis();
    let by_kind = Query {
        since: Some(query::parse_time("24h", now)?),
        group_by: vec![FieldPath::parse("kind")?],
        ..Query::default()
    };
    let (report, lib_times) = repeat(runs, || Ok(query::run(&dir, &by_kind)?))?;
    let lib_total = report.stats.matched;

    let binary = env!("CARGO_BIN_EXE_cross-agent");
    let (output, bin_times) = repeat(runs, || {
        Command::new(binary)
            .args(["decisions", "--since", "24h", "--by", "kind", "--json"])
            .env("CROSS_AGENT_HOME", &dir)
            .output()
            .context("running cross-agent decisions")
    })?;
    if !output.status.success() {
        bail!(
            "cross-agent decisions failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let bin_json: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let bin_total = bin_json["total"].as_u64().unwrap_or(0);
    // `24h` is read when each run starts, so the counts above differ by the records of the
    // seconds between runs; the same absolute window must count the same.
    let since = by_kind.since.clone().unwrap_or_default();
    let check = Command::new(binary)
        .args(["decisions", "--since", &since, "--by", "kind", "--json"])
        .env("CROSS_AGENT_HOME", &dir)
        .output()?;
    let check_json: serde_json::Value = serde_json::from_slice(&check.stdout)?;
    let check_total = check_json["total"].as_u64().unwrap_or(0);

    let all_by_kind = Query {
        group_by: vec![FieldPath::parse("kind")?],
        ..Query::default()
    };
    let (all_report, all_times) = repeat(runs, || Ok(query::run(&dir, &all_by_kind)?))?;

    let two_fields = Query {
        since: by_kind.since.clone(),
        group_by: vec![
            FieldPath::parse("kind")?,
            FieldPath::parse("details.target_selected_by")?,
        ],
        ..Query::default()
    };
    let (_, dotted_times) = repeat(runs, || Ok(query::run(&dir, &two_fields)?))?;

    let last_hour = Query {
        since: Some(query::parse_time("1h", now)?),
        ..Query::default()
    };
    let (hour_report, hour_times) = repeat(runs, || Ok(query::run(&dir, &last_hour)?))?;
    let hour_records = match &hour_report.answer {
        Answer::Records(records) => records.len(),
        Answer::Groups(_) => 0,
    };

    let append = writer_cost(if full { 20_000 } else { 2_000 })?;

    // Peers on the same files: DuckDB's JSON reader answering the same question (when the
    // `duckdb` Python package is there), and `grep -c` passing over every byte once.
    let since_text = by_kind.since.clone().unwrap_or_default();
    let duckdb = duckdb_times(&dir, &since_text, runs);
    let (_, grep_times) = repeat(runs, || {
        Command::new("grep")
            .arg("-c")
            .arg("\"kind\"")
            .args(log_files(&dir)?)
            .output()
            .context("running grep")
    })?;

    println!();
    println!(
        "  {:<58} {:>10} {:>10} {:>8}",
        "measure", "median", "best", "target"
    );
    let line = |name: &str, times: &[Duration], target: Option<Duration>| {
        let (median, best) = stats(times);
        println!(
            "  {:<58} {:>8.1}ms {:>8.1}ms {:>8}",
            name,
            ms(median),
            ms(best),
            target.map_or_else(|| "-".to_owned(), |t| format!("≤{:.0}ms", ms(t)))
        );
    };
    line(
        &format!("--since 24h --by kind, library ({lib_total} matched)"),
        &lib_times,
        Some(TARGET),
    );
    line(
        &format!("--since 24h --by kind, binary ({bin_total} matched)"),
        &bin_times,
        Some(TARGET),
    );
    match &duckdb {
        Ok((times, total)) => line(
            &format!("  peer: DuckDB read_json, same query ({total} matched)"),
            times,
            None,
        ),
        Err(why) => println!("  {:<58} {why}", "  peer: DuckDB"),
    }
    line("  floor: grep -c over every file", &grep_times, None);
    line(
        &format!(
            "--by kind, whole log, library ({} matched)",
            all_report.stats.matched
        ),
        &all_times,
        None,
    );
    line(
        "--since 24h --by kind,details.target_selected_by, library",
        &dotted_times,
        None,
    );
    line(
        &format!("--since 1h (listing {hour_records} records), library"),
        &hour_times,
        None,
    );
    println!(
        "  {:<58} {:>8.1}ms {:>10} {:>8}",
        format!(
            "raw read of all {:.1} MB, for scale",
            raw_bytes as f64 / 1e6
        ),
        ms(raw),
        "",
        "-"
    );
    println!(
        "  {:<58} {:>8.2}µs {:>10} {:>8}",
        "writer: one append (flock + write), per decision",
        append.as_secs_f64() * 1e6,
        "",
        "-"
    );
    println!(
        "  files: {} read, {} skipped by their time range; bad lines {}",
        report.stats.files - report.stats.files_skipped,
        report.stats.files_skipped,
        report.stats.bad_lines
    );
    if lib_total != check_total {
        bail!("the library counted {lib_total} and the binary {check_total} since {since}");
    }
    println!("  load average after: {}", load_average());
    let (median, _) = stats(&bin_times);
    println!(
        "  target: ≤ {:.0} ms through the binary — {}",
        ms(TARGET),
        if median <= TARGET { "met" } else { "NOT met" }
    );
    if let Ok((times, duck_total)) = &duckdb {
        let (duck, _) = stats(times);
        let (lib, _) = stats(&lib_times);
        println!(
            "  goal: ≤ DuckDB ({:.0} ms): library {:.0} ms, binary {:.0} ms — {}",
            ms(duck),
            ms(lib),
            ms(median),
            if median <= duck { "met" } else { "NOT met" }
        );
        if *duck_total != lib_total {
            println!(
                "  (DuckDB counted {duck_total}, the library {lib_total}: the window's edge \
                 moved between them)"
            );
        }
    }
    Ok(())
}

struct Generated {
    files: usize,
    bytes: u64,
}

/// A tiny deterministic generator (xorshift), so runs compare.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn id(&mut self, prefix: &str) -> String {
        format!("{prefix}{:016x}", self.next())
    }
    fn uuid(&mut self) -> String {
        let (a, b) = (self.next(), self.next());
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }
}

/// One plausible decision, in the proportions a busy bridge would write them.
fn decision(rng: &mut Rng, sessions: &[String]) -> Decision {
    let agents = ["claude", "codex", "grok"];
    let agent = agents[rng.below(3) as usize];
    let session = sessions[rng.below(sessions.len() as u64) as usize].clone();
    let target = sessions[rng.below(sessions.len() as u64) as usize].clone();
    let delivery = rng.id("dlv_");
    let conversation = rng.id("conv_");
    let roll = rng.below(1000);
    let base = |kind: DecisionKind, outcome: Outcome| {
        Decision::new(kind, outcome)
            .agent(agent)
            .session(session.clone())
            .target_session(target.clone())
            .delivery(delivery.clone())
            .conversation(conversation.clone())
    };
    match roll {
        0..250 => base(DecisionKind::SEND_ACCEPTED, Outcome::ACCEPTED)
            .detail("hop", 1 + rng.below(4))
            .detail("max_hops", 8)
            .detail("queue_depth", rng.below(3))
            .detail("will_create_session", rng.below(10) == 0)
            .detail("request_id", rng.id("req_"))
            .detail("warnings", rng.below(3)),
        250..500 => {
            let by = ["caller", "pin", "discovery", "new_session"][rng.below(4) as usize];
            base(DecisionKind::TARGET_CHOSEN, Outcome::CHOSEN)
                .guard(by)
                .detail("target_selected_by", by)
                .detail("will_create_session", by == "new_session")
                .detail("target_last_activity_seconds_ago", rng.below(86_400))
        }
        500..550 => base(DecisionKind::BUSY_WAIT, Outcome::WAITING)
            .detail("queue_depth", 1 + rng.below(4))
            .detail("queued_ahead", rng.below(4))
            .detail("oldest_waiting_seconds", rng.below(600))
            .detail("peer_turn", "running"),
        550..800 => {
            let failed = rng.below(100) < 15;
            let mut d = base(
                DecisionKind::DELIVERY_OUTCOME,
                if failed {
                    Outcome::FAILED
                } else {
                    Outcome::DELIVERED
                },
            )
            .detail("transport", "headless-cli")
            .detail("hop", 1 + rng.below(4))
            .detail("max_hops", 8)
            .detail("target_selected_by", "pin")
            .detail("duration_ms", rng.below(600_000))
            .detail("message_chars", rng.below(4000))
            .detail("carrier_generation", 3)
            .detail("is_killed_by_timeout", false)
            .detail("is_reply_recovered", false);
            if failed {
                d = d.reason("the codex CLI failed (exit code 1): it printed no answer");
            }
            d
        }
        800..880 => {
            let guard = [
                "hop_budget",
                "self_call",
                "require_explicit_target",
                "no_such_session",
            ][rng.below(4) as usize];
            base(DecisionKind::SEND_REFUSED, Outcome::REFUSED)
                .guard(guard)
                .reason("conversation has used all 8 of its hops (CROSS_AGENT_MAX_HOPS)")
                .detail("hops_spent", 8)
                .detail("max_hops", 8)
        }
        880..890 => base(DecisionKind::NAME_AMBIGUOUS, Outcome::REFUSED)
            .guard("ambiguous_name")
            .detail("candidates", 2),
        890..900 => base(DecisionKind::TIMEOUT_KILL, Outcome::KILLED)
            .guard("inactivity_timeout")
            .detail("peer_pid", rng.below(100_000)),
        900..910 => base(DecisionKind::RECOVERY, Outcome::RECOVERED).detail("has_transcript", true),
        910..930 => Decision::new(DecisionKind::PIN_SET, Outcome::SET)
            .agent(agent)
            .target_session(target.clone())
            .detail("sticky", true)
            .detail("cwd", "/home/user/work/api"),
        930..940 => base(DecisionKind::LATE_ANSWER, Outcome::ANSWERED)
            .detail("late_delivery_id", rng.id("dlv_")),
        940..945 => base(DecisionKind::ORPHAN, Outcome::ORPHANED).detail("carrier_generation", 2),
        // Later features' kinds, as they will appear.
        945..975 => Decision::new(DecisionKind::new("approval"), Outcome::new("approved"))
            .agent(agent)
            .session(session.clone())
            .detail("tool", "Bash")
            .detail("via", "telegram"),
        _ => Decision::new(DecisionKind::new("telegram_delivery"), Outcome::DELIVERED)
            .detail("chat", rng.below(1000))
            .detail("attempts", 1 + rng.below(2)),
    }
}

/// Writes `lines` records spread over the last three days into 16 MiB rotated files and the
/// current file, directly (the writer's per-line lock would only slow generation).
fn generate(dir: &Path, lines: u64) -> Result<Generated> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("decisions.") {
            fs::remove_file(&path)?;
        }
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let sessions: Vec<String> = (0..200).map(|_| rng.uuid()).collect();
    let end = clock::now_millis();
    let start = end - SPAN_MS;
    let step = SPAN_MS as f64 / lines.max(1) as f64;

    let mut number = 1;
    let mut current = Vec::with_capacity(DEFAULT_MAX_BYTES as usize + 4096);
    let mut files = 0;
    let mut bytes = 0u64;
    let mut buf = Vec::new();
    for i in 0..lines {
        let at = start + (i as f64 * step) as i64;
        let d = decision(&mut rng, &sessions).at(clock::format_millis(at));
        buf.clear();
        serde_json::to_writer(&mut buf, &d)?;
        buf.push(b'\n');
        if !current.is_empty() && (current.len() + buf.len()) as u64 > DEFAULT_MAX_BYTES {
            fs::write(rotated_path(dir, number), &current)?;
            bytes += current.len() as u64;
            files += 1;
            number += 1;
            current.clear();
        }
        current.extend_from_slice(&buf);
    }
    let mut out = BufWriter::new(File::create(dir.join("decisions.jsonl"))?);
    out.write_all(&current)?;
    out.flush()?;
    bytes += current.len() as u64;
    Ok(Generated {
        files: files + 1,
        bytes,
    })
}

/// The writer's cost per decision, appending to a log of its own.
fn writer_cost(n: u64) -> Result<Duration> {
    let temp = tempfile::tempdir()?;
    let log = DecisionLog::with_config(temp.path(), LogConfig::default());
    let mut rng = Rng(7);
    let sessions: Vec<String> = (0..20).map(|_| rng.uuid()).collect();
    let decisions: Vec<Decision> = (0..n).map(|_| decision(&mut rng, &sessions)).collect();
    let started = Instant::now();
    for d in decisions {
        log.try_record(d)?;
    }
    Ok(started.elapsed() / u32::try_from(n.max(1)).unwrap_or(u32::MAX))
}

fn read_everything(dir: &Path) -> Result<u64> {
    let mut total = 0;
    let mut buf = Vec::new();
    for entry in fs::read_dir(dir)? {
        buf.clear();
        total += File::open(entry?.path())?.read_to_end(&mut buf)? as u64;
    }
    Ok(total)
}

/// `/proc/loadavg`'s first three figures: on a shared machine the timings mean little without it.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

fn repeat<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<(T, Vec<Duration>)> {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs.max(1) {
        let (value, took) = timed(&mut f);
        last = Some(value?);
        times.push(took);
    }
    match last {
        Some(value) => Ok((value, times)),
        None => bail!("no run"),
    }
}

fn stats(times: &[Duration]) -> (Duration, Duration) {
    let mut sorted = times.to_vec();
    sorted.sort();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    let best = sorted.first().copied().unwrap_or_default();
    (median, best)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
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

/// The log's files, for the peers' command lines.
fn log_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("decisions") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// A Python with the `duckdb` package: the bench tools' venv (`scripts/bench-tools` makes it),
/// else `python3` from the path.
fn duckdb_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bench-venv/bin/python");
    [venv, PathBuf::from("python3")].into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import duckdb"])
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

/// DuckDB's `read_json` over the same files answering `--since SINCE --by kind`: each run's time
/// measured inside Python (so the interpreter's start is not counted), and the count matched.
fn duckdb_times(dir: &Path, since: &str, runs: usize) -> Result<(Vec<Duration>, u64), String> {
    let python = duckdb_python()
        .ok_or("not measured: no Python with `duckdb` (scripts/bench-tools installs it)")?;
    let script = r#"
import sys, time, duckdb
pattern, since, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = duckdb.connect()
query = ("SELECT kind, count(*) AS n FROM read_json(?, format='newline_delimited', "
         "columns={'at': 'VARCHAR', 'kind': 'VARCHAR'}) WHERE \"at\" >= ? GROUP BY kind")
for _ in range(runs):
    started = time.perf_counter()
    rows = con.execute(query, [pattern, since]).fetchall()
    took = time.perf_counter() - started
    print(took, sum(n for _, n in rows))
"#;
    let pattern = dir.join("decisions*.jsonl");
    let out = Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(&pattern)
        .arg(since)
        .arg(runs.to_string())
        .output()
        .map_err(|e| format!("not measured: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "not measured: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut times = Vec::new();
    let mut total = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut parts = line.split_whitespace();
        let secs: f64 = parts.next().and_then(|t| t.parse().ok()).unwrap_or(0.0);
        total = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        times.push(Duration::from_secs_f64(secs));
    }
    if times.is_empty() {
        return Err("not measured: DuckDB printed nothing".to_owned());
    }
    Ok((times, total))
}
