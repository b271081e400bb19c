//! The SSH link benchmark (issue 28, docs/remote.md): over real sshd rigs on loopback standing
//! for two other machines,
//! - a listing merged over two hosts (`sessions --hosts all`) against the slowest of the three
//!   machines' own listings (`sessions` run on each machine): target ≤ 30 ms beyond it;
//! - a send's receipt to a session on a host (`send --host one`) against the same send to a
//!   session here: target ≤ 10 ms beyond it.
//!
//! Every figure is printed beside its floor measured in the same run, through the same binary
//! started the same way, so process start-up cancels out. Figures are printed, never asserted.
//!
//! `CROSS_AGENT_BENCH_CLI` names the binary (default: this build's), `CROSS_AGENT_BENCH_RUNS`
//! the repetitions (default 40 under `cargo bench`, 3 as a test), `CROSS_AGENT_BENCH_SESSIONS`
//! the Claude sessions on each machine (default 200).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_testkit::sshd::Sshd;
use cross_agent_testkit::synthetic_stores::ClaudeTranscript;
use serde_json::Value;

fn main() -> Result<()> {
    let full = std::env::args().any(|arg| arg == "--bench");
    let number = |name: &str, bench: usize, test: usize| -> Result<usize> {
        match std::env::var(name) {
            Ok(value) => value.parse().with_context(|| name.to_owned()),
            Err(_) if full => Ok(bench),
            Err(_) => Ok(test),
        }
    };
    let runs = number("CROSS_AGENT_BENCH_RUNS", 40, 3)?;
    let sessions = number("CROSS_AGENT_BENCH_SESSIONS", 200, 20)?;
    let bin = std::env::var_os("CROSS_AGENT_BENCH_CLI").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_cross-agent")),
        PathBuf::from,
    );
    if !Sshd::available() {
        println!(
            "remote bench skipped: no {}",
            cross_agent_testkit::sshd::SSHD
        );
        return Ok(());
    }

    let one = Sshd::start(&bin)?;
    let two = Sshd::start(&bin)?;
    let dir = tempfile::tempdir()?;
    let ssh = Sshd::ssh_program_for(dir.path(), &[("one", &one), ("two", &two)], &[])?;
    // `claude` for the deliveries a send starts: `true`, so a receipt costs no agent.
    let agents = dir.path().join("agents");
    std::fs::create_dir_all(&agents)?;
    for rig in [&one, &two] {
        let remote_bin = rig.remote_home().with_file_name("remote-bin");
        std::os::unix::fs::symlink("/bin/true", remote_bin.join("claude"))?;
    }
    std::os::unix::fs::symlink("/bin/true", agents.join("claude"))?;
    let here = Machine {
        user: dir.path().join("user"),
        state: dir.path().join("state"),
        bin: bin.clone(),
        ssh: Some(ssh),
        path: Some(agents),
    };
    std::fs::create_dir_all(&here.user)?;
    let remotes = [&one, &two].map(|rig| Machine {
        user: rig.remote_home(),
        state: rig.remote_state(),
        bin: bin.clone(),
        ssh: None,
        path: Some(rig.remote_home().with_file_name("remote-bin")),
    });
    for machine in std::iter::once(&here).chain(&remotes) {
        write_sessions(&machine.user, sessions)?;
    }
    for name in ["one", "two"] {
        here.ok(&["hosts", "add", name])?;
    }
    wait_connected(&here)?;
    let rtt = here.ok(&["hosts", "status", "--json"])?;
    let status: Value = serde_json::from_slice(&rtt.stdout)?;

    println!(
        "remote bench: {} runs, {sessions} Claude sessions on each of 3 machines, binary {}",
        runs,
        bin.display()
    );
    for host in status["hosts"].as_array().into_iter().flatten() {
        println!(
            "  link {}: ping round trip {:.2} ms",
            host["name"].as_str().unwrap_or("?"),
            host["rtt_ms"].as_f64().unwrap_or(f64::NAN)
        );
    }

    // Listings: warm every daemon's index first.
    let listing = ["sessions", "--agent", "claude", "--scope", "any", "--json"];
    let merged_listing = [&listing[..], &["--hosts", "all"]].concat();
    for _ in 0..3 {
        here.ok(&merged_listing)?;
        for machine in std::iter::once(&here).chain(&remotes) {
            machine.ok(&listing)?;
        }
    }
    let mut own = Vec::new();
    for (name, machine) in [("here", &here), ("one", &remotes[0]), ("two", &remotes[1])] {
        let times = measure(runs, || machine.timed(&listing))?;
        own.push((name, median(&times)));
        report(&format!("own listing on {name}"), &times);
    }
    let merged = measure(runs, || here.timed(&merged_listing))?;
    report("listing merged over here + 2 hosts", &merged);
    let (slowest, floor) = own
        .iter()
        .copied()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or(("none", 0.0));
    verdict(
        "merged listing beyond the slowest own listing",
        median(&merged) - floor,
        30.0,
        &format!("slowest: {slowest}"),
    );

    // Sends: each run to its own session, so no send waits on another's delivery.
    let mut next = 0;
    let mut send = |machine: &Machine, host: Option<&str>| -> Result<Duration> {
        next += 1;
        let session = format!("c-{:04}", next % sessions);
        let mut args = vec!["send", "claude", "bench", "--session", &session, "--json"];
        if let Some(host) = host {
            args.extend(["--host", host]);
        }
        let started = Instant::now();
        let out = machine.command(&args).output()?;
        let took = started.elapsed();
        if !out.status.success() {
            bail!(
                "send {args:?} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(took)
    };
    for _ in 0..3 {
        send(&here, None)?;
        send(&here, Some("one"))?;
    }
    let local = measure(runs, || send(&here, None))?;
    report("send receipt, session here", &local);
    let remote = measure(runs, || send(&here, Some("one")))?;
    report("send receipt, session on host one", &remote);
    verdict(
        "remote receipt beyond a local one",
        median(&remote) - median(&local),
        10.0,
        "",
    );

    // Where the difference goes: the same send made on host one itself (its daemon's own
    // cost), and one plain call (`bridge_status`) here against the same over the link (what
    // the link adds to any call: ssh, the relay, the frames both ways).
    let there = measure(runs, || send(&remotes[0], None))?;
    report("send receipt, made on host one itself", &there);
    let status_here = measure(runs, || here.timed(&["status", "--json"]))?;
    report("status here", &status_here);
    let status_there = measure(runs, || here.timed(&["status", "--host", "one", "--json"]))?;
    report("status of host one over the link", &status_there);
    println!(
        "  (the link adds {:+.2} ms to a call; the forwarded send adds {:+.2} ms over the same \
         send made there)",
        median(&status_there) - median(&status_here),
        median(&remote) - median(&there)
    );

    for machine in std::iter::once(&here).chain(&remotes) {
        let _ = machine
            .command(&["daemon", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    Ok(())
}

/// One machine's `cross-agent`: its HOME and CROSS_AGENT_HOME.
struct Machine {
    user: PathBuf,
    state: PathBuf,
    bin: PathBuf,
    ssh: Option<PathBuf>,
    path: Option<PathBuf>,
}

impl Machine {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .env("HOME", &self.user)
            .env("CROSS_AGENT_HOME", &self.state)
            .env_remove("CROSS_AGENT_DAEMON_BIN")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CROSS_AGENT_SSH");
        if let Some(ssh) = &self.ssh {
            command.env("CROSS_AGENT_SSH", ssh);
        }
        if let Some(path) = &self.path {
            command.env("PATH", format!("{}:/usr/bin:/bin", path.display()));
        }
        command
    }

    fn ok(&self, args: &[&str]) -> Result<Output> {
        let out = self.command(args).stdin(Stdio::null()).output()?;
        if !out.status.success() {
            bail!(
                "cross-agent {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(out)
    }

    fn timed(&self, args: &[&str]) -> Result<Duration> {
        let started = Instant::now();
        self.ok(args)?;
        Ok(started.elapsed())
    }
}

fn write_sessions(home: &Path, count: usize) -> Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    for i in 0..count {
        let id = format!("c-{i:04}");
        let mut t = ClaudeTranscript::new(home, "/work/api", &id);
        let at = now - 60_000 - i as i64 * 1_000;
        t.user("hello", at)
            .custom_title(&format!("session {i}"))
            .assistant_text("Hi.", at + 500);
        t.write()?;
    }
    Ok(())
}

fn wait_connected(here: &Machine) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = here.ok(&["hosts", "status", "--json"])?;
        let status: Value = serde_json::from_slice(&out.stdout)?;
        let hosts = status["hosts"].as_array().cloned().unwrap_or_default();
        if hosts.len() == 2
            && hosts
                .iter()
                .all(|h| h["state"] == "connected" && h["rtt_ms"].is_f64())
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("the links did not connect within 60 s: {status:#}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn measure(runs: usize, mut once: impl FnMut() -> Result<Duration>) -> Result<Vec<Duration>> {
    let mut times = (0..runs).map(|_| once()).collect::<Result<Vec<_>>>()?;
    times.sort();
    Ok(times)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(sorted: &[Duration]) -> f64 {
    sorted.get(sorted.len() / 2).copied().map_or(f64::NAN, ms)
}

fn report(what: &str, sorted: &[Duration]) {
    let p90 = sorted
        .get(sorted.len() * 9 / 10)
        .copied()
        .map_or(f64::NAN, ms);
    let best = sorted.first().copied().map_or(f64::NAN, ms);
    println!(
        "  {what}: median {:.2} ms, p90 {p90:.2} ms, best {best:.2} ms",
        median(sorted)
    );
}

fn verdict(what: &str, beyond: f64, target: f64, note: &str) {
    let met = if beyond <= target { "met" } else { "MISSED" };
    let note = if note.is_empty() {
        String::new()
    } else {
        format!("; {note}")
    };
    println!("  => {what}: {beyond:+.2} ms (target ≤ {target} ms: {met}{note})");
}
