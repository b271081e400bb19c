//! Asking one approval on the phone, whatever waits on it: the card goes to the paired chats,
//! the first tap is handed to the [`AnswerWay`] of the approval's source (a panel shim, a
//! Copilot Agent Host), and a request answered elsewhere first closes its card.
//!
//! First answer wins, either way: a tap closes the card (so it cannot be answered twice); a
//! request that goes away before a tap (`gone`) was answered in the editor, and its card is
//! edited to say so; a tap the source refuses (it was answered elsewhere meanwhile) is told so
//! on the card. Every approval is a decision line: who answered, where, and how long it waited.

use std::future::Future;
use std::pin::Pin;

use cross_agent_decisions::Decision;
use tokio::sync::oneshot;

use crate::Bot;
use crate::approval_card::ApprovalCard;

/// What [`AnswerWay::answer`] returns: `Err` with the source's reason when it did not take the
/// answer (answered or withdrawn already).
pub type AnswerFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// Where a tap's answer goes: one more source of approvals is one more implementation.
pub trait AnswerWay: Send + 'static {
    /// Hands over `allow`, tapped by `user_id`; `choice` is the id of the source's own choice
    /// that was tapped ([`crate::approval_card::Choice::id`]), `None` for a plain Allow / Deny.
    fn answer(self: Box<Self>, allow: bool, choice: Option<String>, user_id: i64) -> AnswerFuture;
}

/// One approval to ask.
pub(crate) struct Offer {
    pub card: ApprovalCard,
    /// The session it is for (the desk shows it as waiting).
    pub session: String,
    /// The `approval` decision line with this outcome.
    pub decision: Box<dyn Fn(&'static str) -> Decision + Send>,
    pub way: Box<dyn AnswerWay>,
    /// What the card says when the request goes away first; `None`: answered in the editor.
    pub gone_note: Option<String>,
}

/// Posts the card of `offer` and answers its source with the first tap; closes the card when
/// the request goes away first (`gone`). `late`: it waited for a chat to be paired.
pub(crate) async fn ask(bot: Bot, offer: Offer, mut gone: oneshot::Receiver<()>, late: bool) {
    let Offer {
        card,
        session,
        decision,
        way,
        gone_note,
    } = offer;
    let Some(mut posted) = bot.post_card(&card, &session).await else {
        bot.record(decision("not_posted").reason("no paired Telegram chat is being polled"));
        return;
    };
    if late {
        bot.record(decision("posted").detail("after_pairing", true));
    } else {
        bot.record(decision("posted"));
    }
    let messages = bot.card_messages(&posted.key);
    tokio::select! {
        tap = &mut posted.answer => {
            let Ok(tap) = tap else { return };
            let waited_ms = posted.started.elapsed().as_millis() as u64;
            let picked = tap.choice.and_then(|i| card.choices.get(i));
            let taken = way
                .answer(tap.allow, picked.map(|c| c.id.clone()), tap.user_id)
                .await;
            let outcome = if tap.allow { "allowed" } else { "denied" };
            match taken {
                Ok(()) => {
                    let mut line = decision(outcome)
                        .detail("user_id", tap.user_id)
                        .detail("waited_ms", waited_ms);
                    if let Some(choice) = picked {
                        line = line.detail("choice", bot.scrub(&choice.id));
                    }
                    bot.record(line);
                }
                Err(reason) => {
                    let reason = bot.scrub(&reason);
                    bot.amend_card(
                        &messages,
                        &format!("✋ Not taken: {reason}\n{}", card.headline),
                    )
                    .await;
                    bot.record(
                        decision("not_taken")
                            .reason(reason)
                            .detail("user_id", tap.user_id)
                            .detail("waited_ms", waited_ms)
                            .detail("tapped", outcome),
                    );
                }
            }
        }
        _ = &mut gone => {
            let waited_ms = posted.started.elapsed().as_millis() as u64;
            let note = gone_note.as_deref().unwrap_or("✋ Answered in the editor.");
            if bot.close_card(&posted.key, note).await {
                bot.record(decision("answered_in_editor").detail("waited_ms", waited_ms));
            }
        }
    }
}
