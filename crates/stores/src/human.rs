//! Which user messages a person wrote. A transcript's "user" role also carries what the bridge
//! delivered (peer envelopes, `BRIDGE REPLY` and the other notices), the reminders and context
//! blocks the agents inject, slash-command echoes, and the summaries an agent writes when it
//! compacts a long session. The handoff brief and the cross review both need "the first real
//! human message" and "the latest real instruction", so the rule lives here, once.
//!
//! The bridge's texts are recognised by their first line (`cross-agent-hub`'s `envelope`
//! module writes them; docs/spec/cross-agent-mcp.md "Reply address", §6). A message the bridge
//! handed over in `raw` mode carries no header and cannot be told from a person's.

/// The first line of a peer's message as the bridge delivers it (`envelope::HEADER`).
pub const BRIDGE_MESSAGE_HEADER: &str = "=== CROSS-AGENT BRIDGE MESSAGE ===";
/// The line after the message inside the envelope (`envelope::FOOTER`).
pub const BRIDGE_MESSAGE_FOOTER: &str = "=== END OF BRIDGE MESSAGE ===";
/// The `from:` line of an envelope whose sender is the human on their phone (the Telegram bot).
const TELEGRAM_FROM: &str = "from: the human user, on their phone";

/// The first lines of what the bridge puts into a sender's session after a request: the answer,
/// or a notice standing in for one.
const BRIDGE_NOTICE_HEADERS: [&str; 4] = [
    "=== BRIDGE REPLY ===",
    "=== DELIVERY FAILED ===",
    "=== PROGRESS (INFO) ===",
    "LATE ANSWER ",
];

/// Opening words of the summaries the agents write into the session when they compact it:
/// Claude Code's (`isCompactSummary` records) and Codex's summary prefix (`codex-rs`
/// `templates/compact/summary_prefix.md`).
const COMPACT_SUMMARY_OPENINGS: [&str; 2] = [
    "This session is being continued from a previous conversation",
    "Another language model started to solve this problem and produced a summary",
];

/// Context the agents send as a user message that no person typed.
const INJECTED_OPENINGS: [&str; 11] = [
    "<system-reminder>",
    "<environment_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "<turn_aborted>",
    "# AGENTS.md",
    "<command-",
    "<local-command-",
    "Caveat: The messages below were generated",
    "[Request interrupted",
    "<user-prompt-submit-hook>",
];

/// What a user-role message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserText<'a> {
    /// Words a person wrote: the message itself, or the body of an envelope the Telegram bot
    /// relayed from the human's phone.
    Human(&'a str),
    /// A peer agent's request, delivered in the bridge's envelope.
    BridgeMessage,
    /// What the bridge returns to a sender: `BRIDGE REPLY`, `DELIVERY FAILED`, `PROGRESS`.
    BridgeNotice,
    /// A compaction summary the agent wrote over its own earlier history.
    CompactSummary,
    /// Reminders, context blocks, command echoes, or nothing but whitespace.
    Injected,
}

impl UserText<'_> {
    pub fn is_human(&self) -> bool {
        matches!(self, UserText::Human(_))
    }
}

/// Sorts one user-role message's text.
pub fn classify(text: &str) -> UserText<'_> {
    let t = text.trim_start();
    if t.is_empty() {
        return UserText::Injected;
    }
    if let Some(rest) = t.strip_prefix(BRIDGE_MESSAGE_HEADER) {
        return match telegram_body(rest) {
            Some(body) => UserText::Human(body),
            None => UserText::BridgeMessage,
        };
    }
    if BRIDGE_NOTICE_HEADERS.iter().any(|h| t.starts_with(h)) {
        return UserText::BridgeNotice;
    }
    if COMPACT_SUMMARY_OPENINGS.iter().any(|o| t.starts_with(o)) {
        return UserText::CompactSummary;
    }
    if INJECTED_OPENINGS.iter().any(|o| t.starts_with(o)) {
        return UserText::Injected;
    }
    UserText::Human(t.trim_end())
}

/// True when a person wrote `text` (see [`classify`]).
pub fn is_human(text: &str) -> bool {
    classify(text).is_human()
}

/// The message inside an envelope whose `from:` line says the human sent it from their phone:
/// the text between the header block (ended by the first blank line) and the footer.
fn telegram_body(after_header: &str) -> Option<&str> {
    let header_end = after_header.find("\n\n")?;
    let header = &after_header[..header_end];
    if !header
        .lines()
        .any(|l| l.trim_start().starts_with(TELEGRAM_FROM))
    {
        return None;
    }
    let body = &after_header[header_end + 2..];
    let body = body
        .find(BRIDGE_MESSAGE_FOOTER)
        .map_or(body, |end| &body[..end]);
    let body = body.trim();
    (!body.is_empty()).then_some(body)
}

/// `text` without its `<system-reminder>…</system-reminder>` blocks (Claude Code puts them
/// inside tool results and, on some paths, inside a prompt after the person's words). An
/// unclosed block runs to the end.
pub fn strip_system_reminders(text: &str) -> std::borrow::Cow<'_, str> {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    if !text.contains(OPEN) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        match rest[at..].find(CLOSE) {
            Some(end) => rest = &rest[at + end + CLOSE.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_what_the_bridge_and_the_agents_write_from_what_a_person_wrote() {
        assert_eq!(
            classify("  Fix the build\n"),
            UserText::Human("Fix the build")
        );
        assert_eq!(
            classify(
                "=== CROSS-AGENT BRIDGE MESSAGE ===\nfrom: Codex (peer AI agent, not the human user)\nreply-to: codex session x\n\nhello\n\n=== END OF BRIDGE MESSAGE ==="
            ),
            UserText::BridgeMessage
        );
        assert_eq!(
            classify(
                "=== CROSS-AGENT BRIDGE MESSAGE ===\nfrom: the human user, on their phone (cross-agent's Telegram bot)\nreply-to: the user's Telegram chat\n\nship it\n\n=== END OF BRIDGE MESSAGE ===\nReply instructions: …"
            ),
            UserText::Human("ship it")
        );
        assert_eq!(
            classify("=== BRIDGE REPLY === from: codex session s | request: req_1"),
            UserText::BridgeNotice
        );
        assert_eq!(
            classify(
                "This session is being continued from a previous conversation that ran out of context."
            ),
            UserText::CompactSummary
        );
        assert_eq!(
            classify("<system-reminder>x</system-reminder>"),
            UserText::Injected
        );
        assert_eq!(classify(" \n"), UserText::Injected);
    }

    #[test]
    fn reminders_are_cut_out_of_text() {
        assert_eq!(
            strip_system_reminders("a<system-reminder>b</system-reminder> c"),
            "a c"
        );
        assert_eq!(strip_system_reminders("a<system-reminder>b"), "a");
        assert_eq!(strip_system_reminders("plain"), "plain");
    }
}
