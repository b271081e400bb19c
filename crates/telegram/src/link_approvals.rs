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
//!   one that can, else the linked one — never both.
//! - **On the machine with the bot** (here): the daemon's watcher asks each connected host for
//!   its held approvals and hands each new one to [`Bot::offer_link_approval`], which posts the
//!   usual card with the host on it; the first tap goes back over the link (`approval_answer`),
//!   and an approval the host stops listing (answered or timed out there) closes its card.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, DecisionKind, Outcome};
use cross_agent_protocol::hosts::{ApprovalAnswerParams, ApprovalAnswerResponse, LinkedApproval};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::Bot;
use crate::approval_ask::{self, AnswerWay, Offer};
use crate::approval_card::ApprovalCard;
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
    answer: Option<oneshot::Sender<(Tap, Option<String>)>>,
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

    /// `approval_answer`: a linked daemon's tap for held approval `id`.
    pub fn answer_from_link(&self, params: &ApprovalAnswerParams) -> ApprovalAnswerResponse {
        let sender = self
            .held()
            .waiting
            .lock()
            .iter_mut()
            .find(|h| h.approval.id == params.id)
            .and_then(|h| h.answer.take());
        let tap = Tap {
            allow: params.allow,
            choice: None,
            user_id: params.user_id,
        };
        match sender.map(|s| s.send((tap, params.from_machine.clone()))) {
            Some(Ok(())) => ApprovalAnswerResponse { not_taken: None },
            _ => ApprovalAnswerResponse {
                not_taken: Some(format!(
                    "approval {} is not waiting any more (answered, or its wait ran out and the \
                     editor asked instead)",
                    params.id
                )),
            },
        }
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
        let id = format!("apr_{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
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
            },
            answer: Some(tx),
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
            // The host sent the whole of what its own card would show.
            partial: false,
            choices: Vec::new(),
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
