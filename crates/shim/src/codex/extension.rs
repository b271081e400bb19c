//! The extension's side of the wire: its requests that name threads (recorded so their
//! responses can be read), its human input, and its answers to approvals, which also settle a
//! bridged approval the phone was asked about.

use cross_agent_protocol::panel::{PanelSessionState, ShimEvent};
use serde_json::Value;

use super::fields::is_allowing;
use super::{Approval, CodexAdapter, DIRECT_INPUT_REFUSED, ExtensionRequest, Stage};
use crate::adapter::{Action, InjectionId};
use crate::rpc::{Message, error_message, id_key, str_field};

impl CodexAdapter {
    pub(super) fn on_extension(
        &mut self,
        message: Message<'_>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        match message {
            Message::Request { id, method, params } => {
                let thread = str_field(params, "threadId").map(str::to_owned);
                let request = match (method, thread) {
                    ("thread/start", _) => {
                        self.extension_thread_params = params.as_object().cloned();
                        Some(ExtensionRequest::ThreadStart)
                    }
                    ("thread/resume", Some(_)) => Some(ExtensionRequest::ThreadResume),
                    ("turn/start" | "turn/steer", Some(thread)) => {
                        if self.touch_thread(&thread, now_ms)
                            && let Some(entry) = self.threads.get_mut(&thread)
                        {
                            entry.last_human_input_ms = Some(now_ms);
                            entry.last_activity_ms = Some(now_ms);
                            entry.has_history = true;
                            if entry.state == PanelSessionState::Idle {
                                entry.state = PanelSessionState::Working;
                            }
                            self.sessions_changed = true;
                        }
                        Some(ExtensionRequest::Input(thread))
                    }
                    _ => None,
                };
                if let Some(request) = request {
                    self.extension_requests.insert(id_key(id), request);
                }
            }
            Message::Notification { method, .. } => {
                if method == "initialized" {
                    self.initialized = true;
                    self.dispatch(now_ms, out);
                }
            }
            Message::Response { id, result, error } => {
                // The extension answering a server request: an approval decided in the panel.
                let Some(approval) = self.approvals.remove(&id_key(id)) else {
                    return;
                };
                let allowed = error.is_none() && is_allowing(result);
                self.resolve_approval(approval, allowed, out);
            }
        }
    }

    pub(super) fn resolve_approval(
        &mut self,
        approval: Approval,
        allowed: bool,
        out: &mut Vec<Action>,
    ) {
        self.mark_changed();
        if let Some(thread) = &approval.thread {
            let still_waiting = self
                .approvals
                .values()
                .any(|a| a.thread.as_deref() == Some(thread));
            if !still_waiting
                && self
                    .threads
                    .get(thread)
                    .is_some_and(|t| t.state == PanelSessionState::AwaitingApproval)
            {
                self.set_state(thread, PanelSessionState::Working);
            }
        }
        if let Some(injection) = self.bridged_injection(approval.thread.as_deref()) {
            self.report(
                injection,
                ShimEvent::ApprovalResolved {
                    request_id: approval.approval.request_id,
                    allowed,
                },
                out,
            );
        }
    }

    /// The injection whose turn runs in `thread`, if one does.
    pub(super) fn bridged_injection(&self, thread: Option<&str>) -> Option<InjectionId> {
        let thread = thread?;
        self.injections.iter().find_map(|(id, p)| {
            (p.thread.as_deref() == Some(thread)
                && matches!(p.stage, Stage::Starting | Stage::Running { .. }))
            .then_some(*id)
        })
    }

    pub(super) fn on_extension_response(
        &mut self,
        request: ExtensionRequest,
        result: &Value,
        error: Option<&Value>,
        now_ms: u64,
    ) {
        match (request, error) {
            (ExtensionRequest::ThreadStart | ExtensionRequest::ThreadResume, None) => {
                if let Some(thread) = result.get("thread") {
                    self.adopt_thread(thread, now_ms);
                }
            }
            (ExtensionRequest::Input(thread), Some(error)) => {
                if error_message(error).contains(DIRECT_INPUT_REFUSED) {
                    self.exclude(&thread);
                } else if self
                    .threads
                    .get(&thread)
                    .is_some_and(|t| t.turn_id.is_none())
                {
                    // The turn never started: the thread is as idle as before.
                    self.set_state(&thread, PanelSessionState::Idle);
                }
            }
            _ => {}
        }
    }
}
