//! Reading one line of the log cheaply: its `at` without parsing it, and only the fields a query
//! asks for, borrowed from the line.
//!
//! A query over a million lines spends its time here. The writer puts `at` first in the
//! canonical 24-byte shape, so [`fast_stamp`] finds it by looking at fixed offsets and a line
//! outside the time window is dropped without being parsed. A line that passes is parsed once
//! by serde_json into the handful of values the query names ([`Wanted`]); everything else is
//! skipped with `IgnoredAny` (still validated, so a torn line is caught), and strings without
//! escapes are borrowed, not copied.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
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
    let wanted = Wanted::new(&[&["at"]]);
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

    fn child(&self, key: &str) -> Option<&Wanted> {
        self.children
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, child)| child)
    }

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
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Found<'de>, D::Error> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn extracts_only_what_is_wanted() {
        let line = br#"{"at":"2026-05-01T12:00:00.123Z","kind":"send_refused","n":[1,{"a":2}],"details":{"guard":"hop_budget","hops":8,"esc":"a\"b","deep":{"x":true}}}"#;
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
        // Whole and inside at once.
        let wanted = Wanted::new(&[&["details", "guard"][..], &["details"]]);
        extract(line, &wanted, &mut out).unwrap();
        assert_eq!(out[0], Some(Found::Str(Cow::Borrowed("hop_budget"))));
        assert!(matches!(out[1], Some(Found::Other(Value::Object(_)))));
    }

    #[test]
    fn torn_and_odd_lines() {
        let wanted = Wanted::new(&[&["at"][..]]);
        let mut out = Vec::new();
        assert!(
            extract(
                br#"{"at":"2026-05-01T12:00:00.123Z","ki"#,
                &wanted,
                &mut out
            )
            .is_err()
        );
        assert!(extract(br#"{"a":1} {"b":2}"#, &wanted, &mut out).is_err());
        assert_eq!(
            stamp(br#"{"kind":"x","at":"2026-05-01T14:00:00+02:00"}"#).as_deref(),
            Some("2026-05-01T12:00:00.000Z")
        );
        assert_eq!(stamp(br#""just a string""#), None);
        assert_eq!(stamp(br#"{"at":42}"#), None);
    }
}
