//! The one timestamp type: milliseconds since the Unix epoch, UTC, written as RFC 3339 with
//! exactly three fraction digits (`2026-11-29T23:16:44.123Z`). The stores read transcripts'
//! stamps into it, the hub stamps its records with it, the decisions log and the CLI print it:
//! one shape, so two stamps of the same instant are the same text, and stamps of the same width
//! order as strings do.

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch, UTC. Comparing and storing integers keeps indexes small
/// and sorting cheap; text is made only at the edges.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct UnixMillis(pub i64);

impl UnixMillis {
    /// Now (the epoch if the clock reads before it; a clock that broken sorts first).
    pub fn now() -> UnixMillis {
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        UnixMillis(millis)
    }

    /// Reads RFC 3339 (`2026-11-29T23:16:44.123Z`, any number of fraction digits, `Z` or a
    /// `+hh:mm` offset); digits past the millisecond are dropped.
    #[inline]
    pub fn parse_rfc3339(text: &str) -> Option<UnixMillis> {
        parse(text)
    }

    /// RFC 3339 UTC with exactly three fraction digits.
    pub fn to_rfc3339(self) -> String {
        format(self)
    }
}

/// Now, as RFC 3339 UTC with three fraction digits.
pub fn now_rfc3339() -> String {
    UnixMillis::now().to_rfc3339()
}

// Hand-written because it runs on every transcript line the stores read; `inline` so the
// stores' readers, in another crate, can still inline it as they did when it lived there.
#[inline]
fn parse(s: &str) -> Option<UnixMillis> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let mut v: i64 = 0;
        for &c in b.get(range)? {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let mut digits = 0;
        while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            if digits < 3 {
                millis = millis * 10 + i64::from(c - b'0');
            }
            digits += 1;
            i += 1;
        }
        if digits == 0 {
            return None;
        }
        for _ in digits..3 {
            millis *= 10;
        }
    }
    let offset_secs = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
            let h = num(i + 1..i + 3)?;
            let m = num(i + 4..i + 6)?;
            let v = h * 3600 + m * 60;
            if sign == b'+' { v } else { -v }
        }
        None => 0,
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    Some(UnixMillis(secs * 1000 + millis))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn format(t: UnixMillis) -> String {
    let ms = t.0.rem_euclid(1000);
    let secs = t.0.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_back_as_written() {
        for text in [
            "2026-11-29T23:16:44.123Z",
            "1970-01-01T00:00:00.000Z",
            "1969-12-31T23:59:59.999Z",
            "2000-02-29T12:00:00.500Z",
        ] {
            let at = UnixMillis::parse_rfc3339(text).unwrap();
            assert_eq!(at.to_rfc3339(), text);
        }
        assert_eq!(
            UnixMillis::parse_rfc3339("2026-11-29T23:16:44Z"),
            UnixMillis::parse_rfc3339("2026-11-29T23:16:44.000Z")
        );
        assert_eq!(
            UnixMillis::parse_rfc3339("2026-11-30T01:16:44.123456789+02:00")
                .map(UnixMillis::to_rfc3339)
                .as_deref(),
            Some("2026-11-29T23:16:44.123Z")
        );
        assert_eq!(UnixMillis::parse_rfc3339("yesterday"), None);
    }
}
