//! The text a peer receives (docs/spec/cross-agent-mcp.md "Reply address", §6): the bridge header, the message, and
//! the reply instructions that ask the peer to end its finished answer with the request id.
//!
//! ```text
//! === CROSS-AGENT BRIDGE MESSAGE ===
//! queued: written at 14:03, 3 min ago            ← only after a wait of 2 minutes or more
//! from: Claude Code (peer AI agent, not the human user)
//! reply-to: claude session 058a16bc-3a77-4604-a328-9409c391f918
//! conversation: conv_7bc3806dc3a8 | hop 1/4
//! request: req_1795992430029_a1b2c3
//!
//! <message>
//!
//! === END OF BRIDGE MESSAGE ===
//! <reply instructions>
//! ```
//!
//! The spec shows the first four header lines verbatim and names the `request:` and `queued:`
//! lines; the wording of the reply instructions is ours (the spec gives their content, not their
//! text). `raw` mode hands over the message alone.

use crate::Agent;

/// The envelope's first line.
pub const HEADER: &str = "=== CROSS-AGENT BRIDGE MESSAGE ===";
/// The line after the message.
pub const FOOTER: &str = "=== END OF BRIDGE MESSAGE ===";
/// The client name the daemon's Telegram bot sends prompts under: a person on their phone,
/// not a peer agent, and the envelope says so.
pub const TELEGRAM_CLIENT: &str = "telegram";
/// A message waits this long before its envelope says so.
pub const QUEUED_NOTE_AFTER_MS: i64 = 2 * 60 * 1000;

/// Who sent it and where it goes, as the header states.
#[derive(Debug, Clone)]
pub struct EnvelopeFields<'a> {
    pub from_agent: Option<Agent>,
    pub from_session: Option<&'a str>,
    pub conversation_id: &'a str,
    pub hop: u32,
    pub max_hops: u32,
    pub request_id: &'a str,
    /// Typed by the human user on their phone and relayed by the Telegram bot.
    pub from_telegram: bool,
    /// A cross review's correction: who reviewed, as the `from:` line names it
    /// ([`reviewer_name`]). Set only by the daemon's `review_correction`, never from the wire.
    pub from_reviewer: Option<&'a str>,
}

/// How the `from:` line of a cross review's correction names its reviewer:
/// `openai gpt-5, another model family`.
pub fn reviewer_name(provider: &str, model: &str, family: &str) -> String {
    let model = model.trim();
    if model.is_empty() {
        format!("{provider}, model family {family}")
    } else {
        format!("{provider} {model}, model family {family}")
    }
}

/// Everything of the envelope after its first line (the `queued:` line, when there is one, goes
/// between the two at hand-over, when the wait is known).
pub fn body(fields: &EnvelopeFields<'_>, message: &str) -> String {
    if let Some(reviewer) = fields.from_reviewer {
        return reviewer_body(fields, reviewer, message);
    }
    let from = match fields.from_agent {
        None if fields.from_telegram => {
            "from: the human user, on their phone (cross-agent's Telegram bot)".to_owned()
        }
        Some(agent) => format!(
            "from: {} (peer AI agent, not the human user)",
            agent.product_name()
        ),
        None => {
            "from: an unidentified agent session (peer AI agent, not the human user)".to_owned()
        }
    };
    let reply_to = match (fields.from_agent, fields.from_session) {
        (None, _) if fields.from_telegram => {
            "reply-to: the user's Telegram chat (the bridge relays your answer there)".to_owned()
        }
        (Some(agent), Some(session)) => format!("reply-to: {agent} session {session}"),
        (Some(agent), None) => format!("reply-to: {agent} (session unknown)"),
        (None, _) => "reply-to: unknown".to_owned(),
    };
    let continue_with = match (fields.from_agent, fields.from_session) {
        (Some(agent), Some(session)) => format!(
            " To send the sender a new request of your own, call {}(session_id=\"{session}\", \
             conversation_id=\"{}\").",
            agent.send_tool(),
            fields.conversation_id
        ),
        _ => String::new(),
    };
    format!(
        "{from}\n{reply_to}\nconversation: {} | hop {}/{}\nrequest: {}\n\n{}\n\n{FOOTER}\n\
         Reply instructions: answer in your final message of this turn; the bridge relays it to \
         the sender. When your answer is finished, end it with this request id alone on the last \
         line: {}\nPut the id only on the finished answer, never on an interim note (\"working on \
         it\").{continue_with}",
        fields.conversation_id,
        fields.hop,
        fields.max_hops,
        fields.request_id,
        message.trim_end(),
        fields.request_id,
    )
}

/// A correction from the cross review: the reviewer is named, not the human and not a peer
/// session; nobody waits for an answer (it stays on the delivery's record).
fn reviewer_body(fields: &EnvelopeFields<'_>, reviewer: &str, message: &str) -> String {
    format!(
        "from: cross-agent's reviewer ({reviewer}; an automated review, not the human user)\n\
         reply-to: nobody (your answer stays on the delivery's record for bridge_status)\n\
         conversation: {} | hop {}/{}\nrequest: {}\n\n\
         A reviewer read the start of this session and its recent messages and judged that the \
         work may have moved away from what the person asked. Its correction:\n\n{}\n\n\
         {FOOTER}\n\
         Reply instructions: weigh the correction against what the person asked you; the \
         person's own instructions come first. Carry on in this turn as you judge right and end \
         your final message with this request id alone on the last line: {}",
        fields.conversation_id,
        fields.hop,
        fields.max_hops,
        fields.request_id,
        message.trim_end(),
        fields.request_id,
    )
}

/// The whole envelope at hand-over: header, the `queued:` line after a wait of two minutes or
/// more, then the body.
pub fn assemble(body: &str, created_ms: i64, now_ms: i64) -> String {
    let waited = now_ms.saturating_sub(created_ms);
    if waited >= QUEUED_NOTE_AFTER_MS {
        format!("{HEADER}\n{}\n{body}", queued_line(created_ms, now_ms))
    } else {
        format!("{HEADER}\n{body}")
    }
}

/// `queued: written at HH:MM, N min ago` (UTC: the daemon has no reliable local offset).
pub fn queued_line(created_ms: i64, now_ms: i64) -> String {
    let minutes_ago = now_ms.saturating_sub(created_ms) / 60_000;
    let at = time::OffsetDateTime::from_unix_timestamp(created_ms.div_euclid(1000))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "queued: written at {:02}:{:02}, {minutes_ago} min ago",
        at.hour(),
        at.minute()
    )
}

/// `req_<epoch ms>_<6 alphanumerics>`.
pub fn request_id(now_ms: i64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let random = uuid::Uuid::new_v4();
    let tail: String = random.as_bytes()[..6]
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    format!("req_{now_ms}_{tail}")
}

/// `conv_<12 hex>`.
pub fn conversation_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("conv_{}", &hex[..12])
}

/// `dlv_<uuid v7>`: sortable by creation.
pub fn delivery_id() -> String {
    format!("dlv_{}", uuid::Uuid::now_v7().simple())
}

/// How an answer came back, for the header its relay carries (docs/spec/cross-agent-mcp.md §6 "Interim answers and
/// late answers", §9 "A recovered answer is labeled as such").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind<'a> {
    /// Its closing line carried the request id.
    Confirmed,
    /// It named no request id: taken by timing only, and maybe only an interim note.
    NoRequestId,
    /// Read back from the peer's transcript after the transport failed, for this reason.
    Recovered { transport_failure: &'a str },
    /// A later turn that carried the request id, found by the late-answer watch.
    Late { request_delivery_id: &'a str },
}

/// The `NO REQUEST ID … possibly interim` warning line.
pub fn no_request_id_line(request_id: &str) -> String {
    format!(
        "NO REQUEST ID: the answer did not end with {request_id}, so it was taken by timing \
         alone and is possibly interim (a note that work is under way, not the finished \
         report); a later turn that carries the id is relayed as a LATE ANSWER"
    )
}

/// The header lines a relayed answer carries before its text:
///
/// ```text
/// === BRIDGE REPLY === from: codex session <id> | request: req_… [| recovered from transcript]
/// WARNING: RECOVERED, NOT RECEIVED — …          ← recovered
/// transport failure: <why>                       ← recovered
/// NO REQUEST ID: … possibly interim …            ← no id on the closing line
/// LATE ANSWER to request req_… (delivery dlv_…) ← found by the late-answer watch
/// ```
pub fn reply_header(
    from_agent: Agent,
    from_session: Option<&str>,
    request_id: &str,
    carries_request_id: bool,
    kind: AnswerKind<'_>,
) -> String {
    let session = from_session.unwrap_or("(new session)");
    let mut first = format!(
        "=== BRIDGE REPLY === from: {from_agent} session {session} | request: {request_id}"
    );
    let mut lines = Vec::new();
    match kind {
        AnswerKind::Confirmed => {}
        AnswerKind::NoRequestId => {}
        AnswerKind::Recovered { transport_failure } => {
            first.push_str(" | recovered from transcript");
            lines.push(
                "WARNING: RECOVERED, NOT RECEIVED — this is the peer's last message read back \
                 from its transcript after the transport failed, not an answer the bridge \
                 received; the peer may still have been working when it was written"
                    .to_owned(),
            );
            lines.push(format!("transport failure: {transport_failure}"));
        }
        AnswerKind::Late {
            request_delivery_id,
        } => {
            first.push_str(" | late answer");
            lines.push(format!(
                "LATE ANSWER to request {request_id} (delivery {request_delivery_id}): the \
                 earlier reply did not carry the request id; this later turn does"
            ));
        }
    }
    if !carries_request_id {
        lines.push(no_request_id_line(request_id));
    }
    std::iter::once(first)
        .chain(lines)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `DELIVERY FAILED` notice put into the sender's panel in place of a reply:
///
/// ```text
/// === DELIVERY FAILED === to: codex session <id> | request: req_… | delivery dlv_… [| STOPPED]
/// <why>
/// NOT DELIVERED: the peer never received the message; sending again is safe.   ← undelivered
/// The peer received the message; do not send it again …                        ← otherwise
/// ```
pub fn delivery_failed_notice(record: &cross_agent_protocol::bridge::DeliveryRecord) -> String {
    let mut first = format!(
        "=== DELIVERY FAILED === to: {} session {} | request: {} | delivery {}",
        record.target_agent,
        record
            .target_session_id
            .as_deref()
            .unwrap_or("(new session)"),
        record.request_id,
        record.delivery_id
    );
    if record.is_stopped_with_carrier {
        first.push_str(" | STOPPED");
    }
    let why = record
        .error
        .clone()
        .unwrap_or_else(|| "the delivery failed".to_owned());
    let advice = if record.is_undelivered {
        "NOT DELIVERED: the peer never received the message; sending again is safe.".to_owned()
    } else {
        format!(
            "The peer received the message, so it is not sent again; its answer may still \
             appear — read it with bridge_status(delivery_id=\"{}\").",
            record.delivery_id
        )
    };
    format!("{first}\n{why}\n{advice}")
}

/// The `PROGRESS (INFO)` notice a sender's idle panel gets once when a request's turn runs past
/// `CROSS_AGENT_PANEL_PATIENCE` (or the timeout, if longer). Information, not a failure: the
/// answer follows as a `BRIDGE REPLY` when the turn ends.
pub fn progress_notice(
    record: &cross_agent_protocol::bridge::DeliveryRecord,
    waited_secs: u64,
) -> String {
    format!(
        "=== PROGRESS (INFO) === to: {} session {} | request: {} | delivery {}\n\
         The peer is still working on this request after {} min; nothing failed and nothing \
         needs doing. Its answer follows here as a BRIDGE REPLY when the turn ends; until then \
         bridge_status(delivery_id=\"{}\") shows where it stands.",
        record.target_agent,
        record
            .target_session_id
            .as_deref()
            .unwrap_or("(new session)"),
        record.request_id,
        record.delivery_id,
        waited_secs / 60,
        record.delivery_id
    )
}
