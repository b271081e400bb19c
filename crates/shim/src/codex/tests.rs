//! The Codex adapter on line sequences shaped as observed from the real app-server 0.171.0
//! (docs/observed/codex.md §1–§6).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use cross_agent_protocol::panel::InjectionKind;

const THREAD: &str = "01a2297d-a5af-78f1-ae84-b85f642c0aee";
const TURN: &str = "01a2297d-a9b8-7513-b54d-2824bac57b13";

struct Harness {
    adapter: CodexAdapter,
    now: u64,
}

impl Harness {
    fn new() -> Self {
        Self {
            adapter: CodexAdapter::new(&[OsString::from("app-server")])
                .with_default_cwd(Some("/work/project".into())),
            now: 1_795_992_430_000,
        }
    }

    fn line(&mut self, side: Side, value: Value) -> Vec<Action> {
        self.now += 10;
        let mut out = Vec::new();
        let bytes = serde_json::to_vec(&value).unwrap();
        self.adapter.on_line(side, &bytes, self.now, &mut out);
        out
    }

    fn ext(&mut self, value: Value) -> Vec<Action> {
        self.line(Side::Extension, value)
    }

    fn agent(&mut self, value: Value) -> Vec<Action> {
        self.line(Side::Agent, value)
    }

    fn inject(&mut self, id: u64, injection: Injection) -> Vec<Action> {
        let mut out = Vec::new();
        self.adapter
            .on_inject(InjectionId(id), injection, self.now, &mut out);
        out
    }

    fn tick(&mut self, advance_ms: u64) -> Vec<Action> {
        self.now += advance_ms;
        let mut out = Vec::new();
        self.adapter.on_tick(self.now, &mut out);
        out
    }

    fn answer(&mut self, id: u64, request_id: &str, allow: bool) -> Vec<Action> {
        let mut out = Vec::new();
        let answer = ApprovalAnswer {
            session_id: None,
            request_id: request_id.into(),
            allow,
            message: None,
        };
        self.adapter
            .on_answer_approval(InjectionId(id), answer, self.now, &mut out);
        out
    }

    /// The handshake and one thread the extension started (§1, §2).
    fn with_thread() -> Self {
        let mut h = Self::new();
        h.ext(json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex_vscode", "title": "Panel Probe", "version": "0.0.1"}, "capabilities": null}}));
        h.agent(json!({"id": 1, "result": {"userAgent": "codex_vscode/0.171.0", "codexHome": "/h", "platformFamily": "unix", "platformOs": "linux"}}));
        h.ext(json!({"method": "initialized"}));
        h.ext(json!({"id": 2, "method": "thread/start", "params": {"cwd": "/work/project", "approvalPolicy": "never", "sandbox": "read-only"}}));
        h.agent(json!({"id": 2, "result": {"thread": thread_object(THREAD), "model": "acc-model", "cwd": "/work/project"}}));
        h.agent(json!({"method": "thread/started", "params": {"thread": thread_object(THREAD)}, "emittedAtMs": 1}));
        h
    }

    fn state(&self, thread: &str) -> PanelSessionState {
        self.session(thread).state
    }

    fn session(&self, thread: &str) -> PanelSession {
        self.adapter
            .sessions()
            .into_iter()
            .find(|s| s.session_id.as_deref() == Some(thread))
            .unwrap_or_else(|| panic!("no session {thread}"))
    }

    fn session_ids(&self) -> Vec<String> {
        self.adapter
            .sessions()
            .into_iter()
            .filter_map(|s| s.session_id)
            .collect()
    }
}

fn thread_object(id: &str) -> Value {
    json!({"id": id, "sessionId": id, "forkedFromId": null, "parentThreadId": null, "preview": "", "ephemeral": false, "status": {"type": "idle"}, "cwd": "/work/project", "cliVersion": "0.171.0", "originator": "codex_vscode", "source": "vscode", "canAcceptDirectInput": true, "threadSource": null, "agentNickname": null, "agentRole": null, "name": null, "turns": []})
}

fn injection(kind: InjectionKind, session: Option<&str>, text: &str) -> Injection {
    Injection {
        delivery_id: "dlv_1".into(),
        kind,
        session_id: session.map(str::to_owned),
        new_session: false,
        text: text.into(),
        request_id: Some("req_1795992430000_abcdef".into()),
        title: None,
        sender_label: None,
    }
}

fn new_conversation(text: &str, title: &str) -> Injection {
    Injection {
        new_session: true,
        title: Some(title.into()),
        ..injection(InjectionKind::Request, None, text)
    }
}

fn to_agent(actions: &[Action]) -> Vec<Value> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::ToAgent(line) => Some(serde_json::from_slice(line).unwrap()),
            _ => None,
        })
        .collect()
}

fn reports(actions: &[Action]) -> Vec<ShimEvent> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Report(_, event) => Some(event.clone()),
            _ => None,
        })
        .collect()
}

fn forwarded(actions: &[Action]) -> bool {
    actions.contains(&Action::Forward)
}

fn turn_started(thread: &str, turn: &str) -> Value {
    json!({"method": "turn/started", "params": {"threadId": thread, "turn": {"id": turn, "items": [], "status": "inProgress", "error": null}}, "emittedAtMs": 1})
}

fn agent_message(thread: &str, turn: &str, text: &str) -> Value {
    json!({"method": "item/completed", "params": {"item": {"type": "agentMessage", "id": "msg_acc", "text": text, "phase": null}, "threadId": thread, "turnId": turn}, "emittedAtMs": 1})
}

fn status(thread: &str, status: Value) -> Value {
    json!({"method": "thread/status/changed", "params": {"threadId": thread, "status": status}, "emittedAtMs": 1})
}

fn turn_completed(thread: &str, turn: &str, text: Option<&str>) -> Value {
    let items = match text {
        Some(text) => json!([{"type": "agentMessage", "id": "msg_acc", "text": text}]),
        None => json!([]),
    };
    json!({"method": "turn/completed", "params": {"threadId": thread, "turn": {"id": turn, "items": items, "itemsView": "summary", "status": "completed", "error": null}}, "emittedAtMs": 1})
}

/// Runs a human turn's start (the extension's `turn/start` and the app-server's answer).
fn human_turn(h: &mut Harness, id: u64, thread: &str, turn: &str) {
    let actions = h.ext(json!({"id": id, "method": "turn/start", "params": {"threadId": thread, "input": [{"type": "text", "text": "hello world"}], "clientUserMessageId": "cum-123"}}));
    assert!(forwarded(&actions));
    h.agent(
        json!({"id": id, "result": {"turn": {"id": turn, "items": [], "status": "inProgress"}}}),
    );
    h.agent(status(thread, json!({"type": "active", "activeFlags": []})));
    h.agent(turn_started(thread, turn));
}

#[test]
fn an_idle_thread_takes_the_turn_at_once_and_its_answer_is_reported() {
    let mut h = Harness::with_thread();
    let actions = h.inject(
        1,
        injection(InjectionKind::Request, Some(THREAD), "[BRIDGE] hi"),
    );
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Accepted {
            session_id: Some(THREAD.into()),
            queued: false
        }]
    );
    assert_eq!(
        to_agent(&actions),
        vec![
            json!({"id": "xagent-1", "method": "turn/start", "params": {"threadId": THREAD, "input": [{"type": "text", "text": "[BRIDGE] hi"}], "clientUserMessageId": "xagent-1"}})
        ]
    );
    assert_eq!(h.state(THREAD), PanelSessionState::Working);
    assert_eq!(h.session(THREAD).last_human_input_ms, None);
    assert_eq!(
        h.session(THREAD).bridged_delivery_id.as_deref(),
        Some("dlv_1")
    );

    // Our response is swallowed: the extension never sees an id it did not send.
    let actions = h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": TURN, "items": [], "status": "inProgress"}}}));
    assert!(!forwarded(&actions));
    assert!(forwarded(&h.agent(turn_started(THREAD, TURN))));
    assert!(forwarded(&h.agent(agent_message(
        THREAD,
        TURN,
        "partial answer"
    ))));
    h.agent(status(THREAD, json!({"type": "idle"})));
    let actions = h.agent(turn_completed(
        THREAD,
        TURN,
        Some("Hi there from acc model."),
    ));
    assert!(forwarded(&actions));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::TurnEnded {
            session_id: Some(THREAD.into()),
            answer: Some("Hi there from acc model.".into()),
            stop: "completed".into(),
            is_error: false,
        }]
    );
    assert!(actions.contains(&Action::Close(InjectionId(1))));
    assert_eq!(h.state(THREAD), PanelSessionState::Idle);
}

#[test]
fn an_interrupted_turn_reports_the_last_agent_message_seen() {
    let mut h = Harness::with_thread();
    h.inject(1, injection(InjectionKind::Request, Some(THREAD), "hi"));
    h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": TURN}}}));
    h.agent(turn_started(THREAD, TURN));
    h.agent(agent_message(THREAD, TURN, "said before the stop"));
    let mut completed = turn_completed(THREAD, TURN, None);
    completed["params"]["turn"]["status"] = json!("interrupted");
    let actions = h.agent(completed);
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::TurnEnded {
            session_id: Some(THREAD.into()),
            answer: Some("said before the stop".into()),
            stop: "interrupted".into(),
            is_error: false,
        }]
    );
}

#[test]
fn a_busy_thread_queues_the_injection_until_its_turn_ends() {
    let mut h = Harness::with_thread();
    human_turn(&mut h, 3, THREAD, TURN);
    assert_eq!(h.session(THREAD).last_human_input_ms.is_some(), true);

    let actions = h.inject(1, injection(InjectionKind::Request, Some(THREAD), "queued"));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Accepted {
            session_id: Some(THREAD.into()),
            queued: true
        }]
    );
    assert_eq!(to_agent(&actions), Vec::<Value>::new());
    // Idle is announced just before turn/completed; still nothing until the turn is over.
    let actions = h.agent(agent_message(THREAD, TURN, "human answer"));
    assert_eq!(to_agent(&actions), Vec::<Value>::new());
    let actions = h.agent(turn_completed(THREAD, TURN, Some("human answer")));
    // The human's turn ends: no report of ours for it, and now our turn goes in.
    assert_eq!(reports(&actions), vec![]);
    let written = to_agent(&actions);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["method"], "turn/start");
    assert_eq!(written[0]["params"]["input"][0]["text"], "queued");
}

#[test]
fn the_extension_typing_first_makes_the_thread_busy_before_any_notification() {
    let mut h = Harness::with_thread();
    // The extension's turn/start went by; the app-server has not answered yet.
    h.ext(json!({"id": 3, "method": "turn/start", "params": {"threadId": THREAD, "input": [{"type": "text", "text": "typed"}]}}));
    let actions = h.inject(1, injection(InjectionKind::Request, Some(THREAD), "x"));
    assert_eq!(to_agent(&actions), Vec::<Value>::new());
}

#[test]
fn nothing_goes_in_before_the_extension_initialized() {
    let mut h = Harness::new();
    h.ext(json!({"id": 1, "method": "initialize", "params": {}}));
    let actions = h.inject(1, new_conversation("hello", "claude: hello"));
    assert_eq!(to_agent(&actions), Vec::<Value>::new());
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Accepted {
            session_id: None,
            queued: true
        }]
    );
    h.agent(json!({"id": 1, "result": {}}));
    let actions = h.ext(json!({"method": "initialized"}));
    assert!(forwarded(&actions));
    let written = to_agent(&actions);
    assert_eq!(written.len(), 2);
    assert_eq!(written[0]["method"], "thread/start");
    assert_eq!(written[1]["method"], "config/read");
    // `initialized` itself goes first, then our requests.
    assert_eq!(actions[0], Action::Forward);
}

#[test]
fn a_human_steering_a_bridged_turn_counts_as_input_and_the_turn_still_ends_ours() {
    let mut h = Harness::with_thread();
    h.inject(
        1,
        injection(InjectionKind::Request, Some(THREAD), "bridged"),
    );
    h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": TURN}}}));
    h.agent(turn_started(THREAD, TURN));
    // Observed §3: a turn/start on a busy thread steers it and answers with the running turn.
    let actions = h.ext(json!({"id": 4, "method": "turn/start", "params": {"threadId": THREAD, "input": [{"type": "text", "text": "also this"}], "clientUserMessageId": "u2"}}));
    assert!(forwarded(&actions));
    let typed_at = h.session(THREAD).last_human_input_ms;
    assert!(typed_at.is_some());
    let actions =
        h.agent(json!({"id": 4, "result": {"turn": {"id": TURN, "status": "inProgress"}}}));
    assert!(forwarded(&actions), "the extension's own answer is its own");
    let actions = h.agent(turn_completed(THREAD, TURN, Some("both answered")));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::TurnEnded {
            session_id: Some(THREAD.into()),
            answer: Some("both answered".into()),
            stop: "completed".into(),
            is_error: false,
        }]
    );
}

#[test]
fn server_request_ids_and_extension_ids_are_kept_apart() {
    let mut h = Harness::with_thread();
    h.inject(1, injection(InjectionKind::Request, Some(THREAD), "run it"));
    h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": TURN}}}));
    h.agent(turn_started(THREAD, TURN));
    // The extension's own request with id 0 and the server's request with id 0 are different.
    let actions = h.ext(json!({"id": 0, "method": "thread/loaded/list", "params": {}}));
    assert!(forwarded(&actions));
    let approval = json!({"method": "item/commandExecution/requestApproval", "id": 0, "params": {"kind": "command", "threadId": THREAD, "turnId": TURN, "itemId": "call_1", "command": "/bin/bash -lc 'echo approved'", "cwd": "/work/project"}});
    let actions = h.agent(approval);
    assert!(forwarded(&actions));
    // The app-server answers the extension's id 0: forwarded, and the approval still pending.
    let actions = h.agent(json!({"id": 0, "result": {"data": [THREAD], "nextCursor": null}}));
    assert!(forwarded(&actions));
    assert_eq!(h.session(THREAD).pending_approvals.len(), 1);
    // A response id the shim made up is never one the extension sees; an xagent id we did
    // not send is not ours to swallow.
    let actions = h.agent(json!({"id": "xagent-99", "result": {}}));
    assert!(forwarded(&actions));
    // The extension answering id 0 resolves the server's request.
    let actions = h.ext(json!({"id": 0, "result": {"decision": "accept"}}));
    assert!(forwarded(&actions));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::ApprovalResolved {
            request_id: "0".into(),
            allowed: true
        }]
    );
    assert_eq!(h.session(THREAD).pending_approvals, vec![]);
}

#[test]
fn sub_agent_threads_and_notification_only_threads_are_never_targets() {
    let mut h = Harness::with_thread();
    // A thread id only in a notification.
    h.agent(
        json!({"method": "thread/started", "params": {"thread": thread_object("other-thread")}}),
    );
    h.agent(status("other-thread", json!({"type": "idle"})));
    // A sub-agent thread the extension resumed.
    h.ext(json!({"id": 5, "method": "thread/resume", "params": {"threadId": "sub-thread"}}));
    let mut sub = thread_object("sub-thread");
    sub["parentThreadId"] = json!(THREAD);
    sub["agentNickname"] = json!("scout");
    sub["canAcceptDirectInput"] = json!(false);
    h.agent(json!({"id": 5, "result": {"thread": sub}}));
    // Input the extension sends it later does not make it one either.
    h.ext(
        json!({"id": 6, "method": "turn/start", "params": {"threadId": "sub-thread", "input": []}}),
    );
    assert_eq!(h.session_ids(), vec![THREAD.to_owned()]);
    let actions = h.inject(
        1,
        injection(InjectionKind::Request, Some("sub-thread"), "x"),
    );
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Failed {
            reason: "codex thread sub-thread takes no direct input (a sub-agent)".into(),
            delivered: false
        }]
    );
    // A thread the extension resumed normally is one.
    h.ext(json!({"id": 7, "method": "thread/resume", "params": {"threadId": "resumed"}}));
    let mut resumed = thread_object("resumed");
    resumed["turns"] = json!([{"id": "t0", "items": []}]);
    h.agent(json!({"id": 7, "result": {"thread": resumed}}));
    assert!(h.session("resumed").has_history);
    // And one the extension only typed into (a thread it had open before the shim looked).
    h.ext(
        json!({"id": 8, "method": "turn/start", "params": {"threadId": "typed-into", "input": []}}),
    );
    assert_eq!(h.session_ids().len(), 3);
}

#[test]
fn a_thread_refusing_direct_input_is_dropped_and_the_message_goes_to_a_new_conversation_once() {
    let mut h = Harness::with_thread();
    let mut message = injection(InjectionKind::Request, Some(THREAD), "hello peer");
    message.title = Some("claude: hello peer".into());
    h.inject(1, message);
    let refusal = |id: &str| json!({"error": {"code": -32600, "message": "direct app-server input is not allowed for multi-agent v2 sub-agents"}, "id": id});
    let actions = h.agent(refusal("xagent-1"));
    assert!(!forwarded(&actions));
    assert_eq!(h.session_ids(), Vec::<String>::new());
    let written = to_agent(&actions);
    assert_eq!(
        written,
        vec![
            json!({"id": "xagent-2", "method": "thread/start", "params": {"cwd": "/work/project", "approvalPolicy": "never", "sandbox": "read-only", "threadSource": "user"}}),
            json!({"id": "xagent-3", "method": "config/read", "params": {"cwd": "/work/project"}}),
        ]
    );
    let actions =
        h.agent(json!({"id": "xagent-2", "result": {"thread": thread_object("new-thread")}}));
    assert!(!forwarded(&actions));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::SessionStarted {
            session_id: "new-thread".into()
        }]
    );
    assert_eq!(
        to_agent(&actions),
        vec![
            json!({"id": "xagent-4", "method": "thread/name/set", "params": {"threadId": "new-thread", "name": "claude: hello peer"}})
        ]
    );
    assert!(!forwarded(
        &h.agent(json!({"id": "xagent-4", "result": {}}))
    ));
    // No MCP server configured: the turn goes in as soon as the configuration says so.
    let actions = h.agent(json!({"id": "xagent-3", "result": {"config": {"mcp_servers": {}}}}));
    assert!(!forwarded(&actions));
    let written = to_agent(&actions);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["id"], "xagent-5");
    assert_eq!(written[0]["params"]["threadId"], "new-thread");
    // Refused again: it was retried once already, so it fails.
    let actions = h.agent(refusal("xagent-5"));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Failed {
            reason: "codex refused the turn: direct app-server input is not allowed for multi-agent v2 sub-agents".into(),
            delivered: false
        }]
    );
    assert_eq!(to_agent(&actions), Vec::<Value>::new());
}

/// Opens a new conversation for injection `id` and answers its `thread/start` with `thread`
/// and its `config/read` with `config` (an error when `None`); returns what those answers wrote.
fn open_new_conversation(
    h: &mut Harness,
    id: u64,
    thread: &str,
    config: Option<Value>,
) -> Vec<Action> {
    let actions = h.inject(id, new_conversation("hello", "codex: hello"));
    let written = to_agent(&actions);
    assert_eq!(written[0]["params"]["threadSource"], "user");
    assert_eq!(written[1]["method"], "config/read");
    let mut out =
        h.agent(json!({"id": written[0]["id"], "result": {"thread": thread_object(thread)}}));
    out.extend(h.agent(match config {
        Some(config) => json!({"id": written[1]["id"], "result": {"config": config}}),
        None => json!({"id": written[1]["id"], "error": {"code": -32600, "message": "no config"}}),
    }));
    out
}

fn turn_starts(actions: &[Action]) -> Vec<Value> {
    to_agent(actions)
        .into_iter()
        .filter(|line| line["method"] == "turn/start")
        .collect()
}

#[test]
fn a_new_conversation_waits_for_its_mcp_servers_then_for_no_longer_than_its_patience() {
    let mut h = Harness::with_thread();
    let servers = json!({"mcp_servers": {"cross-agent": {"command": "x", "enabled": true}, "off": {"command": "y", "enabled": false}}});
    let actions = open_new_conversation(&mut h, 1, "fresh", Some(servers.clone()));
    // Configured but not announced yet: nothing goes in, however long the announcement takes.
    assert_eq!(turn_starts(&actions), Vec::<Value>::new());
    assert_eq!(turn_starts(&h.tick(2_000)), Vec::<Value>::new());
    h.agent(json!({"method": "mcpServer/startupStatus/updated", "params": {"threadId": "fresh", "name": "cross-agent", "status": "starting", "error": null}}));
    assert_eq!(turn_starts(&h.tick(2_000)), Vec::<Value>::new());
    let actions = h.agent(json!({"method": "mcpServer/startupStatus/updated", "params": {"threadId": "fresh", "name": "cross-agent", "status": "ready", "error": null}}));
    assert_eq!(turn_starts(&actions).len(), 1);

    // A server that never gets ready holds the turn back ~10 s at most.
    open_new_conversation(&mut h, 2, "slow", Some(servers));
    h.agent(json!({"method": "mcpServer/startupStatus/updated", "params": {"threadId": "slow", "name": "cross-agent", "status": "starting"}}));
    assert_eq!(turn_starts(&h.tick(5_000)), Vec::<Value>::new());
    let written = turn_starts(&h.tick(5_100));
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["params"]["threadId"], "slow");

    // Without the configuration, a short grace for announcements stands in.
    let actions = open_new_conversation(&mut h, 3, "plain", None);
    assert_eq!(turn_starts(&actions), Vec::<Value>::new());
    let written = turn_starts(&h.tick(1_500));
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["params"]["threadId"], "plain");
}

#[test]
fn approvals_of_a_bridged_turn_are_reported_and_answered_once() {
    let mut h = Harness::with_thread();
    h.inject(1, injection(InjectionKind::Request, Some(THREAD), "run it"));
    h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": TURN}}}));
    h.agent(turn_started(THREAD, TURN));
    h.agent(status(
        THREAD,
        json!({"type": "active", "activeFlags": ["waitingOnApproval"]}),
    ));
    let actions = h.agent(json!({"method": "item/commandExecution/requestApproval", "id": 0, "params": {"kind": "command", "threadId": THREAD, "turnId": TURN, "itemId": "call_1", "command": "/bin/bash -lc 'echo approved'", "cwd": "/work/project"}}));
    let pending = PendingApproval {
        request_id: "0".into(),
        kind: "item/commandExecution/requestApproval".into(),
        tool: Some("command".into()),
        detail: Some("/bin/bash -lc 'echo approved'".into()),
        since_ms: h.now,
        delivery_id: Some("dlv_1".into()),
        input: Some(
            json!({"command": "/bin/bash -lc 'echo approved'", "cwd": "/work/project", "reason": null}),
        ),
    };
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::ApprovalPending {
            approval: pending.clone()
        }]
    );
    assert_eq!(h.state(THREAD), PanelSessionState::AwaitingApproval);
    assert_eq!(h.session(THREAD).pending_approvals, vec![pending]);

    let actions = h.answer(9, "0", true);
    assert_eq!(
        to_agent(&actions),
        vec![json!({"id": 0, "result": {"decision": "accept"}})]
    );
    assert_eq!(
        reports(&actions),
        vec![
            ShimEvent::ApprovalAnswered {
                accepted: true,
                reason: None
            },
            ShimEvent::ApprovalResolved {
                request_id: "0".into(),
                allowed: true
            }
        ]
    );
    // First answer wins: a second one is refused and writes nothing.
    let actions = h.answer(10, "0", false);
    assert_eq!(to_agent(&actions), Vec::<Value>::new());
    assert!(matches!(
        reports(&actions)[..],
        [ShimEvent::ApprovalAnswered {
            accepted: false,
            ..
        }]
    ));

    // An MCP tool approval is an elicitation, answered with an action.
    h.agent(json!({"method": "mcpServer/elicitation/request", "id": 1, "params": {"threadId": THREAD, "turnId": TURN, "serverName": "probe", "mode": "form", "_meta": {"codex_approval_kind": "mcp_tool_call", "tool_name": "echo", "tool_params": {"text": "ping"}}, "message": "Allow the probe MCP server to run tool \"echo\"?", "requestedSchema": {"type": "object", "properties": {}}}}));
    let approval = &h.session(THREAD).pending_approvals[0];
    assert_eq!(approval.tool.as_deref(), Some("probe/echo"));
    assert_eq!(approval.detail.as_deref(), Some(r#"{"text":"ping"}"#));
    assert_eq!(approval.input, Some(json!({"text": "ping"})));
    let actions = h.answer(11, "1", false);
    assert_eq!(
        to_agent(&actions),
        vec![json!({"id": 1, "result": {"action": "decline", "content": {}}})]
    );
    // The broadcast that the request is settled changes nothing more.
    let actions = h.agent(
        json!({"method": "serverRequest/resolved", "params": {"threadId": THREAD, "requestId": 1}}),
    );
    assert_eq!(reports(&actions), vec![]);
}

#[test]
fn return_traffic_is_written_once_the_app_server_takes_the_turn() {
    let mut h = Harness::with_thread();
    h.inject(
        1,
        injection(InjectionKind::Reply, Some(THREAD), "BRIDGE REPLY"),
    );
    let actions = h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": TURN}}}));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Written {
            session_id: Some(THREAD.into())
        }]
    );
    assert!(actions.contains(&Action::Close(InjectionId(1))));
    // The thread stays busy until that turn ends: a second injection waits.
    h.agent(turn_started(THREAD, TURN));
    let actions = h.inject(
        2,
        injection(InjectionKind::Notice, Some(THREAD), "PROGRESS"),
    );
    assert_eq!(to_agent(&actions), Vec::<Value>::new());
    let actions = h.agent(turn_completed(THREAD, TURN, Some("read it")));
    assert_eq!(to_agent(&actions).len(), 1);
}

#[test]
fn names_and_unparsable_lines() {
    let mut h = Harness::with_thread();
    let actions = h.agent(json!({"method": "thread/name/updated", "params": {"threadId": THREAD, "threadName": "Panel probe thread"}, "emittedAtMs": 1}));
    assert!(actions.contains(&Action::SessionsChanged));
    assert_eq!(
        h.session(THREAD).title.as_deref(),
        Some("Panel probe thread")
    );
    let mut out = Vec::new();
    h.adapter
        .on_line(Side::Agent, b"WARNING: not json", h.now, &mut out);
    assert_eq!(out, vec![Action::Forward]);
}

#[test]
fn an_exiting_app_server_fails_open_injections_saying_whether_they_went_in() {
    let mut h = Harness::with_thread();
    h.inject(1, injection(InjectionKind::Request, Some(THREAD), "in"));
    h.inject(2, injection(InjectionKind::Request, Some(THREAD), "queued"));
    let mut out = Vec::new();
    h.adapter.on_agent_exit(&mut out);
    assert_eq!(
        reports(&out),
        vec![
            ShimEvent::Failed {
                reason: "the codex app-server exited".into(),
                delivered: true
            },
            ShimEvent::Failed {
                reason: "the codex app-server exited".into(),
                delivered: false
            }
        ]
    );
}

#[test]
fn a_permissions_request_is_tracked_but_left_to_the_panel() {
    let mut h = Harness::with_thread();
    human_turn(&mut h, 3, THREAD, TURN);
    h.agent(json!({"method": "item/permissions/requestApproval", "id": 0, "params": {"threadId": THREAD, "turnId": TURN, "itemId": "call_1", "permissions": {"network": {"enabled": true}}}}));
    assert_eq!(h.state(THREAD), PanelSessionState::AwaitingApproval);
    let pending = &h.session(THREAD).pending_approvals[0];
    assert_eq!(pending.kind, "item/permissions/requestApproval");
    let actions = h.answer(9, "0", true);
    assert_eq!(to_agent(&actions), Vec::<Value>::new());
    assert!(matches!(
        reports(&actions)[..],
        [ShimEvent::ApprovalAnswered {
            accepted: false,
            ..
        }]
    ));
    assert_eq!(h.session(THREAD).pending_approvals.len(), 1);
}

#[test]
fn a_closed_thread_is_no_target_and_what_waited_for_it_fails() {
    let mut h = Harness::with_thread();
    human_turn(&mut h, 3, THREAD, TURN);
    h.inject(1, injection(InjectionKind::Request, Some(THREAD), "waits"));
    let actions = h.agent(json!({"method": "thread/closed", "params": {"threadId": THREAD}}));
    assert_eq!(h.session_ids(), Vec::<String>::new());
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Failed {
            reason: format!("codex thread {THREAD} is no longer open in this panel"),
            delivered: false
        }]
    );
}

#[test]
fn a_turn_ending_after_ours_went_in_on_the_idle_announcement_is_not_ours() {
    let mut h = Harness::with_thread();
    human_turn(&mut h, 3, THREAD, TURN);
    h.inject(
        1,
        injection(InjectionKind::Request, Some(THREAD), "after the human"),
    );
    // Idle comes just before turn/completed; a tick in between lets ours go in.
    h.agent(status(THREAD, json!({"type": "idle"})));
    let written = to_agent(&h.tick(1_000));
    assert_eq!(written.len(), 1);
    let actions = h.agent(turn_completed(THREAD, TURN, Some("the human's answer")));
    assert_eq!(reports(&actions), vec![]);
    assert_eq!(h.state(THREAD), PanelSessionState::Working);
    h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": "turn-2"}}}));
    h.agent(turn_started(THREAD, "turn-2"));
    let actions = h.agent(turn_completed(THREAD, "turn-2", Some("ours")));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::TurnEnded {
            session_id: Some(THREAD.into()),
            answer: Some("ours".into()),
            stop: "completed".into(),
            is_error: false,
        }]
    );
}

#[test]
fn a_queued_injection_whose_daemon_went_away_still_goes_in_unreported() {
    let mut h = Harness::with_thread();
    human_turn(&mut h, 3, THREAD, TURN);
    h.inject(
        1,
        injection(InjectionKind::Request, Some(THREAD), "handed over"),
    );
    h.adapter.on_disconnect(InjectionId(1));
    let actions = h.agent(turn_completed(THREAD, TURN, Some("human answer")));
    assert_eq!(to_agent(&actions).len(), 1);
    h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": "turn-2"}}}));
    let actions = h.agent(turn_completed(THREAD, "turn-2", Some("ours")));
    assert_eq!(reports(&actions), vec![]);
    assert_eq!(h.state(THREAD), PanelSessionState::Idle);
}

#[test]
fn an_ephemeral_thread_the_extension_started_is_no_target() {
    let mut h = Harness::with_thread();
    h.ext(json!({"id": 5, "method": "thread/start", "params": {"cwd": "/work/project", "ephemeral": true}}));
    let mut scratch = thread_object("scratch");
    scratch["ephemeral"] = json!(true);
    h.agent(json!({"id": 5, "result": {"thread": scratch}}));
    h.ext(json!({"id": 6, "method": "turn/start", "params": {"threadId": "scratch", "input": []}}));
    assert_eq!(h.session_ids(), vec![THREAD.to_owned()]);
    // A conversation the shim opens is never ephemeral, whatever the extension asked for last.
    let actions = h.inject(1, new_conversation("hello", "claude: hello"));
    let written = to_agent(&actions);
    assert_eq!(written[0]["params"].get("ephemeral"), None);
}

#[test]
fn a_thread_whose_mcp_servers_are_starting_takes_our_turn_once_they_are_ready() {
    let mut h = Harness::with_thread();
    h.agent(json!({"method": "mcpServer/startupStatus/updated", "params": {"threadId": THREAD, "name": "cross-agent", "status": "starting"}}));
    let actions = h.inject(1, injection(InjectionKind::Request, Some(THREAD), "x"));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Accepted {
            session_id: Some(THREAD.into()),
            queued: true
        }]
    );
    assert_eq!(to_agent(&h.tick(1_000)), Vec::<Value>::new());
    let actions = h.agent(json!({"method": "mcpServer/startupStatus/updated", "params": {"threadId": THREAD, "name": "cross-agent", "status": "ready"}}));
    assert_eq!(to_agent(&actions).len(), 1);

    // One that never gets ready holds a turn back no longer than the patience.
    h.agent(turn_completed(THREAD, TURN, None));
    h.agent(json!({"id": "xagent-1", "result": {"turn": {"id": TURN}}}));
    h.agent(turn_started(THREAD, TURN));
    h.agent(turn_completed(THREAD, TURN, Some("done")));
    h.agent(json!({"method": "mcpServer/startupStatus/updated", "params": {"threadId": THREAD, "name": "stuck", "status": "starting"}}));
    h.inject(2, injection(InjectionKind::Request, Some(THREAD), "y"));
    assert_eq!(to_agent(&h.tick(5_000)), Vec::<Value>::new());
    assert_eq!(to_agent(&h.tick(5_100)).len(), 1);
}

#[test]
fn a_file_change_approval_carries_the_diffs_its_item_started_with() {
    let mut h = Harness::with_thread();
    h.agent(turn_started(THREAD, TURN));
    let changes = json!([
        {"path": "/work/project/a.txt", "kind": {"type": "update", "move_path": null},
         "diff": "@@ -1 +1 @@\n-old\n+new\n"},
        {"path": "/work/project/b.txt", "kind": {"type": "add"}, "diff": "fresh\n"}]);
    h.agent(json!({"method": "item/started", "params": {"threadId": THREAD, "turnId": TURN,
        "item": {"type": "fileChange", "id": "call_fc", "changes": changes, "status": "inProgress"}}}));
    h.agent(
        json!({"method": "item/fileChange/requestApproval", "id": 5, "params": {
        "threadId": THREAD, "turnId": TURN, "itemId": "call_fc", "reason": "write two files"}}),
    );
    let approval = &h.session(THREAD).pending_approvals[0];
    assert_eq!(approval.kind, "item/fileChange/requestApproval");
    assert_eq!(approval.detail.as_deref(), Some("write two files"));
    assert_eq!(approval.input, Some(json!({"changes": changes})));
    // Once the item completes its changes are forgotten: a later approval of another item
    // does not borrow them.
    h.agent(json!({"method": "item/completed", "params": {"threadId": THREAD, "turnId": TURN,
        "item": {"type": "fileChange", "id": "call_fc", "changes": changes, "status": "completed"}}}));
    h.agent(
        json!({"method": "item/fileChange/requestApproval", "id": 6, "params": {
        "threadId": THREAD, "turnId": TURN, "itemId": "call_other"}}),
    );
    let later = h
        .session(THREAD)
        .pending_approvals
        .iter()
        .find(|a| a.request_id == "6")
        .cloned()
        .unwrap();
    assert_eq!(later.input, None);
}
