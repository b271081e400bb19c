//! The app-server's responses and requests: answers to the extension's requests and to our
//! own (`thread/start`, `config/read`, `turn/start`), and the approvals it asks for.

use std::collections::BTreeSet;

use cross_agent_protocol::panel::{InjectionKind, PanelSessionState, PendingApproval, ShimEvent};
use serde_json::{Value, json};

use super::fields::approval_subject;
use super::{
    Approval, COMMAND_APPROVAL, CodexAdapter, DIRECT_INPUT_REFUSED, ELICITATION,
    FILE_CHANGE_APPROVAL, McpExpected, OwnRequest, PERMISSIONS_APPROVAL, Stage,
};
use crate::adapter::{Action, InjectionId};
use crate::rpc::{Message, XAGENT_ID_PREFIX, error_message, id_key, id_text, str_field, to_line};

impl CodexAdapter {
    pub(super) fn on_agent(
        &mut self,
        message: Message<'_>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> bool {
        match message {
            Message::Response { id, result, error } => {
                if let Some(own) = id
                    .as_str()
                    .filter(|id| id.starts_with(XAGENT_ID_PREFIX))
                    .and_then(|id| self.own_requests.remove(id))
                {
                    self.on_own_response(own, result, error, now_ms, out);
                    return false;
                }
                if let Some(request) = self.extension_requests.remove(&id_key(id)) {
                    self.on_extension_response(request, result, error, now_ms);
                }
            }
            Message::Request { id, method, params } => {
                if matches!(
                    method,
                    COMMAND_APPROVAL | FILE_CHANGE_APPROVAL | ELICITATION | PERMISSIONS_APPROVAL
                ) {
                    self.on_approval_request(id, method, params, now_ms, out);
                }
            }
            Message::Notification { method, params } => {
                self.on_notification(method, params, now_ms, out);
            }
        }
        true
    }

    pub(super) fn on_own_response(
        &mut self,
        request: OwnRequest,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        match request {
            OwnRequest::NameSet => {}
            OwnRequest::ThreadStart(id) => self.on_thread_opened(id, result, error, now_ms, out),
            OwnRequest::ConfigRead(id) => {
                let expected = match (error, result.pointer("/config/mcp_servers")) {
                    (None, Some(Value::Object(servers))) => McpExpected::Known(
                        servers
                            .iter()
                            .filter(|(_, server)| server.get("enabled") != Some(&json!(false)))
                            .map(|(name, _)| name.clone())
                            .collect(),
                    ),
                    (None, None | Some(Value::Null)) => McpExpected::Known(BTreeSet::new()),
                    _ => McpExpected::Unreadable,
                };
                if let Some(pending) = self.injections.get_mut(&id) {
                    pending.mcp_expected = expected;
                }
                self.dispatch(now_ms, out);
            }
            OwnRequest::TurnStart(id) => self.on_turn_started(id, result, error, now_ms, out),
        }
    }

    pub(super) fn on_thread_opened(
        &mut self,
        id: InjectionId,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let thread = match error {
            None => result
                .get("thread")
                .and_then(|thread| self.adopt_thread(thread, now_ms)),
            Some(_) => None,
        };
        let Some(thread) = thread else {
            let reason = error.map_or_else(
                || "codex opened no usable thread for the new conversation".to_owned(),
                |e| {
                    format!(
                        "codex could not open a new conversation: {}",
                        error_message(e)
                    )
                },
            );
            self.finish(
                id,
                ShimEvent::Failed {
                    reason,
                    delivered: false,
                },
                out,
            );
            return;
        };
        let title = self
            .injections
            .get(&id)
            .and_then(|p| p.injection.title.clone());
        if let Some(title) = title {
            let request_id = self.next_id();
            out.push(Action::ToAgent(to_line(&json!({
                "id": request_id,
                "method": "thread/name/set",
                "params": {"threadId": thread, "name": title},
            }))));
            self.own_requests.insert(request_id, OwnRequest::NameSet);
        }
        if let Some(pending) = self.injections.get_mut(&id) {
            pending.thread = Some(thread.clone());
            pending.stage = Stage::AwaitingMcp { opened_ms: now_ms };
        }
        self.report(
            id,
            ShimEvent::SessionStarted {
                session_id: thread.clone(),
            },
            out,
        );
        // Nobody typed into it: the extension shows it in its list, the human has not used it.
        self.dispatch(now_ms, out);
    }

    pub(super) fn on_turn_started(
        &mut self,
        id: InjectionId,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let Some(pending) = self.injections.get(&id) else {
            return;
        };
        let thread = pending.thread.clone();
        let retried = pending.retried;
        let kind = pending.injection.kind;
        if let Some(error) = error {
            let message = error_message(error);
            if let Some(thread) = &thread {
                if let Some(entry) = self.threads.get_mut(thread) {
                    entry.bridged_delivery_id = None;
                    if entry.turn_id.is_none() {
                        entry.state = PanelSessionState::Idle;
                    }
                }
                if message.contains(DIRECT_INPUT_REFUSED) {
                    self.exclude(thread);
                }
            }
            let may_retry = message.contains(DIRECT_INPUT_REFUSED) && !retried;
            if may_retry {
                if let Some(pending) = self.injections.get_mut(&id) {
                    pending.retried = true;
                    pending.thread = None;
                    pending.stage = Stage::Queued;
                }
                self.dispatch(now_ms, out);
            } else {
                self.finish(
                    id,
                    ShimEvent::Failed {
                        reason: format!("codex refused the turn: {message}"),
                        delivered: false,
                    },
                    out,
                );
            }
            self.mark_changed();
            return;
        }
        let turn_id = result
            .get("turn")
            .and_then(|turn| str_field(turn, "id"))
            .map(str::to_owned);
        if kind == InjectionKind::Request {
            if let Some(pending) = self.injections.get_mut(&id) {
                pending.stage = Stage::Running { turn_id };
            }
        } else {
            // Return traffic expects no answer: it is done once the app-server took the turn.
            // The thread stays busy by its own notifications until that turn ends.
            if let Some(entry) = thread.as_ref().and_then(|t| self.threads.get_mut(t)) {
                entry.bridged_delivery_id = None;
            }
            self.finish(id, ShimEvent::Written { session_id: thread }, out);
        }
    }

    pub(super) fn on_approval_request(
        &mut self,
        id: &Value,
        method: &str,
        params: &Value,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let thread = str_field(params, "threadId").map(str::to_owned);
        let (tool, detail) = approval_subject(method, params);
        let input = match method {
            COMMAND_APPROVAL => Some(json!({
                "command": str_field(params, "command").unwrap_or_default(),
                "cwd": str_field(params, "cwd"),
                "reason": str_field(params, "reason"),
            })),
            FILE_CHANGE_APPROVAL => str_field(params, "itemId")
                .and_then(|item| self.file_changes.get(item))
                .map(|changes| json!({"changes": changes})),
            ELICITATION => params
                .get("_meta")
                .and_then(|meta| meta.get("tool_params"))
                .cloned(),
            _ => None,
        }
        .and_then(|input| crate::claude::whole_input(&input));
        let delivery_id = thread
            .as_deref()
            .and_then(|t| self.threads.get(t))
            .and_then(|t| t.bridged_delivery_id.clone());
        let approval = PendingApproval {
            request_id: id_text(id),
            kind: method.to_owned(),
            tool,
            detail,
            since_ms: now_ms,
            delivery_id,
            input,
        };
        if let Some(thread) = &thread {
            self.set_state(thread, PanelSessionState::AwaitingApproval);
        }
        if let Some(injection) = self.bridged_injection(thread.as_deref()) {
            self.report(
                injection,
                ShimEvent::ApprovalPending {
                    approval: approval.clone(),
                },
                out,
            );
        }
        self.approvals.insert(
            id_key(id),
            Approval {
                id: id.clone(),
                method: method.to_owned(),
                thread,
                approval,
            },
        );
        self.mark_changed();
    }
}
