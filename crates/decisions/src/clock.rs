//! The log's one timestamp shape, `2026-05-01T12:00:00.123Z`: RFC 3339 in UTC with exactly three
//! fraction digits. Every `at` the writer stamps has it, so it is always 24 bytes and two of them
//! order as strings do — which is what lets a query compare `at` before parsing a line.
//! Anything else RFC 3339 (an offset, more digits) is read too and brought to this shape first.

use std::borrow::Cow;

use cross_agent_protocol::timestamp::UnixMillis;

/// Length of a canonical stamp.
pub const STAMP_LEN: usize = 24;

/// Now, as a canonical stamp.
pub fn now() -> String {
    format_millis(now_millis())
}

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> i64 {
    UnixMillis::now().0
}

/// A Unix time in milliseconds as a canonical stamp (clamped to years 0000–9999, which keeps
/// the shape fixed).
pub fn format_millis(ms: i64) -> String {
    const MIN: i64 = -62_167_219_200_000; // 0000-01-01T00:00:00Z
    const MAX: i64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
    UnixMillis(ms.clamp(MIN, MAX)).to_rfc3339()
}

/// Whether `text` is already a canonical stamp.
pub fn is_canonical(text: &[u8]) -> bool {
    if text.len() != STAMP_LEN {
        return false;
    }
    text.iter().enumerate().all(|(i, b)| match i {
        4 | 7 => *b == b'-',
        10 => *b == b'T',
        13 | 16 => *b == b':',
        19 => *b == b'.',
        23 => *b == b'Z',
        _ => b.is_ascii_digit(),
    })
}

/// `text` as a canonical stamp: itself when it already is one, else parsed as RFC 3339 and
/// converted to UTC. `None` when it is not a time.
pub fn canonical(text: &str) -> Option<Cow<'_, str>> {
    if is_canonical(text.as_bytes()) {
        return Some(Cow::Borrowed(text));
    }
    Some(Cow::Owned(format_millis(to_millis(text)?)))
}

/// A canonical (or any RFC 3339) stamp as Unix milliseconds.
pub fn to_millis(text: &str) -> Option<i64> {
    UnixMillis::parse_rfc3339(text.trim()).map(|at| at.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_shape_round_trips() {
        let stamp = format_millis(1_777_636_800_123);
        assert_eq!(stamp, "2026-05-01T12:00:00.123Z");
        assert!(is_canonical(stamp.as_bytes()));
        assert_eq!(to_millis(&stamp), Some(1_777_636_800_123));
        assert_eq!(
            canonical("2026-05-01T14:00:00.1234+02:00").as_deref(),
            Some("2026-05-01T12:00:00.123Z")
        );
        assert_eq!(
            canonical("2026-05-01T12:00:00Z").as_deref(),
            Some("2026-05-01T12:00:00.000Z")
        );
        assert_eq!(canonical("yesterday"), None);
    }
}
