//! Codex's rate-limit windows as `cross-agent usage --limits` shows them: how much of each window
//! is used, how long the window is, and when it resets — as a time and as "in 2h 10m" from a
//! `now` the caller passes (so a test can fix it). Pure: the numbers come from
//! [`crate::Accounting::rate_limits`], the latest `token_count` event that carried them.

use cross_agent_protocol::timestamp::UnixMillis;
use serde::Serialize;

use crate::account::{RateLimitWindow, RateLimits};

/// One window, ready to show.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowView {
    /// `primary` (Codex's short window, 5 h today) or `secondary` (the weekly one).
    pub name: &'static str,
    pub used_percent: f64,
    pub window_minutes: Option<u64>,
    /// RFC 3339, UTC.
    pub resets_at: Option<String>,
    /// Seconds from `now` to the reset; 0 once it has passed.
    pub resets_in_seconds: Option<u64>,
}

impl WindowView {
    /// The window's length: `5h`, `7d`, `90m`.
    pub fn window_text(&self) -> String {
        match self.window_minutes {
            None => "-".to_owned(),
            Some(m) if m > 0 && m % (24 * 60) == 0 => format!("{}d", m / (24 * 60)),
            Some(m) if m > 0 && m % 60 == 0 => format!("{}h", m / 60),
            Some(m) => format!("{m}m"),
        }
    }

    /// When it resets: `2026-12-06T06:10:00Z (in 2h 10m)`, or `-` when Codex did not say.
    pub fn resets_text(&self) -> String {
        match (&self.resets_at, self.resets_in_seconds) {
            (Some(at), Some(0)) => format!("{at} (passed)"),
            (Some(at), Some(secs)) => format!("{at} (in {})", in_words(secs)),
            _ => "-".to_owned(),
        }
    }
}

/// The windows Codex reported, primary first; `observed_at` is when it reported them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LimitsView {
    pub observed_at: Option<String>,
    pub windows: Vec<WindowView>,
}

/// What `--limits` shows for `limits` at `now`.
pub fn view(limits: &RateLimits, now: UnixMillis) -> LimitsView {
    let window = |name: &'static str, w: &RateLimitWindow| {
        let resets_ms = w.resets_at.map(|s| s.saturating_mul(1000));
        WindowView {
            name,
            used_percent: w.used_percent,
            window_minutes: w.window_minutes,
            resets_at: resets_ms.map(|ms| UnixMillis(ms).to_rfc3339()),
            resets_in_seconds: resets_ms
                .map(|ms| u64::try_from(ms.saturating_sub(now.0) / 1000).unwrap_or(0)),
        }
    };
    let windows = [
        ("primary", &limits.primary),
        ("secondary", &limits.secondary),
    ]
    .into_iter()
    .filter_map(|(name, w)| w.as_ref().map(|w| window(name, w)))
    .collect();
    LimitsView {
        observed_at: limits.observed_at.map(UnixMillis::to_rfc3339),
        windows,
    }
}

/// The windows as a short text for the phone (`/limits`): one line per window, the share used,
/// its length and when it resets; or that Codex has recorded none.
pub fn text(view: Option<&LimitsView>) -> String {
    let Some(view) = view.filter(|v| !v.windows.is_empty()) else {
        return "Codex has recorded no rate limits yet.".to_owned();
    };
    let mut out = String::from("Codex rate limits");
    if let Some(at) = &view.observed_at {
        out.push_str(&format!(" (as Codex reported at {at})"));
    }
    out.push(':');
    for w in &view.windows {
        out.push_str(&format!(
            "\n• {} ({} window): {:.1}% used, resets {}",
            w.name,
            w.window_text(),
            w.used_percent,
            w.resets_text()
        ));
    }
    out
}

/// A duration the way a person reads a reset: `2h 10m`, `3d 4h`, `45m`, `under a minute`.
pub fn in_words(secs: u64) -> String {
    let (days, hours, minutes) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    match (days, hours, minutes) {
        (0, 0, 0) => "under a minute".to_owned(),
        (0, 0, m) => format!("{m}m"),
        (0, h, m) => format!("{h}h {m}m"),
        (d, h, _) => format!("{d}d {h}h"),
    }
}
