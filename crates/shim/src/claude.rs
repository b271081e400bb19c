//! Claude Code's panel wire: stream-json over stdio, as `claudeCode.claudeProcessWrapper` runs
//! it (`<wrapper> <real-claude> --output-format stream-json --input-format stream-json …`).
//! What the real CLI does is recorded in `docs/observed/claude.md` §1 and §4:
//!
//! - The session id is in argv (`--resume=<id>`, `--resume <id>`, `--session-id`) or comes with
//!   the `system/init` line at the start of every turn; nothing is printed before the first
//!   stdin line.
//! - Each `{"type":"user"}` line starts a turn, and one written mid-turn is queued by the CLI
//!   and runs after the current `result`: one `result` per user line, in order. So the shim
//!   keeps the owners of written user lines in a queue — the human's (a line from the
//!   extension) or an injection's — and each `result` ends the oldest. That is what attributes
//!   every answer to the right turn when a human and a bridged message interleave.
//! - An injection is written only when no turn runs (else it waits, reported `queued`), as
//!   `{"type":"user","message":{"role":"user","content":TEXT}}`; it never counts as human input.
//! - A tool needing approval is a `control_request` `can_use_tool`; the extension answers with a
//!   `control_response`, or the CLI withdraws it with `control_cancel_request`. An answer given
//!   through the shim is the `control_response` the extension would have written, and the
//!   extension is sent the CLI's own withdrawal line for that request so its prompt closes.
//!
//! A line's kind is its top-level `type` as JSON, read by a tokenizer over the line's head
//! ([`crate::json_head`]) whatever the spelling — the CLI and the TypeScript SDK write compact
//! JSON with `type` first (the SDK its control requests `request_id` first, and a prompt's keys
//! in the host's order), a host on Python's `json.dumps` writes `{"type": "user", …}`. Lines are
//! parsed only when their type is one of the few that matter.

use std::collections::{HashSet, VecDeque};

use cross_agent_protocol::panel::{
    ApprovalAnswer, Injection, InjectionKind, PanelSession, PanelSessionState, PendingApproval,
    ShimEvent,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::adapter::{Action, InjectionId, PanelAdapter, Side};
use crate::json_head::{self, Field};

/// How much of a tool's input is kept as an approval's `detail`.
const DETAIL_LIMIT: usize = 2000;

/// The largest tool input kept whole in a registration (which holds every pending approval).
pub(crate) const INPUT_LIMIT_BYTES: usize = 192 * 1024;

/// The fields of a stream-json line the adapter reads; everything else is skipped unparsed.
#[derive(Debug, Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<String>,
    session_id: Option<String>,
    cwd: Option<String>,
    result: Option<String>,
    is_error: Option<bool>,
    request_id: Option<String>,
    request: Option<Request>,
    response: Option<Response>,
    /// Set on the lines of a sub-agent (a `Task`), which never speak for the session.
    parent_tool_use_id: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Request {
    subtype: Option<String>,
    tool_name: Option<String>,
    input: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Response {
    subtype: Option<String>,
    request_id: Option<String>,
    response: Option<ResponseBody>,
}

#[derive(Debug, Deserialize)]
struct ResponseBody {
    behavior: Option<String>,
}

/// The lines the shim writes, with their keys in the order the SDK writes them.
#[derive(Serialize)]
struct UserLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    message: UserMessage<'a>,
}

#[derive(Serialize)]
struct UserMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct ControlResponse<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    response: ControlResponseBody<'a>,
}

#[derive(Serialize)]
struct ControlResponseBody<'a> {
    subtype: &'static str,
    request_id: &'a str,
    response: Value,
}

#[derive(Serialize)]
struct ControlCancel<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    request_id: &'a str,
}

/// Who wrote a user line the CLI has not answered yet.
#[derive(Debug, Clone)]
enum Owner {
    Human,
    Bridged(Bridged),
}

#[derive(Debug, Clone)]
struct Bridged {
    id: InjectionId,
    delivery_id: String,
    /// A request expects its answer reported; a reply or notice is done once written.
    expects_answer: bool,
}

#[derive(Debug)]
struct Approval {
    pending: PendingApproval,
    input: Value,
    /// The injection whose turn asks, if that turn is a bridged request.
    owner: Option<InjectionId>,
}

/// How much of a line still arriving is read for its type: a type named first or after a few
/// short keys is found in it; one further on (after a long `message`) waits for the whole line.
/// Within what the runtime keeps of a line that streamed (16 KB), so the head it hands
/// [`PanelAdapter::on_line`] names the type that let the line stream.
const HEAD_SCAN: usize = 4 * 1024;

/// What the adapter does with a line, decided from its type before (or instead of) parsing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// Nothing in it matters: forward it unread.
    Skip,
    /// A user line from the extension: a human's turn (its type says so; the rest is content).
    HumanTurn,
    /// Parse it.
    Parse,
}

/// How a line of top-level type `kind` from `side` is looked at.
fn look(side: Side, kind: &[u8]) -> Look {
    match (side, kind) {
        (Side::Extension, b"user") => Look::HumanTurn,
        (Side::Extension, b"control_response")
        | (Side::Agent, b"result" | b"system" | b"control_request" | b"control_cancel_request") => {
            Look::Parse
        }
        _ => Look::Skip,
    }
}

/// How a whole line (or the kept head of one that streamed) is looked at: by its top-level
/// `type` as JSON, however it is spelled (`{"type": "user"}`, another key first). A line with
/// none, or no JSON object, holds nothing the adapter reads.
fn look_at(side: Side, line: &[u8]) -> Look {
    match json_head::top_level_string(line, b"type") {
        Field::Text(kind) => look(side, &kind),
        Field::Absent | Field::Unknown => Look::Skip,
    }
}

pub struct ClaudeAdapter {
    session_id: Option<String>,
    cwd: Option<String>,
    opened_at_ms: u64,
    last_human_input_ms: Option<u64>,
    last_activity_ms: Option<u64>,
    has_history: bool,
    /// The extension's first line went by: lines of ours may follow.
    extension_spoke: bool,
    /// The owners of user lines written and not yet answered, oldest (running) first.
    turns: VecDeque<Owner>,
    /// Injections waiting for the session to be idle.
    waiting: VecDeque<(InjectionId, Injection)>,
    approvals: Vec<Approval>,
    /// Injections whose connection still listens.
    listening: HashSet<InjectionId>,
    /// The user line streaming from the extension was counted from its head
    /// ([`PanelAdapter::streams_from_head`]).
    human_turn_streaming: bool,
}

impl std::fmt::Debug for ClaudeAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeAdapter")
            .field("session_id", &self.session_id)
            .field("turns", &self.turns)
            .field("waiting", &self.waiting.len())
            .finish_non_exhaustive()
    }
}

/// The value of `--name=<v>` or `--name <v>` in `args`.
fn option_value<'a>(args: &'a [String], names: &[&str]) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, arg)| {
        names.iter().find_map(|name| {
            if arg == name {
                args.get(i + 1).map(String::as_str)
            } else {
                arg.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('='))
            }
        })
    })
}

impl ClaudeAdapter {
    /// `args` are the CLI's arguments; `cwd` the directory it runs in.
    pub fn new(args: &[String], cwd: Option<String>, now_ms: u64) -> ClaudeAdapter {
        let forks = args.iter().any(|a| a == "--fork-session");
        let resumed = option_value(args, &["--resume", "-r"]).filter(|_| !forks);
        let session_id = resumed
            .or_else(|| option_value(args, &["--session-id"]))
            .filter(|id| !id.is_empty() && !id.starts_with('-'))
            .map(str::to_owned);
        let continues = args.iter().any(|a| a == "--continue" || a == "-c");
        ClaudeAdapter {
            has_history: resumed.is_some() || continues,
            session_id,
            cwd,
            opened_at_ms: now_ms,
            last_human_input_ms: None,
            last_activity_ms: None,
            extension_spoke: false,
            turns: VecDeque::new(),
            waiting: VecDeque::new(),
            approvals: Vec::new(),
            listening: HashSet::new(),
            human_turn_streaming: false,
        }
    }

    fn idle(&self) -> bool {
        self.turns.is_empty()
    }

    fn report(&self, id: InjectionId, event: ShimEvent, out: &mut Vec<Action>) {
        if self.listening.contains(&id) {
            out.push(Action::Report(id, event));
        }
    }

    fn close(&mut self, id: InjectionId, out: &mut Vec<Action>) {
        if self.listening.remove(&id) {
            out.push(Action::Close(id));
        }
    }

    fn fail(&mut self, id: InjectionId, reason: String, delivered: bool, out: &mut Vec<Action>) {
        self.report(id, ShimEvent::Failed { reason, delivered }, out);
        self.close(id, out);
    }

    /// The injection whose bridged request turn runs now.
    fn running_request(&self) -> Option<&Bridged> {
        match self.turns.front() {
            Some(Owner::Bridged(bridged)) if bridged.expects_answer => Some(bridged),
            _ => None,
        }
    }

    /// Writes the oldest waiting injection if the session is idle and the extension spoke.
    fn write_waiting(&mut self, out: &mut Vec<Action>) {
        if !self.idle() || !self.extension_spoke {
            return;
        }
        if let Some((id, injection)) = self.waiting.pop_front() {
            self.write(id, injection, out);
        }
    }

    fn write(&mut self, id: InjectionId, injection: Injection, out: &mut Vec<Action>) {
        let line = UserLine {
            kind: "user",
            message: UserMessage {
                role: "user",
                content: &injection.text,
            },
        };
        let Ok(bytes) = serde_json::to_vec(&line) else {
            self.fail(id, "cannot encode the message".to_owned(), false, out);
            return;
        };
        out.push(Action::ToAgent(bytes));
        let expects_answer = injection.kind == InjectionKind::Request;
        self.turns.push_back(Owner::Bridged(Bridged {
            id,
            delivery_id: injection.delivery_id,
            expects_answer,
        }));
        if !expects_answer {
            self.report(
                id,
                ShimEvent::Written {
                    session_id: self.session_id.clone(),
                },
                out,
            );
            self.close(id, out);
        }
        out.push(Action::SessionsChanged);
    }

    /// A user line from the extension: the human typed, and the CLI runs one more turn.
    fn on_human_turn(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        self.last_human_input_ms = Some(now_ms);
        self.has_history = true;
        self.turns.push_back(Owner::Human);
        out.push(Action::SessionsChanged);
    }

    fn on_extension_line(&mut self, parsed: Line, now_ms: u64, out: &mut Vec<Action>) {
        match parsed.kind.as_deref() {
            Some("user") => self.on_human_turn(now_ms, out),
            Some("control_response") => {
                let Some(response) = parsed.response else {
                    return;
                };
                let Some(request_id) = response.request_id else {
                    return;
                };
                let allowed = response.subtype.as_deref() == Some("success")
                    && response.response.and_then(|body| body.behavior).as_deref() == Some("allow");
                self.resolve(&request_id, allowed, out);
            }
            _ => {}
        }
    }

    fn on_agent_line(&mut self, parsed: Line, now_ms: u64, out: &mut Vec<Action>) {
        if parsed
            .parent_tool_use_id
            .as_ref()
            .is_some_and(|p| !p.is_null())
        {
            return;
        }
        match (parsed.kind.as_deref(), parsed.subtype.as_deref()) {
            (Some("system"), Some("init")) => {
                if parsed.cwd.is_some() {
                    self.cwd = parsed.cwd;
                }
                if let Some(id) = parsed.session_id {
                    self.learn_session(id, out);
                }
            }
            (Some("result"), _) => {
                if let Some(id) = parsed.session_id.filter(|_| self.session_id.is_none()) {
                    self.learn_session(id, out);
                }
                self.has_history = true;
                // Approvals of the ended turn are over with it.
                self.approvals.clear();
                if let Some(Owner::Bridged(bridged)) = self.turns.pop_front()
                    && bridged.expects_answer
                {
                    let event = ShimEvent::TurnEnded {
                        session_id: self.session_id.clone(),
                        answer: parsed.result,
                        stop: parsed.subtype.unwrap_or_else(|| "unknown".to_owned()),
                        is_error: parsed.is_error.unwrap_or(false),
                    };
                    self.report(bridged.id, event, out);
                    self.close(bridged.id, out);
                }
                out.push(Action::SessionsChanged);
                self.write_waiting(out);
            }
            (Some("control_request"), _) => {
                let Some(request) = parsed.request else {
                    return;
                };
                if request.subtype.as_deref() != Some("can_use_tool") {
                    return;
                }
                let Some(request_id) = parsed.request_id else {
                    return;
                };
                let input = request.input.unwrap_or(Value::Null);
                let owner = self
                    .running_request()
                    .map(|b| (b.id, b.delivery_id.clone()));
                let pending = PendingApproval {
                    request_id,
                    kind: "can_use_tool".to_owned(),
                    tool: request.tool_name,
                    detail: detail_of(&input),
                    since_ms: now_ms,
                    delivery_id: owner.as_ref().map(|(_, d)| d.clone()),
                    input: whole_input(&input),
                };
                if let Some((id, _)) = &owner {
                    self.report(
                        *id,
                        ShimEvent::ApprovalPending {
                            approval: pending.clone(),
                        },
                        out,
                    );
                }
                self.approvals.push(Approval {
                    pending,
                    input,
                    owner: owner.map(|(id, _)| id),
                });
                out.push(Action::SessionsChanged);
            }
            (Some("control_cancel_request"), _) => {
                if let Some(request_id) = parsed.request_id {
                    self.resolve(&request_id, false, out);
                }
            }
            _ => {}
        }
    }

    fn learn_session(&mut self, id: String, out: &mut Vec<Action>) {
        if self.session_id.as_deref() == Some(id.as_str()) {
            return;
        }
        let was_new = self.session_id.is_none();
        self.session_id = Some(id.clone());
        if was_new && let Some(bridged) = self.running_request() {
            let who = bridged.id;
            self.report(who, ShimEvent::SessionStarted { session_id: id }, out);
        }
        out.push(Action::SessionsChanged);
    }

    /// An approval was answered or withdrawn: forget it and tell its turn's injection.
    fn resolve(&mut self, request_id: &str, allowed: bool, out: &mut Vec<Action>) -> bool {
        let Some(at) = self
            .approvals
            .iter()
            .position(|a| a.pending.request_id == request_id)
        else {
            return false;
        };
        let approval = self.approvals.remove(at);
        if let Some(owner) = approval.owner {
            self.report(
                owner,
                ShimEvent::ApprovalResolved {
                    request_id: request_id.to_owned(),
                    allowed,
                },
                out,
            );
        }
        out.push(Action::SessionsChanged);
        true
    }
}

/// The tool input kept whole for the phone's approval card (never approve blind), unless it is
/// too large for a registration file (the daemon reads at most 1 MB of one).
pub(crate) fn whole_input(input: &Value) -> Option<Value> {
    if input.is_null() {
        return None;
    }
    let size = serde_json::to_vec(input).map_or(usize::MAX, |bytes| bytes.len());
    (size <= INPUT_LIMIT_BYTES).then(|| input.clone())
}

/// What an approval is about: the command for a shell tool, else the input, trimmed.
fn detail_of(input: &Value) -> Option<String> {
    let text = match input.get("command").and_then(Value::as_str) {
        Some(command) => command.to_owned(),
        None if input.is_null() => return None,
        None => input.to_string(),
    };
    Some(match text.char_indices().nth(DETAIL_LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    })
}

impl PanelAdapter for ClaudeAdapter {
    fn on_line(&mut self, side: Side, line: &[u8], now_ms: u64, out: &mut Vec<Action>) {
        self.last_activity_ms = Some(now_ms);
        // The line itself goes first: a turn ended by it or the extension's first line lets
        // a waiting injection follow. (Every line is forwarded: nothing of Claude's is dropped.)
        out.push(Action::Forward);
        let first = side == Side::Extension && !self.extension_spoke;
        match look_at(side, line) {
            Look::Skip => {}
            // Counted from its head already when it streamed.
            Look::HumanTurn if std::mem::take(&mut self.human_turn_streaming) => {}
            Look::HumanTurn => self.on_human_turn(now_ms, out),
            Look::Parse => {
                if let Ok(parsed) = serde_json::from_slice::<Line>(line) {
                    match side {
                        Side::Extension => self.on_extension_line(parsed, now_ms, out),
                        Side::Agent => self.on_agent_line(parsed, now_ms, out),
                    }
                }
            }
        }
        if first {
            self.extension_spoke = true;
            self.write_waiting(out);
        }
    }

    fn on_inject(
        &mut self,
        id: InjectionId,
        injection: Injection,
        _now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        self.listening.insert(id);
        if let Some(wanted) = injection.session_id.as_deref()
            && self.session_id.as_deref() != Some(wanted)
        {
            let holds = self.session_id.as_deref().unwrap_or("no session yet");
            self.fail(
                id,
                format!("this Claude panel process holds {holds}, not session {wanted}"),
                false,
                out,
            );
            return;
        }
        if injection.new_session && (self.session_id.is_some() || self.has_history) {
            let holds = self.session_id.as_deref().unwrap_or("a conversation");
            self.fail(
                id,
                format!(
                    "this Claude panel process already holds {holds}; a new conversation opens \
                     only in a panel process that has none"
                ),
                false,
                out,
            );
            return;
        }
        let queued = !(self.idle() && self.extension_spoke && self.waiting.is_empty());
        self.report(
            id,
            ShimEvent::Accepted {
                session_id: self.session_id.clone(),
                queued,
            },
            out,
        );
        self.waiting.push_back((id, injection));
        self.write_waiting(out);
    }

    fn on_answer_approval(
        &mut self,
        id: InjectionId,
        answer: ApprovalAnswer,
        _now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        self.listening.insert(id);
        let other_session = answer
            .session_id
            .as_deref()
            .is_some_and(|wanted| self.session_id.as_deref() != Some(wanted));
        let found = self
            .approvals
            .iter()
            .find(|a| a.pending.request_id == answer.request_id)
            .filter(|_| !other_session);
        let Some(approval) = found else {
            self.report(
                id,
                ShimEvent::ApprovalAnswered {
                    accepted: false,
                    reason: Some(format!(
                        "no approval {} is pending here (already answered, withdrawn, or in \
                         another session)",
                        answer.request_id
                    )),
                },
                out,
            );
            self.close(id, out);
            return;
        };
        let body = if answer.allow {
            json!({"behavior": "allow", "updatedInput": approval.input})
        } else {
            json!({
                "behavior": "deny",
                "message": answer.message.as_deref().unwrap_or("Denied through cross-agent."),
            })
        };
        let response = ControlResponse {
            kind: "control_response",
            response: ControlResponseBody {
                subtype: "success",
                request_id: &answer.request_id,
                response: body,
            },
        };
        let withdraw = ControlCancel {
            kind: "control_cancel_request",
            request_id: &answer.request_id,
        };
        if let (Ok(response), Ok(withdraw)) =
            (serde_json::to_vec(&response), serde_json::to_vec(&withdraw))
        {
            out.push(Action::ToAgent(response));
            out.push(Action::ToExtension(withdraw));
        }
        self.resolve(&answer.request_id, answer.allow, out);
        self.report(
            id,
            ShimEvent::ApprovalAnswered {
                accepted: true,
                reason: None,
            },
            out,
        );
        self.close(id, out);
    }

    fn on_disconnect(&mut self, id: InjectionId) {
        self.listening.remove(&id);
    }

    fn on_tick(&mut self, _now_ms: u64, _out: &mut Vec<Action>) {}

    fn on_agent_exit(&mut self, out: &mut Vec<Action>) {
        for (id, _) in std::mem::take(&mut self.waiting) {
            self.fail(
                id,
                "the Claude process ended before the message was written".to_owned(),
                false,
                out,
            );
        }
        for owner in std::mem::take(&mut self.turns) {
            if let Owner::Bridged(bridged) = owner {
                self.fail(
                    bridged.id,
                    "the Claude process ended before the turn finished".to_owned(),
                    true,
                    out,
                );
            }
        }
        self.approvals.clear();
    }

    /// A line whose head names a type nothing here reads (an assistant message, a tool
    /// result from the CLI), or a user line from the extension (a pasted image): its head
    /// alone says a human's turn starts, which is counted now. A head that is no JSON object
    /// holds nothing read here either; one that ends before its type waits for more.
    fn streams_from_head(
        &mut self,
        side: Side,
        head: &[u8],
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> bool {
        let kind = match json_head::top_level_string(&head[..head.len().min(HEAD_SCAN)], b"type") {
            Field::Text(kind) => kind,
            Field::Absent => return true,
            Field::Unknown => return false,
        };
        match look(side, &kind) {
            Look::Skip => true,
            Look::HumanTurn => {
                self.on_human_turn(now_ms, out);
                self.human_turn_streaming = true;
                true
            }
            Look::Parse => false,
        }
    }

    fn sessions(&self) -> Vec<PanelSession> {
        let state = if !self.approvals.is_empty() {
            PanelSessionState::AwaitingApproval
        } else if self.idle() {
            PanelSessionState::Idle
        } else {
            PanelSessionState::Working
        };
        let bridged_delivery_id = match self.turns.front() {
            Some(Owner::Bridged(bridged)) => Some(bridged.delivery_id.clone()),
            _ => None,
        };
        vec![PanelSession {
            session_id: self.session_id.clone(),
            cwd: self.cwd.clone(),
            state,
            opened_at_ms: self.opened_at_ms,
            last_human_input_ms: self.last_human_input_ms,
            last_activity_ms: self.last_activity_ms,
            has_history: self.has_history,
            unanswered_human_prompts: u32::try_from(
                self.turns
                    .iter()
                    .filter(|o| matches!(o, Owner::Human))
                    .count(),
            )
            .unwrap_or(u32::MAX),
            pending_approvals: self.approvals.iter().map(|a| a.pending.clone()).collect(),
            bridged_delivery_id,
            title: None,
        }]
    }
}

#[cfg(test)]
mod tests;
