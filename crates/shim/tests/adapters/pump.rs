//! A small in-test stand-in for the shim's runtime: it owns the agent's pipes, hands every line
//! either way to a [`PanelAdapter`] and does what the adapter says — forward the line, write a
//! line of ours, record a report. What the extension would have received is kept in order.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cross_agent_protocol::panel::{ApprovalAnswer, Injection, ShimEvent};
use cross_agent_shim::adapter::{Action, InjectionId, PanelAdapter, Side};
use cross_agent_shim::registration::now_ms;
use cross_agent_testkit::agents::kill_group;
use serde_json::Value;

pub struct Pump<A: PanelAdapter> {
    pub adapter: A,
    child: Child,
    stdin: ChildStdin,
    agent_lines: Receiver<Vec<u8>>,
    /// Every line the extension received, in order.
    pub to_extension: Vec<Vec<u8>>,
    /// Every line the agent received, in order.
    pub to_agent: Vec<Vec<u8>>,
    pub reports: Vec<(InjectionId, ShimEvent)>,
    pub closed: Vec<InjectionId>,
    last_tick: Instant,
}

impl<A: PanelAdapter> Pump<A> {
    pub fn spawn(mut command: Command, adapter: A) -> Result<Self> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {:?}", command.get_program()))?;
        let stdin = child.stdin.take().context("the agent's stdin")?;
        let stdout = child.stdout.take().context("the agent's stdout")?;
        let (sender, agent_lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if line.last() == Some(&b'\n') {
                            line.pop();
                        }
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Self {
            adapter,
            child,
            stdin,
            agent_lines,
            to_extension: Vec::new(),
            to_agent: Vec::new(),
            reports: Vec::new(),
            closed: Vec::new(),
            last_tick: Instant::now(),
        })
    }

    fn write_agent(&mut self, line: &[u8]) {
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        // A dead agent shows in the test as a timeout with the lines seen so far.
        let _ = self.stdin.write_all(&bytes);
        let _ = self.stdin.flush();
        self.to_agent.push(line.to_vec());
    }

    fn apply(&mut self, line: Option<(Side, &[u8])>, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Forward => match line {
                    Some((Side::Extension, bytes)) => self.write_agent(bytes),
                    Some((Side::Agent, bytes)) => self.to_extension.push(bytes.to_vec()),
                    None => {}
                },
                Action::ToAgent(bytes) => self.write_agent(&bytes),
                Action::ToExtension(bytes) => self.to_extension.push(bytes),
                Action::Report(id, event) => self.reports.push((id, event)),
                Action::Close(id) => self.closed.push(id),
                Action::SessionsChanged => {}
            }
        }
    }

    /// The extension writes a line to the agent's stdin (through the adapter).
    pub fn extension_sends(&mut self, line: &Value) {
        let bytes = serde_json::to_vec(line).unwrap_or_default();
        let mut out = Vec::new();
        self.adapter
            .on_line(Side::Extension, &bytes, now_ms(), &mut out);
        self.apply(Some((Side::Extension, &bytes)), out);
    }

    pub fn inject(&mut self, id: u64, injection: Injection) {
        let mut out = Vec::new();
        self.adapter
            .on_inject(InjectionId(id), injection, now_ms(), &mut out);
        self.apply(None, out);
    }

    pub fn answer_approval(&mut self, id: u64, answer: ApprovalAnswer) {
        let mut out = Vec::new();
        self.adapter
            .on_answer_approval(InjectionId(id), answer, now_ms(), &mut out);
        self.apply(None, out);
    }

    /// Passes the agent's lines through the adapter until `done` holds.
    pub fn until(
        &mut self,
        what: &str,
        timeout: Duration,
        mut done: impl FnMut(&Self) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while !done(self) {
            if Instant::now() >= deadline {
                bail!(
                    "timed out waiting for {what}; the extension got:\n{}\nreports: {:?}",
                    self.to_extension
                        .iter()
                        .map(|l| String::from_utf8_lossy(l).into_owned())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    self.reports
                );
            }
            match self.agent_lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    let mut out = Vec::new();
                    self.adapter.on_line(Side::Agent, &line, now_ms(), &mut out);
                    self.apply(Some((Side::Agent, &line)), out);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    let mut out = Vec::new();
                    self.adapter.on_agent_exit(&mut out);
                    self.apply(None, out);
                    bail!("the agent exited while waiting for {what}");
                }
            }
            if self.last_tick.elapsed() >= Duration::from_millis(500) {
                self.last_tick = Instant::now();
                let mut out = Vec::new();
                self.adapter.on_tick(now_ms(), &mut out);
                self.apply(None, out);
            }
        }
        Ok(())
    }

    /// The extension's lines parsed (a line that is not JSON is skipped).
    pub fn extension_values(&self) -> Vec<Value> {
        self.to_extension
            .iter()
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect()
    }

    /// The response the extension got to its request `id`.
    pub fn response_to(&self, id: &Value) -> Option<Value> {
        self.extension_values()
            .into_iter()
            .find(|v| v.get("id") == Some(id) && v.get("method").is_none())
    }

    /// Sends a request as the extension and waits for its response.
    pub fn request(&mut self, line: &Value, timeout: Duration) -> Result<Value> {
        self.extension_sends(line);
        let id = line["id"].clone();
        let method = line["method"].as_str().unwrap_or_default().to_owned();
        self.until(&format!("the response to {method}"), timeout, |p| {
            p.response_to(&id).is_some()
        })?;
        self.response_to(&id).context("the response")
    }

    /// The reports of one injection.
    pub fn reports_of(&self, id: u64) -> Vec<ShimEvent> {
        self.reports
            .iter()
            .filter(|(i, _)| *i == InjectionId(id))
            .map(|(_, event)| event.clone())
            .collect()
    }

    /// The last report of one injection, once it is closed.
    pub fn last_report(&self, id: u64) -> Option<ShimEvent> {
        self.closed
            .contains(&InjectionId(id))
            .then(|| self.reports_of(id).pop())
            .flatten()
    }

    /// Waits until the injection is closed and returns its last report.
    pub fn finished(&mut self, id: u64, timeout: Duration) -> Result<ShimEvent> {
        self.until(&format!("injection {id} to end"), timeout, |p| {
            p.closed.contains(&InjectionId(id))
        })?;
        self.last_report(id).context("no report before the close")
    }

    /// No extension line carries one of the shim's own `xagent-` ids.
    pub fn assert_no_xagent_id_reached_the_extension(&self) {
        for value in self.extension_values() {
            let id = value.get("id").and_then(Value::as_str).unwrap_or_default();
            assert!(
                !id.starts_with("xagent-"),
                "the extension got a response meant for the shim: {value}"
            );
        }
    }
}

impl<A: PanelAdapter> Drop for Pump<A> {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}
