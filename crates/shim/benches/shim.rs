//! The panel shim against a plain pipe, measured side by side in one run (figures, not
//! assertions): `cargo bench -p cross-agent-shim --bench shim`.
//!
//! - throughput: 200 MB of stream-json lines (by bytes about a third ~1 KB assistant text lines,
//!   a third 64 KB tool results, a third 1 MB base64 images; by count mostly the 1 KB lines, with
//!   a `result` and a `system/init` every 20 lines — the turn boundaries the adapter parses)
//!   written into the shim's stdin, echoed by a stand-in agent and read back from its stdout,
//!   so every byte crosses the shim both ways — against the same stand-in fed through a plain
//!   pipe, through a process that only copies bytes, and through one that does the least any
//!   shim must do (looks at every byte once, splices them on, its pipes widened as the shim's
//!   are). Floor: ≥ 90 % of the pipe. 25 rounds, each running every path once; the clock of a
//!   run starts once a first short line came back (the processes' start is measured apart).
//!   Each figure is the median run, and beside it the median of the run-by-run ratios to the
//!   pipe (the machine's slower and faster spells touch both). Beside each figure, the CPU time
//!   per MB it cost: everything (the bench's writer and reader, the middle process, the agent),
//!   and the middle process alone (its cost over the plain pipe's).
//!   `SHIM_BENCH_BASELINE=<another cross-agent-shim>` measures that build too, in the same run;
//!   `SHIM_BENCH_RUNS` sets the rounds.
//! - added latency per line, p99: a small line's round trip through the shim minus through the
//!   pipe. Floor: ≤ 0.5 ms.
//! - the shim's RSS (peak, `VmHWM`) during the throughput run. Floor: ≤ 10 MB.
//! - exec to the real binary's exec for a non-panel call: `shim claude <real> --version` against
//!   running `<real> --version` directly. Floor: ≤ 5 ms added. Beside it, a panel session's
//!   start: spawned until its first line is back, through the shim and not.
//! - injection latency: a request written to the shim's socket until the line comes out of the
//!   agent (and until the shim reports it `written`). Floor: median ≤ 20 ms.
//!
//! The stand-in agent is this bench binary itself, re-run with `SHIM_BENCH_ROLE` set, so the
//! model (and node's start-up) is not in the way.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark, like the daemon's: a broken run may stop loudly

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "SHIM_BENCH_ROLE";
const TOTAL: usize = 200 * 1024 * 1024;
/// Throughput runs per path, interleaved (this machine's other work makes single runs noisy;
/// a median of 9 still moved by ±6 points between invocations, one of 25 by about ±2).
/// `SHIM_BENCH_RUNS` sets another count.
const RUNS: usize = 25;
const SHIM: &str = env!("CARGO_BIN_EXE_cross-agent-shim");
/// The line each throughput run starts with, before its clock starts ([`Bench::pump`]).
const WARM_UP: &[u8] = b"{\"type\":\"keep_alive\"}\n";

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("echo") => return echo(),
        Ok("turns") => return turns(),
        Ok("relay") => return relay(),
        Ok("tee-relay") => return tee_relay(),
        Ok("version") => {
            println!("stand-in 1.0");
            return;
        }
        _ => {}
    }
    let bench = Bench::new();
    println!("shim bench (each figure beside its floor, measured in this run)\n");
    bench.throughput();
    bench.latency();
    bench.exec_time();
    bench.injection();
}

/// Copies stdin to stdout, as `cat` does.
fn echo() {
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match input.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if output
                    .write_all(&buf[..n])
                    .and_then(|()| output.flush())
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// The echo agent a relay in the shim's place starts, on pipes.
fn spawn_echo() -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env(ROLE, "echo")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A process in the shim's place that only copies bytes both ways (64 KB at a time) to an echo
/// agent it starts: the cost of any process in the middle, the peer the shim is measured against
/// beside the plain pipe.
fn relay() {
    let mut child = spawn_echo();
    let mut to_child = child.stdin.take().unwrap();
    let mut from_child = child.stdout.take().unwrap();
    let copy = |from: &mut dyn Read, to: &mut dyn Write| {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                return;
            }
        }
    };
    std::thread::scope(|scope| {
        scope.spawn(|| {
            copy(&mut std::io::stdin().lock(), &mut to_child);
            drop(to_child);
        });
        let mut out = std::fs::File::from(
            std::os::fd::AsFd::as_fd(&std::io::stdout())
                .try_clone_to_owned()
                .unwrap(),
        );
        copy(&mut from_child, &mut out);
    });
    let _ = child.wait();
}

/// The least any correct shim must do (Linux): a process in the shim's place that looks at every
/// byte once — duplicated with `tee(2)`, read from the copy, its newlines counted — and splices
/// the bytes themselves on, its pipes widened as the shim's are. The floor the shim's fast path
/// is measured against.
fn tee_relay() {
    use rustix::pipe::{SpliceFlags, splice, tee};
    let mut child = spawn_echo();
    let to_child = std::os::fd::OwnedFd::from(child.stdin.take().unwrap());
    let from_child = std::os::fd::OwnedFd::from(child.stdout.take().unwrap());
    // Its pipes widened as the shim widens them (256 KB).
    for fd in [
        to_child.as_fd(),
        from_child.as_fd(),
        std::io::stdin().as_fd(),
        std::io::stdout().as_fd(),
    ] {
        let _ = rustix::pipe::fcntl_setpipe_size(fd, 256 * 1024);
    }
    let copy = |from: std::os::fd::BorrowedFd<'_>, to: std::os::fd::BorrowedFd<'_>| {
        let (scratch_read, scratch_write) = rustix::pipe::pipe().unwrap();
        let _ = rustix::pipe::fcntl_setpipe_size(&scratch_write, 1024 * 1024);
        let mut buf = vec![0u8; 256 * 1024];
        let mut lines = 0usize;
        loop {
            let n = match tee(from, &scratch_write, buf.len(), SpliceFlags::empty()) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut got = 0;
            while got < n {
                got += rustix::io::read(&scratch_read, &mut buf[got..n]).unwrap();
            }
            lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
            let mut moved = 0;
            while moved < n {
                match splice(from, None, to, None, n - moved, SpliceFlags::MOVE) {
                    Ok(0) | Err(_) => return lines,
                    Ok(m) => moved += m,
                }
            }
        }
        lines
    };
    let stdin = std::io::stdin();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            copy(stdin.as_fd(), to_child.as_fd());
            drop(to_child);
        });
        copy(from_child.as_fd(), std::io::stdout().as_fd());
    });
    let _ = child.wait();
}

/// Echoes each line and ends a "turn" after it, as Claude prints a `result` per user line.
fn turns() {
    let input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    for line in input.lines() {
        let Ok(line) = line else { return };
        let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok"}"#;
        if writeln!(output, "{line}\n{result}")
            .and_then(|()| output.flush())
            .is_err()
        {
            return;
        }
    }
}

/// How the stand-in agent is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path3 {
    /// A plain pipe to the agent.
    Pipe,
    /// A process that only copies bytes, in the shim's place.
    Relay,
    /// A process that looks at every byte once and splices it on, in the shim's place.
    TeeRelay,
    /// The shim.
    Shim,
    /// Another build of the shim (`SHIM_BENCH_BASELINE`).
    Baseline,
}

struct Bench {
    dir: tempfile::TempDir,
    me: PathBuf,
    baseline: Option<PathBuf>,
}

/// CPU seconds so far (user + system) of this process, and of its children waited for (each
/// including its own waited-for children), from `/proc/self/stat` (in clock ticks).
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis; utime is the 14th field of the line.
    let fields: Vec<f64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .map(|f| f.parse().unwrap_or(0.0))
                .collect()
        })
        .unwrap_or_default();
    let field = |n: usize| fields.get(n - 3).copied().unwrap_or(0.0);
    let tick = 100.0; // USER_HZ on Linux
    (
        (field(14) + field(15)) / tick,
        (field(16) + field(17)) / tick,
    )
}

/// Writes [`WARM_UP`] and waits until it has come back, unchanged.
fn first_line_back(stdin: &mut impl Write, stdout: &mut impl Read) {
    stdin.write_all(WARM_UP).expect("writing");
    let mut back = vec![0u8; WARM_UP.len()];
    stdout.read_exact(&mut back).expect("the first line back");
    assert_eq!(back, WARM_UP, "the first line came back as it went");
}

fn runs() -> usize {
    std::env::var("SHIM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(RUNS)
}

fn quantile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples[index]
}

fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

impl Bench {
    fn new() -> Bench {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir_all(dir.path().join("home")).expect("HOME");
        Bench {
            dir,
            me: std::env::current_exe().expect("the bench binary"),
            baseline: std::env::var_os("SHIM_BENCH_BASELINE").map(PathBuf::from),
        }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// The stand-in in `role`: fed directly, behind the byte relay, or behind the shim (as a
    /// Claude panel session).
    fn command(&self, role: &str, path: Path3) -> Command {
        let mut command = match path {
            Path3::Shim | Path3::Baseline => {
                let shim = match path {
                    Path3::Baseline => self.baseline.clone().unwrap_or_else(|| SHIM.into()),
                    _ => SHIM.into(),
                };
                let mut c = Command::new(shim);
                c.arg("shim").arg("claude").arg(&self.me);
                c
            }
            Path3::Pipe | Path3::Relay | Path3::TeeRelay => Command::new(&self.me),
        };
        let role = match path {
            Path3::Relay => "relay",
            Path3::TeeRelay => "tee-relay",
            _ => role,
        };
        command
            .args([
                "--output-format",
                "stream-json",
                "--input-format",
                "stream-json",
            ])
            .env(ROLE, role)
            .env("HOME", self.dir.path().join("home"))
            .env("CROSS_AGENT_HOME", self.state())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        command
    }

    fn workload() -> Vec<u8> {
        let mut data = Vec::with_capacity(TOTAL + 2 * 1024 * 1024);
        let small = format!(
            r#"{{"type":"assistant","message":{{"id":"msg_1","role":"assistant","content":[{{"type":"text","text":"{}"}}]}},"session_id":"5ff355ef-b2f2-4ab0-bb7b-c6ff4230de7d"}}"#,
            "lorem ipsum ".repeat(80)
        );
        let tool = format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","content":"{}"}}]}}}}"#,
            "x".repeat(64 * 1024)
        );
        let image = format!(
            r#"{{"type":"user","image":"{}"}}"#,
            "QUJD".repeat(256 * 1024)
        );
        let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"5ff355ef"}"#;
        let init = r#"{"type":"system","subtype":"init","session_id":"5ff355ef-b2f2-4ab0-bb7b-c6ff4230de7d","cwd":"/tmp"}"#;
        let mut i = 0u64;
        while data.len() < TOTAL {
            let line: &str = match i % 1000 {
                0 => &image,
                n if n % 50 == 1 => &tool,
                n if n % 20 == 2 => result,
                n if n % 20 == 3 => init,
                _ => &small,
            };
            data.extend_from_slice(line.as_bytes());
            data.push(b'\n');
            i += 1;
        }
        data
    }

    /// Writes `data` into `child` and reads all of its output; seconds taken, bytes back, and
    /// the child's peak RSS just before its stdin closed. The clock starts once a first short
    /// line has come back, so what is timed is the stream, not the processes' start (the shim's
    /// start is measured on its own, [`Bench::exec_time`] and the first line's round trip).
    fn pump(mut child: Child, data: &[u8]) -> (f64, usize, Option<u64>) {
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = child.stdout.take().expect("stdout");
        let pid = child.id();
        first_line_back(&mut stdin, &mut stdout);
        let started = Instant::now();
        let (received, rss) = std::thread::scope(|scope| {
            let reader = scope.spawn(move || {
                let mut buf = vec![0u8; 256 * 1024];
                let mut total = 0;
                while let Ok(n) = stdout.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    total += n;
                }
                total
            });
            for chunk in data.chunks(256 * 1024) {
                stdin.write_all(chunk).expect("writing");
            }
            let rss = peak_rss_kb(pid);
            drop(stdin);
            (reader.join().expect("reader"), rss)
        });
        let elapsed = started.elapsed().as_secs_f64();
        let _ = child.wait();
        (elapsed, received, rss)
    }

    fn throughput(&self) {
        let data = Self::workload();
        let mb = data.len() as f64 / 1e6;
        let mut paths = vec![
            (Path3::Pipe, "plain pipe to the agent"),
            (Path3::Relay, "a byte relay in the shim's place"),
            (Path3::TeeRelay, "a tee-read-splice relay there"),
            (Path3::Shim, "through the shim"),
        ];
        if self.baseline.is_some() {
            paths.push((Path3::Baseline, "through the baseline shim"));
        }
        // Per path: MB/s of each run, and CPU seconds (everything, the children alone) in all.
        let mut speeds = vec![Vec::new(); paths.len()];
        let mut cpu = vec![(0.0, 0.0); paths.len()];
        let mut rss = Vec::new();
        let runs = runs();
        for _ in 0..runs {
            for (i, (path, _)) in paths.iter().enumerate() {
                let (self_before, children_before) = cpu_seconds();
                let child = self.command("echo", *path).spawn().expect("spawn");
                let (t, n, r) = Self::pump(child, &data);
                let (self_after, children_after) = cpu_seconds();
                assert_eq!(n, data.len(), "every byte came back ({path:?})");
                speeds[i].push(mb / t);
                let children = children_after - children_before;
                cpu[i].0 += self_after - self_before + children;
                cpu[i].1 += children;
                if *path == Path3::Shim {
                    rss.extend(r);
                }
            }
        }
        // Each path beside the pipe run for run (the runs of one round follow each other, so the
        // machine's slower and faster spells touch both): the median of those ratios.
        let paired: Vec<f64> = speeds
            .iter()
            .map(|s| {
                let mut ratios: Vec<f64> = s.iter().zip(&speeds[0]).map(|(a, b)| a / b).collect();
                quantile(&mut ratios, 0.5)
            })
            .collect();
        let medians: Vec<f64> = speeds.iter_mut().map(|s| quantile(s, 0.5)).collect();
        // The least disturbed run of each (the machine's other work only ever slows a run).
        let best: Vec<f64> = speeds.iter_mut().map(|s| quantile(s, 1.0)).collect();
        // ms of CPU per MB moved: everything, and the middle process alone (its children's
        // CPU beyond the plain pipe's, whose only child is the agent).
        let per_mb = |seconds: f64| 1000.0 * seconds / (mb * runs as f64);
        let agent_alone = cpu[0].1;
        println!(
            "throughput, {mb:.0} MB of stream-json lines echoed back by the agent (median of \
             {runs}, interleaved):"
        );
        for (i, (_, name)) in paths.iter().enumerate() {
            let middle = if i == 0 {
                String::new()
            } else {
                format!(
                    ", the middle process alone {:.2}",
                    per_mb(cpu[i].1 - agent_alone)
                )
            };
            println!(
                "  {name:34} {:6.0} MB/s  ({:3.0} % of the pipe; run by run {:3.0} %; best run \
                 {:3.0} %)   CPU ms per MB: all {:.2}{middle}",
                medians[i],
                100.0 * medians[i] / medians[0],
                100.0 * paired[i],
                100.0 * best[i] / best[0],
                per_mb(cpu[i].0),
            );
        }
        // Where the CPUs are the limit (a busy machine), throughput goes as 1 / CPU per MB.
        println!(
            "  bound by CPU alone: the shim could reach {:.0} % of the pipe, a tee-read-splice \
             relay {:.0} %, a byte relay {:.0} %",
            100.0 * cpu[0].0 / cpu[3].0,
            100.0 * cpu[0].0 / cpu[2].0,
            100.0 * cpu[0].0 / cpu[1].0
        );
        println!(
            "  shim / plain pipe = {:.0} % (run by run {:.0} %)   (floor: ≥ 90 %)   shim / byte \
             relay = {:.0} %   shim / tee-read-splice relay = {:.0} %",
            100.0 * medians[3] / medians[0],
            100.0 * paired[3],
            100.0 * medians[3] / medians[1],
            100.0 * medians[3] / medians[2]
        );
        let peak = rss.iter().copied().max().unwrap_or(0);
        println!(
            "shim RSS during it (peak VmHWM): {:.1} MB   (floor: ≤ 10 MB)\n",
            peak as f64 / 1024.0
        );
    }

    /// Round trips of one small line, in ms.
    fn round_trips(&self, path: Path3, count: usize) -> Vec<f64> {
        let mut child = self.command("echo", path).spawn().expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let line = b"{\"type\":\"assistant\",\"message\":{\"content\":\"ping\"}}\n";
        let mut back = Vec::new();
        let mut samples = Vec::with_capacity(count);
        for i in 0..count + 20 {
            let started = Instant::now();
            stdin.write_all(line).expect("write");
            back.clear();
            stdout.read_until(b'\n', &mut back).expect("read");
            if i >= 20 {
                samples.push(started.elapsed().as_secs_f64() * 1000.0);
            }
        }
        drop(stdin);
        let _ = child.wait();
        samples
    }

    fn latency(&self) {
        let mut pipe = self.round_trips(Path3::Pipe, 2000);
        let mut relay = self.round_trips(Path3::Relay, 2000);
        let mut shim = self.round_trips(Path3::Shim, 2000);
        let (p50, p99) = (quantile(&mut pipe, 0.5), quantile(&mut pipe, 0.99));
        let (r50, r99) = (quantile(&mut relay, 0.5), quantile(&mut relay, 0.99));
        let (s50, s99) = (quantile(&mut shim, 0.5), quantile(&mut shim, 0.99));
        println!(
            "round trip of one line (2000 lines):\n  plain pipe p50 {p50:.3} ms p99 {p99:.3} ms   \
             byte relay p50 {r50:.3} ms p99 {r99:.3} ms   through the shim p50 {s50:.3} ms \
             p99 {s99:.3} ms\n  added per line by the shim: p50 {:.3} ms, p99 {:.3} ms   \
             (floor: p99 ≤ 0.5 ms)\n",
            s50 - p50,
            s99 - p99
        );
    }

    fn exec_time(&self) {
        let run = |through_shim: bool| {
            let mut command = if through_shim {
                let mut c = Command::new(SHIM);
                c.arg("shim").arg("claude").arg(&self.me);
                c
            } else {
                Command::new(&self.me)
            };
            command
                .arg("--version")
                .env(ROLE, "version")
                .env("HOME", self.dir.path().join("home"))
                .stdout(Stdio::null());
            let started = Instant::now();
            command.status().expect("run");
            started.elapsed().as_secs_f64() * 1000.0
        };
        let mut direct = Vec::new();
        let mut shim = Vec::new();
        for _ in 0..200 {
            direct.push(run(false));
            shim.push(run(true));
        }
        let d = quantile(&mut direct, 0.5);
        let s = quantile(&mut shim, 0.5);
        println!(
            "a non-panel call (--version), median of 200:\n  the real binary run directly \
             {d:.2} ms   through the shim {s:.2} ms   = exec to the real exec {:.2} ms   \
             (floor: ≤ 5 ms)",
            s - d
        );
        // A panel session's start (the throughput runs start their clock after it).
        let first_line = |path: Path3| {
            let mut child = self.command("echo", path).spawn().expect("spawn");
            let started = Instant::now();
            let mut stdin = child.stdin.take().expect("stdin");
            let mut stdout = child.stdout.take().expect("stdout");
            first_line_back(&mut stdin, &mut stdout);
            let elapsed = started.elapsed().as_secs_f64() * 1000.0;
            drop(stdin);
            let _ = child.wait();
            elapsed
        };
        let mut direct = Vec::new();
        let mut shim = Vec::new();
        for _ in 0..50 {
            direct.push(first_line(Path3::Pipe));
            shim.push(first_line(Path3::Shim));
        }
        println!(
            "a panel session's start (spawned → its first line back), median of 50:\n  plain pipe \
             {:.2} ms   through the shim {:.2} ms\n",
            quantile(&mut direct, 0.5),
            quantile(&mut shim, 0.5)
        );
    }

    fn injection(&self) {
        let mut child = self.command("turns", Path3::Shim).spawn().expect("shim");
        let pid = child.id();
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = Vec::new();
        stdin
            .write_all(b"{\"type\":\"control_request\",\"request_id\":\"i\",\"request\":{\"subtype\":\"initialize\"}}\n")
            .expect("write");
        stdout.read_until(b'\n', &mut line).expect("echo");
        let socket = self.state().join(format!("panels/claude-{pid}.sock"));
        wait_for(&socket);
        let mut to_written = Vec::new();
        let mut to_agent = Vec::new();
        for i in 0..200 {
            let request = format!(
                r#"{{"op":"inject","delivery_id":"d{i}","kind":"notice","session_id":null,"text":"notice {i}","request_id":null}}"#
            );
            let started = Instant::now();
            let mut stream = UnixStream::connect(&socket).expect("connect");
            stream.write_all(request.as_bytes()).expect("request");
            stream.write_all(b"\n").expect("request");
            let mut events = BufReader::new(stream);
            let mut event = String::new();
            let mut written = None;
            while events.read_line(&mut event).unwrap_or(0) > 0 {
                if event.contains("\"written\"") {
                    written = Some(started.elapsed());
                }
                event.clear();
            }
            // The agent echoes our line, then ends its turn.
            loop {
                line.clear();
                stdout.read_until(b'\n', &mut line).expect("echo");
                if String::from_utf8_lossy(&line).contains(&format!("\"notice {i}\"")) {
                    break;
                }
            }
            to_agent.push(started.elapsed().as_secs_f64() * 1000.0);
            if let Some(w) = written {
                to_written.push(w.as_secs_f64() * 1000.0);
            }
            line.clear();
            stdout.read_until(b'\n', &mut line).expect("result");
        }
        drop(stdin);
        let _ = child.wait();
        println!(
            "injection, 200 notices into an idle panel (median):\n  request → reported written \
             {:.2} ms   request → the line out of the agent {:.2} ms   (floor: ≤ 20 ms)",
            quantile(&mut to_written, 0.5),
            quantile(&mut to_agent, 0.5)
        );
    }
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !path.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}
