//! Which wire adapter a panel session of each agent gets.

use std::ffi::OsString;

use cross_agent_protocol::panel::{ApprovalAnswer, Injection, PanelSession, ShimEvent};
use cross_agent_protocol::vocabulary::Agent;

use crate::adapter::{Action, InjectionId, PanelAdapter, Side};
use crate::claude::ClaudeAdapter;
use crate::codex::CodexAdapter;
use crate::grok::GrokAdapter;

/// The adapter for a panel session of `agent` run with `raw_args`.
pub fn adapter_for(agent: Agent, raw_args: &[OsString], now_ms: u64) -> Box<dyn PanelAdapter> {
    let args: Vec<String> = raw_args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cwd = std::env::current_dir()
        .ok()
        .map(|d| d.display().to_string());
    match agent {
        Agent::Claude => Box::new(ClaudeAdapter::new(&args, cwd, now_ms)),
        Agent::Codex => Box::new(CodexAdapter::new(raw_args).with_default_cwd(cwd)),
        Agent::Grok => Box::new(GrokAdapter::new(raw_args)),
        // No shim runs Copilot (it lives in VS Code's Agent Host); bytes would only pass.
        Agent::Copilot => Box::new(PassThrough { agent }),
    }
}

/// Forwards every line and takes no injection.
#[derive(Debug)]
pub struct PassThrough {
    agent: Agent,
}

impl PassThrough {
    fn refuse(&self, id: InjectionId, out: &mut Vec<Action>) {
        out.push(Action::Report(
            id,
            ShimEvent::Failed {
                reason: format!(
                    "this build's {} shim passes bytes only and takes no injection",
                    self.agent.as_str()
                ),
                delivered: false,
            },
        ));
        out.push(Action::Close(id));
    }
}

impl PanelAdapter for PassThrough {
    fn on_line(&mut self, _side: Side, _line: &[u8], _now_ms: u64, out: &mut Vec<Action>) {
        out.push(Action::Forward);
    }

    fn on_inject(
        &mut self,
        id: InjectionId,
        _injection: Injection,
        _now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        self.refuse(id, out);
    }

    fn on_answer_approval(
        &mut self,
        id: InjectionId,
        _answer: ApprovalAnswer,
        _now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        self.refuse(id, out);
    }

    fn on_disconnect(&mut self, _id: InjectionId) {}

    fn on_tick(&mut self, _now_ms: u64, _out: &mut Vec<Action>) {}

    fn on_agent_exit(&mut self, _out: &mut Vec<Action>) {}

    fn sessions(&self) -> Vec<PanelSession> {
        Vec::new()
    }

    fn streams_from_head(&mut self, _: Side, _: &[u8], _: u64, _: &mut Vec<Action>) -> bool {
        true
    }
}
