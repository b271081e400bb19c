//! The settings in effect for one call: the `CROSS_AGENT_*` variables of the *caller's*
//! registration, forwarded by the thin process. Each registration guards its own side, so the
//! daemon's own environment never decides a guard (docs/spec/cross-agent-mcp.md §7).

use std::collections::BTreeMap;

use cross_agent_protocol::bridge::{Scope, SettingsStatus};
use cross_agent_protocol::settings as var;
use cross_agent_stores::resolve::{ActiveWindow, ScanBound};
use cross_agent_transports::settings::{flag, value};

use crate::Agent;

/// The spec's defaults.
pub const DEFAULT_MAX_HOPS: u32 = 4;
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
/// `CROSS_AGENT_LATE_ANSWER_WATCH`'s default: 3 h.
pub const DEFAULT_LATE_ANSWER_WATCH_SECS: u64 = 10_800;
/// `CROSS_AGENT_PANEL_PATIENCE`'s default: 1 h.
pub const DEFAULT_PANEL_PATIENCE_SECS: u64 = 3600;

/// `CROSS_AGENT_UI_HOOK`: whether a send goes into an editor panel that holds the session.
///
/// `auto` uses a panel that holds the session, else the CLI; `off` never looks at panels;
/// `require` refuses a send naming no session (or opening a new conversation) that no panel of
/// the caller's window takes; `off` with `CROSS_AGENT_DISABLE_HEADLESS` refuses every send.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UiHook {
    /// Use a panel when one holds the session, else the CLI (the default).
    #[default]
    Auto,
    /// Always the CLI.
    Off,
    /// Fail rather than fall back when the send does not name its session.
    Require,
}

impl UiHook {
    pub fn as_str(self) -> &'static str {
        match self {
            UiHook::Auto => "auto",
            UiHook::Off => "off",
            UiHook::Require => "require",
        }
    }

    fn parse(value: &str) -> Option<UiHook> {
        [UiHook::Auto, UiHook::Off, UiHook::Require]
            .into_iter()
            .find(|hook| value.eq_ignore_ascii_case(hook.as_str()))
    }
}

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
    pub ui_hook: UiHook,
    name_scan_limit: Option<usize>,
    codex_scan_limit: Option<usize>,
    /// Settings whose value could not be read, each said in words naming the variable. They take
    /// their defaults, and a send is refused while any is listed: a guard spelled wrong must not
    /// quietly stop guarding.
    pub invalid: Vec<String>,
}

/// Reads the settings of one registration, noting each value it cannot read.
struct Reader<'a> {
    settings: &'a BTreeMap<String, String>,
    invalid: Vec<String>,
}

impl Reader<'_> {
    fn parsed<T>(
        &mut self,
        name: &str,
        expected: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let text = value(self.settings, name)?;
        let parsed = parse(text);
        if parsed.is_none() {
            self.invalid
                .push(format!("{name} is {text:?}; expected {expected}"));
        }
        parsed
    }

    fn number<T: std::str::FromStr>(&mut self, name: &str) -> Option<T> {
        self.parsed(name, "a whole number", |text| text.parse().ok())
    }

    fn positive(&mut self, name: &str) -> Option<usize> {
        self.parsed(name, "a positive whole number", |text| {
            text.parse().ok().filter(|n| *n > 0)
        })
    }
}

impl CallSettings {
    /// Reads the registration's settings; a value that does not parse takes the default and is
    /// listed in `invalid`.
    pub fn from_settings(settings: &BTreeMap<String, String>) -> CallSettings {
        let mut read = Reader {
            settings,
            invalid: Vec::new(),
        };
        let scope = read
            .parsed(var::SCOPE, "cwd, tree or any", Scope::parse)
            .unwrap_or(Scope::Cwd);
        CallSettings {
            max_hops: read.number(var::MAX_HOPS).unwrap_or(DEFAULT_MAX_HOPS),
            // 0 keeps the default: a turn with no time at all could never answer.
            timeout_secs: read
                .number(var::TIMEOUT)
                .filter(|t| *t > 0)
                .unwrap_or(DEFAULT_TIMEOUT_SECS),
            require_explicit_target: flag(settings, var::REQUIRE_EXPLICIT_TARGET),
            disable_headless: flag(settings, var::DISABLE_HEADLESS),
            scope,
            active_window: read
                .number(var::ACTIVE_WINDOW_MIN)
                .map(ActiveWindow::from_minutes)
                .unwrap_or_default(),
            late_answer_watch_secs: read
                .number(var::LATE_ANSWER_WATCH)
                .unwrap_or(DEFAULT_LATE_ANSWER_WATCH_SECS),
            panel_patience_secs: read
                .number(var::PANEL_PATIENCE)
                .unwrap_or(DEFAULT_PANEL_PATIENCE_SECS),
            ui_hook: read
                .parsed(var::UI_HOOK, "auto, off or require", UiHook::parse)
                .unwrap_or_default(),
            name_scan_limit: read.positive(var::NAME_SCAN_LIMIT),
            codex_scan_limit: read.positive(var::CODEX_SCAN_LIMIT),
            invalid: read.invalid,
        }
    }

    /// The bound on name lookups for `agent` in `scope` (none by default). The Codex rollout
    /// bound applies only to scope `any`, as the spec's table says.
    pub fn name_bound(&self, agent: Agent, scope: Scope) -> Option<ScanBound> {
        let general = self.name_scan_limit.map(|limit| ScanBound {
            limit,
            source: var::NAME_SCAN_LIMIT,
        });
        let codex = self
            .codex_scan_limit
            .filter(|_| agent == Agent::Codex && scope == Scope::Any)
            .map(|limit| ScanBound {
                limit,
                source: var::CODEX_SCAN_LIMIT,
            });
        match (general, codex) {
            (Some(g), Some(c)) => Some(if c.limit < g.limit { c } else { g }),
            (g, c) => g.or(c),
        }
    }

    /// What `bridge_status` reports under `settings`.
    pub fn status(&self) -> SettingsStatus {
        SettingsStatus {
            max_hops: self.max_hops,
            timeout_seconds: self.timeout_secs,
            require_explicit_target: self.require_explicit_target,
            disable_headless: self.disable_headless,
            scope: self.scope,
            active_window_minutes: self.active_window.minutes(),
            late_answer_watch_seconds: self.late_answer_watch_secs,
            panel_patience_seconds: self.panel_patience_secs,
            ui_hook: self.ui_hook.as_str().to_owned(),
            panels_available: false,
            invalid: self.invalid.clone(),
        }
    }
}
