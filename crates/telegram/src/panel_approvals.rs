//! Approvals of panel sessions, answered from the phone. The panel shims list the approval
//! requests their agents wait on in their registrations (`CROSS_AGENT_HOME/panels/`: Claude
//! `can_use_tool`, Codex `item/*/requestApproval` and MCP elicitations, Grok ACP permission
//! requests); while the poller runs, [`watch`] reads that folder every [`LOOK_EVERY`] and, for
//! each request it has not seen, posts an approval card to the paired chats. A tap is answered
//! through the shim (`answer_approval` on its socket). First answer wins, either way: a tap
//! closes the card (so it cannot be answered twice); a request that leaves the registration
//! before a tap was answered in the editor, and its card is edited to say so. A tap that comes
//! after the editor's answer (the shim says it is no longer pending) is told so on the card.
//!
//! The same scan notices a panel turn ending (a session going back to idle) and notifies it for
//! Codex and Grok panels, and for Claude panels whose `Stop` hook is not installed (with the
//! hook, the `Stop` notification carries the answer).
//!
//! A request that appears while no chat is paired (or no poller runs) is held for a linked
//! daemon's bot when one watches ([`Bot::hold_offer_for_link`], docs/remote.md: its tap comes
//! back over the link and is answered through the shim the same way); otherwise, while a
//! poller runs, it is logged `not_posted` once and offered as soon as a chat pairs, if it is
//! still pending then. The folder is watched for the daemon's whole life, poller or not.
//!
//! Every approval is a decision line: who answered, where, and how long it waited. The asking
//! itself is [`crate::approval_ask`]'s, shared with Copilot's approvals.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, DecisionKind, Outcome};
use cross_agent_protocol::panel::{
    ApprovalAnswer, PanelSessionState, PendingApproval, ShimEvent, ShimRequest,
};
use cross_agent_transports::panel::{client, registry};
use tokio::sync::{oneshot, watch as watch_channel};

use crate::Bot;
use crate::approval_ask::{self, AnswerFuture, AnswerWay, Offer};
use crate::approval_card::ApprovalCard;
use crate::gate::{self, Gate, Verdict};

/// How often the registrations are read. A shim rewrites its file as soon as an approval
/// arrives; reading a few small files twice a second costs nothing measurable.
pub const LOOK_EVERY: Duration = Duration::from_millis(500);

/// How long a shim has to say whether it took an answer.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// One approval request: which shim, which session, which request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RequestKey {
    socket: PathBuf,
    session_id: Option<String>,
    request_id: String,
}

/// A request one of the panels waits on, and where.
#[derive(Debug, Clone)]
struct Asked {
    key: RequestKey,
    agent: String,
    cwd: String,
    approval: PendingApproval,
}

/// Watches the panels until `stop`.
pub(crate) async fn watch(bot: Bot, mut stop: watch_channel::Receiver<bool>) {
    let mut open: HashMap<RequestKey, oneshot::Sender<()>> = HashMap::new();
    // Requests seen while nobody could be asked: offered once a chat is paired.
    let mut not_posted: HashSet<RequestKey> = HashSet::new();
    let mut states: HashMap<(u32, String), PanelSessionState> = HashMap::new();
    let mut first = true;
    loop {
        if *stop.borrow() {
            return;
        }
        let home = bot.home().to_owned();
        let Ok(scan) = tokio::task::spawn_blocking(move || registry::scan(&home)).await else {
            return;
        };
        let mut seen = HashSet::new();
        let mut now_states = HashMap::new();
        for panel in &scan.live {
            let registration = &panel.registration;
            let socket = PathBuf::from(&registration.socket);
            let agent = registration.agent.to_string();
            for session in &registration.sessions {
                let cwd = session
                    .cwd
                    .clone()
                    .or_else(|| registration.cwd.clone())
                    .unwrap_or_default();
                if let Some(id) = &session.session_id {
                    now_states.insert((registration.pid, id.clone()), session.state);
                    let before = states.get(&(registration.pid, id.clone()));
                    let ended = matches!(
                        before,
                        Some(PanelSessionState::Working | PanelSessionState::AwaitingApproval)
                    ) && session.state == PanelSessionState::Idle;
                    if ended && !first && !bot.has_hook_session(id) {
                        let title = session.title.clone().unwrap_or_else(|| label(&cwd, id));
                        bot.notify_text(
                            &format!("✅ {} panel · {title} finished", capitalised(&agent)),
                            "turn_ended",
                        );
                    }
                }
                for approval in &session.pending_approvals {
                    let key = RequestKey {
                        socket: socket.clone(),
                        session_id: session.session_id.clone(),
                        request_id: approval.request_id.clone(),
                    };
                    seen.insert(key.clone());
                    if open.contains_key(&key) {
                        continue;
                    }
                    let asked = Asked {
                        key: key.clone(),
                        agent: agent.clone(),
                        cwd: cwd.clone(),
                        approval: approval.clone(),
                    };
                    if !bot.can_post() && bot.can_hold_for_link() {
                        let (gone_tx, gone_rx) = oneshot::channel();
                        open.insert(key, gone_tx);
                        let agent = asked.agent.clone();
                        bot.hold_offer_for_link(&agent, offer_for(&bot, asked), gone_rx);
                        continue;
                    }
                    // No bot here polls: nothing to log; asked once one does.
                    if bot.queue().is_none() {
                        continue;
                    }
                    if !bot.can_post() {
                        if not_posted.insert(key) {
                            bot.record(
                                decision(&bot, &asked, "not_posted")
                                    .reason("no paired Telegram chat is being polled"),
                            );
                        }
                        continue;
                    }
                    let late = not_posted.remove(&key);
                    let (gone_tx, gone_rx) = oneshot::channel();
                    open.insert(key, gone_tx);
                    tokio::spawn(ask(bot.clone(), asked, gone_rx, late));
                }
            }
        }
        // Requests no longer listed were answered (in the editor, or by a tap) or withdrawn.
        open.retain(|key, _| seen.contains(key));
        not_posted.retain(|key| seen.contains(key));
        states = now_states;
        first = false;
        tokio::select! {
            () = tokio::time::sleep(LOOK_EVERY) => {}
            // A chat was just paired: what waited for it is offered at once.
            () = bot.paired_signal().notified() => {}
            _ = stop.changed() => return,
        }
    }
}

fn capitalised(agent: &str) -> String {
    let mut chars = agent.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn label(cwd: &str, session: &str) -> String {
    let folder = Path::new(cwd)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let short: String = session.chars().take(8).collect();
    format!("{folder} ({short})")
}

/// The card for `asked`: what it would do, and whether that is all of it.
fn card_for(bot: &Bot, asked: &Asked) -> ApprovalCard {
    let approval = &asked.approval;
    let tool = approval
        .tool
        .clone()
        .unwrap_or_else(|| approval.kind.clone());
    let cwd = Some(Path::new(&asked.cwd)).filter(|p| p.is_absolute());
    let (what, partial) = match &approval.input {
        Some(input) => (crate::diff::what_it_does(&tool, input, cwd), false),
        None => {
            let detail = approval.detail.clone().unwrap_or_default();
            // A file change known only by its reason, or a detail the shim had to cut, is
            // not enough to allow from here.
            let partial = detail.ends_with('…')
                || approval.kind.contains("fileChange")
                || approval.kind.contains("permissions");
            let what = (!detail.is_empty()).then_some(crate::diff::WhatItDoes {
                text: detail,
                is_diff: false,
            });
            (what, partial)
        }
    };
    let subject = match &approval.input {
        Some(input) if input.get("command").is_some() => gate::subject("Bash", input),
        Some(input) => gate::subject(&tool, input),
        None => approval.detail.clone().unwrap_or_default(),
    };
    let gate_tool = if approval
        .input
        .as_ref()
        .is_some_and(|i| i.get("command").is_some())
    {
        "Bash"
    } else {
        tool.as_str()
    };
    let danger = match Gate::load(bot.home()).map(|g| g.judge(gate_tool, &subject)) {
        Ok(Verdict::Escalate {
            danger: Some(pattern),
            ..
        }) => Some(pattern),
        _ => None,
    };
    let session = asked.key.session_id.as_deref().unwrap_or("new");
    let mut headline = format!(
        "{} panel · {tool} in {} (session {})",
        capitalised(&asked.agent),
        asked.cwd,
        session.chars().take(8).collect::<String>()
    );
    if let Some(pattern) = &danger {
        headline.push_str(&format!(" — danger: {pattern}"));
    }
    ApprovalCard {
        headline,
        what,
        partial,
        choices: Vec::new(),
    }
}

/// The `approval` decision line of `asked`, with `outcome`.
fn decision(bot: &Bot, asked: &Asked, outcome: &'static str) -> Decision {
    let mut decision = Decision::new(DecisionKind::new("approval"), Outcome::new(outcome))
        .agent(asked.agent.clone())
        .detail("via", "panel")
        .detail("kind", asked.approval.kind.clone())
        .detail("request_id", asked.key.request_id.clone());
    if let Some(session) = &asked.key.session_id {
        decision = decision.session(session.clone());
    }
    if let Some(tool) = &asked.approval.tool {
        decision = decision.detail("tool", bot.scrub(tool));
    }
    decision
}

/// Posts the card for `asked` and answers the shim with the first tap ([`approval_ask::ask`]).
async fn ask(bot: Bot, asked: Asked, gone: oneshot::Receiver<()>, late: bool) {
    let offer = offer_for(&bot, asked);
    approval_ask::ask(bot, offer, gone, late).await;
}

/// The card, decision line and way back (its shim) of `asked`.
fn offer_for(bot: &Bot, asked: Asked) -> Offer {
    Offer {
        card: card_for(bot, &asked),
        session: asked.key.session_id.clone().unwrap_or_default(),
        decision: {
            let bot = bot.clone();
            let asked = asked.clone();
            Box::new(move |outcome| decision(&bot, &asked, outcome))
        },
        way: Box::new(ShimWay { key: asked.key }),
        gone_note: None,
    }
}

/// A panel request's answer goes to its shim.
struct ShimWay {
    key: RequestKey,
}

impl AnswerWay for ShimWay {
    fn answer(self: Box<Self>, allow: bool, _choice: Option<String>, user_id: i64) -> AnswerFuture {
        Box::pin(async move {
            let answer = ApprovalAnswer {
                session_id: self.key.session_id.clone(),
                request_id: self.key.request_id.clone(),
                allow,
                message: (!allow).then(|| format!("denied from Telegram by user {user_id}")),
            };
            let socket = self.key.socket.clone();
            tokio::task::spawn_blocking(move || answer_through_shim(&socket, &answer))
                .await
                .unwrap_or_else(|error| Err(error.to_string()))
        })
    }
}

/// `answer_approval` on the shim's socket; `Err` with the shim's reason when it did not take
/// the answer (the request was answered or withdrawn already).
fn answer_through_shim(socket: &Path, answer: &ApprovalAnswer) -> Result<(), String> {
    let mut connection = client::open(socket, &ShimRequest::AnswerApproval(answer.clone()))
        .map_err(|error| error.to_string())?;
    let deadline = Instant::now() + ANSWER_WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the panel did not say whether it took the answer".into());
        }
        match connection.next(left).map_err(|error| error.to_string())? {
            client::Next::Event(ShimEvent::ApprovalAnswered { accepted, reason }) => {
                return if accepted {
                    Ok(())
                } else {
                    Err(reason.unwrap_or_else(|| "the panel refused the answer".into()))
                };
            }
            client::Next::Event(_) | client::Next::Quiet => {}
            client::Next::Closed => {
                return Err("the panel closed the connection without an answer".into());
            }
        }
    }
}
