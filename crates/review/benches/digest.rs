//! The digest benchmark: figures printed beside their goal and their floor, never asserted.
//!
//! Picking the goal, the tail and the latest instruction from a 100 MB Claude Code transcript
//! and a 100 MB Codex rollout (goal: ≤ 150 ms each), beside the time to merely read the same
//! file once (`std::fs::read`, the floor a reader of the whole file pays), measured in the same
//! run. Each figure is the median of `CROSS_AGENT_BENCH_RUNS` (default 5) runs, page cache warm.
//!
//! The files are generated once into `CROSS_AGENT_BENCH_DIR` (default
//! `/tmp/cross-agent-bench-review-<MB>mb`) and reused: the opening goal, then turns of a shell
//! call, its 2 KB output and the agent's note (a person's message every 200 turns), then the
//! latest instruction and a reply — each line in the shape the testkit's builders write, which
//! follow recorded Claude Code and Codex files.
//!
//! `CROSS_AGENT_BENCH_MB` sets the size (default 100). Run as a test (`cargo test --benches`,
//! no `--bench` argument), 4 MB files show the benchmark works.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_review::digest::{Limits, digest_file};
use cross_agent_stores::{Agent, Warnings};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, CodexRollout};

const GOAL: &str = "Port the importer to the csv crate; never touch Cargo.lock.";
const LATEST: &str = "Also keep the public API unchanged.";
const T0: i64 = 1_790_000_000_000;

fn main() -> Result<()> {
    let as_bench = std::env::args().any(|a| a == "--bench");
    let mb: u64 = env_or("CROSS_AGENT_BENCH_MB", if as_bench { 100 } else { 4 })?;
    let runs: usize = env_or("CROSS_AGENT_BENCH_RUNS", if as_bench { 5 } else { 1 })?;
    let dir = std::env::var_os("CROSS_AGENT_BENCH_DIR").map_or_else(
        || std::env::temp_dir().join(format!("cross-agent-bench-review-{mb}mb")),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

    println!(
        "digest benchmark ({runs} runs, median; files in {})",
        dir.display()
    );
    for agent in [Agent::Claude, Agent::Codex] {
        let (path, generated) = ensure(&dir, agent, mb << 20)?;
        let size = std::fs::metadata(&path)?.len();
        let floor = median(runs, || {
            let started = Instant::now();
            let bytes = std::fs::read(&path)?;
            std::hint::black_box(bytes.len());
            Ok(started.elapsed())
        })?;
        let mut read = (0, 0);
        let figure = median(runs, || {
            let started = Instant::now();
            let mut warnings = Warnings::default();
            let d = digest_file(agent, "bench", &path, &Limits::default(), &mut warnings)?;
            let took = started.elapsed();
            if d.opening_goal.as_ref().map(|e| e.text.as_str()) != Some(GOAL)
                || d.latest_instruction.as_ref().map(|e| e.text.as_str()) != Some(LATEST)
            {
                bail!(
                    "the digest of {} lost the goal or the latest instruction",
                    path.display()
                );
            }
            read = (d.read.head_bytes, d.read.tail_bytes);
            Ok(took)
        })?;
        println!(
            "  {agent} transcript, {:.1} MB{}:",
            size as f64 / 1e6,
            if generated { ", generated" } else { ", reused" }
        );
        println!(
            "    goal + tail + latest instruction  {:>8.2} ms   (goal ≤ 150 ms; read {} KB from the head, {} KB from the end)",
            ms(figure),
            read.0 >> 10,
            read.1 >> 10
        );
        println!(
            "    floor: read the whole file once   {:>8.2} ms   ({:.1}× the digest)",
            ms(floor),
            floor.as_secs_f64() / figure.as_secs_f64().max(1e-9)
        );
    }
    Ok(())
}

/// The transcript of `agent` of about `bytes`, generated when missing (or of another size).
fn ensure(dir: &Path, agent: Agent, bytes: u64) -> Result<(PathBuf, bool)> {
    let path = dir.join(format!("{agent}.jsonl"));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= bytes) {
        return Ok((path, false));
    }
    let (head, turn, person, end) = template(agent)?;
    let partial = path.with_extension("partial");
    let mut out = BufWriter::new(std::fs::File::create(&partial)?);
    out.write_all(head.as_bytes())?;
    let mut written = head.len() as u64;
    let mut turns = 0u64;
    while written < bytes {
        out.write_all(turn.as_bytes())?;
        written += turn.len() as u64;
        turns += 1;
        if turns.is_multiple_of(200) {
            out.write_all(person.as_bytes())?;
            written += person.len() as u64;
        }
    }
    out.write_all(end.as_bytes())?;
    out.flush()?;
    drop(out);
    std::fs::rename(&partial, &path)?;
    Ok((path, true))
}

/// The lines of the file's start, of one turn, of a person's message mid-way, and of its end,
/// each written by the testkit's builder for that agent.
fn template(agent: Agent) -> Result<(String, String, String, String)> {
    let scratch = tempfile::tempdir()?;
    let output = "o".repeat(2_000);
    let lines_of = |build: &dyn Fn(&Path) -> Result<PathBuf>| -> Result<String> {
        let dir = tempfile::tempdir_in(scratch.path())?;
        let path = build(dir.path())?;
        Ok(std::fs::read_to_string(path)?)
    };
    let claude = |f: &dyn Fn(&mut ClaudeTranscript)| {
        lines_of(&|home| {
            let mut t = ClaudeTranscript::new(home, "/home/u/shop", "bench");
            f(&mut t);
            t.write()
        })
    };
    let codex = |meta: bool, f: &dyn Fn(&mut CodexRollout)| -> Result<String> {
        let text = lines_of(&|home| {
            let mut r = CodexRollout::new(
                home,
                "/home/u/shop",
                "019a0000-0000-7000-8000-0000000bench",
                T0,
            );
            f(&mut r);
            r.write()
        })?;
        // Every builder starts with its `session_meta` line; only the file's start keeps it.
        Ok(if meta {
            text
        } else {
            text.split_once('\n')
                .map_or(String::new(), |(_, rest)| rest.to_owned())
        })
    };
    Ok(match agent {
        Agent::Claude => (
            claude(&|t| {
                t.user(GOAL, T0);
            })?,
            claude(&|t| {
                t.tool_use("cargo build 2>&1 | tail -40", T0 + 1)
                    .tool_result(&output, T0 + 2)
                    .assistant_text("The build still fails on the parser; next step.", T0 + 3);
            })?,
            claude(&|t| {
                t.user("Keep going, and mind the tests.", T0 + 4);
            })?,
            claude(&|t| {
                t.user(LATEST, T0 + 5).assistant_text("Kept it.", T0 + 6);
            })?,
        ),
        _ => (
            codex(true, &|r| {
                r.raw(r#"{"timestamp":"2026-09-21T14:13:20.000Z","type":"turn_context","payload":{"cwd":"/home/u/shop","model":"gpt-5.1-codex"}}"#)
                    .user(GOAL, T0);
            })?,
            codex(false, &|r| {
                r.tool_call("cargo build 2>&1 | tail -40", &output, T0 + 1)
                    .answer("The build still fails on the parser; next step.", T0 + 3);
            })?,
            codex(false, &|r| {
                r.user("Keep going, and mind the tests.", T0 + 4);
            })?,
            codex(false, &|r| {
                r.user(LATEST, T0 + 5).answer("Kept it.", T0 + 6);
            })?,
        ),
    })
}

fn median(runs: usize, mut f: impl FnMut() -> Result<Duration>) -> Result<Duration> {
    let mut all = (0..runs.max(1)).map(|_| f()).collect::<Result<Vec<_>>>()?;
    all.sort();
    Ok(all[all.len() / 2])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> Result<T> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("{name}={v} is not a valid value")),
        Err(_) => Ok(default),
    }
}
