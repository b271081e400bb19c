//! The hook benchmark (issue "Telegram"): `cross-agent hook PreToolUse` round trip with the
//! daemon up and the call allowed by a gate.toml rule (target: median ≤ 10 ms), the same with
//! the daemon down (target ≤ 5 ms to exit), and the daemon's RSS with the Telegram poller idle
//! against the fake Bot API (target ≤ 30 MB). Each time is printed beside the floor measured in
//! the same run: starting the same binary for `--version`, which is what any hook costs before
//! it does anything. Figures are printed, never asserted.
//!
//! `CROSS_AGENT_BENCH_RUNS` sets the repetitions (default 200 under `cargo bench`, 5 as a test).

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_testkit::telegram::FakeBotApi;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");
const TOKEN: &str = "4242:BENCHtoken";

fn main() -> Result<()> {
    let full = std::env::args().any(|arg| arg == "--bench");
    let runs: usize = match std::env::var("CROSS_AGENT_BENCH_RUNS") {
        Ok(value) => value.parse().context("CROSS_AGENT_BENCH_RUNS")?,
        Err(_) if full => 200,
        Err(_) => 5,
    };
    let dir = tempfile::tempdir()?;
    let state = dir.path().join("state");
    let user = dir.path().join("user");
    std::fs::create_dir_all(&user)?;
    let api = FakeBotApi::start(TOKEN, "bench_bot")?;
    let command = |args: &[&str]| {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("HOME", &user)
            .env("CROSS_AGENT_HOME", &state)
            .env("CROSS_AGENT_TELEGRAM_API", api.base_url())
            .env_remove("CROSS_AGENT_DAEMON_BIN");
        command
    };
    let payload =
        serde_json::json!({"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "ls -la"}})
        .to_string();
    let hook = |expect_output: bool| -> Result<Duration> {
        let started = Instant::now();
        let mut child = command(&["hook", "PreToolUse"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        child
            .stdin
            .take()
            .context("stdin")?
            .write_all(payload.as_bytes())?;
        let out = child.wait_with_output()?;
        let took = started.elapsed();
        if expect_output == out.stdout.is_empty() {
            bail!(
                "unexpected hook output: {:?}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        Ok(took)
    };
    let floor = || -> Result<Duration> {
        let started = Instant::now();
        command(&["--version"]).stdout(Stdio::null()).status()?;
        Ok(started.elapsed())
    };

    let mut setup = command(&["telegram", "setup"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()?;
    setup
        .stdin
        .take()
        .context("stdin")?
        .write_all(format!("{TOKEN}\n").as_bytes())?;
    if !setup.wait()?.success() {
        bail!("telegram setup failed");
    }
    std::fs::write(
        state.join("gate.toml"),
        "[[rule]]\ntool = \"Bash\"\npattern = \"^ls\"\naction = \"allow\"\n",
    )?;
    let daemon = Daemon(
        command(&["daemon", "run"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !polling(&state) {
        if Instant::now() > deadline {
            let log = std::fs::read_dir(state.join("logs"))
                .map(|d| {
                    d.flatten()
                        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                        .collect::<String>()
                })
                .unwrap_or_default();
            bail!("the daemon's poller did not start: {log}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    println!("hook benchmark ({runs} runs each)");
    let floor_times = measure(runs, floor)?;
    let up = measure(runs, || hook(true))?;
    report("floor: cross-agent --version", &floor_times, None);
    report(
        "hook PreToolUse, daemon up, allowed by gate.toml",
        &up,
        Some(10),
    );
    // Idle: the poller sits in its long poll; give it a few polls first.
    std::thread::sleep(Duration::from_secs(2));
    let rss = rss_kib(daemon.0.id()).unwrap_or(0);
    println!(
        "  daemon RSS, Telegram poller idle: {:.1} MB (target ≤ 30 MB)",
        rss as f64 / 1024.0
    );
    drop(daemon);
    let down = measure(runs, || hook(false))?;
    report("hook PreToolUse, daemon down", &down, Some(5));
    Ok(())
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn polling(state: &Path) -> bool {
    std::fs::read_to_string(state.join("telegram/status.json"))
        .map(|s| s.contains("\"polling\""))
        .unwrap_or(false)
}

fn measure(runs: usize, mut once: impl FnMut() -> Result<Duration>) -> Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        times.push(once()?);
    }
    times.sort();
    Ok(times)
}

fn report(what: &str, sorted: &[Duration], target_ms: Option<u64>) {
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    let target = target_ms.map_or(String::new(), |ms| format!(" (target median ≤ {ms} ms)"));
    println!(
        "  {what}: median {:.2} ms, p90 {:.2} ms, best {:.2} ms{target}",
        at(0.5),
        at(0.9),
        at(0.0)
    );
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}
