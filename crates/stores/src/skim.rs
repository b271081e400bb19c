//! A JSON skimmer for the listing folds: walks one object's top-level fields and hands back each
//! value as raw bytes, without decoding what it steps over.
//!
//! Why not serde alone: a transcript's bytes are mostly long strings (tool output, file contents)
//! the listing never looks at, full of `\n` escapes that make a full parser slow. Skipping a
//! string here is a `memchr` for the next `"` and a count of the backslashes before it, which
//! is several times faster; the few small values the folds need (a type, a timestamp, a title)
//! are then decoded with serde. The skimmer is lenient about what it skips (it does not check
//! numbers or literals) but rejects anything that is not an object of `"key": value` pairs, so a
//! non-JSON line is still reported.

use std::borrow::Cow;

/// Why a line could not be skimmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkimError {
    /// Byte offset where the skimmer gave up.
    pub at: usize,
}

impl std::fmt::Display for SkimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a JSON object (stopped at byte {})", self.at)
    }
}

/// Nesting deeper than this is refused rather than walked (no recursion is involved, but a
/// counter this large means garbage).
const MAX_DEPTH: usize = 10_000;

fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(c) = b.get(i) {
        if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            break;
        }
        i += 1;
    }
    i
}

/// End (exclusive) of the string whose opening quote is at `i`.
fn skip_string(b: &[u8], i: usize) -> Result<usize, SkimError> {
    let mut from = i + 1;
    loop {
        let rel = memchr::memchr(b'"', b.get(from..).ok_or(SkimError { at: i })?)
            .ok_or(SkimError { at: i })?;
        let quote = from + rel;
        // An odd run of backslashes before it escapes this quote.
        let mut k = quote;
        while k > from && b[k - 1] == b'\\' {
            k -= 1;
        }
        if (quote - k).is_multiple_of(2) {
            return Ok(quote + 1);
        }
        from = quote + 1;
    }
}

/// End (exclusive) of the value starting at or after `i`, and where it starts.
fn skip_value(b: &[u8], i: usize) -> Result<(usize, usize), SkimError> {
    let start = ws(b, i);
    let err = SkimError { at: start };
    match b.get(start) {
        Some(b'"') => Ok((start, skip_string(b, start)?)),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut k = start;
            while let Some(&c) = b.get(k) {
                match c {
                    b'"' => {
                        k = skip_string(b, k)?;
                        continue;
                    }
                    b'{' | b'[' => {
                        depth += 1;
                        if depth > MAX_DEPTH {
                            return Err(SkimError { at: k });
                        }
                    }
                    b'}' | b']' => {
                        depth = depth.checked_sub(1).ok_or(SkimError { at: k })?;
                        if depth == 0 {
                            return Ok((start, k + 1));
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
            Err(err)
        }
        Some(c) if c.is_ascii_alphanumeric() || *c == b'-' => {
            let mut k = start;
            while let Some(c) = b.get(k) {
                if !(c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.')) {
                    break;
                }
                k += 1;
            }
            Ok((start, k))
        }
        _ => Err(err),
    }
}

/// Calls `f(key, raw value)` for each top-level field of the object in `b`, in order, until `f`
/// returns false. Fails unless `b` is one object (trailing whitespace allowed) — checked only as
/// far as the walk went when `f` stopped it early.
pub fn for_each_field<'a>(
    b: &'a [u8],
    mut f: impl FnMut(&'a [u8], &'a [u8]) -> bool,
) -> Result<(), SkimError> {
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return Err(SkimError { at: i });
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return end(b, i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return Err(SkimError { at: i });
        }
        let key_end = skip_string(b, i)?;
        let key = &b[i + 1..key_end - 1];
        i = ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return Err(SkimError { at: i });
        }
        let (vs, ve) = skip_value(b, i + 1)?;
        if !f(key, &b[vs..ve]) {
            return Ok(());
        }
        i = ws(b, ve);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b'}') => return end(b, i + 1),
            _ => return Err(SkimError { at: i }),
        }
    }
}

fn end(b: &[u8], i: usize) -> Result<(), SkimError> {
    let j = ws(b, i);
    if j == b.len() {
        Ok(())
    } else {
        Err(SkimError { at: j })
    }
}

/// The raw items of the array in `b`; an empty list for anything that is not an array.
pub fn items(b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'[') {
        return out;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return out;
    }
    while let Ok((vs, ve)) = skip_value(b, i) {
        out.push(&b[vs..ve]);
        i = ws(b, ve);
        match b.get(i) {
            Some(b',') => i += 1,
            _ => break,
        }
    }
    out
}

/// The field `key` of the object in `b`, if `b` is an object that has it.
pub fn field<'a>(b: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut found = None;
    let _ = for_each_field(b, |k, v| {
        if k == key {
            found = Some(v);
            false
        } else {
            true
        }
    });
    found
}

/// A raw value as a string, if it is one (escapes decoded).
pub fn string(raw: &[u8]) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if memchr::memchr(b'\\', inner).is_none() {
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    serde_json::from_slice::<String>(raw).ok().map(Cow::Owned)
}

/// A raw value as a bool, if it is one.
pub fn boolean(raw: &[u8]) -> Option<bool> {
    match raw {
        b"true" => Some(true),
        b"false" => Some(false),
        _ => None,
    }
}
