//! Session cards as the phone shows them, and the server-side keys behind their buttons.
//!
//! `callback_data` is at most 64 bytes (core.telegram.org/bots/api#inlinekeyboardbutton), too
//! short for a session id plus a destination, so a button carries `s:<key>` and the key names an
//! [`Action`] kept here. Keys are random (a guessed key does nothing), and the oldest are
//! forgotten past [`MAX_KEYS`] so a long-lived bot does not grow without bound.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::sessions::{LiveSession, SessionRef, SessionState};
use crate::text::escape_html;

/// How many button keys are remembered.
pub const MAX_KEYS: usize = 4096;
/// How much of a session's last answer a card shows.
pub const HEAD_CHARS: usize = 280;

/// What a session card's button does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The chat's next message goes to the session.
    Prompt(SessionRef),
    /// The card again, as the session is now.
    Status(SessionRef),
    /// Every plain message of the chat goes to the session from now on.
    Focus(SessionRef),
    /// The destinations it can be handed to, as buttons.
    HandOff(SessionRef),
    /// Hand it to this destination (`chat:ID`, `app:NAME`, `cli:NAME`).
    HandOffTo(SessionRef, String),
    /// Review it now with a reviewer of another model family; the verdict comes as a card.
    Review(SessionRef),
    /// Send the correction of this review (`rv_…`) through the escalation guard.
    SendCorrection(SessionRef, String),
}

/// The keys behind the buttons.
#[derive(Debug, Default)]
pub struct Keys {
    actions: HashMap<String, Action>,
    order: VecDeque<String>,
}

impl Keys {
    /// A new key for `action`; the button's `callback_data` is `s:<key>` (14 bytes).
    pub fn add(&mut self, action: Action) -> String {
        let key = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        self.actions.insert(key.clone(), action);
        self.order.push_back(key.clone());
        while self.order.len() > MAX_KEYS {
            if let Some(old) = self.order.pop_front() {
                self.actions.remove(&old);
            }
        }
        key
    }

    pub fn get(&self, key: &str) -> Option<&Action> {
        self.actions.get(key)
    }

    /// Every key and its action, oldest first (what [`Keys::restore`] takes back).
    pub fn entries(&self) -> Vec<(String, Action)> {
        self.order
            .iter()
            .filter_map(|key| Some((key.clone(), self.actions.get(key)?.clone())))
            .collect()
    }

    /// The keys of `entries` (oldest first), the newest [`MAX_KEYS`] kept.
    pub fn restore(entries: Vec<(String, Action)>) -> Keys {
        let mut keys = Keys::default();
        let skip = entries.len().saturating_sub(MAX_KEYS);
        for (key, action) in entries.into_iter().skip(skip) {
            if keys.actions.insert(key.clone(), action).is_none() {
                keys.order.push_back(key);
            }
        }
        keys
    }
}

/// A button whose tap runs `action`.
pub fn button(keys: &mut Keys, text: &str, action: Action) -> Value {
    json!({"text": text, "callback_data": format!("s:{}", keys.add(action))})
}

/// The buttons under a session card, one row: Prompt, Status, Focus, Hand off, Review.
pub fn card_markup(keys: &mut Keys, session: &SessionRef) -> Value {
    json!({"inline_keyboard": [[
        button(keys, "✍️ Prompt", Action::Prompt(session.clone())),
        button(keys, "ℹ️ Status", Action::Status(session.clone())),
        button(keys, "🎯 Focus", Action::Focus(session.clone())),
        button(keys, "🤝 Hand off", Action::HandOff(session.clone())),
        button(keys, "🔍 Review", Action::Review(session.clone())),
    ]]})
}

fn cut(text: &str, most: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= most {
        flat
    } else {
        let mut head: String = flat.chars().take(most).collect();
        head.push('…');
        head
    }
}

/// The card (HTML): the session in the header, then where it works, its state, and the head of
/// its last answer.
pub fn card_html(session: &LiveSession) -> String {
    let state = match session.state {
        SessionState::Working => "⚙️ working",
        SessionState::Idle => "💤 idle",
        SessionState::AwaitingApproval => "⏳ awaiting approval",
    };
    let mut html = format!(
        "<b>{}</b>\n📂 {}\n{state}",
        escape_html(&header(&session.session)),
        escape_html(
            session
                .session
                .cwd
                .as_deref()
                .unwrap_or("(directory unknown)")
        ),
    );
    if let Some(at) = &session.last_activity {
        html.push_str(&format!(" · last active {}", escape_html(at)));
    }
    if let Some(usage) = &session.usage {
        html.push_str(&format!("\n💰 {}", escape_html(usage)));
    }
    if let Some(place) = &session.place {
        html.push_str(&format!("\n📍 {}", escape_html(place)));
    }
    if let Some(head) = &session.last_answer_head {
        html.push_str(&format!("\n💬 {}", escape_html(&cut(head, HEAD_CHARS))));
    }
    html.push_str(&format!(
        "\n<code>{}</code>\nReply to this card to prompt the session, or send it a file.",
        escape_html(&session.session.session_id)
    ));
    html
}

/// "agent · title" (or the session's short id when it has no title).
pub fn header(session: &SessionRef) -> String {
    format!("{} · {}", session.agent, session.label())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn session() -> SessionRef {
        SessionRef {
            agent: "claude".into(),
            session_id: "0a1b2c3d-0000-4000-8000-000000000001".into(),
            title: Some("fix <the> build".into()),
            cwd: Some("/work/proj".into()),
        }
    }

    #[test]
    fn every_button_fits_in_64_bytes_and_names_its_action_server_side() {
        let mut keys = Keys::default();
        let markup = card_markup(&mut keys, &session());
        let rows = markup["inline_keyboard"].as_array().unwrap();
        assert_eq!(
            rows.len(),
            1,
            "one row: the tests and the demo read the first"
        );
        let all: Vec<&Value> = rows[0].as_array().unwrap().iter().collect();
        assert_eq!(all.len(), 5);
        for b in &all {
            let data = b["callback_data"].as_str().unwrap();
            assert!(data.len() <= 64, "{data}");
            assert!(keys.get(data.strip_prefix("s:").unwrap()).is_some());
        }
        let prompt = all[0]["callback_data"].as_str().unwrap();
        assert_eq!(keys.get(&prompt[2..]), Some(&Action::Prompt(session())));
        let review = all[4]["callback_data"].as_str().unwrap();
        assert_eq!(keys.get(&review[2..]), Some(&Action::Review(session())));
    }

    #[test]
    fn the_oldest_keys_are_forgotten_past_the_bound() {
        let mut keys = Keys::default();
        let first = keys.add(Action::Status(session()));
        for _ in 0..MAX_KEYS {
            keys.add(Action::Status(session()));
        }
        assert!(keys.get(&first).is_none());
        assert_eq!(keys.actions.len(), MAX_KEYS);
    }

    #[test]
    fn a_card_escapes_what_it_shows() {
        let html = card_html(&LiveSession {
            session: session(),
            state: SessionState::AwaitingApproval,
            last_answer_head: Some("a < b".into()),
            last_activity: None,
            usage: None,
            place: Some("fix/<x> · main.rs - api - Visual Studio Code".into()),
        });
        assert!(
            html.starts_with("<b>claude · fix &lt;the&gt; build</b>"),
            "{html}"
        );
        assert!(html.contains("⏳ awaiting approval"));
        assert!(html.contains("💬 a &lt; b"));
        assert!(
            html.contains("\n📍 fix/&lt;x&gt; · main.rs - api - Visual Studio Code"),
            "{html}"
        );
        assert!(!html.contains("💰"), "no usage recorded, no line: {html}");
    }

    #[test]
    fn a_card_shows_what_the_session_cost_so_far_on_one_line() {
        let html = card_html(&LiveSession {
            session: session(),
            state: SessionState::Idle,
            last_answer_head: None,
            last_activity: None,
            usage: Some("$1.23 · 45k tok".into()),
            place: None,
        });
        assert!(html.contains("\n💰 $1.23 · 45k tok\n"), "{html}");
    }
}
