//! A stand-in for `grok agent [--reasoning-effort L] stdio` (Grok Build's ACP agent), which
//! cannot run here: newline-delimited JSON-RPC 2.0 on stdio, written from the ACP v1 docs
//! (initialization, session-setup, prompt-turn, tool-calls) and the x.ai extension recorded in
//! docs/observed/telegram_ahp_grok.md §3.
//!
//! Hand-written rather than built on the `agent-client-protocol` crate: that crate (and its
//! schema crate) turn on serde_json's `preserve_order`, and cargo unifies features across the
//! workspace, so every crate built beside the testkit would switch to insertion-ordered JSON
//! maps — changing the committed schemas and every comparison of serialised JSON.
//!
//! What a prompt's text asks for scripts the turn (words anywhere in it):
//! - `slow`: waits `FAKE_GROK_SLOW_MS` (default 2000) before answering;
//! - `think`: an `agent_thought_chunk` first;
//! - `tool`: a `tool_call` and its `tool_call_update`, with text before them;
//! - `permission`: a `session/request_permission`; a rejection ends the turn `cancelled`.
//!
//! The answer is `grok: <first line of the prompt>`, plus ` token <t>` for a request token
//! `req_…` found in it, sent in two chunks. Prompts queue per process, one turn at a time, as
//! Grok does. `FAKE_GROK_LOG` names a file every received line is appended to.
//!
//! It also serves the headless form the bridge runs, `grok --single=<message> [--resume <id> |
//! --session-id <uuid>] --output-format streaming-json` (docs/spec/cross-agent-mcp.md §3): `text` deltas
//! `grok cli: <first line>` (plus the request token), then `end` with the session id. Its
//! arguments go to `FAKE_GROK_LOG` as one `argv: [...]` line.

use std::collections::{HashMap, VecDeque};
use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--version") {
        println!("fake-grok 0.0.0");
        return;
    }
    if let Some(message) = args.iter().find_map(|a| a.strip_prefix("--single=")) {
        return single(&args, message);
    }
    if args.first().map(String::as_str) != Some("agent")
        || args.last().map(String::as_str) != Some("stdio")
    {
        eprintln!("fake-grok: only `agent [--reasoning-effort L] stdio` is served");
        std::process::exit(2);
    }
    let slow = std::env::var("FAKE_GROK_SLOW_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(2_000);
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let log = std::env::var_os("FAKE_GROK_LOG")
            .and_then(|path| OpenOptions::new().create(true).append(true).open(path).ok());
        let mut log = log;
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if let Some(file) = log.as_mut() {
                let _ = writeln!(file, "{line}");
            }
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && sender.send(value).is_err()
            {
                break;
            }
        }
    });
    Agent {
        receiver,
        slow: Duration::from_millis(slow),
        sessions: HashMap::new(),
        queue: VecDeque::new(),
        next_session: 0,
        next_request: 0,
        next_call: 0,
        closed: false,
    }
    .run();
}

struct Prompt {
    id: Value,
    session: String,
    text: String,
}

enum Step {
    Send(Value),
    Sleep(Duration),
    Permission { call_id: String },
}

struct Agent {
    receiver: Receiver<Value>,
    slow: Duration,
    /// Each session's history: (prompt, answer).
    sessions: HashMap<String, Vec<(String, String)>>,
    queue: VecDeque<Prompt>,
    next_session: u64,
    next_request: u64,
    next_call: u64,
    closed: bool,
}

fn send(value: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{value}");
    let _ = stdout.flush();
}

fn update(session: &str, update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}})
}

fn text_chunk(session: &str, kind: &str, text: &str) -> Value {
    update(
        session,
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
    )
}

impl Agent {
    fn run(mut self) {
        while !self.closed || !self.queue.is_empty() {
            if let Some(prompt) = self.queue.pop_front() {
                self.turn(prompt);
                continue;
            }
            match self.receiver.recv() {
                Ok(message) => {
                    self.handle(message, None);
                }
                Err(_) => self.closed = true,
            }
        }
    }

    /// Handles one incoming message; returns the outcome when it answers `awaiting`.
    fn handle(&mut self, message: Value, awaiting: Option<u64>) -> Option<Value> {
        let id = message.get("id").cloned().filter(|id| !id.is_null());
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match (message.get("method").and_then(Value::as_str), id) {
            (None, Some(id)) => {
                return (awaiting.is_some() && id.as_u64() == awaiting)
                    .then(|| message["result"]["outcome"].clone());
            }
            (Some("initialize"), Some(id)) => send(&json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": true, "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true}},
                "authMethods": [],
            }})),
            (Some("session/new"), Some(id)) => {
                self.next_session += 1;
                let session = format!("fake-grok-{}-{}", std::process::id(), self.next_session);
                self.sessions.insert(session.clone(), Vec::new());
                send(&json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": session}}));
            }
            (Some("session/load"), Some(id)) => {
                let session = session.unwrap_or_default();
                let history = self.sessions.entry(session.clone()).or_default().clone();
                for (prompt, answer) in history {
                    send(&text_chunk(&session, "user_message_chunk", &prompt));
                    send(&text_chunk(&session, "agent_message_chunk", &answer));
                }
                send(&json!({"jsonrpc": "2.0", "id": id, "result": null}));
            }
            (Some("session/prompt"), Some(id))
                if !session
                    .as_ref()
                    .is_some_and(|s| self.sessions.contains_key(s)) =>
            {
                send(&json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32602, "message": format!("session not found: {}", session.unwrap_or_default()),
                }}));
            }
            (Some("session/prompt"), Some(id)) => {
                let text = params["prompt"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|block| block.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n");
                self.queue.push_back(Prompt {
                    id,
                    session: session.unwrap_or_default(),
                    text,
                });
            }
            (Some(method), Some(id)) => send(&json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601, "message": format!("method not found: {method}"),
            }})),
            // Notifications (`session/cancel` included: a turn here never outlives its steps).
            (Some(_), None) | (None, None) => {}
        }
        None
    }

    /// Waits up to `timeout` for one message, handling it; returns a permission outcome.
    fn wait(&mut self, timeout: Duration, awaiting: Option<u64>) -> Option<Value> {
        match self.receiver.recv_timeout(timeout) {
            Ok(message) => self.handle(message, awaiting),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                None
            }
        }
    }

    fn turn(&mut self, prompt: Prompt) {
        let session = prompt.session.clone();
        let wants = |word: &str| prompt.text.to_lowercase().contains(word);
        let mut steps = vec![Step::Send(text_chunk(
            &session,
            "user_message_chunk",
            &prompt.text,
        ))];
        if wants("slow") {
            steps.push(Step::Sleep(self.slow));
        }
        if wants("think") {
            steps.push(Step::Send(text_chunk(
                &session,
                "agent_thought_chunk",
                "thinking about it",
            )));
        }
        if wants("tool") || wants("permission") {
            self.next_call += 1;
            let call_id = format!("call_{:03}", self.next_call);
            steps.push(Step::Send(text_chunk(
                &session,
                "agent_message_chunk",
                "Let me check. ",
            )));
            steps.push(Step::Send(update(&session, json!({"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "Reading file", "kind": "read", "status": "pending", "rawInput": {"path": "README.md"}}))));
            if wants("permission") {
                steps.push(Step::Permission {
                    call_id: call_id.clone(),
                });
            }
            steps.push(Step::Send(update(&session, json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"}))));
        }
        let mut stop = "end_turn";
        for step in steps {
            match step {
                Step::Send(value) => send(&value),
                Step::Sleep(duration) => {
                    let until = Instant::now() + duration;
                    while let Some(left) = until.checked_duration_since(Instant::now()) {
                        if self.closed {
                            std::thread::sleep(left);
                        } else {
                            self.wait(left, None);
                        }
                    }
                }
                Step::Permission { call_id } => {
                    let request_id = self.next_request;
                    self.next_request += 1;
                    send(
                        &json!({"jsonrpc": "2.0", "id": request_id, "method": "session/request_permission", "params": {
                            "sessionId": session,
                            "toolCall": {"toolCallId": call_id, "title": "Reading file", "rawInput": {"path": "README.md"}},
                            "options": [
                                {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                                {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                                {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
                            ],
                        }}),
                    );
                    let outcome = loop {
                        if self.closed {
                            break Value::Null;
                        }
                        if let Some(outcome) =
                            self.wait(Duration::from_secs(3600), Some(request_id))
                        {
                            break outcome;
                        }
                    };
                    if outcome["optionId"]
                        .as_str()
                        .is_none_or(|o| !o.starts_with("allow"))
                    {
                        stop = "cancelled";
                        break;
                    }
                }
            }
        }
        let first_line = prompt.text.lines().next().unwrap_or_default();
        let mut answer = format!("grok: {}", first_line.chars().take(80).collect::<String>());
        if let Some(token) = request_token(&prompt.text) {
            answer.push_str(&format!(" token {token}"));
        }
        if stop == "cancelled" {
            answer = "grok: the tool call was rejected".to_owned();
        }
        let middle = answer
            .char_indices()
            .nth(answer.chars().count() / 2)
            .map_or(answer.len(), |(at, _)| at);
        let (head, tail) = answer.split_at(middle);
        send(&text_chunk(&session, "agent_message_chunk", head));
        send(&text_chunk(&session, "agent_message_chunk", tail));
        send(
            &json!({"jsonrpc": "2.0", "method": "_x.ai/session/prompt_complete", "params": {"sessionId": session, "promptId": prompt.id, "stopReason": stop, "agentResult": null}}),
        );
        send(&json!({"jsonrpc": "2.0", "id": prompt.id, "result": {"stopReason": stop}}));
        self.sessions
            .entry(session)
            .or_default()
            .push((prompt.text, answer));
    }
}

/// One headless turn: the streaming-json lines Grok prints for `--single`.
fn single(args: &[String], message: &str) {
    if let Some(path) = std::env::var_os("FAKE_GROK_LOG")
        && let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path)
    {
        let _ = writeln!(file, "argv: {}", json!(args));
    }
    let session = args
        .iter()
        .position(|a| a == "--session-id" || a == "--resume")
        .and_then(|at| args.get(at + 1))
        .cloned()
        .unwrap_or_default();
    let first_line = message
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let mut answer = format!(
        "grok cli: {}",
        first_line.chars().take(80).collect::<String>()
    );
    if let Some(token) = request_token(message) {
        answer.push_str(&format!("\n{token}"));
    }
    println!("{}", json!({"type": "text", "data": answer}));
    println!(
        "{}",
        json!({"type": "end", "stopReason": "EndTurn", "sessionId": session, "requestId": "r-1", "num_turns": 1})
    );
}

/// The project's request token `req_<digits>_<6 characters>`, if the text carries one.
fn request_token(text: &str) -> Option<String> {
    text.match_indices("req_").find_map(|(at, _)| {
        let token: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let mut parts = token.splitn(3, '_');
        let (_, digits, tail) = (parts.next()?, parts.next()?, parts.next()?);
        (digits.len() >= 10 && digits.chars().all(|c| c.is_ascii_digit()) && tail.len() >= 6)
            .then(|| format!("req_{digits}_{}", &tail[..6]))
    })
}
