//! Copilot's tool confirmations, answered from the phone. The daemon's Agent Host watcher
//! follows every live host's sessions that wait for input and hands each pending tool
//! confirmation to [`Bot::offer_copilot_approval`], with the [`AnswerWay`] that dispatches
//! `chat/toolCallConfirmed` on its connection and a `gone` signal for when the host drops the
//! request (answered in the editor). The card offers the host's own choices ("Allow once",
//! "Always allow in this session", …: AHP `ToolCallReady.options`), or Allow / Deny when it
//! sends none; a tap hands back the choice's id (`selectedOptionId`). The card and the
//! first-answer-wins rules are [`crate::approval_ask`]'s, the same as the panels'. When this
//! daemon's own bot cannot ask but a linked daemon's watches, the confirmation is held for
//! that one instead ([`Bot::hold_copilot_approval_for_link`], docs/remote.md).

use cross_agent_decisions::{Decision, DecisionKind, Outcome};
use tokio::sync::oneshot;

use crate::Bot;
use crate::approval_ask::{self, AnswerWay, Offer};
use crate::approval_card::{ApprovalCard, Choice, pick_choices};
use crate::diff::WhatItDoes;

/// A Copilot tool call waiting for the user's confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopilotApproval {
    /// The session's editor UUID.
    pub session_id: String,
    /// Its working directory, when the host lists one.
    pub cwd: Option<String>,
    /// The tool as the host names it to people (`displayName`, else `toolName`).
    pub tool: String,
    /// The confirmation's title (`confirmationTitle`), when given.
    pub title: Option<String>,
    /// What the tool will do, in the host's words (`invocationMessage`).
    pub message: String,
    /// The host's id of the tool call (for the decision line).
    pub tool_call_id: String,
    /// The host's own choices, in its order (those whose kind is neither approve nor deny
    /// left out); empty means Allow / Deny.
    pub choices: Vec<Choice>,
}

impl Bot {
    /// Whether a card can be asked now: the poller runs and a chat is paired. The watcher keeps
    /// what comes meanwhile and offers it once this turns true, as the panels' approvals are.
    pub fn can_ask(&self) -> bool {
        self.can_post()
    }

    /// Records, once, that `approval` waits for a chat to be paired.
    pub fn copilot_approval_waits(&self, approval: &CopilotApproval) {
        self.record(
            decision(self, approval, "not_posted")
                .reason("no paired Telegram chat is being polled"),
        );
    }

    /// Asks `approval` on the paired chats; the first tap goes to `way`, and `gone` resolving
    /// (or its sender dropped) first closes the card as answered in the editor. `late`: it
    /// waited for a chat to be paired.
    pub fn offer_copilot_approval(
        &self,
        approval: CopilotApproval,
        way: Box<dyn AnswerWay>,
        gone: oneshot::Receiver<()>,
        late: bool,
    ) {
        let offer = self.copilot_offer(approval, way);
        tokio::spawn(approval_ask::ask(self.clone(), offer, gone, late));
    }

    /// Holds `approval` for a linked daemon's bot (this one cannot ask, one there watches:
    /// [`Bot::can_hold_for_link`]) until `gone`; its tap there comes back to `way`.
    pub fn hold_copilot_approval_for_link(
        &self,
        approval: CopilotApproval,
        way: Box<dyn AnswerWay>,
        gone: oneshot::Receiver<()>,
    ) {
        let offer = self.copilot_offer(approval, way);
        self.hold_offer_for_link("copilot", offer, gone);
    }

    fn copilot_offer(&self, approval: CopilotApproval, way: Box<dyn AnswerWay>) -> Offer {
        Offer {
            card: card_for(&approval),
            session: approval.session_id.clone(),
            decision: {
                let bot = self.clone();
                Box::new(move |outcome| decision(&bot, &approval, outcome))
            },
            way,
            gone_note: None,
        }
    }
}

fn card_for(approval: &CopilotApproval) -> ApprovalCard {
    let short: String = approval.session_id.chars().take(8).collect();
    let mut headline = match &approval.cwd {
        Some(cwd) => format!("Copilot · {} in {cwd} (session {short})", approval.tool),
        None => format!("Copilot · {} (session {short})", approval.tool),
    };
    if let Some(title) = approval.title.as_deref().filter(|t| !t.trim().is_empty()) {
        headline.push_str(&format!(" — {title}"));
    }
    let what = (!approval.message.trim().is_empty()).then(|| WhatItDoes {
        text: approval.message.clone(),
        is_diff: false,
    });
    ApprovalCard {
        headline,
        what,
        // The host's own message is what the editor shows too: nothing was cut on the way.
        partial: false,
        choices: pick_choices(approval.choices.clone()),
    }
}

fn decision(bot: &Bot, approval: &CopilotApproval, outcome: &'static str) -> Decision {
    Decision::new(DecisionKind::new("approval"), Outcome::new(outcome))
        .agent("copilot")
        .session(approval.session_id.clone())
        .detail("via", "agent_host")
        .detail("kind", "toolConfirmation")
        .detail("request_id", approval.tool_call_id.clone())
        .detail("tool", bot.scrub(&approval.tool))
}
