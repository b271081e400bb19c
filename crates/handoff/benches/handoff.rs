//! The handoff benchmark: figures printed beside a floor measured in the same run, never
//! asserted (targets: the brief of a 50 MB transcript within 1 s; destinations within 200 ms).
//!
//! - brief: a Claude Code transcript of `CROSS_AGENT_BENCH_BRIEF_MB` (default 50) MB — turns of
//!   a prompt, a Bash call and its 2 KB output, every tenth one failing — read, built into the
//!   brief and rendered as `HANDOFF.md`; the floor is reading the same file's bytes.
//! - destinations: the search path, the installed editors and the CLI agents with their login
//!   checks (the real `codex login status` when the pinned Codex is installed, in a temporary
//!   HOME), then again with the login checks remembered (`login_cache`); the floor is one
//!   `which` process looking for the same four agents.
//!
//! Each figure is the median of `CROSS_AGENT_BENCH_RUNS` (default 5) runs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Result;
use cross_agent_handoff::compact::Programs;
use cross_agent_handoff::login_cache::{AuthPlaces, LoginCache};
use cross_agent_handoff::{brief, destinations, render, source};
use cross_agent_stores::{Agent, Warnings};
use serde_json::json;

fn main() -> Result<()> {
    let runs: usize = std::env::var("CROSS_AGENT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    if std::env::var_os(CHILD_ENV).is_some() {
        return destinations_run(runs);
    }
    let mb: u64 = std::env::var("CROSS_AGENT_BENCH_BRIEF_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir()?;
    let transcript = dir.path().join("session.jsonl");
    let turns = write_transcript(&transcript, mb << 20)?;
    let size = std::fs::metadata(&transcript)?.len();

    println!("handoff benchmark ({runs} runs, median)");
    let floor = median(runs, || {
        let started = Instant::now();
        let bytes = std::fs::read(&transcript)?;
        std::hint::black_box(bytes.len());
        Ok(started.elapsed())
    })?;
    let mut commands = 0;
    let figure = median(runs, || {
        let started = Instant::now();
        let mut warnings = Warnings::default();
        let session = source::read_transcript(
            Agent::Claude,
            "bench",
            &transcript,
            Some(PathBuf::from("/home/u/shop")),
            &mut warnings,
        )?;
        let built = brief::build(&session);
        commands = built.commands_total;
        let markdown = render::markdown(&built, render::CompactSection::NotAsked);
        std::hint::black_box(markdown.len());
        Ok(started.elapsed())
    })?;
    println!(
        "  brief of a {:.1} MB transcript ({turns} turns, {commands} commands): {:.0} ms \
         (target ≤ 1000 ms); floor, reading its bytes: {:.1} ms; ratio {:.1}×",
        size as f64 / 1e6,
        ms(figure),
        ms(floor),
        figure.as_secs_f64() / floor.as_secs_f64().max(1e-9),
    );

    let home = dir.path().join("home");
    std::fs::create_dir_all(&home)?;
    // The login checks read their CLI's credentials under HOME: they run in a child whose HOME
    // is a fresh folder, never the user's.
    let child = Command::new(std::env::current_exe()?)
        .env(CHILD_ENV, "destinations")
        .env("HOME", &home)
        .env("CROSS_AGENT_BENCH_RUNS", runs.to_string())
        .status()?;
    anyhow::ensure!(child.success(), "the destinations run failed: {child}");
    Ok(())
}

const CHILD_ENV: &str = "CROSS_AGENT_BENCH_CHILD";

/// The destinations figure, in the child.
fn destinations_run(runs: usize) -> Result<()> {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let agents_bin =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/agents/node_modules/.bin");
    let path = std::env::join_paths(std::iter::once(agents_bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    let programs = Programs {
        claude: PathBuf::from("claude"),
        codex: PathBuf::from("codex"),
        cursor_agent: PathBuf::from("cursor-agent"),
        agy: PathBuf::from("agy"),
    };
    let mut found = 0;
    let figure = median(runs, || {
        let started = Instant::now();
        let dirs = destinations::search_path(Some(&path), &home);
        let mut all = destinations::editors(&dirs, &home);
        all.extend(destinations::cli_agents(&dirs, &programs, None));
        found = all.len();
        Ok(started.elapsed())
    })?;
    // The same with the login checks remembered (`login_cache`): the first run asks and
    // remembers, the measured ones find nothing changed.
    let cache = destinations_cache(&home);
    let mut cached_found = 0;
    let cached = median(runs + 1, || {
        let started = Instant::now();
        let dirs = destinations::search_path(Some(&path), &home);
        let mut all = destinations::editors(&dirs, &home);
        all.extend(destinations::cli_agents(&dirs, &programs, Some(&cache)));
        cached_found = all.iter().filter(|d| d.login_cached.is_some()).count();
        Ok(started.elapsed())
    })?;
    let floor = median(runs, || {
        let started = Instant::now();
        Command::new("which")
            .args(["claude", "codex", "cursor-agent", "agy"])
            .env("PATH", &path)
            .output()?;
        Ok(started.elapsed())
    })?;
    // The peer: the one login check that answers here, run alone — the listing runs the checks
    // side by side, so it cannot be faster than the slowest of them.
    let peer = median(runs, || {
        let started = Instant::now();
        Command::new("codex")
            .args(["login", "status"])
            .env("PATH", &path)
            .output()?;
        Ok(started.elapsed())
    })?;
    println!(
        "  destinations ({found} found, login checks included): {:.1} ms (target ≤ 200 ms); \
         floor, one `which` of the four agents: {:.1} ms; peer, `codex login status` alone: \
         {:.1} ms",
        ms(figure),
        ms(floor),
        ms(peer),
    );
    println!(
        "  destinations, login checks remembered ({cached_found} answered from the cache): \
         {:.1} ms (target ≤ 200 ms); floor as above: {:.1} ms",
        ms(cached),
        ms(floor),
    );
    Ok(())
}

/// A login cache in a folder of the child's temporary HOME.
fn destinations_cache(home: &Path) -> LoginCache {
    LoginCache::new(
        home.join("cross-agent-cache/logins.json"),
        AuthPlaces::from_env(home),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(runs: usize, mut run: impl FnMut() -> Result<Duration>) -> Result<Duration> {
    let mut times = (0..runs.max(1))
        .map(|_| run())
        .collect::<Result<Vec<_>>>()?;
    times.sort();
    Ok(times[times.len() / 2])
}

/// Writes turns until the file reaches `bytes`; returns how many.
fn write_transcript(path: &Path, bytes: u64) -> Result<usize> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let output: String = "compiling crate … ok\n".repeat(100);
    let mut written = 0u64;
    let mut turns = 0;
    while written < bytes {
        let n = turns;
        let failing = n % 10 == 0;
        let lines = [
            json!({"type": "user", "timestamp": "2026-05-01T10:00:00Z", "message": {"role": "user",
                "content": format!("Step {n}: keep the build green and never touch Cargo.lock")}}),
            json!({"type": "assistant", "timestamp": "2026-05-01T10:00:01Z", "message": {"id": format!("msg_{n}"),
                "role": "assistant", "stop_reason": "tool_use", "content": [
                    {"type": "text", "text": "Running the build."},
                    {"type": "tool_use", "id": format!("toolu_{n}"), "name": "Bash",
                     "input": {"command": format!("cargo build -p crate{n}")}}]}}),
            json!({"type": "user", "timestamp": "2026-05-01T10:00:02Z",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{n}"),
                    "is_error": failing,
                    "content": if failing { format!("Exit code 101\n{output}") } else { output.clone() }}]},
                "toolUseResult": if failing { json!("Error: Exit code 101") } else { json!({"stdout": output, "stderr": "", "interrupted": false}) }}),
            json!({"type": "assistant", "timestamp": "2026-05-01T10:00:03Z", "message": {"id": format!("msg_{n}b"),
                "role": "assistant", "stop_reason": "end_turn", "content": [{"type": "text", "text": "Done."}]}}),
        ];
        for line in lines {
            let text = line.to_string();
            out.write_all(text.as_bytes())?;
            out.write_all(b"\n")?;
            written += text.len() as u64 + 1;
        }
        turns += 1;
    }
    out.flush()?;
    Ok(turns)
}
