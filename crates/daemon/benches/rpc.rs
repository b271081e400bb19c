//! RPC round trips and idle memory of the daemon, printed as figures (`cargo bench -p
//! cross-agent-daemon --bench rpc`). No assertions: targets are read off the output.
//!
//! The daemon runs in a child process (this bench binary re-executed with
//! `CROSS_AGENT_BENCH_DAEMON=1`, running the same `entry::run_process` as `cross-agent daemon
//! run`), so the socket, the scheduling and the memory are those of a real separate daemon.
//! Measured side by side in one run, since these machines are noisy:
//!
//! - baseline: connect + one line out and back to a bare Unix-socket echo server;
//! - connect + `hello` + `status` on a fresh connection (what each CLI command and each new
//!   `cross-agent mcp` pays), 1,000 times;
//! - `status` on a warm connection (what each forwarded tool call pays), 1,000 times;
//! - the blocking wrapper from scratch (runtime + connect + hello + status), as a CLI pays it;
//! - the daemon's resident memory idle after start, and after the load.
//!
//! If a release `cross-agent` binary sits beside this bench (`cargo build --release -p
//! cross-agent`), its idle memory is measured too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_daemon::entry::{Mode, run_process};
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_protocol::rpc::{ClientKind, ShutdownParams, StatusParams};

const CHILD_VAR: &str = "CROSS_AGENT_BENCH_DAEMON";
const ROUNDS: usize = 1_000;

fn main() {
    if std::env::var_os(CHILD_VAR).is_some() {
        run_process(Home::from_env().unwrap(), Mode::Detached).unwrap();
        return;
    }
    // `cargo bench` passes `--bench`; nothing else to parse.
    let tmp = tempfile::tempdir().unwrap();
    let home = home_at(&tmp.path().join("state"), tmp.path());
    let options = ConnectOptions::new(ClientKind::Other);

    let mut child = spawn(&std::env::current_exe().unwrap(), &[], &home);
    wait_for_daemon(&home, &options);
    std::thread::sleep(Duration::from_secs(2));
    let idle = rss_kib(child.id());

    let baseline = echo_baseline(tmp.path());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cold = runtime.block_on(async {
        let mut samples = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let began = Instant::now();
            let connection = cross_agent_ipc::connect(&home, &options).await.unwrap();
            connection.client.call(StatusParams {}).await.unwrap();
            samples.push(began.elapsed());
        }
        samples
    });
    let warm = runtime.block_on(async {
        let connection = cross_agent_ipc::connect(&home, &options).await.unwrap();
        let mut samples = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let began = Instant::now();
            connection.client.call(StatusParams {}).await.unwrap();
            samples.push(began.elapsed());
        }
        samples
    });
    let blocking: Vec<Duration> = (0..200)
        .map(|_| {
            let began = Instant::now();
            let client = BlockingClient::connect(&home, &options).unwrap();
            client.call(StatusParams {}).unwrap();
            began.elapsed()
        })
        .collect();
    let loaded = rss_kib(child.id());

    println!("daemon RPC over its Unix socket ({ROUNDS} rounds each, child-process daemon)");
    report("baseline: connect + 1 echo line", &baseline);
    report("connect + hello + status", &cold);
    report("status on a warm connection", &warm);
    report("blocking client from scratch", &blocking);
    println!(
        "ratio connect+hello+status / baseline (median): {:.2}",
        median(&cold).as_secs_f64() / median(&baseline).as_secs_f64()
    );
    print_rss("daemon (bench build)", idle, loaded);

    stop(&home, &options, &mut child);

    // The shipped binary, if built in release next to this bench.
    let release = std::env::var_os("CROSS_AGENT_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.parent()?.join("cross-agent"))
        })
        .filter(|p| p.exists());
    if let Some(bin) = release {
        let home = home_at(&tmp.path().join("state-bin"), tmp.path());
        let mut child = spawn(&bin, &["daemon", "run", "--detached"], &home);
        wait_for_daemon(&home, &options);
        std::thread::sleep(Duration::from_secs(2));
        let idle = rss_kib(child.id());
        print_rss(&format!("`{} daemon run`", bin.display()), idle, None);
        stop(&home, &options, &mut child);
    } else {
        println!(
            "(no release cross-agent binary beside the bench; `cargo build --release -p cross-agent` to measure it too)"
        );
    }
}

fn home_at(state: &Path, user: &Path) -> Home {
    let (state, user) = (state.to_owned(), user.join("user"));
    Home::from_vars(move |name| match name {
        "CROSS_AGENT_HOME" => Some(state.clone().into_os_string()),
        "HOME" => Some(user.clone().into_os_string()),
        _ => None,
    })
    .unwrap()
}

fn spawn(bin: &Path, args: &[&str], home: &Home) -> Child {
    Command::new(bin)
        .args(args)
        .env(CHILD_VAR, "1")
        .env("CROSS_AGENT_HOME", home.root())
        .env_remove("CROSS_AGENT_DEBUG")
        .env_remove("CROSS_AGENT_LOG")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for_daemon(home: &Home, options: &ConnectOptions) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while BlockingClient::connect(home, options).is_err() {
        assert!(Instant::now() < deadline, "the daemon did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stop(home: &Home, options: &ConnectOptions, child: &mut Child) {
    let client = BlockingClient::connect(home, options).unwrap();
    client.call(ShutdownParams::default()).unwrap();
    drop(client);
    child.wait().unwrap();
}

fn echo_baseline(dir: &Path) -> Vec<Duration> {
    let path = dir.join("echo.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut writer = stream.try_clone().unwrap();
            let mut line = String::new();
            if BufReader::new(stream).read_line(&mut line).is_ok() {
                let _ = writer.write_all(line.as_bytes());
            }
        }
    });
    (0..ROUNDS)
        .map(|_| {
            let began = Instant::now();
            let mut stream = UnixStream::connect(&path).unwrap();
            stream.write_all(b"{\"id\":1}\n").unwrap();
            let mut line = String::new();
            BufReader::new(&stream).read_line(&mut line).unwrap();
            began.elapsed()
        })
        .collect()
}

fn median(samples: &[Duration]) -> Duration {
    percentile(samples, 0.5)
}

fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(label: &str, samples: &[Duration]) {
    println!(
        "  {label:<34} median {:>8.1} µs   p90 {:>8.1} µs   p99 {:>8.1} µs",
        median(samples).as_secs_f64() * 1e6,
        percentile(samples, 0.9).as_secs_f64() * 1e6,
        percentile(samples, 0.99).as_secs_f64() * 1e6,
    );
}

/// `VmRSS` and `VmHWM` (peak) from `/proc/<pid>/status`, in KiB.
fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find(|l| l.starts_with(name))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn print_rss(label: &str, idle: Option<(u64, u64)>, loaded: Option<(u64, u64)>) {
    if let Some((rss, _)) = idle {
        println!("{label}: idle RSS {:.1} MiB", rss as f64 / 1024.0);
    }
    if let Some((rss, peak)) = loaded {
        println!(
            "{label}: RSS after the load {:.1} MiB (peak {:.1} MiB)",
            rss as f64 / 1024.0,
            peak as f64 / 1024.0
        );
    }
}
