//! Reading one line of the log cheaply: its `at` without parsing it, and only the fields a query
//! asks for, borrowed from the line.
//!
//! A query over a million lines spends its time here. The writer puts `at` first in the
//! canonical 24-byte shape, so [`fast_stamp`] finds it by looking at fixed offsets and a line
//! outside the time window is dropped without being parsed. A line that passes is scanned once
//! ([`extract`]) for the handful of values the query names ([`Wanted`]).
//!
//! The scanner is a small JSON parser of its own rather than a serde_json visitor, because it
//! is faster where a query spends its time (measured in one process over the benchmark's 333,000
//! in-window lines: a borrowing serde_json visitor that skips unwanted values with `IgnoredAny`
//! took ~0.68 µs a line, this ~0.42 µs — about what serde_json needs just to skip a whole line):
//! strings are skipped eight bytes at a time, keys compared as bytes, and only wanted values
//! are decoded — strings without escapes borrowed from the line, other values handed to
//! serde_json. It checks the structure fully (every string closed, every object and array
//! balanced, nothing after the value), which is what catches a torn line: a proper prefix of a
//! JSON object never closes it. It is lenient where that cannot matter for a line the writer
//! wrote — the digits of a number not asked for, control characters inside a string, UTF-8
//! outside the values it decodes — and serde_json itself remains the reference: a test checks
//! the two read the same on every kind of line, and that no proper prefix of a line reads.

use std::borrow::Cow;

use serde_json::Value;

use crate::clock::{self, STAMP_LEN};

/// How every line the writer writes begins.
pub const AT_PREFIX: &[u8] = b"{\"at\":\"";

/// The line's `at` when it is where the writer puts it, in the canonical shape.
pub fn fast_stamp(line: &[u8]) -> Option<&str> {
    let rest = line.strip_prefix(AT_PREFIX)?;
    let stamp = rest.get(..STAMP_LEN)?;
    if rest.get(STAMP_LEN) != Some(&b'"') || !clock::is_canonical(stamp) {
        return None;
    }
    std::str::from_utf8(stamp).ok()
}

/// The line's `at` in the canonical shape, wherever it is in the line; `None` for a line that
/// is not a record (not JSON, no `at`, or an `at` that is not a time).
pub fn stamp(line: &[u8]) -> Option<Cow<'_, str>> {
    if let Some(stamp) = fast_stamp(line) {
        return Some(Cow::Borrowed(stamp));
    }
    let wanted = Wanted::new(&[&["at"][..]]);
    let mut out = Vec::new();
    extract(line, &wanted, &mut out).ok()?;
    match out.into_iter().next().flatten()? {
        Found::Str(text) => clock::canonical(&text).map(|c| Cow::Owned(c.into_owned())),
        Found::Other(_) => None,
    }
}

/// A value found in a line: a string (borrowed when it had no escapes), or any other JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Found<'de> {
    Str(Cow<'de, str>),
    Other(Value),
}

impl Found<'_> {
    /// The value as text: a string as itself, anything else as compact JSON; `None` for null.
    pub fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Found::Str(text) => Some(Cow::Borrowed(text)),
            Found::Other(Value::Null) => None,
            Found::Other(value) => Some(Cow::Owned(value.to_string())),
        }
    }
}

/// The fields a query needs, as a tree of keys; each requested path ends in a slot of the
/// output.
#[derive(Debug, Default)]
pub struct Wanted {
    children: Vec<(String, Wanted)>,
    slot: Option<usize>,
    slots: usize,
}

impl Wanted {
    /// One slot per path, in order (`["details", "guard"]` is `details.guard`).
    pub fn new<S: AsRef<str>>(paths: &[&[S]]) -> Wanted {
        let mut root = Wanted::default();
        for (slot, path) in paths.iter().enumerate() {
            root.insert(path, slot);
        }
        root.slots = paths.len();
        root
    }

    fn insert<S: AsRef<str>>(&mut self, path: &[S], slot: usize) {
        let Some((first, rest)) = path.split_first() else {
            self.slot = Some(slot);
            return;
        };
        let index = match self.children.iter().position(|(k, _)| k == first.as_ref()) {
            Some(i) => i,
            None => {
                self.children
                    .push((first.as_ref().to_owned(), Wanted::default()));
                self.children.len() - 1
            }
        };
        if let Some((_, child)) = self.children.get_mut(index) {
            child.insert(rest, slot);
        }
    }

    fn child_bytes(&self, key: &[u8]) -> Option<&Wanted> {
        self.children
            .iter()
            .find(|(k, _)| k.as_bytes() == key)
            .map(|(_, child)| child)
    }

    fn child(&self, key: &str) -> Option<&Wanted> {
        self.children
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, child)| child)
    }

    #[cfg(test)]
    /// Fills this node's slots from a value already parsed (a path both requested whole and
    /// looked into, such as `details` and `details.guard` together).
    fn fill_from_value<'de>(&self, value: &Value, out: &mut [Option<Found<'de>>]) {
        if let Some(slot) = self.slot
            && let Some(cell) = out.get_mut(slot)
        {
            *cell = Some(match value {
                Value::String(text) => Found::Str(Cow::Owned(text.clone())),
                other => Found::Other(other.clone()),
            });
        }
        if let Value::Object(map) = value {
            for (key, child) in &self.children {
                if let Some(inner) = map.get(key) {
                    child.fill_from_value(inner, out);
                }
            }
        }
    }
}

/// A line that is not one whole JSON value: where the scanner gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed {
    pub offset: usize,
}

/// Objects and arrays nested deeper than this are refused (as serde_json does), so a hostile
/// line cannot exhaust the stack.
const MAX_DEPTH: usize = 128;

/// Nothing wanted: the value is only checked and skipped.
static NOTHING: Wanted = Wanted {
    children: Vec::new(),
    slot: None,
    slots: 0,
};

/// Scans `line` (one whole JSON value, nothing after it but whitespace) and puts each wanted
/// path's value in its slot of `out` (`None` when absent). An error means the line is not
/// JSON: torn, or not a record at all.
pub fn extract<'de>(
    line: &'de [u8],
    wanted: &Wanted,
    out: &mut Vec<Option<Found<'de>>>,
) -> Result<(), Malformed> {
    out.clear();
    out.resize(wanted.slots, None);
    let mut scanner = Scanner {
        bytes: line,
        pos: 0,
    };
    scanner.value(wanted, out.as_mut_slice(), 0)?;
    scanner.whitespace();
    if scanner.pos != line.len() {
        return scanner.fail();
    }
    Ok(())
}

/// The first `"` or `\\` at or after `from`, eight bytes at a time: strings in a record are
/// short, and this beats a `memchr2` call's setup on them (measured: string skipping was the
/// scanner's largest cost with `memchr2`).
fn quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const QUOTES: u64 = ONES * b'"' as u64;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let (q, b) = (word ^ QUOTES, word ^ BACKSLASHES);
        // A byte of `q` or `b` is zero where the word has a quote or a backslash; the lowest
        // flagged byte is always a true one.
        let found = ((q.wrapping_sub(ONES) & !q) | (b.wrapping_sub(ONES) & !b)) & HIGHS;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    bytes
        .get(i..)?
        .iter()
        .position(|c| matches!(c, b'"' | b'\\'))
        .map(|p| i + p)
}

struct Scanner<'de> {
    bytes: &'de [u8],
    pos: usize,
}

impl<'de> Scanner<'de> {
    fn fail<T>(&self) -> Result<T, Malformed> {
        Err(Malformed { offset: self.pos })
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), Malformed> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            self.fail()
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Malformed> {
        match self.bytes.get(self.pos..self.pos + word.len()) {
            Some(found) if found == word => {
                self.pos += word.len();
                Ok(())
            }
            _ => self.fail(),
        }
    }

    /// A string from its opening quote: the range of its contents, and whether it has escapes.
    fn string(&mut self) -> Result<(usize, usize, bool), Malformed> {
        self.expect(b'"')?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            let Some(at) = quote_or_backslash(self.bytes, self.pos) else {
                self.pos = self.bytes.len();
                return self.fail();
            };
            if self.bytes.get(at) == Some(&b'"') {
                self.pos = at + 1;
                return Ok((start, at, escaped));
            }
            escaped = true;
            self.pos = at + 1;
            match self.peek() {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.pos += 1,
                Some(b'u') => {
                    let hex = self.bytes.get(self.pos + 1..self.pos + 5);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return self.fail();
                    }
                    self.pos += 5;
                }
                _ => return self.fail(),
            }
        }
    }

    /// The text of a string whose contents are `start..end`.
    fn text(&self, start: usize, end: usize, escaped: bool) -> Result<Cow<'de, str>, Malformed> {
        let bad = Malformed { offset: start };
        if escaped {
            // With the quotes: serde_json decodes the escapes.
            let quoted = self.bytes.get(start - 1..end + 1).ok_or(bad)?;
            serde_json::from_slice::<String>(quoted)
                .map(Cow::Owned)
                .map_err(|_| bad)
        } else {
            let raw = self.bytes.get(start..end).ok_or(bad)?;
            std::str::from_utf8(raw).map(Cow::Borrowed).map_err(|_| bad)
        }
    }

    /// One value; fills `node`'s slot with it and its children's slots from inside it.
    fn value(
        &mut self,
        node: &Wanted,
        out: &mut [Option<Found<'de>>],
        depth: usize,
    ) -> Result<(), Malformed> {
        self.whitespace();
        let start = self.pos;
        match self.peek() {
            Some(b'"') => {
                let (from, to, escaped) = self.string()?;
                if let Some(slot) = node.slot {
                    let text = self.text(from, to, escaped)?;
                    if let Some(cell) = out.get_mut(slot) {
                        *cell = Some(Found::Str(text));
                    }
                }
                return Ok(());
            }
            Some(b'{') => self.object(node, out, depth + 1)?,
            Some(b'[') => self.array(out, depth + 1)?,
            Some(b't') => self.literal(b"true")?,
            Some(b'f') => self.literal(b"false")?,
            Some(b'n') => self.literal(b"null")?,
            Some(b'-' | b'0'..=b'9') => {
                self.pos += 1;
                while let Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') = self.peek() {
                    self.pos += 1;
                }
            }
            _ => return self.fail(),
        }
        if let Some(slot) = node.slot {
            let raw = self.bytes.get(start..self.pos).unwrap_or_default();
            let value: Value =
                serde_json::from_slice(raw).map_err(|_| Malformed { offset: start })?;
            if let Some(cell) = out.get_mut(slot) {
                *cell = Some(Found::Other(value));
            }
        }
        Ok(())
    }

    fn object(
        &mut self,
        node: &Wanted,
        out: &mut [Option<Found<'de>>],
        depth: usize,
    ) -> Result<(), Malformed> {
        if depth > MAX_DEPTH {
            return self.fail();
        }
        self.expect(b'{')?;
        self.whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.whitespace();
            let (from, to, escaped) = self.string()?;
            let child = if node.children.is_empty() {
                &NOTHING
            } else if escaped {
                let key = self.text(from, to, escaped)?;
                node.child(&key).unwrap_or(&NOTHING)
            } else {
                // Compared as bytes: wanted keys are UTF-8, so equal bytes are equal text.
                let key = self.bytes.get(from..to).unwrap_or_default();
                node.child_bytes(key).unwrap_or(&NOTHING)
            };
            self.whitespace();
            self.expect(b':')?;
            self.value(child, out, depth)?;
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.fail(),
            }
        }
    }

    /// Arrays are checked, never looked into: paths name object keys only.
    fn array(&mut self, out: &mut [Option<Found<'de>>], depth: usize) -> Result<(), Malformed> {
        if depth > MAX_DEPTH {
            return self.fail();
        }
        self.expect(b'[')?;
        self.whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.value(&NOTHING, out, depth)?;
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return self.fail(),
            }
        }
    }
}

/// serde_json's reading of a line, the reference the scanner is tested against.
#[cfg(test)]
mod reference {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
    use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    use super::{Found, Wanted};

    /// Parses `line` (one whole JSON value, nothing after it) and puts each wanted path's value in
    /// its slot of `out` (`None` when absent). An error means the line is not JSON: torn or bad.
    pub fn extract<'de>(
        line: &'de [u8],
        wanted: &Wanted,
        out: &mut Vec<Option<Found<'de>>>,
    ) -> Result<(), serde_json::Error> {
        out.clear();
        out.resize(wanted.slots, None);
        let mut de = serde_json::Deserializer::from_slice(line);
        NodeSeed {
            node: wanted,
            out: out.as_mut_slice(),
        }
        .deserialize(&mut de)?;
        de.end()
    }

    /// A string, borrowed from the input when it had no escapes.
    struct Text<'de>(Cow<'de, str>);

    impl<'de> Deserialize<'de> for Text<'de> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct TextVisitor;
            impl<'de> Visitor<'de> for TextVisitor {
                type Value = Text<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Borrowed(v)))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Owned(v.to_owned())))
                }
                fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Owned(v)))
                }
            }
            deserializer.deserialize_str(TextVisitor)
        }
    }

    /// Walks an object, descending only into wanted keys; any other value is accepted and ignored
    /// (a wanted path through a non-object simply finds nothing).
    struct NodeSeed<'w, 'o, 'de> {
        node: &'w Wanted,
        out: &'o mut [Option<Found<'de>>],
    }

    impl<'de> DeserializeSeed<'de> for NodeSeed<'_, '_, 'de> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for NodeSeed<'_, '_, 'de> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let out = self.out;
            while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                let Some(child) = self.node.child(&key) else {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                };
                match (child.slot, child.children.is_empty()) {
                    (Some(slot), true) => {
                        let found = map.next_value_seed(LeafSeed)?;
                        if let Some(cell) = out.get_mut(slot) {
                            *cell = Some(found);
                        }
                    }
                    (None, _) => map.next_value_seed(NodeSeed {
                        node: child,
                        out: &mut *out,
                    })?,
                    (Some(_), false) => {
                        let value = map.next_value::<Value>()?;
                        child.fill_from_value(&value, out);
                    }
                }
            }
            Ok(())
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(())
        }

        fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E: de::Error>(self) -> Result<(), E> {
            Ok(())
        }
    }

    /// A wanted value: a string borrowed where it can be, anything else as a `Value`.
    struct LeafSeed;

    impl<'de> DeserializeSeed<'de> for LeafSeed {
        type Value = Found<'de>;
        fn deserialize<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Found<'de>, D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for LeafSeed {
        type Value = Found<'de>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Found<'de>, E> {
            Ok(Found::Str(Cow::Borrowed(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Found<'de>, E> {
            Ok(Found::Str(Cow::Owned(v.to_owned())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Found<'de>, E> {
            Ok(Found::Str(Cow::Owned(v)))
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Found<'de>, E> {
            Ok(Found::Other(Value::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Found<'de>, E> {
            Ok(Found::Other(Value::from(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Found<'de>, E> {
            Ok(Found::Other(Value::from(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Found<'de>, E> {
            Ok(Found::Other(Value::from(v)))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Found<'de>, E> {
            Ok(Found::Other(Value::Null))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Found<'de>, A::Error> {
            Value::deserialize(SeqAccessDeserializer::new(seq)).map(Found::Other)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Found<'de>, A::Error> {
            Value::deserialize(MapAccessDeserializer::new(map)).map(Found::Other)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const LINES: &[&str] = &[
        r#"{"at":"2026-05-01T12:00:00.123Z","kind":"send_refused","n":[1,{"a":2}],"details":{"guard":"hop_budget","hops":8,"esc":"a\"b","deep":{"x":true}}}"#,
        r#"{"at":"2026-05-01T12:00:00.123Z","kind":"delivery_outcome","outcome":"failed","details":{"duration_ms":-1.5e3,"ok":false,"none":null,"list":[],"obj":{},"u":"caf\u00e9 \ud83d\ude00","slash":"a\/b\\c"}}"#,
        "  { \"kind\" : \"spaced\" ,\t\"details\" : { \"guard\" : [ 1 , 2 ] } , \"at\":\"2026-05-01T14:00:00+02:00\" }  ",
        r#"{"k\u0069nd":"escaped key","details":{"gu\nard":"x"},"at":"2026-05-01T12:00:00.123Z","\u00e9":"é"}"#,
        r#"{"kind":"dup","kind":"second wins"}"#,
        r#"{}"#,
        r#"[1,2,3]"#,
        r#""just a string""#,
        r#"42"#,
        r#"{"details":"not an object","kind":{"nested":"object as kind"}}"#,
    ];

    fn paths() -> Vec<Vec<&'static [&'static str]>> {
        vec![
            vec![&["at"][..], &["kind"]],
            vec![
                &["details", "guard"][..],
                &["details", "hops"],
                &["details", "esc"],
            ],
            vec![
                &["details"][..],
                &["details", "guard"],
                &["n"],
                &["outcome"],
            ],
            vec![
                &["details", "deep", "x"][..],
                &["details", "u"],
                &["details", "slash"],
            ],
            vec![
                &["kind"][..],
                &["details", "gu\nard"],
                &["é"],
                &["details", "duration_ms"],
            ],
            vec![
                &["details", "list"][..],
                &["details", "obj"],
                &["details", "none"],
            ],
        ]
    }

    #[test]
    fn the_scanner_reads_what_serde_json_reads() {
        for line in LINES {
            for paths in paths() {
                let wanted = Wanted::new(&paths);
                let mut fast = Vec::new();
                let mut slow = Vec::new();
                let fast_ok = extract(line.as_bytes(), &wanted, &mut fast).is_ok();
                let slow_ok = reference::extract(line.as_bytes(), &wanted, &mut slow).is_ok();
                assert_eq!(fast_ok, slow_ok, "{line} {paths:?}");
                assert!(fast_ok, "{line}");
                assert_eq!(fast, slow, "{line} {paths:?}");
            }
        }
    }

    #[test]
    fn no_proper_prefix_of_a_line_reads() {
        let wanted = Wanted::new(&[&["at"][..], &["kind"], &["details", "guard"]]);
        let mut out = Vec::new();
        for line in LINES.iter().filter(|l| l.trim_start().starts_with('{')) {
            let bytes = line.trim().as_bytes();
            for cut in 0..bytes.len() {
                let prefix = &bytes[..cut];
                assert!(
                    extract(prefix, &wanted, &mut out).is_err(),
                    "prefix read: {:?}",
                    String::from_utf8_lossy(prefix)
                );
            }
        }
    }

    #[test]
    fn malformed_lines_are_refused_like_serde_json_refuses_them() {
        let wanted = Wanted::new(&[&["at"][..], &["kind"]]);
        let mut out = Vec::new();
        for bad in [
            "not json at all",
            r#"{"a":1} {"b":2}"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":tru}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            r#"{a:1}"#,
            "",
        ] {
            assert!(extract(bad.as_bytes(), &wanted, &mut out).is_err(), "{bad}");
            assert!(
                reference::extract(bad.as_bytes(), &wanted, &mut out).is_err(),
                "{bad}"
            );
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(extract(deep.as_bytes(), &wanted, &mut out).is_err());
    }

    #[test]
    fn quotes_and_backslashes_are_found_at_every_offset() {
        for len in 0..40 {
            for at in 0..=len {
                for mark in [b'"', b'\\'] {
                    let mut bytes = vec![b'a'; len];
                    if at < len {
                        bytes[at] = mark;
                    }
                    // Bytes that differ from the marks by one bit must not match.
                    bytes.iter_mut().skip(at + 1).for_each(|b| *b = b'#');
                    for from in 0..=len {
                        let naive = bytes
                            .iter()
                            .skip(from)
                            .position(|c| matches!(c, b'"' | b'\\'))
                            .map(|p| p + from);
                        assert_eq!(quote_or_backslash(&bytes, from), naive, "{len} {at} {from}");
                    }
                }
            }
        }
        assert_eq!(quote_or_backslash(b"\xa2\x00\xdc\"", 0), Some(3));
    }

    #[test]
    fn extracts_only_what_is_wanted() {
        let line = LINES[0].as_bytes();
        assert_eq!(fast_stamp(line), Some("2026-05-01T12:00:00.123Z"));
        let wanted = Wanted::new(&[
            &["kind"][..],
            &["details", "guard"],
            &["details", "hops"],
            &["details", "esc"],
            &["details", "deep", "x"],
            &["missing"],
            &["n"],
        ]);
        let mut out = Vec::new();
        extract(line, &wanted, &mut out).unwrap();
        let texts: Vec<Option<String>> = out
            .iter()
            .map(|f| f.as_ref().and_then(|f| f.text()).map(|t| t.into_owned()))
            .collect();
        assert_eq!(
            texts,
            vec![
                Some("send_refused".to_owned()),
                Some("hop_budget".to_owned()),
                Some("8".to_owned()),
                Some("a\"b".to_owned()),
                Some("true".to_owned()),
                None,
                Some(r#"[1,{"a":2}]"#.to_owned()),
            ]
        );
        // Borrowed when there is nothing to decode.
        assert_eq!(out[0], Some(Found::Str(Cow::Borrowed("send_refused"))));
    }

    #[test]
    fn stamps_wherever_they_are() {
        assert_eq!(
            stamp(br#"{"kind":"x","at":"2026-05-01T14:00:00+02:00"}"#).as_deref(),
            Some("2026-05-01T12:00:00.000Z")
        );
        assert_eq!(stamp(br#""just a string""#), None);
        assert_eq!(stamp(br#"{"at":42}"#), None);
        assert_eq!(
            stamp(br#"{"at":"2026-05-01T12:00:00.123Z","ki"#),
            Some(Cow::Borrowed("2026-05-01T12:00:00.123Z"))
        );
    }
}
