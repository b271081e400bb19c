//! When to try again: on 429 and 5xx only, at most [`MAX_TRIES`] requests, waiting what the
//! server's `retry-after` (or OpenAI's `retry-after-ms`) says, else a back-off of 0.5 s doubling
//! with jitter (each wait drawn from the upper half of its step, `fastrand`: the workspace's
//! small random source; `backon` was not taken because its schedule cannot be bent by a
//! server's `retry-after` and a deadline without wrapping every call in the same code as
//! here). A single wait is at most [`MAX_WAIT`], all of them together at most
//! [`MAX_TOTAL_WAIT`], and never past the provider's timeout: a wait that would end after it is
//! not made, and the last failure is returned at once.

use std::time::{Duration, SystemTime};

/// Requests per ask, the first included.
pub const MAX_TRIES: u32 = 4;
/// The first back-off step; it doubles each try.
pub const BASE_WAIT: Duration = Duration::from_millis(500);
/// The longest single wait, `retry-after` included.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// The longest total wait over one ask.
pub const MAX_TOTAL_WAIT: Duration = Duration::from_secs(60);

/// The back-off before try `next` (2 for the first retry), without a `retry-after`.
pub(crate) fn backoff(next: u32) -> Duration {
    let step = BASE_WAIT.saturating_mul(1 << next.saturating_sub(2).min(16));
    let step = step.min(MAX_WAIT);
    step.mul_f64(0.5 + fastrand::f64() * 0.5)
}

/// What the server asked for: `retry-after-ms` (milliseconds), else `retry-after` in seconds
/// (possibly fractional) or as an HTTP date.
pub(crate) fn server_wait(
    headers: &reqwest::header::HeaderMap,
    now: SystemTime,
) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    parse_retry_after(text("retry-after")?, now)
}

/// `retry-after`'s value: delta-seconds or an HTTP date (RFC 9110 §10.2.3); a date in the past
/// is no wait.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && (0.0..1e9).contains(&secs))
            .then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}
