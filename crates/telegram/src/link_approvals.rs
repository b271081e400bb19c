//! Approvals over the SSH link (docs/remote.md, "What the phone sees"): one bot, on the machine
//! where it is set up, asks the approvals of every linked host.
//!
//! Both ends live here, since both are the bot's:
//!
//! - **On the machine whose session waits** (the remote): a Claude hook's escalation goes to
//!   this daemon's own bot when it can ask (a poller runs and a chat is paired). When it cannot,
//!   and a linked daemon asked for approvals within [`LINK_WATCH_FRESH`], the approval is held
//!   here instead ([`Bot::hold_for_link`]) — listed by `approvals_pending`, answered by
//!   `approval_answer` — for the hook's usual wait; no answer in time is the editor's own prompt
//!   (`ask`), as with no phone at all. So exactly one bot asks: this machine's own when it has
//!   one that can, else the linked one — never both. A panel's permission request and a
//!   Copilot confirmation are held the same way ([`Bot::hold_offer_for_link`]) while their
//!   source waits; a tap from the link is applied through the source's own way (the shim's
//!   socket, the Agent Host's `chat/toolCallConfirmed` with the chosen option's id).
//! - **On the machine with the bot** (here): the daemon's watcher asks each connected host for
//!   its held approvals and hands each new one to [`Bot::offer_link_approval`], which posts the
//!   usual card with the host on it; the first tap goes back over the link (`approval_answer`),
//!   and an approval the host stops listing (answered or timed out there) closes its card.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, DecisionKind, Outcome};
use cross_agent_protocol::hosts::{
    ApprovalAnswerParams, ApprovalAnswerResponse, LinkedApproval, LinkedChoice,
};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::Bot;
use crate::approval_ask::{self, AnswerWay, Offer};
use crate::approval_card::{ApprovalCard, Choice};
use crate::bot::Tap;
use crate::diff::WhatItDoes;

/// How recently a linked daemon must have asked for approvals for one to be held for it (its
/// watcher asks twice a second; a link that dropped stops asking, and hooks go back to the
/// editor's prompt at once instead of waiting for nobody).
pub const LINK_WATCH_FRESH: Duration = Duration::from_secs(5);

/// The approvals held for a linked daemon's bot.
#[derive(Default)]
pub(crate) struct Held {
    /// When a linked daemon last asked (`approvals_pending`).
    last_asked: Mutex<Option<Instant>>,
    waiting: Mutex<Vec<HeldApproval>>,
}

struct HeldApproval {
    approval: LinkedApproval,
    /// `None` once answered.
    answer: Option<HeldAnswer>,
}

/// Where a linked daemon's tap goes.
enum HeldAnswer {
    /// A Claude hook's escalation, waiting in `escalate`.
    Hook(oneshot::Sender<(Tap, Option<String>)>),
    /// A panel's or Copilot's request: answered through its source's own way, the decision
    /// line written here as its own card's would be.
    Way {
        way: Box<dyn AnswerWay>,
        decision: Box<dyn Fn(&'static str) -> Decision + Send>,
        choices: Vec<Choice>,
    },
}

impl Bot {
    /// Whether a linked daemon is watching for approvals now.
    pub(crate) fn link_is_watching(&self) -> bool {
        self.held()
            .last_asked
            .lock()
            .is_some_and(|at| at.elapsed() <= LINK_WATCH_FRESH)
    }

    /// `approvals_pending`: what is held for a linked daemon's bot, oldest first; being asked
    /// is what tells this daemon one watches.
    pub fn approvals_for_link(&self) -> Vec<LinkedApproval> {
        *self.held().last_asked.lock() = Some(Instant::now());
        self.held()
            .waiting
            .lock()
            .iter()
            .filter(|h| h.answer.is_some())
            .map(|h| h.approval.clone())
            .collect()
    }

    /// Whether a request this daemon's own bot cannot ask now should be held for a linked
    /// daemon's bot ([`Bot::hold_offer_for_link`]): one watches.
    pub fn can_hold_for_link(&self) -> bool {
        self.link_is_watching()
    }

    /// `approval_answer`: a linked daemon's tap for held approval `id`.
    pub async fn answer_from_link(&self, params: &ApprovalAnswerParams) -> ApprovalAnswerResponse {
        let answer = self
            .held()
            .waiting
            .lock()
            .iter_mut()
            .find(|h| h.approval.id == params.id)
            .and_then(|h| h.answer.take());
        let not_waiting = || ApprovalAnswerResponse {
            not_taken: Some(format!(
                "approval {} is not waiting any more (answered, or its wait ran out and the \
                 editor asked instead)",
                params.id
            )),
        };
        match answer {
            Some(HeldAnswer::Hook(sender)) => {
                let tap = Tap {
                    allow: params.allow,
                    choice: None,
                    user_id: params.user_id,
                };
                match sender.send((tap, params.from_machine.clone())) {
                    Ok(()) => ApprovalAnswerResponse { not_taken: None },
                    Err(_) => not_waiting(),
                }
            }
            Some(HeldAnswer::Way {
                way,
                decision,
                choices,
            }) => self.answer_held_way(params, way, decision, &choices).await,
            None => not_waiting(),
        }
    }

    /// A linked daemon's tap on a panel's or Copilot's held request, applied through its way.
    async fn answer_held_way(
        &self,
        params: &ApprovalAnswerParams,
        way: Box<dyn AnswerWay>,
        decision: Box<dyn Fn(&'static str) -> Decision + Send>,
        choices: &[Choice],
    ) -> ApprovalAnswerResponse {
        // The choice is this machine's own: what it does is read from here, not the tap.
        let (allow, choice) = match &params.choice {
            Some(id) => match choices.iter().find(|c| &c.id == id) {
                Some(choice) => (choice.allow, Some(choice.id.clone())),
                None => {
                    let reason =
                        format!("approval {} has no choice `{}`", params.id, self.scrub(id));
                    self.record(decision("not_taken").reason(reason.clone()));
                    return ApprovalAnswerResponse {
                        not_taken: Some(reason),
                    };
                }
            },
            None => (params.allow, None),
        };
        let from = params
            .from_machine
            .clone()
            .unwrap_or_else(|| "a linked machine".to_owned());
        let outcome = if allow { "allowed" } else { "denied" };
        match way.answer(allow, choice.clone(), params.user_id).await {
            Ok(()) => {
                let mut line = decision(outcome)
                    .detail("user_id", params.user_id)
                    .detail("from_machine", from);
                if let Some(choice) = choice {
                    line = line.detail("choice", self.scrub(&choice));
                }
                self.record(line);
                ApprovalAnswerResponse { not_taken: None }
            }
            Err(reason) => {
                let reason = self.scrub(&reason);
                self.record(
                    decision("not_taken")
                        .reason(reason.clone())
                        .detail("user_id", params.user_id)
                        .detail("from_machine", from)
                        .detail("tapped", outcome),
                );
                ApprovalAnswerResponse {
                    not_taken: Some(reason),
                }
            }
        }
    }

    /// Holds the request of `offer` (a panel's or Copilot's, of `agent`) for a linked daemon's
    /// bot until its source drops it (`gone`: answered in the editor, or by a tap from the
    /// link through `offer.way`).
    pub(crate) fn hold_offer_for_link(
        &self,
        agent: &str,
        offer: Offer,
        gone: oneshot::Receiver<()>,
    ) {
        let id = new_id();
        let Offer {
            card,
            session,
            decision,
            way,
            gone_note: _,
        } = offer;
        let what = card.what.as_ref();
        let approval = LinkedApproval {
            id: id.clone(),
            agent: agent.to_owned(),
            session_id: session,
            headline: self.scrub(&card.headline),
            what: what.map(|w| self.scrub(&w.text)),
            is_diff: what.is_some_and(|w| w.is_diff),
            partial: card.partial,
            choices: card
                .choices
                .iter()
                .map(|c| LinkedChoice {
                    id: c.id.clone(),
                    label: self.scrub(&c.label),
                    allow: c.allow,
                })
                .collect(),
        };
        self.record(decision("held_for_link"));
        self.held().waiting.lock().push(HeldApproval {
            approval,
            answer: Some(HeldAnswer::Way {
                way,
                decision,
                choices: card.choices,
            }),
        });
        let bot = self.clone();
        tokio::spawn(async move {
            // Resolved, or its sender dropped: either way the source no longer waits.
            let _ = gone.await;
            let left = {
                let mut waiting = bot.held().waiting.lock();
                let at = waiting.iter().position(|h| h.approval.id == id);
                at.map(|at| waiting.remove(at))
            };
            if let Some(HeldApproval {
                answer: Some(HeldAnswer::Way { decision, .. }),
                ..
            }) = left
            {
                bot.record(decision("answered_in_editor"));
            }
        });
    }

    /// Holds the approval of `card` for a linked daemon's bot for the hook's wait; the tap
    /// and the machine it came from, or `None` when none came in time.
    pub(crate) async fn hold_for_link(
        &self,
        agent: &str,
        session: &str,
        card: &ApprovalCard,
        wait: Duration,
    ) -> Option<(Tap, Option<String>)> {
        let id = new_id();
        let (tx, rx) = oneshot::channel();
        let what = card.what.as_ref();
        self.held().waiting.lock().push(HeldApproval {
            approval: LinkedApproval {
                id: id.clone(),
                agent: agent.to_owned(),
                session_id: session.to_owned(),
                headline: self.scrub(&card.headline),
                what: what.map(|w| self.scrub(&w.text)),
                is_diff: what.is_some_and(|w| w.is_diff),
                partial: false,
                choices: Vec::new(),
            },
            answer: Some(HeldAnswer::Hook(tx)),
        });
        let tapped = tokio::time::timeout(wait, rx).await;
        self.held().waiting.lock().retain(|h| h.approval.id != id);
        match tapped {
            Ok(Ok(answer)) => Some(answer),
            _ => None,
        }
    }

    /// Asks `approval`, held on host `host`, on the paired chats, the host on its card; the
    /// first tap goes to `way` (over the link), and `gone` resolving first closes the card as
    /// answered there.
    pub fn offer_link_approval(
        &self,
        host: &str,
        approval: LinkedApproval,
        way: Box<dyn AnswerWay>,
        gone: oneshot::Receiver<()>,
    ) {
        let card = ApprovalCard {
            headline: format!("🖥 {host} · {}", approval.headline),
            what: approval.what.clone().map(|text| WhatItDoes {
                text,
                is_diff: approval.is_diff,
            }),
            // The host sent what its own card would show, and whether that is all of it.
            partial: approval.partial,
            choices: approval
                .choices
                .iter()
                .map(|c| Choice {
                    id: c.id.clone(),
                    label: c.label.clone(),
                    allow: c.allow,
                })
                .collect(),
        };
        let offer = Offer {
            card,
            session: approval.session_id.clone(),
            decision: {
                let host = host.to_owned();
                Box::new(move |outcome| {
                    Decision::new(DecisionKind::new("approval"), Outcome::new(outcome))
                        .agent(approval.agent.clone())
                        .session(approval.session_id.clone())
                        .detail("via", "link")
                        .detail("host", host.clone())
                        .detail("request_id", approval.id.clone())
                })
            },
            way,
            gone_note: Some(format!(
                "✋ Answered on {host}, or its wait ran out there and the editor asked instead."
            )),
        };
        tokio::spawn(approval_ask::ask(self.clone(), offer, gone, false));
    }
}

/// A held approval's id, what `approval_answer` names.
fn new_id() -> String {
    format!("apr_{}", &uuid::Uuid::new_v4().simple().to_string()[..16])
}

/// Which held approvals of each host have a card here, with the signal that closes it.
#[derive(Default)]
pub struct Offered {
    open: HashMap<(String, String), oneshot::Sender<()>>,
}

impl Offered {
    /// The approvals of `listed` from `host` not offered yet; those offered before and no
    /// longer listed are closed (answered or timed out there).
    pub fn update(
        &mut self,
        host: &str,
        listed: Vec<LinkedApproval>,
    ) -> Vec<(LinkedApproval, oneshot::Receiver<()>)> {
        let ids: Vec<&str> = listed.iter().map(|a| a.id.as_str()).collect();
        let gone: Vec<(String, String)> = self
            .open
            .keys()
            .filter(|(h, id)| h == host && !ids.contains(&id.as_str()))
            .cloned()
            .collect();
        for key in gone {
            if let Some(signal) = self.open.remove(&key) {
                let _ = signal.send(());
            }
        }
        let mut new = Vec::new();
        for approval in listed {
            let key = (host.to_owned(), approval.id.clone());
            if self.open.contains_key(&key) {
                continue;
            }
            let (tx, rx) = oneshot::channel();
            self.open.insert(key, tx);
            new.push((approval, rx));
        }
        new
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn approval(id: &str) -> LinkedApproval {
        LinkedApproval {
            id: id.into(),
            agent: "claude".into(),
            session_id: "s".into(),
            headline: "Claude · Bash".into(),
            what: Some("rm -rf build".into()),
            is_diff: false,
            partial: false,
            choices: Vec::new(),
        }
    }

    #[test]
    fn each_held_approval_is_offered_once_and_closed_when_the_host_stops_listing_it() {
        let mut offered = Offered::default();
        let first = offered.update("there", vec![approval("a")]);
        assert_eq!(first.len(), 1);
        let (_, mut gone_a) = first.into_iter().next().unwrap();
        assert!(offered.update("there", vec![approval("a")]).is_empty());
        // Another host's list says nothing of this one's.
        assert!(offered.update("elsewhere", Vec::new()).is_empty());
        assert!(gone_a.try_recv().is_err(), "still open");
        let next = offered.update("there", vec![approval("b")]);
        assert_eq!(next.len(), 1);
        assert!(gone_a.try_recv().is_ok(), "closed once not listed");
    }
}
