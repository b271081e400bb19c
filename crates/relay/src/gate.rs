//! The hook answers a relay gives: the `PreToolUse` gate (only a `SendMessage` of exactly the
//! queued pair passes), its denial, and the `UserPromptSubmit` block that keeps inbound mail from
//! any model (shapes from `docs/observed/claude.md` §2.2, §2.3).

use serde_json::{Value, json};

/// Fields Claude derives from `SendMessage`'s input and shows to `PreToolUse`
/// (`type`, `recipient`, `recipient_kind`, `content`) and the label `summary`, which is never
/// transmitted: none of them changes what is sent or to whom.
const DERIVED_FIELDS: [&str; 5] = ["type", "recipient", "recipient_kind", "content", "summary"];

/// Decides one `PreToolUse` call. `queued` is the send the relay may make now (`None`: none, or
/// it was already allowed once). `None` allows the call; `Some(reason)` denies it.
pub fn gate_decision(
    queued: Option<(&str, &str)>,
    tool_name: &str,
    input: &Value,
) -> Option<String> {
    if tool_name != "SendMessage" {
        return Some(format!(
            "a cross-agent relay runs no tools but the one queued SendMessage; {tool_name} is denied"
        ));
    }
    let Some((to, message)) = queued else {
        return Some("no send is queued on this relay (or it was already made)".to_owned());
    };
    let Some(fields) = input.as_object() else {
        return Some("SendMessage input is not an object".to_owned());
    };
    if fields.get("to").and_then(Value::as_str) != Some(to) {
        return Some("SendMessage `to` is not the queued recipient".to_owned());
    }
    if fields.get("message").and_then(Value::as_str) != Some(message) {
        return Some("SendMessage `message` is not the queued message".to_owned());
    }
    if let Some(extra) = fields.keys().find(|key| {
        !matches!(key.as_str(), "to" | "message") && !DERIVED_FIELDS.contains(&key.as_str())
    }) {
        return Some(format!(
            "SendMessage carries `{extra}`, which was not queued"
        ));
    }
    None
}

/// The `PreToolUse` answer for a denial.
pub fn gate_denial(reason: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
}

/// The `PreToolUse` answer that lets the queued `SendMessage` run without a permission prompt.
pub(crate) fn gate_allow() -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "the queued cross-agent send",
        }
    })
}

/// The `UserPromptSubmit` answer that keeps a prompt from the model (Claude then makes no
/// model request: `duration_api_ms: 0`).
pub fn inbound_block() -> Value {
    json!({
        "decision": "block",
        "reason": "cross-agent relay: inbound mail is filed for the session this relay represents; no model reads it here",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_queued_pair_passes() {
        let queued = Some(("uds:/tmp/cc-socks/1.sock", "hello\nreq_1"));
        let exact = json!({"to":"uds:/tmp/cc-socks/1.sock","message":"hello\nreq_1",
            "type":"message","recipient":"uds:/tmp/cc-socks/1.sock","recipient_kind":"uds","content":"hello\nreq_1"});
        assert_eq!(gate_decision(queued, "SendMessage", &exact), None);
        assert!(gate_decision(queued, "Bash", &json!({"command":"ls"})).is_some());
        assert!(gate_decision(None, "SendMessage", &exact).is_some());
        let other_to = json!({"to":"bravo","message":"hello\nreq_1"});
        assert!(gate_decision(queued, "SendMessage", &other_to).is_some());
        let other_text = json!({"to":"uds:/tmp/cc-socks/1.sock","message":"hello"});
        assert!(gate_decision(queued, "SendMessage", &other_text).is_some());
        let subscribe = json!({"to":"uds:/tmp/cc-socks/1.sock","message":"hello\nreq_1","notify_when_idle":true});
        assert!(gate_decision(queued, "SendMessage", &subscribe).is_some());
        assert_eq!(
            gate_denial("no")["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        assert_eq!(inbound_block()["decision"], "block");
    }
}
