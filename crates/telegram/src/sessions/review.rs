//! The Review button: the session reviewed by a model of another family (the daemon's
//! `cross-agent review`, off the poller's loop), the verdict as a card — verdict, task, gaps,
//! the correction it proposes, all escaped and bounded — and, when there is a correction, a
//! Send correction button whose tap goes through the daemon's escalation guard. The poller
//! re-checks the allowlist before any tap reaches here; the card then says whether the
//! correction was sent or which rule of the guard refused it.

use cross_agent_decisions::{Decision, Outcome};
use serde_json::json;

use super::{CorrectionAnswer, Desk, Place, ReviewCard, SessionRef, kind, say};
use crate::api::{ParseMode, TelegramApi};
use crate::cards::{self, Action};
use crate::queue::{OutboundQueue, Outgoing};
use crate::text::escape_html;

/// The most characters of the task, of one gap and of the correction a card shows.
const TASK_CHARS: usize = 600;
const GAP_CHARS: usize = 300;
const CORRECTION_CHARS: usize = 800;
/// The most gaps a card lists (the rest counted).
const MAX_GAPS: usize = 8;

fn cut(text: &str, most: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= most {
        text.to_owned()
    } else {
        let mut head: String = text.chars().take(most).collect();
        head.push('…');
        head
    }
}

/// The verdict card (HTML).
pub(crate) fn verdict_html(session: &SessionRef, card: &ReviewCard) -> String {
    let header = escape_html(&cards::header(session));
    let reviewer = card
        .reviewer
        .as_deref()
        .map(|r| format!("\nReviewer: {}", escape_html(r)))
        .unwrap_or_default();
    let why = card
        .reason
        .as_deref()
        .map(|r| format!("\n{}", escape_html(&cut(r, GAP_CHARS))))
        .unwrap_or_default();
    match card.outcome.as_str() {
        "verdict" => {}
        "no_reviewer" => {
            return format!(
                "🔍 <b>{header}</b> was not reviewed: no reviewer of another model family is \
                 configured (providers.toml).{why}"
            );
        }
        "reviewer_failed" => {
            return format!(
                "🔍 The reviewer of <b>{header}</b> failed; this is no verdict and nothing was \
                 sent.{reviewer}{why}"
            );
        }
        "unparseable" => {
            return format!(
                "🔍 The reviewer of <b>{header}</b> gave no valid verdict (twice); nothing was \
                 sent.{reviewer}{why}"
            );
        }
        other => {
            return format!(
                "🔍 The review of <b>{header}</b> ended with <code>{}</code>.{why}",
                escape_html(other)
            );
        }
    }
    let verdict = card.verdict.as_deref().unwrap_or("?");
    let icon = match verdict {
        "on_track" => "✅",
        "drifting" => "↪️",
        "off_track" => "⚠️",
        "blocked" => "⛔",
        _ => "❔",
    };
    let mut html = format!("🔍 <b>{header}</b>\n{icon} <b>{}</b>", escape_html(verdict));
    if let Some(task) = &card.task {
        html.push_str(&format!("\nTask: {}", escape_html(&cut(task, TASK_CHARS))));
    }
    for gap in card.gaps.iter().take(MAX_GAPS) {
        html.push_str(&format!("\n• {}", escape_html(&cut(gap, GAP_CHARS))));
    }
    if card.gaps.len() > MAX_GAPS {
        html.push_str(&format!("\n• … and {} more", card.gaps.len() - MAX_GAPS));
    }
    if let Some(correction) = &card.correction {
        html.push_str(&format!(
            "\nCorrection: <i>{}</i>",
            escape_html(&cut(correction, CORRECTION_CHARS))
        ));
    }
    html.push_str(&reviewer);
    html
}

impl Desk {
    pub(super) async fn review<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
    ) {
        let header = escape_html(&cards::header(&session));
        let Some(host) = self.host() else {
            say(out, place, "Review is not available on this daemon.");
            return;
        };
        say(
            out,
            place,
            &format!("⏳ Reviewing <b>{header}</b> with a model of another family…"),
        );
        let result = {
            let session = session.clone();
            tokio::task::spawn_blocking(move || host.review(&session))
                .await
                .unwrap_or_else(|e| Err(format!("the review task failed: {e}")))
        };
        let decision = |outcome: &'static str| {
            Decision::new(kind("telegram_review"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", place.chat)
        };
        let card = match result {
            Ok(card) => card,
            Err(reason) => {
                self.record(decision("failed").reason(reason.clone()));
                say(
                    out,
                    place,
                    &format!(
                        "❌ The review of <b>{header}</b> could not run: {}",
                        escape_html(&reason)
                    ),
                );
                return;
            }
        };
        let outcome = match card.outcome.as_str() {
            "verdict" => "verdict",
            "unparseable" => "unparseable",
            "reviewer_failed" => "reviewer_failed",
            "no_reviewer" => "no_reviewer",
            _ => "other",
        };
        let mut line = decision(outcome).detail("review_id", card.review_id.clone());
        if let Some(verdict) = &card.verdict {
            line = line.detail("verdict", verdict.clone());
        }
        self.record(line);
        let correctable = card.outcome == "verdict"
            && card.correction.is_some()
            && card.verdict.as_deref() != Some("on_track")
            && !card.review_id.is_empty();
        let markup = correctable.then(|| {
            let button = cards::button(
                &mut self.state.lock().keys,
                "📨 Send correction",
                Action::SendCorrection(session.clone(), card.review_id.clone()),
            );
            json!({"inline_keyboard": [[button]]})
        });
        if markup.is_some() {
            self.save();
        }
        out.push_item(
            place.chat,
            Outgoing::Text {
                text: verdict_html(&session, &card),
                mode: ParseMode::Html,
                markup,
                thread: place.thread,
            },
            "review_card",
        );
    }

    pub(super) async fn send_correction<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
        review_id: String,
    ) {
        let header = escape_html(&cards::header(&session));
        let Some(host) = self.host() else {
            say(out, place, "Corrections are not available on this daemon.");
            return;
        };
        let result = {
            let session = session.clone();
            let review_id = review_id.clone();
            tokio::task::spawn_blocking(move || host.send_correction(&session, &review_id))
                .await
                .unwrap_or_else(|e| Err(format!("the correction task failed: {e}")))
        };
        let decision = |outcome: &'static str| {
            Decision::new(kind("telegram_correction"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", place.chat)
                .detail("review_id", review_id.clone())
        };
        let text = match result {
            Ok(CorrectionAnswer::Sent { delivery_id }) => {
                self.record(decision("sent").detail("delivery_id", delivery_id.clone()));
                format!(
                    "📨 The correction was sent to <b>{header}</b> (delivery <code>{}</code>).",
                    escape_html(&delivery_id)
                )
            }
            Ok(CorrectionAnswer::Refused { rule, reason }) => {
                self.record(decision("refused").guard(rule.clone()));
                format!(
                    "🛑 The correction was not sent to <b>{header}</b>: refused by the rule \
                     <code>{}</code> — {}",
                    escape_html(&rule),
                    escape_html(&reason)
                )
            }
            Err(reason) => {
                self.record(decision("failed").reason(reason.clone()));
                format!(
                    "❌ The correction for <b>{header}</b> could not be asked for: {}",
                    escape_html(&reason)
                )
            }
        };
        say(out, place, &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> SessionRef {
        SessionRef {
            agent: "codex".into(),
            session_id: "019a".into(),
            title: Some("build <it>".into()),
            cwd: None,

            host: None,
        }
    }

    #[test]
    fn the_verdict_card_escapes_and_bounds_what_it_shows() {
        let card = ReviewCard {
            review_id: "rv_1".into(),
            outcome: "verdict".into(),
            verdict: Some("drifting".into()),
            task: Some("x".repeat(2_000)),
            gaps: (0..12).map(|i| format!("gap <{i}>")).collect(),
            correction: Some("do <b>this</b>".into()),
            reviewer: Some("openai gpt-5 (openai)".into()),
            reason: None,
        };
        let html = verdict_html(&session(), &card);
        assert!(html.contains("<b>codex · build &lt;it&gt;</b>"), "{html}");
        assert!(html.contains("↪️ <b>drifting</b>"), "{html}");
        assert!(
            html.contains(&format!("Task: {}…", "x".repeat(TASK_CHARS))),
            "{html}"
        );
        assert!(
            html.contains("• gap &lt;7&gt;") && !html.contains("gap &lt;8&gt;"),
            "{html}"
        );
        assert!(html.contains("• … and 4 more"), "{html}");
        assert!(html.contains("<i>do &lt;b&gt;this&lt;/b&gt;</i>"), "{html}");
    }

    #[test]
    fn a_failed_or_missing_reviewer_says_so() {
        let failed = ReviewCard {
            outcome: "reviewer_failed".into(),
            reason: Some("429 from openai".into()),
            ..ReviewCard::default()
        };
        let html = verdict_html(&session(), &failed);
        assert!(html.contains("failed; this is no verdict"), "{html}");
        assert!(html.contains("429 from openai"), "{html}");
        let none = ReviewCard {
            outcome: "no_reviewer".into(),
            ..ReviewCard::default()
        };
        assert!(verdict_html(&session(), &none).contains("no reviewer of another model family"));
    }
}
