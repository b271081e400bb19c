//! The settings in effect for one call: the `CROSS_AGENT_*` variables of the *caller's*
//! registration, forwarded by the thin process. Each registration guards its own side, so the
//! daemon's own environment never decides a guard (issue 4, spec 004 §7).

use std::collections::BTreeMap;

use cross_agent_protocol::bridge::Scope;
use cross_agent_stores::resolve::{
    ActiveWindow, CODEX_SCAN_LIMIT_ENV, NAME_SCAN_LIMIT_ENV, ScanBound,
};
use cross_agent_transports::settings::{DISABLE_HEADLESS, flag, value};
use serde_json::{Value, json};

use crate::Agent;

/// `CROSS_AGENT_MAX_HOPS`.
pub const MAX_HOPS: &str = "CROSS_AGENT_MAX_HOPS";
/// `CROSS_AGENT_REQUIRE_EXPLICIT_TARGET`.
pub const REQUIRE_EXPLICIT_TARGET: &str = "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET";
/// `CROSS_AGENT_TIMEOUT`.
pub const TIMEOUT: &str = "CROSS_AGENT_TIMEOUT";
/// The spec's defaults.
pub const DEFAULT_MAX_HOPS: u32 = 4;
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
/// `CROSS_AGENT_LATE_ANSWER_WATCH`.
pub const LATE_ANSWER_WATCH: &str = "CROSS_AGENT_LATE_ANSWER_WATCH";
/// `CROSS_AGENT_LATE_ANSWER_WATCH`'s default: 3 h.
pub const DEFAULT_LATE_ANSWER_WATCH_SECS: u64 = 10_800;
/// `CROSS_AGENT_PANEL_PATIENCE`.
pub const PANEL_PATIENCE: &str = "CROSS_AGENT_PANEL_PATIENCE";
/// `CROSS_AGENT_PANEL_PATIENCE`'s default: 1 h.
pub const DEFAULT_PANEL_PATIENCE_SECS: u64 = 3600;

/// The guards and discovery settings of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSettings {
    pub max_hops: u32,
    pub timeout_secs: u64,
    pub require_explicit_target: bool,
    pub disable_headless: bool,
    pub scope: Scope,
    pub active_window: ActiveWindow,
    /// `CROSS_AGENT_LATE_ANSWER_WATCH`: how long an answer without its request id is followed
    /// by a watch for a later one (0: no watch).
    pub late_answer_watch_secs: u64,
    /// `CROSS_AGENT_PANEL_PATIENCE`: with the timeout, bounds the wait for a busy peer.
    pub panel_patience_secs: u64,
    name_scan_limit: Option<usize>,
    codex_scan_limit: Option<usize>,
}

fn number<T: std::str::FromStr>(settings: &BTreeMap<String, String>, name: &str) -> Option<T> {
    value(settings, name).and_then(|v| v.parse().ok())
}

impl CallSettings {
    /// Reads the registration's settings; a value that does not parse counts as unset.
    pub fn from_settings(settings: &BTreeMap<String, String>) -> CallSettings {
        let scope = match value(settings, "CROSS_AGENT_SCOPE") {
            Some("tree") => Scope::Tree,
            Some("any") => Scope::Any,
            _ => Scope::Cwd,
        };
        CallSettings {
            max_hops: number(settings, MAX_HOPS).unwrap_or(DEFAULT_MAX_HOPS),
            timeout_secs: number(settings, TIMEOUT)
                .filter(|t| *t > 0)
                .unwrap_or(DEFAULT_TIMEOUT_SECS),
            require_explicit_target: flag(settings, REQUIRE_EXPLICIT_TARGET),
            disable_headless: flag(settings, DISABLE_HEADLESS),
            scope,
            active_window: number(settings, "CROSS_AGENT_ACTIVE_WINDOW_MIN")
                .map(ActiveWindow::from_minutes)
                .unwrap_or_default(),
            late_answer_watch_secs: number(settings, LATE_ANSWER_WATCH)
                .unwrap_or(DEFAULT_LATE_ANSWER_WATCH_SECS),
            panel_patience_secs: number(settings, PANEL_PATIENCE)
                .unwrap_or(DEFAULT_PANEL_PATIENCE_SECS),
            name_scan_limit: number(settings, NAME_SCAN_LIMIT_ENV).filter(|n| *n > 0),
            codex_scan_limit: number(settings, CODEX_SCAN_LIMIT_ENV).filter(|n| *n > 0),
        }
    }

    /// The bound on name lookups for `agent` (none by default).
    pub fn name_bound(&self, agent: Agent) -> Option<ScanBound> {
        let general = self.name_scan_limit.map(|limit| ScanBound {
            limit,
            source: NAME_SCAN_LIMIT_ENV,
        });
        let codex = self
            .codex_scan_limit
            .filter(|_| agent == Agent::Codex)
            .map(|limit| ScanBound {
                limit,
                source: CODEX_SCAN_LIMIT_ENV,
            });
        match (general, codex) {
            (Some(g), Some(c)) => Some(if c.limit < g.limit { c } else { g }),
            (g, c) => g.or(c),
        }
    }

    /// What `bridge_status` reports under `settings`.
    pub fn to_json(&self) -> Value {
        json!({
            "max_hops": self.max_hops,
            "timeout_seconds": self.timeout_secs,
            "require_explicit_target": self.require_explicit_target,
            "disable_headless": self.disable_headless,
            "scope": match self.scope { Scope::Cwd => "cwd", Scope::Tree => "tree", Scope::Any => "any" },
            "active_window_minutes": self.active_window.minutes(),
            "late_answer_watch_seconds": self.late_answer_watch_secs,
            "panel_patience_seconds": self.panel_patience_secs,
            "ui_hook": "off (panels are not available yet)",
        })
    }
}

/// The protocol's scope as the stores crate spells it.
pub fn store_scope(scope: Scope) -> cross_agent_stores::resolve::Scope {
    match scope {
        Scope::Cwd => cross_agent_stores::resolve::Scope::Cwd,
        Scope::Tree => cross_agent_stores::resolve::Scope::Tree,
        Scope::Any => cross_agent_stores::resolve::Scope::Any,
    }
}
