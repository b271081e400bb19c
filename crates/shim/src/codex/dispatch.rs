//! The thread table and the injection queue: which threads are targets (adopted from what the
//! extension itself sent, sub-agent and ephemeral ones excluded), when a queued injection may
//! go in (its thread idle, a new conversation's MCP servers ready or waited out), and the lines
//! of ours that open a thread and start a turn.

use std::collections::BTreeSet;

use cross_agent_protocol::panel::{PanelSessionState, ShimEvent};
use serde_json::{Value, json};

use super::fields::{is_ephemeral, is_sub_agent, state_of};
use super::{
    CodexAdapter, MCP_ANNOUNCE_GRACE_MS, MCP_STARTUP_PATIENCE_MS, McpExpected, OwnRequest, Stage,
    Thread,
};
use crate::adapter::{Action, InjectionId};
use crate::rpc::{XAGENT_ID_PREFIX, str_field, to_line};

impl CodexAdapter {
    pub(super) fn next_id(&mut self) -> String {
        self.next_request += 1;
        format!("{XAGENT_ID_PREFIX}{}", self.next_request)
    }

    pub(super) fn report(&self, id: InjectionId, event: ShimEvent, out: &mut Vec<Action>) {
        if self.injections.get(&id).is_some_and(|p| p.connected) {
            out.push(Action::Report(id, event));
        }
    }

    /// Reports the injection's last event and forgets it.
    pub(super) fn finish(&mut self, id: InjectionId, event: ShimEvent, out: &mut Vec<Action>) {
        if let Some(pending) = self.injections.remove(&id)
            && pending.connected
        {
            out.push(Action::Report(id, event));
            out.push(Action::Close(id));
        }
    }

    pub(super) fn mark_changed(&mut self) {
        self.sessions_changed = true;
    }

    /// Adds (or refreshes) a target from a Thread object the app-server returned to a request
    /// the extension or we sent. Sub-agent threads are excluded instead.
    pub(super) fn adopt_thread(&mut self, thread: &Value, now_ms: u64) -> Option<String> {
        let id = str_field(thread, "id")?.to_owned();
        if is_sub_agent(thread) || is_ephemeral(thread) {
            self.exclude(&id);
            return None;
        }
        if self.excluded.contains(&id) {
            return None;
        }
        let entry = self.threads.entry(id.clone()).or_insert_with(|| Thread {
            cwd: None,
            state: PanelSessionState::Idle,
            opened_at_ms: now_ms,
            last_human_input_ms: None,
            last_activity_ms: Some(now_ms),
            has_history: false,
            title: None,
            turn_id: None,
            mcp_starting: BTreeSet::new(),
            mcp_settled: BTreeSet::new(),
            mcp_patience_until_ms: None,
            bridged_delivery_id: None,
        });
        if let Some(cwd) = str_field(thread, "cwd") {
            entry.cwd = Some(cwd.to_owned());
        }
        if let Some(name) = str_field(thread, "name") {
            entry.title = Some(name.to_owned());
        }
        let turns = thread.get("turns").and_then(Value::as_array);
        if turns.is_some_and(|turns| !turns.is_empty())
            || str_field(thread, "preview").is_some_and(|p| !p.is_empty())
        {
            entry.has_history = true;
        }
        if let Some(status) = thread.get("status") {
            entry.state = state_of(status, entry.state);
        }
        self.mark_changed();
        Some(id)
    }

    /// A thread the extension sent input to: a target from now on, unless excluded.
    pub(super) fn touch_thread(&mut self, id: &str, now_ms: u64) -> bool {
        if self.excluded.contains(id) {
            return false;
        }
        if !self.threads.contains_key(id) {
            self.adopt_thread(&json!({"id": id}), now_ms);
        }
        true
    }

    pub(super) fn exclude(&mut self, id: &str) {
        self.excluded.insert(id.to_owned());
        if self.threads.remove(id).is_some() {
            self.mark_changed();
        }
    }

    pub(super) fn set_state(&mut self, thread: &str, state: PanelSessionState) {
        if let Some(entry) = self.threads.get_mut(thread)
            && entry.state != state
        {
            entry.state = state;
            self.sessions_changed = true;
        }
    }

    /// Whether a turn of ours may go into `thread` now.
    pub(super) fn is_free(&self, thread: &str, now_ms: u64) -> bool {
        let idle = self.threads.get(thread).is_some_and(|t| {
            let mcp_starting = !t.mcp_starting.is_empty()
                && t.mcp_patience_until_ms.is_some_and(|until| now_ms < until);
            t.state == PanelSessionState::Idle && !mcp_starting
        });
        idle && !self.injections.values().any(|p| {
            p.thread.as_deref() == Some(thread)
                && matches!(
                    p.stage,
                    Stage::AwaitingMcp { .. } | Stage::Starting | Stage::Running { .. }
                )
        })
    }

    /// Starts every queued injection whose thread can take it now.
    pub(super) fn dispatch(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        if !self.initialized {
            return;
        }
        let ids: Vec<InjectionId> = self.injections.keys().copied().collect();
        for id in ids {
            let Some(pending) = self.injections.get(&id) else {
                continue;
            };
            match (&pending.stage, pending.thread.clone()) {
                (Stage::Queued, None) => self.open_thread(id, out),
                (Stage::Queued, Some(thread)) => {
                    if !self.threads.contains_key(&thread) {
                        self.finish(
                            id,
                            ShimEvent::Failed {
                                reason: format!(
                                    "codex thread {thread} is no longer open in this panel"
                                ),
                                delivered: false,
                            },
                            out,
                        );
                    } else if self.is_free(&thread, now_ms) {
                        self.start_turn(id, &thread, out);
                    }
                }
                (Stage::AwaitingMcp { opened_ms }, Some(thread)) => {
                    let opened_ms = *opened_ms;
                    let Some(entry) = self.threads.get(&thread) else {
                        continue;
                    };
                    let starting = !entry.mcp_starting.is_empty();
                    let ready = match &pending.mcp_expected {
                        McpExpected::Known(names) => {
                            !starting && names.is_subset(&entry.mcp_settled)
                        }
                        McpExpected::Unreadable => {
                            !starting && now_ms >= opened_ms + MCP_ANNOUNCE_GRACE_MS
                        }
                        McpExpected::Unknown => false,
                    };
                    if ready || now_ms >= opened_ms + MCP_STARTUP_PATIENCE_MS {
                        self.start_turn(id, &thread, out);
                    }
                }
                _ => {}
            }
        }
    }

    /// Our `thread/start` for an injection that needs a new conversation.
    pub(super) fn open_thread(&mut self, id: InjectionId, out: &mut Vec<Action>) {
        let mut params = self.extension_thread_params.clone().unwrap_or_default();
        // A thread the extension never asked for must not be ephemeral or tied to a session
        // source the extension set for its own.
        params.remove("ephemeral");
        params.remove("sessionStartSource");
        params.insert("threadSource".into(), json!("user"));
        if !params.contains_key("cwd")
            && let Some(cwd) = &self.default_cwd
        {
            params.insert("cwd".into(), json!(cwd));
        }
        let cwd = params.get("cwd").cloned().unwrap_or(Value::Null);
        let request_id = self.next_id();
        out.push(Action::ToAgent(to_line(&json!({
            "id": request_id,
            "method": "thread/start",
            "params": params,
        }))));
        self.own_requests
            .insert(request_id, OwnRequest::ThreadStart(id));
        // Which MCP servers the thread will start, so its first turn waits for exactly those.
        let request_id = self.next_id();
        out.push(Action::ToAgent(to_line(&json!({
            "id": request_id,
            "method": "config/read",
            "params": {"cwd": cwd},
        }))));
        self.own_requests
            .insert(request_id, OwnRequest::ConfigRead(id));
        if let Some(pending) = self.injections.get_mut(&id) {
            pending.stage = Stage::OpeningThread;
        }
    }

    /// Our `turn/start` into an idle thread.
    pub(super) fn start_turn(&mut self, id: InjectionId, thread: &str, out: &mut Vec<Action>) {
        let Some(pending) = self.injections.get_mut(&id) else {
            return;
        };
        pending.stage = Stage::Starting;
        let text = pending.injection.text.clone();
        let delivery_id = pending.injection.delivery_id.clone();
        let request_id = self.next_id();
        out.push(Action::ToAgent(to_line(&json!({
            "id": request_id,
            "method": "turn/start",
            "params": {
                "threadId": thread,
                "input": [{"type": "text", "text": text}],
                "clientUserMessageId": request_id,
            },
        }))));
        self.own_requests
            .insert(request_id, OwnRequest::TurnStart(id));
        if let Some(entry) = self.threads.get_mut(thread) {
            // Busy from now: the response comes before `turn/started`, and a second turn/start
            // in between would steer ours.
            entry.state = PanelSessionState::Working;
            entry.has_history = true;
            entry.bridged_delivery_id = Some(delivery_id);
        }
        self.mark_changed();
    }
}
