//! The app-server's notifications: thread status and names, MCP server start-up, the items
//! of a turn (its answer, file changes) and `turn/completed`, which ends a bridged injection.

use cross_agent_protocol::panel::{PanelSessionState, ShimEvent};
use serde_json::Value;

use super::fields::{is_sub_agent, runs_turn, state_of};
use super::{CodexAdapter, MCP_STARTUP_PATIENCE_MS, Stage};
use crate::adapter::Action;
use crate::rpc::{id_key, str_field};

impl CodexAdapter {
    pub(super) fn on_notification(
        &mut self,
        method: &str,
        params: &Value,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let Some(thread) = str_field(params, "threadId").map(str::to_owned) else {
            return;
        };
        if let Some(entry) = self.threads.get_mut(&thread) {
            entry.last_activity_ms = Some(now_ms);
        }
        match method {
            "thread/started" => {
                // Never creates a target; tells us whether a known one is a sub-agent.
                if let Some(object) = params.get("thread")
                    && self.threads.contains_key(&thread)
                    && is_sub_agent(object)
                {
                    self.exclude(&thread);
                }
            }
            "thread/status/changed" => {
                if let Some((entry, status)) = self.threads.get(&thread).zip(params.get("status")) {
                    let state = state_of(status, entry.state);
                    self.set_state(&thread, state);
                }
            }
            "turn/started" => {
                let turn_id = params
                    .get("turn")
                    .and_then(|turn| str_field(turn, "id"))
                    .map(str::to_owned);
                if let Some(entry) = self.threads.get_mut(&thread) {
                    entry.turn_id = turn_id.clone();
                    entry.has_history = true;
                    if entry.state == PanelSessionState::Idle {
                        entry.state = PanelSessionState::Working;
                        self.sessions_changed = true;
                    }
                }
                for pending in self.injections.values_mut() {
                    if pending.thread.as_deref() == Some(thread.as_str())
                        && pending.stage == (Stage::Running { turn_id: None })
                    {
                        pending.stage = Stage::Running {
                            turn_id: turn_id.clone(),
                        };
                    }
                }
            }
            "item/started" => {
                let item = params.get("item").unwrap_or(&Value::Null);
                if str_field(item, "type") == Some("fileChange")
                    && let (Some(id), Some(changes)) = (str_field(item, "id"), item.get("changes"))
                {
                    self.file_changes.insert(id.to_owned(), changes.clone());
                }
            }
            "item/completed" => {
                let item = params.get("item").unwrap_or(&Value::Null);
                if let Some(id) = str_field(item, "id") {
                    self.file_changes.remove(id);
                }
                if str_field(item, "type") == Some("agentMessage")
                    && let Some(text) = str_field(item, "text")
                {
                    let turn_id = str_field(params, "turnId");
                    for pending in self.injections.values_mut() {
                        if pending.thread.as_deref() == Some(thread.as_str())
                            && runs_turn(&pending.stage, turn_id)
                        {
                            pending.answer = Some(text.to_owned());
                        }
                    }
                }
            }
            "turn/completed" => self.on_turn_completed(&thread, params, now_ms, out),
            "thread/closed" | "thread/archived" | "thread/deleted" => {
                // Not open in the panel any more; input the extension sends it later makes it
                // a target again.
                if self.threads.remove(&thread).is_some() {
                    self.sessions_changed = true;
                }
                self.dispatch(now_ms, out);
            }
            "thread/name/updated" => {
                let name = str_field(params, "threadName").map(str::to_owned);
                if let Some(entry) = self.threads.get_mut(&thread)
                    && entry.title != name
                {
                    entry.title = name;
                    self.sessions_changed = true;
                }
            }
            "mcpServer/startupStatus/updated" => {
                let name = str_field(params, "name").unwrap_or_default().to_owned();
                if let Some(entry) = self.threads.get_mut(&thread) {
                    if str_field(params, "status") == Some("starting") {
                        if entry.mcp_starting.is_empty() {
                            entry.mcp_patience_until_ms = Some(now_ms + MCP_STARTUP_PATIENCE_MS);
                        }
                        entry.mcp_settled.remove(&name);
                        entry.mcp_starting.insert(name);
                    } else {
                        entry.mcp_starting.remove(&name);
                        entry.mcp_settled.insert(name.clone());
                        if entry.mcp_starting.is_empty() {
                            entry.mcp_patience_until_ms = None;
                        }
                    }
                }
                self.dispatch(now_ms, out);
            }
            "serverRequest/resolved" => {
                if let Some(request) = params.get("requestId")
                    && let Some(approval) = self.approvals.remove(&id_key(request))
                {
                    // Answered somewhere we did not see (or the turn ended): nothing allowed it
                    // that we know of.
                    self.resolve_approval(approval, false, out);
                }
            }
            _ => {}
        }
    }

    pub(super) fn on_turn_completed(
        &mut self,
        thread: &str,
        params: &Value,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let turn = params.get("turn").unwrap_or(&Value::Null);
        let turn_id = str_field(turn, "id");
        // Our turn/start already went in (after the idle announced just before this): the
        // thread is ours and busy, whatever turn ended now.
        let ours_starting = self
            .injections
            .values()
            .any(|p| p.thread.as_deref() == Some(thread) && p.stage == Stage::Starting);
        if let Some(entry) = self.threads.get_mut(thread) {
            entry.turn_id = None;
            if !ours_starting {
                entry.state = PanelSessionState::Idle;
                entry.bridged_delivery_id = None;
            }
            self.sessions_changed = true;
        }
        // Approvals of the ended turn can no longer be answered.
        let stale: Vec<String> = self
            .approvals
            .iter()
            .filter(|(_, a)| a.thread.as_deref() == Some(thread))
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            self.approvals.remove(&key);
        }
        let ended = self.injections.iter().find_map(|(id, p)| {
            (p.thread.as_deref() == Some(thread) && runs_turn(&p.stage, turn_id)).then_some(*id)
        });
        if let Some(id) = ended {
            let stop = str_field(turn, "status").unwrap_or("completed").to_owned();
            let from_items = turn
                .get("items")
                .and_then(Value::as_array)
                .and_then(|items| {
                    items
                        .iter()
                        .rev()
                        .find(|item| str_field(item, "type") == Some("agentMessage"))
                })
                .and_then(|item| str_field(item, "text"))
                .map(str::to_owned);
            let answer = from_items.or_else(|| self.injections.get(&id)?.answer.clone());
            let is_error = stop == "failed" || turn.get("error").is_some_and(|e| !e.is_null());
            self.finish(
                id,
                ShimEvent::TurnEnded {
                    session_id: Some(thread.to_owned()),
                    answer,
                    stop,
                    is_error,
                },
                out,
            );
        }
        self.dispatch(now_ms, out);
    }
}
