//! The envelope, exactly.

use cross_agent_hub::Agent;
use cross_agent_hub::envelope::{EnvelopeFields, assemble, body, conversation_id, request_id};
use pretty_assertions::assert_eq;

fn fields() -> EnvelopeFields<'static> {
    EnvelopeFields {
        from_agent: Some(Agent::Claude),
        from_session: Some("058a16bc-3a77-4604-a328-9409c391f918"),
        conversation_id: "conv_7bc3806dc3a8",
        hop: 1,
        max_hops: 4,
        request_id: "req_1795992430029_a1b2c3",
        from_telegram: false,
        from_reviewer: None,
    }
}

#[test]
fn the_envelope_as_the_spec_shows_it() {
    let text = assemble(&body(&fields(), "Please review src/lib.rs."), 0, 1_000);
    assert_eq!(
        text,
        "=== CROSS-AGENT BRIDGE MESSAGE ===\n\
         from: Claude Code (peer AI agent, not the human user)\n\
         reply-to: claude session 058a16bc-3a77-4604-a328-9409c391f918\n\
         conversation: conv_7bc3806dc3a8 | hop 1/4\n\
         request: req_1795992430029_a1b2c3\n\
         \n\
         Please review src/lib.rs.\n\
         \n\
         === END OF BRIDGE MESSAGE ===\n\
         Reply instructions: answer in your final message of this turn; the bridge relays it to \
         the sender. When your answer is finished, end it with this request id alone on the last \
         line: req_1795992430029_a1b2c3\n\
         Put the id only on the finished answer, never on an interim note (\"working on it\"). \
         To send the sender a new request of your own, call send_to_claude(session_id=\"058a16bc-3a77-4604-a328-9409c391f918\", \
         conversation_id=\"conv_7bc3806dc3a8\")."
    );
}

#[test]
fn a_message_that_waited_two_minutes_says_so_under_the_first_line() {
    let created = 1_795_992_430_029; // 2026-11-29T22:47:10 UTC
    let short = assemble("rest", created, created + 119_000);
    assert_eq!(short, "=== CROSS-AGENT BRIDGE MESSAGE ===\nrest");
    let long = assemble("rest", created, created + 5 * 60_000 + 10);
    assert_eq!(
        long,
        "=== CROSS-AGENT BRIDGE MESSAGE ===\nqueued: written at 22:47, 5 min ago\nrest"
    );
}

#[test]
fn ids_have_the_spec_shapes() {
    let request = request_id(1_795_992_430_029);
    assert_eq!(
        cross_agent_stores::turns::request_ids(&request),
        vec![request.as_str()],
        "the stores' reader recognises it"
    );
    assert!(request.starts_with("req_1795992430029_"));
    let conversation = conversation_id();
    assert_eq!(conversation.len(), "conv_".len() + 12);
    assert!(conversation[5..].chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn a_prompt_from_the_phone_says_it_is_the_human_user_not_a_peer() {
    let fields = EnvelopeFields {
        from_agent: None,
        from_session: None,
        from_telegram: true,
        from_reviewer: None,
        ..fields()
    };
    let text = body(&fields, "Please look at the failing test.");
    assert!(
        text.starts_with(
            "from: the human user, on their phone (cross-agent's Telegram bot)\n\
             reply-to: the user's Telegram chat (the bridge relays your answer there)\n"
        ),
        "{text}"
    );
    assert!(!text.contains("peer AI agent"), "{text}");
}
