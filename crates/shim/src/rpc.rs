//! JSON-RPC lines as the Codex and Grok adapters see them go by: what kind of message a line is,
//! its id as a map key, and the `xagent-` ids of the shim's own requests. Both wires are
//! newline-delimited JSON-RPC (Codex never writes `"jsonrpc"`, ACP always does), so one reading
//! serves both.

use serde_json::Value;

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
    }
}
