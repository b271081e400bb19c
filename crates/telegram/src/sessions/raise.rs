//! The Raise button: the session's editor window brought to the front on the daemon's own
//! desktop (what `cross-agent focus` does, through the host), the tap answered with the
//! outcome in words, and a `telegram_raise` decision line. The card's Focus button keeps its
//! meaning (the chat's plain messages go to the session); Raise is the desktop's.

use cross_agent_decisions::{Decision, Outcome};

use super::{Desk, Place, SessionRef, kind};

/// `answerCallbackQuery` shows at most 200 characters.
const ANSWER_CHARS: usize = 200;

impl Desk {
    /// Raises `session`'s window; returns the words the tap is answered with.
    pub(super) async fn raise(&self, place: Place, session: SessionRef) -> String {
        let Some(host) = self.host() else {
            return "Raising windows is not available on this daemon".to_owned();
        };
        let result = {
            let session = session.clone();
            tokio::task::spawn_blocking(move || host.raise(&session))
                .await
                .unwrap_or_else(|e| Err(format!("the raise task failed: {e}")))
        };
        let decision = |outcome: &'static str| {
            Decision::new(kind("telegram_raise"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", place.chat)
        };
        let words = match result {
            Ok(done) => {
                self.record(decision("raised").detail("window", done.clone()));
                done
            }
            Err(reason) => {
                self.record(decision("refused").reason(reason.clone()));
                format!("Not raised: {reason}")
            }
        };
        cut(&words, ANSWER_CHARS)
    }
}

fn cut(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_owned();
    }
    let mut head: String = text.chars().take(most - 1).collect();
    head.push('…');
    head
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn an_answer_is_cut_to_what_telegram_shows() {
        let long = "é".repeat(300);
        let shown = cut(&long, 200);
        assert_eq!(shown.chars().count(), 200);
        assert!(shown.ends_with('…'));
        assert_eq!(cut("raised", 200), "raised");
    }
}
