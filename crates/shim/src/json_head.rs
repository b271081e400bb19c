//! One top-level string field of a JSON object line (a stream-json line's `type`), read by a
//! streaming tokenizer from the line's start: the keys before it are stepped over, their values
//! skipped without being built, and nothing after it is read. So a line is told apart by what it
//! *is* in JSON — `{"type": "user"}` with spaces, `{"session_id":"","type":"user"}` with another
//! key first, or an escaped `"us\u0065r"` — not by how one writer spells it, and a line that
//! names its type first (as the CLI and the TypeScript SDK do) costs a few bytes read however
//! long it is (a 1 MB pasted image is never scanned).
//!
//! It reads as much of the line as it is given: a head cut short says [`Field::Unknown`], and
//! the caller decides whether to wait for more.

use std::borrow::Cow;

/// What the tokenizer learnt of the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field<'a> {
    /// The field's string value (unescaped, borrowed when it had no escapes).
    Text(Cow<'a, [u8]>),
    /// The line is an object without the field as a string (absent, or another kind of value),
    /// or it is no JSON object where it was read: nothing named by the field is in it.
    Absent,
    /// The bytes ended before the field or the object's end.
    Unknown,
}

/// Why reading stopped before the field.
enum Stop {
    /// The bytes ended.
    Short,
    /// Not JSON where it was read.
    Invalid,
}

/// The top-level string field `key` of the JSON object that `bytes` starts (a whole line or the
/// head of one).
#[inline(always)]
pub fn top_level_string<'a>(bytes: &'a [u8], key: &[u8]) -> Field<'a> {
    if let Some(found) = leading(bytes, key) {
        return found;
    }
    match find(bytes, key) {
        Ok(Some(value)) => Field::Text(value),
        Ok(None) | Err(Stop::Invalid) => Field::Absent,
        Err(Stop::Short) => Field::Unknown,
    }
}

/// The spelling nearly every line has, `{"<key>":"…`, read straight (the general walk below
/// costs several times more per line, and most lines are short).
#[inline(always)]
fn leading<'a>(bytes: &'a [u8], key: &[u8]) -> Option<Field<'a>> {
    let rest = bytes
        .strip_prefix(b"{\"")?
        .strip_prefix(key)?
        .strip_prefix(b"\":\"")?;
    let start = bytes.len() - rest.len() - 1;
    Some(match string_end(bytes, start) {
        Ok((end, escaped)) => {
            unescaped(&bytes[start..end], escaped).map_or(Field::Absent, Field::Text)
        }
        Err(Stop::Short) => Field::Unknown,
        Err(Stop::Invalid) => Field::Absent,
    })
}

fn find<'a>(bytes: &'a [u8], key: &[u8]) -> Result<Option<Cow<'a, [u8]>>, Stop> {
    let mut at = skip_space(bytes, 0);
    if *bytes.get(at).ok_or(Stop::Short)? != b'{' {
        return Err(Stop::Invalid);
    }
    at = skip_space(bytes, at + 1);
    if *bytes.get(at).ok_or(Stop::Short)? == b'}' {
        return Ok(None);
    }
    loop {
        if *bytes.get(at).ok_or(Stop::Short)? != b'"' {
            return Err(Stop::Invalid);
        }
        let (name_end, escaped) = string_end(bytes, at)?;
        let name = unescaped(&bytes[at..name_end], escaped)?;
        at = skip_space(bytes, name_end);
        if *bytes.get(at).ok_or(Stop::Short)? != b':' {
            return Err(Stop::Invalid);
        }
        at = skip_space(bytes, at + 1);
        if *name == *key {
            // The first one counts; a value of another kind names nothing.
            return match *bytes.get(at).ok_or(Stop::Short)? {
                b'"' => {
                    let (end, escaped) = string_end(bytes, at)?;
                    unescaped(&bytes[at..end], escaped).map(Some)
                }
                _ => Ok(None),
            };
        }
        at = skip_space(bytes, value_end(bytes, at)?);
        match *bytes.get(at).ok_or(Stop::Short)? {
            b',' => at = skip_space(bytes, at + 1),
            b'}' => return Ok(None),
            _ => return Err(Stop::Invalid),
        }
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// The index just past the string that opens at `start` (its `"`), and whether it has escapes.
#[inline]
fn string_end(bytes: &[u8], start: usize) -> Result<(usize, bool), Stop> {
    let mut at = start + 1;
    let mut escaped = false;
    loop {
        let rest = bytes.get(at..).ok_or(Stop::Short)?;
        at += memchr::memchr2(b'"', b'\\', rest).ok_or(Stop::Short)?;
        if bytes[at] == b'"' {
            return Ok((at + 1, escaped));
        }
        // A backslash and the character it escapes (`\u` takes its four digits as plain bytes).
        escaped = true;
        at += 2;
    }
}

/// A string's contents (`quoted` with its quotes): as they are without escapes, else decoded.
#[inline]
fn unescaped(quoted: &[u8], escaped: bool) -> Result<Cow<'_, [u8]>, Stop> {
    if !escaped {
        return Ok(Cow::Borrowed(&quoted[1..quoted.len() - 1]));
    }
    serde_json::from_slice::<String>(quoted)
        .map(|text| Cow::Owned(text.into_bytes()))
        .map_err(|_| Stop::Invalid)
}

/// The index just past the value that starts at `start`.
fn value_end(bytes: &[u8], start: usize) -> Result<usize, Stop> {
    match *bytes.get(start).ok_or(Stop::Short)? {
        b'"' => string_end(bytes, start).map(|(end, _)| end),
        b'{' | b'[' => container_end(bytes, start),
        // A number, `true`, `false` or `null`: up to what follows it.
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
            let rest = &bytes[start..];
            rest.iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .map(|len| start + len)
                .ok_or(Stop::Short)
        }
        _ => Err(Stop::Invalid),
    }
}

/// The index just past the object or array that opens at `start`: brackets counted, strings
/// stepped over whole (a bracket inside one is text).
fn container_end(bytes: &[u8], start: usize) -> Result<usize, Stop> {
    let mut depth = 0usize;
    let mut at = start;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                at = string_end(bytes, at)?.0;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    Err(Stop::Short)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn kind(line: &str) -> Field<'_> {
        top_level_string(line.as_bytes(), b"type")
    }

    fn text(value: &str) -> Field<'static> {
        Field::Text(Cow::Owned(value.as_bytes().to_vec()))
    }

    #[test]
    fn the_type_is_read_however_the_object_is_spelled() {
        for line in [
            r#"{"type":"user","message":{}}"#,
            r#"{"type": "user", "message": {}}"#,
            " {\r\n\t\"type\" :\t\"user\" }",
            r#"{"session_id":"","type":"user"}"#,
            r#"{"n":-1.5e3,"ok":true,"no":null,"list":[1,[2,{"type":"x"}]],"m":{"type":"not this","s":"}]\"{"},"type":"user"}"#,
            r#"{"\u0074ype":"us\u0065r"}"#,
        ] {
            assert_eq!(kind(line), text("user"), "{line}");
        }
        // Borrowed from the line when it has no escapes.
        assert!(matches!(
            kind(r#"{"type":"result"}"#),
            Field::Text(Cow::Borrowed(b"result"))
        ));
    }

    #[test]
    fn a_line_without_a_string_type_names_none() {
        for line in [
            r#"{}"#,
            r#"{"message":{"type":"user"}}"#,
            r#"{"type":7,"x":"user"}"#,
            r#"["type","user"]"#,
            r#"not json "type":"user""#,
            r#"{"a" "type":"user"}"#,
            r#"{"a":1 "type":"user"}"#,
            r#"{"a":x,"type":"user"}"#,
            r#"{"\x":1,"type":"user"}"#,
        ] {
            assert_eq!(kind(line), Field::Absent, "{line}");
        }
    }

    #[test]
    fn a_head_cut_short_before_the_type_says_so() {
        let whole = r#"{"session_id":"abc","message":{"content":[{"type":"text"}]},"flag":true,"type":"user"}"#;
        for cut in 0..whole.len() {
            let head = &whole[..cut];
            let found = kind(head);
            if cut >= whole.len() - 1 {
                assert_eq!(found, text("user"), "{head}");
            } else {
                assert_eq!(found, Field::Unknown, "{head}");
            }
        }
        // The type read from the head of a line whose rest is still coming.
        assert_eq!(
            kind(r#"{"type":"user","message":{"content":"QUJD"#),
            text("user")
        );
        assert_eq!(kind(r#"{"type":"assis"#), Field::Unknown);
        assert_eq!(kind(r#"{"type":"a\"#), Field::Unknown);
    }
}
