//! Times in words: "5m ago", "3h ago", "2days ago" in listings, "2h 3m" for an uptime —
//! humantime's units, cut to the largest one or two, since a person wants the order of
//! magnitude rather than the seconds.

use std::time::Duration;

/// humantime's units in seconds, largest first (its year is 365.25 days, its month 30.44).
const UNITS: [u64; 6] = [31_557_600, 2_630_016, 86_400, 3_600, 60, 1];

/// How long before `now` a moment was, both in Unix milliseconds; "never" without one.
pub fn ago(at_ms: Option<i64>, now_ms: i64) -> String {
    let Some(at_ms) = at_ms else {
        return "never".to_owned();
    };
    let Ok(seconds) = u64::try_from(now_ms.saturating_sub(at_ms) / 1000) else {
        return "in the future".to_owned();
    };
    format!("{} ago", cut_to_units(seconds, 1))
}

/// A span of seconds in its two largest units: "5s", "1m 5s", "2h 3m", "1day 1h".
pub fn span(seconds: u64) -> String {
    cut_to_units(seconds, 2).to_string()
}

/// `seconds` rounded down to its `kept` largest units, formatted by humantime.
fn cut_to_units(seconds: u64, kept: usize) -> humantime::FormattedDuration {
    let largest = UNITS
        .iter()
        .position(|&unit| seconds >= unit)
        .unwrap_or(UNITS.len() - 1);
    let finest = UNITS[(largest + kept).saturating_sub(1).min(UNITS.len() - 1)];
    humantime::format_duration(Duration::from_secs(seconds / finest * finest))
}

#[cfg(test)]
mod tests {
    use super::{ago, span};

    const MIN: i64 = 60_000;

    #[test]
    fn the_largest_unit_is_kept() {
        let now = 1_800_000_000_000;
        assert_eq!(ago(Some(now - 1_500), now), "1s ago");
        assert_eq!(ago(Some(now - 10 * MIN - 30_000), now), "10m ago");
        assert_eq!(ago(Some(now - 299 * MIN), now), "4h ago");
        assert_eq!(ago(Some(now - 2 * 1440 * MIN + 1_000), now), "1day ago");
        assert_eq!(ago(Some(now - 3 * 1440 * MIN), now), "3days ago");
        assert_eq!(ago(Some(now - 400 * 1440 * MIN), now), "1year ago");
        assert_eq!(ago(Some(now + MIN), now), "in the future");
        assert_eq!(ago(None, now), "never");
    }

    #[test]
    fn a_span_keeps_two_units() {
        assert_eq!(span(0), "0s");
        assert_eq!(span(5), "5s");
        assert_eq!(span(65), "1m 5s");
        assert_eq!(span(3_600 * 2 + 60 * 3 + 7), "2h 3m");
        assert_eq!(span(86_400 + 3_600 + 59), "1day 1h");
    }
}
