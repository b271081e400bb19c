//! JSON-RPC lines as the Codex and Grok adapters see them go by: what kind of message a line is,
//! its id as a map key, and the `xagent-` ids of the shim's own requests. Both wires are
//! newline-delimited JSON-RPC (Codex never writes `"jsonrpc"`, ACP always does), so one reading
//! serves both.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::adapter::{Action, Side};

/// The prefix of every request id the shim writes itself; responses to these are swallowed.
pub const XAGENT_ID_PREFIX: &str = "xagent-";

static NULL: Value = Value::Null;

/// One JSON-RPC message, borrowed from the parsed line.
#[derive(Debug)]
pub(crate) enum Message<'a> {
    Request {
        id: &'a Value,
        method: &'a str,
        params: &'a Value,
    },
    Notification {
        method: &'a str,
        params: &'a Value,
    },
    Response {
        id: &'a Value,
        result: &'a Value,
        error: Option<&'a Value>,
    },
}

/// The fields of a line that say what it is, read without building the rest: most lines (text
/// deltas, token counts) matter to no adapter and pass on after this look alone.
#[derive(Debug, Deserialize)]
pub(crate) struct Head<'a> {
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(default)]
    pub id: Option<Value>,
}

impl Head<'_> {
    /// `None` for a line that is no JSON object.
    pub(crate) fn read(line: &[u8]) -> Option<Head<'_>> {
        serde_json::from_slice(line).ok()
    }
}

/// The method of a line that starts the way the agents write their messages (`{"method":"…"`,
/// or `{"jsonrpc":"2.0","method":"…"`), found without parsing the line. `None` when it starts
/// any other way: then the line is parsed to know.
pub(crate) fn leading_method(line: &[u8]) -> Option<&str> {
    const PREFIXES: [&[u8]; 2] = [br#"{"method":""#, br#"{"jsonrpc":"2.0","method":""#];
    let rest = PREFIXES
        .iter()
        .find_map(|prefix| line.strip_prefix(*prefix))?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

/// Whether a line's head alone (`{"method":"…"`, the rest still to come) shows that the wire
/// will not read it (`reads` says which methods it reads): such a line is forwarded unread, and
/// may pass on before it ends ([`crate::adapter::PanelAdapter::streams_from_head`]). A line that
/// starts any other way (a response, an id first) waits to be whole.
pub(crate) fn unread_by_its_head(head: &[u8], reads: impl Fn(&str) -> bool) -> bool {
    leading_method(head).is_some_and(|method| !reads(method))
}

/// Whether the adapter reading `method`/`id` (as `reads` decides) needs the line parsed.
pub(crate) fn needs_reading(
    line: &[u8],
    reads: impl Fn(Option<&str>, Option<&Value>) -> bool,
) -> bool {
    match leading_method(line) {
        Some(method) => reads(Some(method), None),
        None => {
            Head::read(line).is_some_and(|head| reads(head.method.as_deref(), head.id.as_ref()))
        }
    }
}

/// What differs between the JSON-RPC wires (Codex, Grok); [`on_line`] is what they share.
pub(crate) trait RpcWire {
    /// Whether a line with this head can change anything here (most lines pass on unread).
    fn reads(&self, side: Side, method: Option<&str>, id: Option<&Value>) -> bool;
    /// A message the extension sent: it is always forwarded.
    fn extension_message(&mut self, message: Message<'_>, now_ms: u64, out: &mut Vec<Action>);
    /// A message the agent sent; `false` drops it (a response to one of our requests, a
    /// bridged turn's held-back thinking).
    fn agent_message(&mut self, message: Message<'_>, now_ms: u64, out: &mut Vec<Action>) -> bool;
    /// Whether the sessions changed since the last call.
    fn take_sessions_changed(&mut self) -> bool;
}

/// One line through a JSON-RPC wire: read only when the wire cares, forwarded as it came
/// unless the wire drops it, the wire's own lines after the one that prompted them.
pub(crate) fn on_line(
    wire: &mut impl RpcWire,
    side: Side,
    line: &[u8],
    now_ms: u64,
    out: &mut Vec<Action>,
) {
    if !needs_reading(line, |method, id| wire.reads(side, method, id)) {
        out.push(Action::Forward);
        return;
    }
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        out.push(Action::Forward);
        return;
    };
    let Some(message) = classify(&value) else {
        out.push(Action::Forward);
        return;
    };
    let mut ours = Vec::new();
    let forward = match side {
        Side::Extension => {
            wire.extension_message(message, now_ms, &mut ours);
            true
        }
        Side::Agent => wire.agent_message(message, now_ms, &mut ours),
    };
    if forward {
        out.push(Action::Forward);
    }
    out.append(&mut ours);
    flush_changes(wire, out);
}

/// Asks for the registration to be rewritten when the wire's sessions changed.
pub(crate) fn flush_changes(wire: &mut impl RpcWire, out: &mut Vec<Action>) {
    if wire.take_sessions_changed() {
        out.push(Action::SessionsChanged);
    }
}

/// What a parsed line is, or `None` for JSON that is no JSON-RPC message.
pub(crate) fn classify(value: &Value) -> Option<Message<'_>> {
    let object = value.as_object()?;
    let id = object.get("id").filter(|id| !id.is_null());
    match (object.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Some(Message::Request {
            id,
            method,
            params: object.get("params").unwrap_or(&NULL),
        }),
        (Some(method), None) => Some(Message::Notification {
            method,
            params: object.get("params").unwrap_or(&NULL),
        }),
        (None, Some(id)) => Some(Message::Response {
            id,
            result: object.get("result").unwrap_or(&NULL),
            error: object.get("error"),
        }),
        (None, None) => None,
    }
}

/// A map key for an id that keeps `0` and `"0"` apart.
pub(crate) fn id_key(id: &Value) -> String {
    id.to_string()
}

/// An id as people read it: a string's own text, a number's digits.
pub(crate) fn id_text(id: &Value) -> String {
    match id {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The message of a JSON-RPC error object.
pub(crate) fn error_message(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string())
}

/// The serialised line (without its newline).
pub(crate) fn to_line(value: &Value) -> Vec<u8> {
    // Serialising a `Value` cannot fail: its keys are strings.
    serde_json::to_vec(value).unwrap_or_default()
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub(crate) fn trimmed(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// A string field of an object, if it is a string.
pub(crate) fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_told_apart_by_method_and_id() {
        let request = json!({"id": 0, "method": "item/commandExecution/requestApproval"});
        assert!(matches!(classify(&request), Some(Message::Request { .. })));
        let notification = json!({"method": "turn/started", "params": {}});
        assert!(matches!(
            classify(&notification),
            Some(Message::Notification { .. })
        ));
        let response = json!({"id": "xagent-1", "result": {}});
        assert!(matches!(
            classify(&response),
            Some(Message::Response { .. })
        ));
        assert!(classify(&json!({"type": "user"})).is_none());
        assert_ne!(id_key(&json!(0)), id_key(&json!("0")));
        assert_eq!(id_text(&json!("xagent-1")), "xagent-1");
        assert_eq!(trimmed("abcdef", 3), "abc…");
        let head = Head::read(br#"{"method":"item/agentMessage/delta","params":{"delta":"x"}}"#);
        assert_eq!(
            head.and_then(|h| h.method).as_deref(),
            Some("item/agentMessage/delta")
        );
        let head = Head::read(br#"{"id":"xagent-1","result":{}}"#);
        assert_eq!(head.and_then(|h| h.id), Some(json!("xagent-1")));
        assert!(Head::read(b"[1,2]").is_none());
        assert_eq!(
            leading_method(br#"{"method":"item/agentMessage/delta","params":{}}"#),
            Some("item/agentMessage/delta")
        );
        assert_eq!(
            leading_method(br#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#),
            Some("session/update")
        );
        assert_eq!(leading_method(br#"{"id":0,"method":"x"}"#), None);
        assert_eq!(leading_method(br#"{"method":"a\"b"}"#), None);
        let reads_completed = |method: &str| method == "turn/completed";
        assert!(unread_by_its_head(
            br#"{"method":"item/agentMessage/delta","params":{"delta":"xx"#,
            reads_completed
        ));
        assert!(!unread_by_its_head(
            br#"{"method":"turn/completed","params":{"#,
            reads_completed
        ));
        assert!(
            !unread_by_its_head(br#"{"id":"xagent-1","result":{"#, |_| false),
            "a response waits to be whole"
        );
    }
}
