//! The forwarding path of one pump over real pipes (on Linux the tee-and-splice path, else plain
//! reads): the bytes pass unchanged and in order, lines of ours go in between whole lines, long
//! lines stream or wait as the adapter says, the input's end closes the output, and an output
//! that breaks or takes no splice falls back to plain reads without losing a byte.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use cross_agent_protocol::panel::{ApprovalAnswer, Injection, PanelSession};
use cross_agent_protocol::vocabulary::Agent;

use super::pump::{STREAMED_HEAD, pump};
use super::*;
use crate::adapter::InjectionId;

/// A wire for the runtime alone: `DROP…` lines are dropped, `ECHO x` is followed by a line of
/// ours `ours x`, lines starting with `S` may stream before they end, everything else is
/// forwarded once whole. The length of every line it is handed is kept in `seen`.
struct Script {
    seen: Arc<Mutex<Vec<usize>>>,
}

impl PanelAdapter for Script {
    fn on_line(&mut self, _side: Side, line: &[u8], _now_ms: u64, out: &mut Vec<Action>) {
        self.seen.lock().unwrap().push(line.len());
        if line.starts_with(b"DROP") {
            return;
        }
        out.push(Action::Forward);
        if let Some(rest) = line.strip_prefix(b"ECHO ") {
            out.push(Action::ToAgent([b"ours ", rest].concat()));
        }
    }

    fn on_inject(&mut self, _: InjectionId, _: Injection, _: u64, _: &mut Vec<Action>) {}

    fn on_answer_approval(
        &mut self,
        _: InjectionId,
        _: ApprovalAnswer,
        _: u64,
        _: &mut Vec<Action>,
    ) {
    }

    fn on_disconnect(&mut self, _: InjectionId) {}

    fn on_tick(&mut self, _: u64, _: &mut Vec<Action>) {}

    fn on_agent_exit(&mut self, _: &mut Vec<Action>) {}

    fn sessions(&self) -> Vec<PanelSession> {
        Vec::new()
    }

    fn streams_from_head(&mut self, _: Side, head: &[u8], _: u64, _: &mut Vec<Action>) -> bool {
        head.starts_with(b"S")
    }
}

use crate::adapter::Action;

/// What the agent's stdin received so far, and whether it closed.
#[derive(Default)]
struct Received {
    bytes: Vec<u8>,
    closed: bool,
}

/// One pump (extension → agent) with its writer, fed through a pipe the test writes.
struct Rig {
    shared: Arc<Shared>,
    input: Option<Box<dyn Write + Send>>,
    received: Arc<(Mutex<Received>, Condvar)>,
    /// The lengths of the lines the adapter was handed.
    seen: Arc<Mutex<Vec<usize>>>,
    threads: Vec<JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

fn pipe() -> (File, File) {
    let (reader, writer) = std::io::pipe().unwrap();
    (
        File::from(OwnedFd::from(reader)),
        File::from(OwnedFd::from(writer)),
    )
}

impl Rig {
    /// The agent's stdin is a pipe the rig reads; the input is a pipe (on Linux, the fast path).
    fn new() -> Rig {
        Rig::reading(false)
    }

    /// As [`Rig::new`], the input a socket when `socket` (as Node's child processes have it):
    /// no tee from a socket, so the plain reads.
    fn reading(socket: bool) -> Rig {
        Rig::between(socket, false)
    }

    /// As [`Rig::reading`], the agent's stdin a socket too when `socket_out` (the extension's
    /// end of our stdout is one under VS Code: spliced into from a pipe).
    fn between(socket: bool, socket_out: bool) -> Rig {
        let (agent_read, agent_write): (Box<dyn Read + Send>, File) = if socket_out {
            let (read, write) = std::os::unix::net::UnixStream::pair().unwrap();
            (Box::new(read), File::from(OwnedFd::from(write)))
        } else {
            let (read, write) = pipe();
            (Box::new(read), write)
        };
        let mut rig = Rig::with(agent_write, socket);
        let received = rig.received.clone();
        rig.threads.push(std::thread::spawn(move || {
            let mut agent_read = agent_read;
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                let n = agent_read.read(&mut chunk).unwrap_or(0);
                let (lock, changed) = &*received;
                let mut state = lock.lock().unwrap();
                if n == 0 {
                    state.closed = true;
                    changed.notify_all();
                    return;
                }
                state.bytes.extend_from_slice(&chunk[..n]);
                changed.notify_all();
            }
        }));
        rig
    }

    /// The agent's stdin is `sink` (whatever it is).
    fn with_sink(sink: File) -> Rig {
        Rig::with(sink, false)
    }

    fn with(sink: File, socket: bool) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::of(dir.path(), Agent::Claude, 1);
        let log = ShimLog::open(dir.path(), "test".to_owned()).unwrap();
        let registration = registration::describe(Agent::Claude, &paths.socket, "test".into());
        let (_, extension_sink) = pipe();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            core: Mutex::new(Core::new(
                Box::new(Script { seen: seen.clone() }),
                registration,
                paths.clone(),
            )),
            to_agent: Outbox::new(sink),
            to_extension: Outbox::new(extension_sink),
            log,
            paths,
            registration_changed: Condvar::new(),
            registration_io: parking_lot::Mutex::new(()),
            open_connections: AtomicUsize::new(0),
            done: AtomicBool::new(false),
        });
        let (input_read, input_write): (OwnedFd, Box<dyn Write + Send>) = if socket {
            let (read, write) = std::os::unix::net::UnixStream::pair().unwrap();
            (OwnedFd::from(read), Box::new(write))
        } else {
            let (read, write) = pipe();
            (OwnedFd::from(read), Box::new(write))
        };
        let mut threads = Vec::new();
        let s = shared.clone();
        threads.push(std::thread::spawn(move || s.to_agent.run_writer()));
        let s = shared.clone();
        threads.push(std::thread::spawn(move || {
            pump(&s, Side::Extension, input_read);
            s.to_agent.close();
        }));
        Rig {
            shared,
            input: Some(input_write),
            received: Arc::new((Mutex::new(Received::default()), Condvar::new())),
            seen,
            threads,
            _dir: dir,
        }
    }

    /// Writes `bytes` in pieces of `piece` bytes (so lines are split across reads and splices).
    fn write(&mut self, bytes: &[u8], piece: usize) {
        let input = self.input.as_mut().unwrap();
        for chunk in bytes.chunks(piece) {
            input.write_all(chunk).unwrap();
        }
    }

    /// A line of ours, as an injection adds one (the runtime adds the newline).
    fn inject(&self, line: &str) {
        let mut routed = Routed::default();
        lock(&self.shared.core).call(&mut routed, &self.shared.log, |_, _, out| {
            out.push(Action::ToAgent(line.as_bytes().to_vec()));
        });
        self.shared.route(routed);
    }

    /// Waits until what the agent received satisfies `wanted` (a test that never gets there
    /// hangs, and nextest's timeout names it).
    /// Waits until what the agent received is `wanted`; fails the test after 30 s of waiting.
    fn wait_until(&self, wanted: impl Fn(&[u8]) -> bool) {
        let (lock, changed) = &*self.received;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut state = lock.lock().unwrap();
        while !wanted(&state.bytes) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                !left.is_zero(),
                "the agent never received what the test waits for; it has {} bytes",
                state.bytes.len()
            );
            state = changed.wait_timeout(state, left).unwrap().0;
        }
    }

    /// Closes the input and returns everything the agent received once its stdin closed.
    fn finish(self) -> Vec<u8> {
        self.finish_with_log().0
    }

    /// As [`Rig::finish`], with the shim's log.
    fn finish_with_log(mut self) -> (Vec<u8>, String) {
        self.input = None;
        for thread in self.threads.drain(..) {
            thread.join().unwrap();
        }
        let state = self.received.0.lock().unwrap();
        assert!(
            state.closed,
            "the agent's stdin closed after the input's end"
        );
        (state.bytes.clone(), self.log())
    }

    fn log(&self) -> String {
        let logs = self._dir.path();
        std::fs::read_dir(logs)
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .collect()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

#[test]
fn a_long_line_streams_before_it_ends_and_a_line_of_ours_waits_for_its_end() {
    let mut rig = Rig::new();
    let long = [b"S".as_slice(), &vec![b'x'; 1024 * 1024]].concat();
    rig.write(b"hello\n", 64);
    let (head, rest) = long.split_at(300 * 1024);
    rig.write(head, 7919);
    if cfg!(target_os = "linux") {
        // The head passes on before the line ends (spliced, the pen kept).
        rig.wait_until(|got| got.len() >= 6 + 200 * 1024);
    }
    rig.inject("INJ");
    rig.write(rest, 7919);
    rig.write(b"\n", 1);
    rig.wait_until(|got| got.ends_with(b"INJ\n"));
    rig.write(b"after\n", 64);
    let seen = rig.seen.clone();
    let got = rig.finish();
    let expected = [b"hello\n".as_slice(), &long, b"\nINJ\nafter\n"].concat();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "the bytes and our line's place");
    if cfg!(target_os = "linux") {
        // The line that streamed was handed over as its head, not kept whole.
        assert_eq!(*seen.lock().unwrap(), vec![5, STREAMED_HEAD, 5]);
    }
}

#[test]
fn a_short_line_streams_once_its_head_has_come_and_a_line_of_ours_waits_for_its_end() {
    let mut rig = Rig::new();
    let line = [b"S".as_slice(), &[b'z'; 200]].concat();
    rig.write(b"hello\n", 64);
    rig.write(&line[..100], 100);
    if cfg!(target_os = "linux") {
        // Its first 100 bytes pass on before it ends (a head of STREAM_AFTER bytes decides).
        rig.wait_until(|got| got.len() >= 6 + 100);
    }
    rig.inject("INJ");
    rig.write(&line[100..], 7);
    rig.write(b"\n", 1);
    rig.wait_until(|got| got.ends_with(b"INJ\n"));
    let got = rig.finish();
    let expected = [b"hello\n".as_slice(), &line, b"\nINJ\n"].concat();
    assert!(got == expected, "the bytes and our line's place");
}

#[test]
fn a_long_line_that_may_matter_is_held_whole_and_a_line_of_ours_may_go_before_it() {
    let mut rig = Rig::new();
    let long = [b"H".as_slice(), &vec![b'y'; 512 * 1024]].concat();
    rig.write(b"hello\n", 64);
    let (head, rest) = long.split_at(200 * 1024);
    rig.write(head, 65_537);
    rig.inject("INJ");
    // The line is held (its head never passes alone): ours goes in at the boundary before it.
    rig.wait_until(|got| got == b"hello\nINJ\n");
    rig.write(rest, 65_537);
    rig.write(b"\n", 1);
    let got = rig.finish();
    let expected = [b"hello\nINJ\n".as_slice(), &long, b"\n"].concat();
    assert!(got == expected, "the held line whole, after ours");
}

#[test]
fn dropped_lines_and_lines_of_ours_keep_their_places_among_forwarded_ones_while_injections_race() {
    for (socket_in, socket_out) in [(false, false), (true, false), (false, true)] {
        let log = lines_keep_their_places(Rig::between(socket_in, socket_out));
        // A pipe's bytes are spliced on to a pipe or a socket alike: no fall-back.
        if !socket_in && cfg!(target_os = "linux") {
            assert!(!log.contains("read plainly"), "{log}");
        }
    }
}

/// Runs the race through `rig`; the shim's log.
fn lines_keep_their_places(mut rig: Rig) -> String {
    let mut input = Vec::new();
    let mut expected = Vec::new();
    for i in 0..3000 {
        let filler = "z".repeat(i % 700);
        let lines = [
            format!("line {i} {filler}\n"),
            format!("DROP {i}\n"),
            format!("ECHO {i}\n"),
        ];
        for line in &lines {
            input.extend_from_slice(line.as_bytes());
        }
        expected.extend_from_slice(lines[0].as_bytes());
        expected.extend_from_slice(format!("ECHO {i}\nours {i}\n").as_bytes());
    }
    let shared = rig.shared.clone();
    let injector = std::thread::spawn(move || {
        for i in 0..300 {
            let mut routed = Routed::default();
            lock(&shared.core).call(&mut routed, &shared.log, |_, _, out| {
                out.push(Action::ToAgent(format!("INJ {i}").into_bytes()));
            });
            shared.route(routed);
            std::thread::sleep(Duration::from_micros(50));
        }
    });
    rig.write(b"first\n", 64);
    rig.write(&input, 4093);
    injector.join().unwrap();
    let (got, log) = rig.finish_with_log();
    // Our injected lines come whole, in their order, between lines; without them the bytes are
    // the input's minus the dropped lines, plus the `ours` lines right after their `ECHO`.
    let mut rest = Vec::new();
    let mut injected = Vec::new();
    for line in got.split_inclusive(|&b| b == b'\n') {
        assert!(line.ends_with(b"\n"), "only whole lines: {line:?}");
        match line.strip_prefix(b"INJ ") {
            Some(n) => injected.push(String::from_utf8_lossy(n).trim().parse::<u32>().unwrap()),
            None => rest.extend_from_slice(line),
        }
    }
    assert_eq!(injected, (0..300).collect::<Vec<_>>());
    let expected = [b"first\n".as_slice(), &expected].concat();
    assert!(rest == expected, "forwarded bytes, in order");
    log
}

#[test]
fn the_inputs_end_passes_a_partial_last_line_and_closes_the_agents_stdin() {
    let lasts = [
        b"short partial".to_vec(),
        [b"S".as_slice(), &[b'p'; 100_000]].concat(),
    ];
    for (last, socket) in lasts.iter().flat_map(|l| [(l, false), (l, true)]) {
        let mut rig = Rig::reading(socket);
        let input = [b"one\n".as_slice(), &[b'q'; 70_000], b"\n", last].concat();
        rig.write(&input, 10_007);
        let got = rig.finish();
        assert!(got == input, "every byte, the partial line last");
    }
}

#[test]
fn an_agent_that_stops_reading_breaks_the_fast_path_and_the_input_is_still_drained() {
    let (agent_read, agent_write) = pipe();
    let mut rig = Rig::with_sink(agent_write);
    rig.write(b"hello\n", 64);
    drop(agent_read);
    // Several MB: the writer here only finishes if the shim keeps reading its side.
    let long = [b"S".as_slice(), &vec![b'x'; 4 * 1024 * 1024], b"\nmore\n"].concat();
    rig.write(&long, 65_536);
    rig.input = None;
    for thread in rig.threads.drain(..) {
        thread.join().unwrap();
    }
    assert!(rig.shared.to_agent.is_broken());
}

#[test]
fn an_output_that_takes_no_splice_gets_the_bytes_written_and_reads_go_plain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent-stdin");
    // A file opened for appending takes no splice (EINVAL): the fast path's first splice fails.
    let sink = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    let mut rig = Rig::with_sink(sink);
    let input: Vec<u8> = (0..2000)
        .flat_map(|i| format!("line {i} {}\nDROP {i}\n", "w".repeat(i % 300)).into_bytes())
        .chain([b"S".as_slice(), &[b'v'; 300_000], b"\nend\n"].concat())
        .collect();
    rig.write(&input, 8191);
    let log = rig.log();
    rig.input = None;
    for thread in rig.threads.drain(..) {
        thread.join().unwrap();
    }
    let expected: Vec<u8> = input
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| !line.starts_with(b"DROP"))
        .flatten()
        .copied()
        .collect();
    let got = std::fs::read(&path).unwrap();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "every forwarded byte, in order");
    if cfg!(target_os = "linux") {
        let log = log + &rig.log();
        assert!(log.contains("read plainly from now on"), "{log}");
    }
    assert!(contains(&got, b"\nend\n"));
}

#[test]
fn held_lines_longer_than_the_park_and_dropped_held_lines_come_out_right() {
    let mut rig = Rig::new();
    let held = [b"H".as_slice(), &vec![b'h'; 2_500_000], b"\n"].concat();
    let dropped = [b"DROP".as_slice(), &vec![b'd'; 300_000], b"\n"].concat();
    let input = [
        b"a\n".as_slice(),
        &held,
        &dropped,
        b"b\n",
        &dropped,
        &held,
        b"ECHO 1\n",
    ]
    .concat();
    rig.write(&input, 65_537);
    let got = rig.finish();
    let expected = [b"a\n".as_slice(), &held, b"b\n", &held, b"ECHO 1\nours 1\n"].concat();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "held lines whole, dropped ones gone");
}
