//! The Claude adapter on lines as the real CLI wrote them (`docs/observed/claude.md` §1, trimmed
//! where it says so).

use pretty_assertions::assert_eq;

use super::*;

const INIT: &str =
    r#"{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}"#;
const HUMAN: &str = r#"{"type":"user","message":{"role":"user","content":"HELLO one"}}"#;
const SYSTEM_INIT: &str = r#"{"type":"system","subtype":"init","cwd":"/tmp/proj","session_id":"5ff355ef-b2f2-4ab0-bb7b-c6ff4230de7d","tools":["Task","Bash"],"model":"claude-opus-5-5"}"#;
const ASSISTANT: &str = r#"{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hello there \"type\":\"result\""}]},"parent_tool_use_id":null,"session_id":"5ff355ef-b2f2-4ab0-bb7b-c6ff4230de7d"}"#;
const SESSION: &str = "5ff355ef-b2f2-4ab0-bb7b-c6ff4230de7d";
const PERMISSION: &str = r#"{"type":"control_request","request_id":"0e5a3477","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"echo perm-ok > f && cat f","description":"write file"},"description":"write file","tool_use_id":"toolu_1"}}"#;

fn result(text: &str) -> String {
    format!(
        r#"{{"duration_api_ms":86,"stop_reason":"end_turn","session_id":"{SESSION}","is_error":false,"num_turns":1,"subtype":"success","result":"{text}","type":"result"}}"#
    )
}

fn injection(delivery: &str, kind: InjectionKind) -> Injection {
    Injection {
        delivery_id: delivery.to_owned(),
        kind,
        session_id: None,
        new_session: false,
        text: format!("message of {delivery}"),
        request_id: None,
        title: None,
        sender_label: None,
    }
}

fn feed(adapter: &mut ClaudeAdapter, side: Side, line: &str) -> Vec<Action> {
    let mut out = Vec::new();
    adapter.on_line(side, line.as_bytes(), 1_000, &mut out);
    out
}

fn inject(adapter: &mut ClaudeAdapter, id: u64, injection: Injection) -> Vec<Action> {
    let mut out = Vec::new();
    adapter.on_inject(InjectionId(id), injection, 1_000, &mut out);
    out
}

fn user_line(text: &str) -> String {
    format!(r#"{{"type":"user","message":{{"role":"user","content":"{text}"}}}}"#)
}

fn events(actions: &[Action]) -> Vec<(u64, ShimEvent)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Report(id, event) => Some((id.0, event.clone())),
            _ => None,
        })
        .collect()
}

fn written(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::ToAgent(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        })
        .collect()
}

fn spoken() -> ClaudeAdapter {
    let mut adapter = ClaudeAdapter::new(&[], None, 0);
    feed(&mut adapter, Side::Extension, INIT);
    adapter
}

fn turn_ended(text: &str) -> ShimEvent {
    ShimEvent::TurnEnded {
        session_id: Some(SESSION.to_owned()),
        answer: Some(text.to_owned()),
        stop: "success".to_owned(),
        is_error: false,
    }
}

fn accepted(session: Option<&str>, queued: bool) -> ShimEvent {
    ShimEvent::Accepted {
        session_id: session.map(str::to_owned),
        queued,
    }
}

#[test]
fn the_session_comes_from_argv_or_the_init_line() {
    let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    for argv in [
        args(&["--input-format", "stream-json", "--resume=abc"]),
        args(&["--resume", "abc"]),
        args(&["--session-id=abc"]),
    ] {
        let adapter = ClaudeAdapter::new(&argv, None, 0);
        assert_eq!(
            adapter.sessions()[0].session_id.as_deref(),
            Some("abc"),
            "{argv:?}"
        );
    }
    let forked = ClaudeAdapter::new(&args(&["--resume=abc", "--fork-session"]), None, 0);
    assert_eq!(forked.sessions()[0].session_id, None);
    let mut fresh = spoken();
    assert_eq!(fresh.sessions()[0].session_id, None);
    feed(&mut fresh, Side::Extension, HUMAN);
    let out = feed(&mut fresh, Side::Agent, SYSTEM_INIT);
    assert!(out.contains(&Action::SessionsChanged));
    let session = &fresh.sessions()[0];
    assert_eq!(session.session_id.as_deref(), Some(SESSION));
    assert_eq!(session.cwd.as_deref(), Some("/tmp/proj"));
}

#[test]
fn every_line_is_forwarded_and_unparseable_ones_change_nothing() {
    let mut adapter = spoken();
    for (side, line) in [
        (Side::Agent, ASSISTANT),
        (Side::Agent, r#"{"type":"result" broken"#),
        (Side::Extension, "not json"),
    ] {
        assert_eq!(feed(&mut adapter, side, line), vec![Action::Forward]);
    }
    // The text of an assistant line mentioning a result does not end a turn.
    assert_eq!(adapter.sessions()[0].state, PanelSessionState::Idle);
    // Nor does a sub-agent's line speak for the session.
    feed(&mut adapter, Side::Extension, HUMAN);
    let sub = SYSTEM_INIT.replace(r#""model""#, r#""parent_tool_use_id":"toolu_9","model""#);
    feed(
        &mut adapter,
        Side::Agent,
        &sub.replace(SESSION, "sub-agent"),
    );
    assert_eq!(adapter.sessions()[0].session_id, None);
}

#[test]
fn nothing_is_written_before_the_extensions_first_line() {
    let mut adapter = ClaudeAdapter::new(&[], None, 0);
    let out = inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    assert!(written(&out).is_empty());
    assert_eq!(events(&out), vec![(1, accepted(None, true))]);
    let out = feed(&mut adapter, Side::Extension, INIT);
    assert_eq!(out[0], Action::Forward);
    assert_eq!(written(&out), vec![user_line("message of d1")]);
}

#[test]
fn an_idle_panel_takes_the_injection_and_reports_its_answer() {
    let mut adapter = spoken();
    let out = inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    assert_eq!(events(&out), vec![(1, accepted(None, false))]);
    assert_eq!(written(&out), vec![user_line("message of d1")]);
    assert_eq!(adapter.sessions()[0].state, PanelSessionState::Working);
    assert_eq!(
        adapter.sessions()[0].bridged_delivery_id.as_deref(),
        Some("d1")
    );
    let out = feed(&mut adapter, Side::Agent, SYSTEM_INIT);
    assert_eq!(
        events(&out),
        vec![(
            1,
            ShimEvent::SessionStarted {
                session_id: SESSION.to_owned()
            }
        )]
    );
    feed(&mut adapter, Side::Agent, ASSISTANT);
    let out = feed(&mut adapter, Side::Agent, &result("the answer"));
    assert_eq!(events(&out), vec![(1, turn_ended("the answer"))]);
    assert!(out.contains(&Action::Close(InjectionId(1))));
    let session = &adapter.sessions()[0];
    assert_eq!(session.state, PanelSessionState::Idle);
    assert_eq!(
        session.last_human_input_ms, None,
        "an injection is not human input"
    );
}

#[test]
fn a_busy_panel_queues_the_injection_until_the_humans_turn_ends() {
    let mut adapter = spoken();
    feed(&mut adapter, Side::Extension, HUMAN);
    assert_eq!(adapter.sessions()[0].last_human_input_ms, Some(1_000));
    feed(&mut adapter, Side::Agent, SYSTEM_INIT);
    let out = inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    assert_eq!(events(&out), vec![(1, accepted(Some(SESSION), true))]);
    assert!(written(&out).is_empty());
    // The human's answer is not reported to the injection, which is written then.
    let out = feed(&mut adapter, Side::Agent, &result("human answer"));
    assert_eq!(events(&out), vec![]);
    assert_eq!(written(&out), vec![user_line("message of d1")]);
    let out = feed(&mut adapter, Side::Agent, &result("bridged answer"));
    assert_eq!(events(&out), vec![(1, turn_ended("bridged answer"))]);
}

#[test]
fn a_human_typing_during_a_bridged_turn_keeps_the_answers_apart() {
    let mut adapter = spoken();
    inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    feed(&mut adapter, Side::Agent, SYSTEM_INIT);
    feed(&mut adapter, Side::Extension, HUMAN);
    assert_eq!(adapter.sessions()[0].unanswered_human_prompts, 1);
    let out = feed(&mut adapter, Side::Agent, &result("bridged answer"));
    assert_eq!(events(&out), vec![(1, turn_ended("bridged answer"))]);
    assert_eq!(adapter.sessions()[0].state, PanelSessionState::Working);
    let out = feed(&mut adapter, Side::Agent, &result("human answer"));
    assert_eq!(events(&out), vec![]);
    assert_eq!(adapter.sessions()[0].state, PanelSessionState::Idle);
}

#[test]
fn replies_and_notices_are_done_once_written() {
    let mut adapter = spoken();
    let out = inject(&mut adapter, 1, injection("r1", InjectionKind::Reply));
    assert_eq!(
        events(&out),
        vec![
            (1, accepted(None, false)),
            (1, ShimEvent::Written { session_id: None })
        ]
    );
    assert!(out.contains(&Action::Close(InjectionId(1))));
    // Its turn still holds the session until its result.
    let out = inject(&mut adapter, 2, injection("n1", InjectionKind::Notice));
    assert!(written(&out).is_empty());
    let out = feed(&mut adapter, Side::Agent, &result("read it"));
    assert_eq!(written(&out), vec![user_line("message of n1")]);
}

#[test]
fn a_session_it_does_not_hold_or_a_new_one_it_cannot_open_is_refused() {
    let mut adapter = ClaudeAdapter::new(&["--resume=abc".to_owned()], None, 0);
    feed(&mut adapter, Side::Extension, INIT);
    let mut other = injection("d1", InjectionKind::Request);
    other.session_id = Some("xyz".to_owned());
    let out = inject(&mut adapter, 1, other);
    assert!(matches!(
        &events(&out)[0].1,
        ShimEvent::Failed {
            delivered: false,
            ..
        }
    ));
    let mut new = injection("d2", InjectionKind::Request);
    new.new_session = true;
    let out = inject(&mut adapter, 2, new.clone());
    assert!(matches!(
        &events(&out)[0].1,
        ShimEvent::Failed {
            delivered: false,
            ..
        }
    ));
    assert!(written(&out).is_empty());
    // A process with no conversation takes a new one.
    let mut empty = spoken();
    let out = inject(&mut empty, 3, new);
    assert_eq!(written(&out).len(), 1);
}

#[test]
fn an_approval_of_a_bridged_turn_is_reported_and_answered_through_the_shim() {
    let mut adapter = spoken();
    inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    feed(&mut adapter, Side::Agent, SYSTEM_INIT);
    let out = feed(&mut adapter, Side::Agent, PERMISSION);
    let pending = PendingApproval {
        request_id: "0e5a3477".to_owned(),
        kind: "can_use_tool".to_owned(),
        tool: Some("Bash".to_owned()),
        detail: Some("echo perm-ok > f && cat f".to_owned()),
        since_ms: 1_000,
        delivery_id: Some("d1".to_owned()),
        // The whole input, for the phone's card.
        input: Some(
            serde_json::json!({"command": "echo perm-ok > f && cat f", "description": "write file"}),
        ),
    };
    assert_eq!(
        events(&out),
        vec![(
            1,
            ShimEvent::ApprovalPending {
                approval: pending.clone()
            }
        )]
    );
    let session = &adapter.sessions()[0];
    assert_eq!(session.state, PanelSessionState::AwaitingApproval);
    assert_eq!(session.pending_approvals, vec![pending]);

    let mut out = Vec::new();
    let answer = ApprovalAnswer {
        session_id: Some(SESSION.to_owned()),
        request_id: "0e5a3477".to_owned(),
        allow: true,
        message: None,
    };
    adapter.on_answer_approval(InjectionId(2), answer.clone(), 2_000, &mut out);
    let response: Value = serde_json::from_str(&written(&out)[0]).unwrap();
    assert_eq!(
        response,
        json!({"type":"control_response","response":{"subtype":"success","request_id":"0e5a3477","response":{"behavior":"allow","updatedInput":{"command":"echo perm-ok > f && cat f","description":"write file"}}}})
    );
    assert!(out.contains(&Action::ToExtension(
        br#"{"type":"control_cancel_request","request_id":"0e5a3477"}"#.to_vec()
    )));
    assert_eq!(
        events(&out),
        vec![
            (
                1,
                ShimEvent::ApprovalResolved {
                    request_id: "0e5a3477".to_owned(),
                    allowed: true
                }
            ),
            (
                2,
                ShimEvent::ApprovalAnswered {
                    accepted: true,
                    reason: None
                }
            ),
        ]
    );
    // First answer wins: a second is refused, and nothing is written.
    let mut out = Vec::new();
    adapter.on_answer_approval(InjectionId(3), answer, 2_000, &mut out);
    assert!(matches!(
        &events(&out)[0].1,
        ShimEvent::ApprovalAnswered {
            accepted: false,
            ..
        }
    ));
    assert!(written(&out).is_empty());
}

#[test]
fn a_deny_through_the_shim_carries_its_message() {
    let mut adapter = spoken();
    feed(&mut adapter, Side::Extension, HUMAN);
    feed(&mut adapter, Side::Agent, PERMISSION);
    let mut out = Vec::new();
    let answer = ApprovalAnswer {
        session_id: None,
        request_id: "0e5a3477".to_owned(),
        allow: false,
        message: Some("not now".to_owned()),
    };
    adapter.on_answer_approval(InjectionId(2), answer, 2_000, &mut out);
    let response: Value = serde_json::from_str(&written(&out)[0]).unwrap();
    assert_eq!(
        response["response"]["response"],
        json!({"behavior": "deny", "message": "not now"})
    );
}

#[test]
fn an_approval_answered_in_the_panel_or_withdrawn_is_resolved() {
    let mut adapter = spoken();
    inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    feed(&mut adapter, Side::Agent, PERMISSION);
    let deny = r#"{"type":"control_response","response":{"subtype":"success","request_id":"0e5a3477","response":{"behavior":"deny","message":"user said no"}}}"#;
    let out = feed(&mut adapter, Side::Extension, deny);
    assert_eq!(out[0], Action::Forward);
    assert_eq!(
        events(&out),
        vec![(
            1,
            ShimEvent::ApprovalResolved {
                request_id: "0e5a3477".to_owned(),
                allowed: false
            }
        )]
    );
    assert_eq!(adapter.sessions()[0].state, PanelSessionState::Working);
    feed(
        &mut adapter,
        Side::Agent,
        &PERMISSION.replace("0e5a3477", "second"),
    );
    let out = feed(
        &mut adapter,
        Side::Agent,
        r#"{"type":"control_cancel_request","request_id":"second"}"#,
    );
    assert_eq!(
        events(&out),
        vec![(
            1,
            ShimEvent::ApprovalResolved {
                request_id: "second".to_owned(),
                allowed: false
            }
        )]
    );
    assert!(adapter.sessions()[0].pending_approvals.is_empty());
}

#[test]
fn the_agents_exit_fails_open_injections_saying_whether_they_were_delivered() {
    let mut adapter = spoken();
    inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    inject(&mut adapter, 2, injection("d2", InjectionKind::Request));
    let mut out = Vec::new();
    adapter.on_agent_exit(&mut out);
    let failed: Vec<(u64, bool)> = events(&out)
        .into_iter()
        .map(|(id, e)| match e {
            ShimEvent::Failed { delivered, .. } => (id, delivered),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(failed, vec![(2, false), (1, true)]);
    assert!(out.contains(&Action::Close(InjectionId(1))));
    assert!(out.contains(&Action::Close(InjectionId(2))));
}

#[test]
fn a_gone_connection_is_not_reported_to_but_its_turn_is_kept() {
    let mut adapter = spoken();
    inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    adapter.on_disconnect(InjectionId(1));
    let out = feed(&mut adapter, Side::Agent, &result("late"));
    assert_eq!(events(&out), vec![]);
    assert_eq!(adapter.sessions()[0].state, PanelSessionState::Idle);
}

#[test]
fn a_lines_head_decides_how_it_is_read_and_whether_it_may_stream_before_it_ends() {
    let mut adapter = spoken();
    // A 1 MB pasted image from the extension: a human's turn, told by its head alone.
    let image = format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"image","source":{{"data":"{}"}}}}]}}}}"#,
        "QUJD".repeat(256 * 1024)
    );
    assert_eq!(
        feed(&mut adapter, Side::Extension, &image),
        vec![Action::Forward, Action::SessionsChanged]
    );
    let out = inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
    assert_eq!(
        events(&out),
        vec![(1, accepted(None, true))],
        "the human's turn runs"
    );

    let head = |line: &str| line.as_bytes()[..line.len().min(40)].to_vec();
    let streams = |adapter: &mut ClaudeAdapter, side: Side, head: &[u8]| {
        let mut out = Vec::new();
        let streams = adapter.streams_from_head(side, head, 2_000, &mut out);
        (streams, out)
    };
    let tool_result = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"xxxxxxxxxxxxxxxx"}]}}"#;
    // Lines nothing here reads stream; the ones whose rest matters (an answer, a result, an
    // approval) wait to be whole.
    assert_eq!(
        streams(&mut adapter, Side::Agent, &head(tool_result)),
        (true, vec![])
    );
    assert_eq!(
        streams(&mut adapter, Side::Agent, &head(ASSISTANT)),
        (true, vec![])
    );
    for held in [&result("done"), PERMISSION, SYSTEM_INIT] {
        assert_eq!(
            streams(&mut adapter, Side::Agent, &head(held)),
            (false, vec![])
        );
    }
    assert_eq!(
        streams(&mut adapter, Side::Agent, br#"{"type":"assis"#),
        (false, vec![]),
        "an unfinished type"
    );
    assert_eq!(adapter.sessions()[0].unanswered_human_prompts, 1);

    // A second pasted image streams too: its head alone starts the human's turn, counted once
    // (when it streams, not again when it ends).
    assert_eq!(
        streams(&mut adapter, Side::Extension, &head(&image)),
        (true, vec![Action::SessionsChanged])
    );
    assert_eq!(adapter.sessions()[0].unanswered_human_prompts, 2);
    assert_eq!(adapter.sessions()[0].last_human_input_ms, Some(2_000));
    assert_eq!(
        feed(&mut adapter, Side::Extension, &image),
        vec![Action::Forward]
    );
    assert_eq!(adapter.sessions()[0].unanswered_human_prompts, 2);
    // A third, held whole (short), counts as before.
    feed(&mut adapter, Side::Extension, &user_line("hi"));
    assert_eq!(adapter.sessions()[0].unanswered_human_prompts, 3);
}

/// The same lines as other hosts spell them: spaces after `:` and `,` (Python's `json.dumps`),
/// another key before `type` (the TypeScript SDK's control requests, a prompt built in a host's
/// own key order), escapes. The human's turn is counted, the approval matched, the turn ended.
#[test]
fn a_line_is_told_by_its_json_not_its_spelling() {
    let spaced_human = r#"{"type": "user", "message": {"role": "user", "content": "hi"}}"#;
    let other_key_first_human = r#"{"session_id":"","type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null}"#;
    let escaped_human = r#"{"\u0074ype":"us\u0065r","message":{"role":"user","content":"hi"}}"#;
    for human in [spaced_human, other_key_first_human, escaped_human] {
        let mut adapter = spoken();
        assert_eq!(
            feed(&mut adapter, Side::Extension, human),
            vec![Action::Forward, Action::SessionsChanged],
            "{human}"
        );
        let session = &adapter.sessions()[0];
        assert_eq!(
            (session.state, session.unanswered_human_prompts),
            (PanelSessionState::Working, 1),
            "{human}"
        );
        assert_eq!(session.last_human_input_ms, Some(1_000));
        // A message sent meanwhile waits for the human's turn.
        let out = inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
        assert_eq!(events(&out), vec![(1, accepted(None, true))], "{human}");
    }

    let spaced_ask = r#"{"type": "control_request", "request_id": "r1", "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "ls"}}}"#;
    let spaced_answer = r#"{"type": "control_response", "response": {"subtype": "success", "request_id": "r1", "response": {"behavior": "allow", "updatedInput": {"command": "ls"}, "toolUseID": "toolu_1"}}}"#;
    let other_key_first_ask = r#"{"request_id":"r2","type":"control_request","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}"#;
    let other_key_first_answer = r#"{"request_id":"r2","type":"control_response","response":{"subtype":"success","request_id":"r2","response":{"behavior":"deny","message":"no"}}}"#;
    for (ask, answer, request_id, allowed) in [
        (spaced_ask, spaced_answer, "r1", true),
        (other_key_first_ask, other_key_first_answer, "r2", false),
    ] {
        let mut adapter = spoken();
        inject(&mut adapter, 1, injection("d1", InjectionKind::Request));
        let out = feed(&mut adapter, Side::Agent, ask);
        assert!(
            matches!(&events(&out)[..], [(1, ShimEvent::ApprovalPending { approval })] if approval.request_id == request_id),
            "{ask}: {out:?}"
        );
        assert_eq!(
            adapter.sessions()[0].state,
            PanelSessionState::AwaitingApproval
        );
        let out = feed(&mut adapter, Side::Extension, answer);
        assert_eq!(
            events(&out),
            vec![(
                1,
                ShimEvent::ApprovalResolved {
                    request_id: request_id.to_owned(),
                    allowed
                }
            )],
            "{answer}"
        );
        assert_eq!(adapter.sessions()[0].state, PanelSessionState::Working);
        let spaced_result = format!(
            r#"{{"subtype": "success", "is_error": false, "result": "done", "session_id": "{SESSION}", "type": "result"}}"#
        );
        let out = feed(&mut adapter, Side::Agent, &spaced_result);
        assert_eq!(
            events(&out),
            vec![
                (
                    1,
                    ShimEvent::SessionStarted {
                        session_id: SESSION.to_owned()
                    }
                ),
                (1, turn_ended("done"))
            ]
        );
        assert_eq!(adapter.sessions()[0].state, PanelSessionState::Idle);
    }
}

/// A pasted image however it is spelled streams from its head and counts the human's turn
/// there; a user line whose type comes only after a long message cannot be told from its head,
/// so it waits to be whole and is counted then.
#[test]
fn a_long_human_line_streams_from_its_head_whatever_its_spelling() {
    let data = "QUJD".repeat(64 * 1024);
    let content = format!(r#"[{{"type":"image","source":{{"data":"{data}"}}}}]"#);
    for image in [
        format!(r#"{{"type": "user", "message": {{"role": "user", "content": {content}}}}}"#),
        format!(
            r#"{{"session_id":"","type":"user","message":{{"role":"user","content":{content}}}}}"#
        ),
    ] {
        let mut adapter = spoken();
        let mut out = Vec::new();
        let head = &image.as_bytes()[..64 * 1024];
        assert!(adapter.streams_from_head(Side::Extension, head, 2_000, &mut out));
        assert_eq!(out, vec![Action::SessionsChanged]);
        assert_eq!(adapter.sessions()[0].unanswered_human_prompts, 1);
        // Counted once: not again from the head the runtime keeps when the line ends.
        let kept = &image.as_bytes()[..16 * 1024];
        let mut out = Vec::new();
        adapter.on_line(Side::Extension, kept, 3_000, &mut out);
        assert_eq!(out, vec![Action::Forward]);
        assert_eq!(adapter.sessions()[0].unanswered_human_prompts, 1);
    }

    let late =
        format!(r#"{{"message": {{"role": "user", "content": {content}}}, "type": "user"}}"#);
    let mut adapter = spoken();
    let mut out = Vec::new();
    assert!(!adapter.streams_from_head(
        Side::Extension,
        &late.as_bytes()[..64 * 1024],
        2_000,
        &mut out
    ));
    assert!(out.is_empty());
    assert_eq!(
        feed(&mut adapter, Side::Extension, &late),
        vec![Action::Forward, Action::SessionsChanged]
    );
    assert_eq!(adapter.sessions()[0].unanswered_human_prompts, 1);
    // A line that is no JSON object holds nothing read here, and streams.
    let mut out = Vec::new();
    assert!(adapter.streams_from_head(Side::Extension, &[b'x'; 100], 2_000, &mut out));
    assert!(out.is_empty());
}
