//! Copilot's tool confirmations on the phone: the sessions of one host connection whose status
//! says they wait for input are followed ([`HostConnection::watch_input`]); each pending tool
//! confirmation is offered to the Telegram bot with the way to answer it
//! (`chat/toolCallConfirmed` on this connection, with the host's own option that was tapped
//! as its `selectedOptionId`) and a signal that fires when the host drops
//! the request (it was answered in the editor, or the session stopped waiting). One that
//! comes while no chat can be asked is held for a linked daemon's bot when one watches
//! (docs/remote.md, "What the phone sees"), else waits, and is offered once one can if still
//! pending.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cross_agent_agent_host::{
    ConfirmOutcome, ConfirmationOptionKind, HostConnection, InputChange, PendingApproval,
    SessionInfo,
};
use cross_agent_telegram::approval_ask::{AnswerFuture, AnswerWay};
use cross_agent_telegram::approval_card::Choice;
use cross_agent_telegram::copilot_approvals::CopilotApproval;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::Ctx;

/// The sessions of one connection being followed for their confirmations; dropped with the
/// connection, which stops them all (and closes their cards).
pub(super) struct Inputs {
    conn: HostConnection,
    ctx: Arc<Ctx>,
    watching: HashMap<String, JoinHandle<()>>,
}

impl Inputs {
    pub(super) fn new(conn: HostConnection, ctx: Arc<Ctx>) -> Self {
        Inputs {
            conn,
            ctx,
            watching: HashMap::new(),
        }
    }

    /// Follows the sessions that need input now, and stops following the others.
    pub(super) fn sync(&mut self, sessions: &BTreeMap<String, SessionInfo>) {
        self.watching.retain(|uri, task| {
            let keep = sessions
                .get(uri)
                .is_some_and(|s| s.status.input_needed() && !task.is_finished());
            if !keep {
                task.abort();
            }
            keep
        });
        for (uri, info) in sessions {
            if info.status.input_needed() && !self.watching.contains_key(uri) {
                let task = tokio::spawn(follow_session(
                    self.conn.clone(),
                    self.ctx.clone(),
                    info.clone(),
                ));
                self.watching.insert(uri.clone(), task);
            }
        }
    }
}

impl Drop for Inputs {
    fn drop(&mut self) {
        for task in self.watching.values() {
            task.abort();
        }
    }
}

/// Offers each pending confirmation of `info`'s session once; a request the host removes
/// closes its card. One that comes while no chat can be asked waits (a `not_posted` decision)
/// and is offered once one can, if still pending.
async fn follow_session(conn: HostConnection, ctx: Arc<Ctx>, info: SessionInfo) {
    let mut watch = match conn.watch_input(&info.uri).await {
        Ok(watch) => watch,
        Err(error) => {
            tracing::warn!(session = %info.uri, %error, "cannot follow the Copilot session's confirmations");
            return;
        }
    };
    let mut asked = Asked {
        conn,
        ctx,
        info,
        open: HashMap::new(),
        waiting: BTreeMap::new(),
    };
    for change in watch.take_initial() {
        asked.on_change(change);
    }
    loop {
        tokio::select! {
            change = watch.next() => match change {
                Some(change) => asked.on_change(change),
                None => return,
            },
            () = tokio::time::sleep(LOOK_FOR_A_CHAT), if !asked.waiting.is_empty() => {
                asked.offer_waiting();
            }
        }
    }
}

/// How often confirmations that wait for a paired chat check for one.
const LOOK_FOR_A_CHAT: std::time::Duration = std::time::Duration::from_millis(500);

/// One session's confirmations: those on the phone and those waiting for a chat.
struct Asked {
    conn: HostConnection,
    ctx: Arc<Ctx>,
    info: SessionInfo,
    /// Request id → the sender whose drop closes its card.
    open: HashMap<String, oneshot::Sender<()>>,
    /// Request id → what to offer once a chat can be asked.
    waiting: BTreeMap<String, Box<PendingApproval>>,
}

impl Asked {
    fn on_change(&mut self, change: InputChange) {
        match change {
            InputChange::Needed {
                request_id,
                approval,
            } => {
                if self.open.contains_key(&request_id) || self.waiting.contains_key(&request_id) {
                    return;
                }
                if self.ctx.bot.can_ask() {
                    self.offer(request_id, approval, /*late*/ false);
                } else if self.ctx.bot.can_hold_for_link() {
                    self.hold_for_link(request_id, approval);
                } else {
                    self.ctx
                        .bot
                        .copilot_approval_waits(&self.card_of(&approval));
                    self.waiting.insert(request_id, approval);
                }
            }
            InputChange::Removed { request_id } => {
                // Dropping the sender closes the card, unless a tap got there first.
                self.open.remove(&request_id);
                self.waiting.remove(&request_id);
            }
        }
    }

    fn offer_waiting(&mut self) {
        if self.ctx.bot.can_ask() {
            for (request_id, approval) in std::mem::take(&mut self.waiting) {
                self.offer(request_id, approval, /*late*/ true);
            }
        } else if self.ctx.bot.can_hold_for_link() {
            for (request_id, approval) in std::mem::take(&mut self.waiting) {
                self.hold_for_link(request_id, approval);
            }
        }
    }

    fn offer(&mut self, request_id: String, approval: Box<PendingApproval>, late: bool) {
        let (gone_tx, gone) = oneshot::channel();
        self.open.insert(request_id, gone_tx);
        let card = self.card_of(&approval);
        let way = self.way(*approval);
        self.ctx.bot.offer_copilot_approval(card, way, gone, late);
    }

    /// Held for a linked daemon's bot until the host drops it (docs/remote.md).
    fn hold_for_link(&mut self, request_id: String, approval: Box<PendingApproval>) {
        let (gone_tx, gone) = oneshot::channel();
        self.open.insert(request_id, gone_tx);
        let card = self.card_of(&approval);
        let way = self.way(*approval);
        self.ctx.bot.hold_copilot_approval_for_link(card, way, gone);
    }

    fn way(&self, approval: PendingApproval) -> Box<HostWay> {
        Box::new(HostWay {
            conn: self.conn.clone(),
            chat: approval.chat,
            turn_id: approval.turn_id,
            tool_call_id: approval.tool_call_id,
        })
    }

    fn card_of(&self, approval: &PendingApproval) -> CopilotApproval {
        let tool = if approval.display_name.is_empty() {
            approval.tool_name.clone()
        } else {
            approval.display_name.clone()
        };
        let cwd = self
            .info
            .working_directories
            .first()
            .map(|dir| dir.strip_prefix("file://").unwrap_or(dir).to_owned());
        CopilotApproval {
            session_id: self.info.editor_id.clone(),
            cwd,
            tool,
            title: approval.title.clone(),
            message: approval.message.clone(),
            tool_call_id: approval.tool_call_id.clone(),
            choices: choices_of(approval),
        }
    }
}

/// The host's own confirmation options as the card's choices. One of a kind this build does
/// not know is left out: whether it approves cannot be told, so it is answered in the editor.
fn choices_of(approval: &PendingApproval) -> Vec<Choice> {
    approval
        .options
        .iter()
        .filter_map(|option| {
            let allow = match &option.kind {
                ConfirmationOptionKind::Approve => true,
                ConfirmationOptionKind::Deny => false,
                ConfirmationOptionKind::Unknown(_) => return None,
            };
            Some(Choice {
                id: option.id.clone(),
                label: option.label.clone(),
                allow,
            })
        })
        .collect()
}

/// A tap's answer, as `chat/toolCallConfirmed` on the host connection.
struct HostWay {
    conn: HostConnection,
    chat: String,
    turn_id: String,
    tool_call_id: String,
}

impl AnswerWay for HostWay {
    fn answer(self: Box<Self>, allow: bool, choice: Option<String>, _user_id: i64) -> AnswerFuture {
        Box::pin(async move {
            match self
                .conn
                .confirm_tool_call(
                    &self.chat,
                    &self.turn_id,
                    &self.tool_call_id,
                    allow,
                    choice.as_deref(),
                )
                .await
            {
                Ok(ConfirmOutcome::Applied) => Ok(()),
                Ok(ConfirmOutcome::Refused { reason }) => Err(format!(
                    "it was answered elsewhere first (the Copilot host said: {reason})"
                )),
                Err(error) => Err(error.to_string()),
            }
        })
    }
}
