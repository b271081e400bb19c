//! The GUI fallback (docs/desktop.md "Focus and GUI fallback"): a prompt for a session that no
//! shim, native door or headless CLI can take is pasted into its editor's chat input through
//! the desktop. In order, each step a refusal that says why when it fails: the person turned it
//! on; a key opens this agent's chat input; no keyboard or mouse input in the last
//! `idle_seconds`; the session's window is found, one and only one; it comes to the front; the
//! open keys, the paste (the clipboard, see [`crate::x11`]) and the submit keys. Every outcome
//! is one `gui_fallback` decision line naming the window (id, title), the outcome and the
//! reason.
//!
//! Idle is checked after the focus and before the first key: raising a window is no input,
//! and from the first key on our own keys count as input.

use std::path::Path;
use std::time::Duration;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_protocol::vocabulary::Agent;
use serde::Serialize;

use crate::error::{ControlError, Result};
use crate::settings::{ControlConfig, Switch};
use crate::{Control, Window, matching};

/// The decision kind every outcome is written under.
pub const KIND: &str = "gui_fallback";
/// A pause after the open keys, for the editor to move the focus into its chat view.
const OPEN_SETTLE: Duration = Duration::from_millis(300);

/// What to paste where.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub agent: Agent,
    /// The session's id, for the decision line.
    pub session: Option<&'a str>,
    /// The delivery being carried, when the engine asks.
    pub delivery: Option<&'a str>,
    /// The session's working directory, which names its window.
    pub cwd: &'a Path,
    /// Processes known to be its editor (none: by title alone).
    pub editor_pids: &'a [u32],
    pub text: &'a str,
}

/// How it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Pasted and submitted.
    Submitted,
    /// Not tried: a rule said no (`guard` names it).
    Refused,
    /// Tried and failed part-way (after the window was raised).
    Failed,
}

/// The outcome, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub verdict: Verdict,
    /// The rule or step that decided (`off`, `no_open_keys`, `recent_input`, `window`, `focus`,
    /// `keys`, `paste`, `submitted`).
    pub guard: &'static str,
    pub reason: String,
    /// The window, once one was found.
    pub window: Option<Window>,
    /// The time since the last input, once read.
    pub idle_ms: Option<u64>,
}

/// Runs the fallback on `control` (or the reason there is no desktop) and records the outcome
/// in `log`.
pub fn run(
    control: Result<&dyn Control>,
    config: &ControlConfig,
    request: &Request<'_>,
    log: &DecisionLog,
) -> Report {
    let report = attempt(control, config, request);
    log.record(decision(&report, request));
    report
}

fn attempt(control: Result<&dyn Control>, config: &ControlConfig, request: &Request<'_>) -> Report {
    let refused = |guard, reason: String| Report {
        verdict: Verdict::Refused,
        guard,
        reason,
        window: None,
        idle_ms: None,
    };
    if !config.gui_fallback {
        let how = match config.gui_fallback_from {
            Switch::Env => "CROSS_AGENT_GUI_FALLBACK is 0".to_owned(),
            Switch::File => format!(
                "gui_fallback = false under [control] in {}",
                config.path.display()
            ),
            Switch::Default => format!(
                "it is off unless CROSS_AGENT_GUI_FALLBACK=1 or gui_fallback = true under \
                 [control] in {}",
                config.path.display()
            ),
        };
        return refused("off", format!("the GUI fallback is off: {how}"));
    }
    let Some(open) = config.open_keys(request.agent) else {
        return refused(
            "no_open_keys",
            format!(
                "no key opens the {agent} chat input: {hint}",
                agent = request.agent.as_str(),
                hint = match request.agent {
                    Agent::Codex =>
                        "bind one to chatgpt.openSidebar in VS Code and set \
                                     codex_open_keys under [control]",
                    Agent::Claude => "claude_open_keys under [control] is empty",
                    Agent::Grok | Agent::Copilot => "the GUI fallback knows no chat input for it",
                }
            ),
        );
    };
    let control = match control {
        Ok(control) => control,
        Err(e) => return refused("desktop", e.to_string()),
    };
    let windows = match control.windows() {
        Ok(windows) => windows,
        Err(e) => return refused("desktop", e.to_string()),
    };
    let window = match matching::window_for_cwd(&windows, request.cwd, request.editor_pids) {
        Ok(window) => window.clone(),
        Err(e) => return refused("window", e.to_string()),
    };
    let with_window = |verdict, guard, reason: String, idle_ms| Report {
        verdict,
        guard,
        reason,
        window: Some(window.clone()),
        idle_ms,
    };
    let idle = match control.idle() {
        Ok(idle) => idle,
        Err(e) => return with_window(Verdict::Refused, "recent_input", e.to_string(), None),
    };
    let idle_ms = Some(millis(idle));
    if idle < config.idle {
        return with_window(
            Verdict::Refused,
            "recent_input",
            format!(
                "there was keyboard or mouse input {} ms ago, within idle_seconds ({} s): \
                 nothing is typed while the person may be at the keyboard",
                millis(idle),
                config.idle.as_secs()
            ),
            idle_ms,
        );
    }
    if let Err(e) = control.focus(&window) {
        return with_window(Verdict::Refused, "focus", e.to_string(), idle_ms);
    }
    // The last moment to stop: the window came up, the person may have touched something.
    match control.idle() {
        Ok(again) if again < config.idle => {
            return with_window(
                Verdict::Refused,
                "recent_input",
                format!(
                    "input arrived while the window was raised ({} ms ago); nothing typed",
                    millis(again)
                ),
                Some(millis(again)),
            );
        }
        Ok(_) => {}
        Err(e) => return with_window(Verdict::Refused, "recent_input", e.to_string(), idle_ms),
    }
    let typed = || -> Result<(), (&'static str, ControlError)> {
        control.press(open).map_err(|e| ("keys", e))?;
        std::thread::sleep(OPEN_SETTLE);
        control
            .paste(request.text, &config.paste)
            .map_err(|e| ("paste", e))?;
        control.press(&config.submit).map_err(|e| ("keys", e))
    };
    match typed() {
        Ok(()) => with_window(
            Verdict::Submitted,
            "submitted",
            format!(
                "pasted {} bytes after {open} and submitted with {}",
                request.text.len(),
                config.submit
            ),
            idle_ms,
        ),
        Err((guard, e)) => with_window(Verdict::Failed, guard, e.to_string(), idle_ms),
    }
}

fn decision(report: &Report, request: &Request<'_>) -> Decision {
    let outcome = match report.verdict {
        Verdict::Submitted => "submitted",
        Verdict::Refused => "refused",
        Verdict::Failed => "failed",
    };
    let mut decision = Decision::new(DecisionKind::new(KIND), Outcome::new(outcome))
        .guard(report.guard)
        .reason(cross_agent_decisions::events::first_line(&report.reason))
        .detail("cwd", request.cwd.display().to_string())
        .detail("bytes", request.text.len());
    decision.agent = Some(request.agent.as_str().to_owned());
    decision.session = request.session.map(str::to_owned);
    decision.delivery = request.delivery.map(str::to_owned);
    if let Some(window) = &report.window {
        decision = decision
            .detail("window_id", format!("{:#x}", window.id))
            .detail("window_title", window.title.clone());
    }
    if let Some(idle_ms) = report.idle_ms {
        decision = decision.detail("idle_ms", idle_ms);
    }
    decision
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
