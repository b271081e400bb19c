//! The Grok adapter on ACP line sequences shaped after the ACP v1 docs (initialization,
//! session-setup, prompt-turn, tool-calls) as recorded in docs/observed/telegram_ahp_grok.md §3.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

const SESSION: &str = "sess_abc";

struct Harness {
    adapter: GrokAdapter,
    now: u64,
}

impl Harness {
    fn new() -> Self {
        Self {
            adapter: GrokAdapter::new(&[OsString::from("agent"), OsString::from("stdio")]),
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

    /// `initialize` and one `session/new` the extension made.
    fn with_session() -> Self {
        let mut h = Self::new();
        h.ext(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}}));
        h.agent(json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}, "authMethods": []}}));
        h.new_session(1, SESSION);
        h
    }

    fn new_session(&mut self, id: u64, session: &str) {
        self.ext(json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": "/abs/project", "mcpServers": []}}));
        self.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": session}}));
    }

    fn session(&self, id: &str) -> PanelSession {
        self.adapter
            .sessions()
            .into_iter()
            .find(|s| s.session_id.as_deref() == Some(id))
            .unwrap_or_else(|| panic!("no session {id}"))
    }
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
        sender_label: Some("claude · session 1234".into()),
    }
}

fn update(session: &str, update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}})
}

fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

fn lines(actions: &[Action], to_agent: bool) -> Vec<Value> {
    actions
        .iter()
        .filter_map(|a| match (a, to_agent) {
            (Action::ToAgent(line), true) | (Action::ToExtension(line), false) => {
                Some(serde_json::from_slice(line).unwrap())
            }
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

#[test]
fn an_idle_session_gets_the_quoted_block_then_our_prompt_and_the_answer_after_the_last_tool_call() {
    let mut h = Harness::with_session();
    let actions = h.inject(
        1,
        injection(
            InjectionKind::Request,
            Some(SESSION),
            "review this\n\nthanks",
        ),
    );
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Accepted {
            session_id: Some(SESSION.into()),
            queued: false
        }]
    );
    assert_eq!(
        lines(&actions, false),
        vec![update(
            SESSION,
            chunk(
                "agent_message_chunk",
                "> **claude · session 1234**\n>\n> review this\n>\n> thanks\n\n"
            )
        )]
    );
    assert_eq!(
        lines(&actions, true),
        vec![
            json!({"jsonrpc": "2.0", "id": "xagent-1", "method": "session/prompt", "params": {"sessionId": SESSION, "prompt": [{"type": "text", "text": "review this\n\nthanks"}]}})
        ]
    );
    // The quoted block reaches the extension before anything of the reply.
    let block_at = actions
        .iter()
        .position(|a| matches!(a, Action::ToExtension(_)));
    let prompt_at = actions.iter().position(|a| matches!(a, Action::ToAgent(_)));
    assert!(block_at < prompt_at);
    assert_eq!(h.session(SESSION).state, PanelSessionState::Working);
    assert_eq!(h.session(SESSION).last_human_input_ms, None);

    // The bridged turn's thinking is held back; everything else goes through.
    assert!(!forwarded(
        &h.agent(update(SESSION, chunk("agent_thought_chunk", "hmm")))
    ));
    assert!(forwarded(&h.agent(update(
        SESSION,
        chunk("agent_message_chunk", "Let me look.")
    ))));
    assert!(forwarded(&h.agent(update(SESSION, json!({"sessionUpdate": "tool_call", "toolCallId": "call_001", "title": "Reading file", "kind": "read", "status": "pending"})))));
    h.agent(update(SESSION, json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_001", "status": "completed"})));
    h.agent(update(SESSION, chunk("agent_message_chunk", "Looks ")));
    h.agent(update(SESSION, chunk("agent_message_chunk", "good.")));
    let actions =
        h.agent(json!({"jsonrpc": "2.0", "id": "xagent-1", "result": {"stopReason": "end_turn"}}));
    assert!(!forwarded(&actions), "our prompt's response is ours");
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::TurnEnded {
            session_id: Some(SESSION.into()),
            answer: Some("Looks good.".into()),
            stop: "end_turn".into(),
            is_error: false,
        }]
    );
    assert_eq!(h.session(SESSION).state, PanelSessionState::Idle);
    // Thinking of a human's turn is the extension's own.
    assert!(forwarded(
        &h.agent(update(SESSION, chunk("agent_thought_chunk", "mine")))
    ));
}

#[test]
fn queued_human_prompts_keep_the_session_busy_until_the_last_is_answered() {
    let mut h = Harness::with_session();
    h.ext(json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": SESSION, "prompt": [{"type": "text", "text": "first"}]}}));
    h.ext(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": SESSION, "prompt": [{"type": "text", "text": "typed ahead"}]}}));
    assert_eq!(h.session(SESSION).unanswered_human_prompts, 2);
    assert!(h.session(SESSION).last_human_input_ms.is_some());

    let actions = h.inject(
        1,
        injection(InjectionKind::Request, Some(SESSION), "bridged"),
    );
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Accepted {
            session_id: Some(SESSION.into()),
            queued: true
        }]
    );
    assert_eq!(lines(&actions, true), Vec::<Value>::new());
    let actions = h.agent(json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}));
    assert!(forwarded(&actions));
    assert_eq!(lines(&actions, true), Vec::<Value>::new());
    assert_eq!(h.session(SESSION).unanswered_human_prompts, 1);
    let actions = h.agent(json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}));
    assert!(forwarded(&actions));
    assert_eq!(lines(&actions, true).len(), 1);
    assert_eq!(lines(&actions, false).len(), 1);
}

#[test]
fn a_human_prompt_during_a_bridged_turn_waits_its_turn_and_keeps_the_session_busy() {
    let mut h = Harness::with_session();
    h.inject(
        1,
        injection(InjectionKind::Request, Some(SESSION), "bridged"),
    );
    h.ext(json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": SESSION, "prompt": [{"type": "text", "text": "me too"}]}}));
    let actions =
        h.agent(json!({"jsonrpc": "2.0", "id": "xagent-1", "result": {"stopReason": "end_turn"}}));
    assert!(matches!(
        reports(&actions)[..],
        [ShimEvent::TurnEnded { .. }]
    ));
    assert_eq!(h.session(SESSION).state, PanelSessionState::Working);
    // The human's turn is not held back.
    assert!(forwarded(
        &h.agent(update(SESSION, chunk("agent_thought_chunk", "theirs")))
    ));
    let second = h.inject(
        2,
        injection(InjectionKind::Notice, Some(SESSION), "PROGRESS"),
    );
    assert_eq!(lines(&second, true), Vec::<Value>::new());
    let actions = h.agent(json!({"jsonrpc": "2.0", "id": 4, "result": {"stopReason": "end_turn"}}));
    assert_eq!(lines(&actions, true).len(), 1);
    // A notice expects no answer: written is its last word.
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::Written {
            session_id: Some(SESSION.into())
        }]
    );
}

#[test]
fn a_new_conversation_takes_an_empty_session_and_fails_for_the_cli_when_none_is_left() {
    let mut h = Harness::with_session();
    h.ext(json!({"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": {"sessionId": "sess_old", "cwd": "/abs/project", "mcpServers": []}}));
    // History replay while loading, then the load's answer.
    h.agent(update(
        "sess_old",
        chunk("user_message_chunk", "old question"),
    ));
    h.agent(json!({"jsonrpc": "2.0", "id": 2, "result": null}));
    assert!(h.session("sess_old").has_history);
    assert!(!h.session(SESSION).has_history);

    let mut fresh = injection(InjectionKind::Request, None, "start something");
    fresh.new_session = true;
    let actions = h.inject(1, fresh.clone());
    assert_eq!(
        reports(&actions),
        vec![
            ShimEvent::Accepted {
                session_id: Some(SESSION.into()),
                queued: false
            },
            ShimEvent::SessionStarted {
                session_id: SESSION.into()
            }
        ]
    );
    assert_eq!(lines(&actions, true)[0]["params"]["sessionId"], SESSION);
    assert!(h.session(SESSION).has_history);

    let actions = h.inject(2, fresh);
    match &reports(&actions)[..] {
        [ShimEvent::Failed { reason, delivered }] => {
            assert!(reason.starts_with(NO_EMPTY_SESSION), "{reason}");
            assert!(!delivered);
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn a_loading_session_takes_nothing_until_its_history_is_replayed() {
    let mut h = Harness::with_session();
    h.ext(json!({"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": {"sessionId": "sess_old", "cwd": "/abs/project", "mcpServers": []}}));
    let actions = h.inject(
        1,
        injection(InjectionKind::Reply, Some("sess_old"), "BRIDGE REPLY"),
    );
    assert_eq!(lines(&actions, true), Vec::<Value>::new());
    let actions = h.agent(json!({"jsonrpc": "2.0", "id": 2, "result": null}));
    assert_eq!(lines(&actions, true)[0]["params"]["sessionId"], "sess_old");
}

#[test]
fn permission_requests_are_tracked_and_answered_with_the_once_options() {
    let mut h = Harness::with_session();
    h.inject(
        1,
        injection(InjectionKind::Request, Some(SESSION), "edit it"),
    );
    let request = json!({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": {"sessionId": SESSION, "toolCall": {"toolCallId": "call_001", "title": "Edit main.rs", "rawInput": {"path": "main.rs"}}, "options": [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"}, {"optionId": "allow-always", "name": "Always", "kind": "allow_always"}, {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]}});
    let actions = h.agent(request.clone());
    assert!(forwarded(&actions));
    let pending = PendingApproval {
        request_id: "5".into(),
        kind: "session/request_permission".into(),
        tool: Some("Edit main.rs".into()),
        input: None,
        detail: Some(r#"{"path":"main.rs"}"#.into()),
        since_ms: h.now,
        delivery_id: Some("dlv_1".into()),
    };
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::ApprovalPending {
            approval: pending.clone()
        }]
    );
    assert_eq!(
        h.session(SESSION).state,
        PanelSessionState::AwaitingApproval
    );
    assert_eq!(h.session(SESSION).pending_approvals, vec![pending]);

    let mut out = Vec::new();
    let answer = ApprovalAnswer {
        session_id: Some(SESSION.into()),
        request_id: "5".into(),
        allow: false,
        message: None,
    };
    h.adapter
        .on_answer_approval(InjectionId(7), answer.clone(), h.now, &mut out);
    assert_eq!(
        lines(&out, true),
        vec![
            json!({"jsonrpc": "2.0", "id": 5, "result": {"outcome": {"outcome": "selected", "optionId": "reject-once"}}})
        ]
    );
    assert_eq!(
        reports(&out),
        vec![
            ShimEvent::ApprovalAnswered {
                accepted: true,
                reason: None
            },
            ShimEvent::ApprovalResolved {
                request_id: "5".into(),
                allowed: false
            }
        ]
    );
    assert_eq!(h.session(SESSION).state, PanelSessionState::Working);
    // First answer wins.
    let mut out = Vec::new();
    h.adapter
        .on_answer_approval(InjectionId(8), answer, h.now, &mut out);
    assert!(matches!(
        reports(&out)[..],
        [ShimEvent::ApprovalAnswered {
            accepted: false,
            ..
        }]
    ));

    // One the person answers in the panel is resolved by the extension's response.
    let mut again = request;
    again["id"] = json!(6);
    h.agent(again);
    let actions = h.ext(json!({"jsonrpc": "2.0", "id": 6, "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}));
    assert!(forwarded(&actions));
    assert_eq!(
        reports(&actions),
        vec![ShimEvent::ApprovalResolved {
            request_id: "6".into(),
            allowed: true
        }]
    );
}

#[test]
fn nothing_goes_in_before_the_extension_initialized_and_ids_it_never_used_are_forwarded() {
    let mut h = Harness::new();
    h.ext(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}));
    // A session the extension loads before the handshake is answered (it cannot, but the shim
    // must not rely on it).
    h.ext(json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": SESSION, "prompt": []}}));
    h.agent(json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}));
    let actions = h.inject(1, injection(InjectionKind::Request, Some(SESSION), "early"));
    assert_eq!(lines(&actions, true), Vec::<Value>::new());
    let actions = h.agent(json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}));
    assert!(forwarded(&actions));
    assert_eq!(lines(&actions, true).len(), 1);
    assert!(forwarded(&h.agent(
        json!({"jsonrpc": "2.0", "id": "xagent-77", "result": {}})
    )));
}

#[test]
fn a_permission_request_left_unanswered_when_the_turn_ends_is_forgotten() {
    let mut h = Harness::with_session();
    h.inject(
        1,
        injection(InjectionKind::Request, Some(SESSION), "edit it"),
    );
    h.agent(json!({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": {"sessionId": SESSION, "toolCall": {"toolCallId": "call_001"}, "options": [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"}]}}));
    assert_eq!(
        h.session(SESSION).state,
        PanelSessionState::AwaitingApproval
    );
    h.agent(json!({"jsonrpc": "2.0", "id": "xagent-1", "result": {"stopReason": "cancelled"}}));
    assert_eq!(h.session(SESSION).pending_approvals, vec![]);
    assert_eq!(h.session(SESSION).state, PanelSessionState::Idle);
}

#[test]
fn a_deny_with_no_reject_option_is_refused_and_the_request_stays_pending_for_the_panel() {
    let mut h = Harness::with_session();
    h.inject(
        1,
        injection(InjectionKind::Request, Some(SESSION), "edit it"),
    );
    h.agent(json!({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": {"sessionId": SESSION, "toolCall": {"toolCallId": "call_001"}, "options": [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"}]}}));
    let mut out = Vec::new();
    let deny = ApprovalAnswer {
        session_id: Some(SESSION.into()),
        request_id: "5".into(),
        allow: false,
        message: None,
    };
    h.adapter
        .on_answer_approval(InjectionId(7), deny, h.now, &mut out);
    assert!(
        lines(&out, true).is_empty(),
        "nothing was answered: {out:?}"
    );
    assert!(matches!(
        reports(&out).as_slice(),
        [ShimEvent::ApprovalAnswered {
            accepted: false,
            reason: Some(_)
        }]
    ));
    assert_eq!(h.session(SESSION).pending_approvals.len(), 1);
    assert_eq!(
        h.session(SESSION).state,
        PanelSessionState::AwaitingApproval
    );
    // The panel (or an allow through the bridge) can still answer it.
    let mut out = Vec::new();
    let allow = ApprovalAnswer {
        session_id: Some(SESSION.into()),
        request_id: "5".into(),
        allow: true,
        message: None,
    };
    h.adapter
        .on_answer_approval(InjectionId(8), allow, h.now, &mut out);
    assert_eq!(
        lines(&out, true),
        vec![
            json!({"jsonrpc": "2.0", "id": 5, "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}})
        ]
    );
}
