//! The bot's watcher of the approvals other machines hold for it (docs/remote.md, "What the
//! phone sees"; the held side is `cross_agent_telegram::link_approvals`).
//!
//! While this daemon's bot can ask (its poller runs and a chat is paired), every connected
//! host is asked for its held approvals twice a second (`approvals_pending`; being asked is
//! what tells that daemon a bot watches, so it holds its next escalation instead of going
//! straight to the editor's prompt). Each new one becomes a card with the host on it; the
//! first tap goes back over the link (`approval_answer`) and is applied there; an approval the
//! host stops listing (answered or timed out there) closes its card. A host of an older release
//! (`method_not_found`) is skipped, said once in the log.

use std::collections::HashSet;
use std::time::Duration;

use cross_agent_hosts::Links;
use cross_agent_ipc::Error as IpcError;
use cross_agent_protocol::hosts::{ApprovalAnswerParams, ApprovalsPendingParams};
use cross_agent_protocol::rpc::ErrorCode;
use cross_agent_telegram::Bot;
use cross_agent_telegram::approval_ask::{AnswerFuture, AnswerWay};
use cross_agent_telegram::link_approvals::Offered;
use tokio::sync::watch;

/// How often each host is asked.
const WATCH_EVERY: Duration = Duration::from_millis(500);
/// How long one host may take to answer (a slow one must not hold up the others' cards for
/// long, nor a tap's answer).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Watches the hosts' held approvals until `stop`.
pub fn start(bot: Bot, links: Links, mut stop: watch::Receiver<bool>) {
    tokio::spawn(async move {
        let mut offered = Offered::default();
        let mut too_old: HashSet<String> = HashSet::new();
        let mut tick = tokio::time::interval(WATCH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|stop| *stop) => return,
            }
            if !bot.can_ask() {
                continue;
            }
            for host in links.status().hosts.into_iter().map(|h| h.name) {
                let Some(client) = links.client(&host) else {
                    continue;
                };
                if too_old.contains(&host) {
                    continue;
                }
                let listed = tokio::time::timeout(
                    CALL_TIMEOUT,
                    client.call(ApprovalsPendingParams::default()),
                )
                .await;
                match listed {
                    Ok(Ok(answer)) => {
                        for (approval, gone) in offered.update(&host, answer.approvals) {
                            let way = Box::new(LinkWay {
                                links: links.clone(),
                                host: host.clone(),
                                id: approval.id.clone(),
                            });
                            bot.offer_link_approval(&host, approval, way, gone);
                        }
                    }
                    Ok(Err(IpcError::Rpc {
                        code: ErrorCode::MethodNotFound,
                        ..
                    })) => {
                        tracing::warn!(
                            host = %host,
                            "host runs an older cross-agent without approvals over the link; \
                             its approvals stay with its own bot or editor"
                        );
                        too_old.insert(host);
                    }
                    // Asked again at the next tick; its open cards stay open meanwhile.
                    Ok(Err(error)) => {
                        tracing::debug!(host = %host, %error, "could not ask for held approvals")
                    }
                    Err(_) => tracing::debug!(host = %host, "held approvals: no answer in time"),
                }
            }
        }
    });
}

/// A tap's way back: `approval_answer` on the host's link.
struct LinkWay {
    links: Links,
    host: String,
    id: String,
}

impl AnswerWay for LinkWay {
    fn answer(self: Box<Self>, allow: bool, choice: Option<String>, user_id: i64) -> AnswerFuture {
        Box::pin(async move {
            let Some(client) = self.links.client(&self.host) else {
                return Err(format!(
                    "host `{}` is not connected now; the approval there is asked in its editor \
                     when its wait runs out",
                    self.host
                ));
            };
            let params = ApprovalAnswerParams {
                id: self.id.clone(),
                allow,
                user_id,
                from_machine: cross_agent_process::machine_name(),
                choice,
            };
            match tokio::time::timeout(CALL_TIMEOUT, client.call(params)).await {
                Ok(Ok(answer)) => match answer.not_taken {
                    None => Ok(()),
                    Some(why) => Err(format!("host `{}`: {why}", self.host)),
                },
                Ok(Err(error)) => Err(format!(
                    "the link to host `{}` failed while answering: {error}",
                    self.host
                )),
                Err(_) => Err(format!(
                    "host `{}` did not take the answer within {} s",
                    self.host,
                    CALL_TIMEOUT.as_secs()
                )),
            }
        })
    }
}
