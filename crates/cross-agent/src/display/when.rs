//! Times in words for listings: "5m ago", "3h ago", "2days ago" — humantime's units, cut to the
//! largest one, since a listing wants the order of magnitude rather than the seconds.

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
    let unit = UNITS.into_iter().find(|&unit| seconds >= unit).unwrap_or(1);
    let rounded = Duration::from_secs(seconds / unit * unit);
    format!("{} ago", humantime::format_duration(rounded))
}

#[cfg(test)]
mod tests {
    use super::ago;

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
}
