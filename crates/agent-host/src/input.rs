//! The tool confirmations a session waits on, whoever started its turn (the editor's user, or
//! us): the session's `inputNeeded` list, from its snapshot and then `session/inputNeededSet` /
//! `session/inputNeededRemoved` on the session channel (`docs/observed/copilot.md` §3.6).
//!
//! [`DeliveredTurn::answer`](crate::DeliveredTurn::answer) surfaces only the confirmations of
//! its own turn; this is for a watcher that answers any of them (the Telegram bot), through
//! [`HostConnection::confirm_tool_call`]. Only `toolConfirmation` entries whose call is
//! `pending-confirmation` are surfaced: questions and client-side tools have no yes/no answer.

use ahp::SubscriptionEvent;
use ahp_types::actions::StateAction;
use ahp_types::common::StringOrMarkdown;
use ahp_types::state::{SessionInputRequest, SnapshotState, ToolCallConfirmationState};

use crate::client::{Channel, HostConnection};
use crate::deliver::PendingApproval;
use crate::error::Result;

/// A change to a session's confirmations.
#[derive(Debug, Clone, PartialEq)]
pub enum InputChange {
    /// A tool call waits for a confirmation; `request_id` is the entry's opaque key.
    Needed {
        request_id: String,
        approval: Box<PendingApproval>,
    },
    /// The entry `request_id` was resolved (answered by anyone) or withdrawn.
    Removed { request_id: String },
}

/// A subscription to one session's `inputNeeded` list, from
/// [`HostConnection::watch_input`]; dropping it unsubscribes.
pub struct InputWatch {
    session: String,
    channel: Channel,
    initial: Vec<InputChange>,
}

impl std::fmt::Debug for InputWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputWatch")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl HostConnection {
    /// Subscribes to the session `session_uri` to follow the tool confirmations it waits on.
    pub async fn watch_input(&self, session_uri: &str) -> Result<InputWatch> {
        let channel = self
            .subscribe(
                session_uri,
                "subscribing to the session for its confirmations",
            )
            .await?;
        let SnapshotState::Session(state) = &channel.snapshot.state else {
            return Err(self.malformed(
                "subscribe",
                format!("the snapshot of {session_uri} is not a session"),
            ));
        };
        let initial = state
            .input_needed
            .iter()
            .flatten()
            .filter_map(|request| needed(session_uri, request))
            .collect();
        Ok(InputWatch {
            session: session_uri.to_owned(),
            channel,
            initial,
        })
    }
}

impl InputWatch {
    /// The confirmations pending when the watch began ([`InputChange::Needed`] each).
    pub fn take_initial(&mut self) -> Vec<InputChange> {
        std::mem::take(&mut self.initial)
    }

    /// The next change; `None` once the connection has ended.
    pub async fn next(&mut self) -> Option<InputChange> {
        loop {
            let SubscriptionEvent::Action(envelope) = self.channel.events.recv().await? else {
                continue;
            };
            // A refused action changed nothing; another channel's is not ours.
            if envelope.rejection_reason.is_some() || envelope.channel != self.session {
                continue;
            }
            match envelope.action {
                StateAction::SessionInputNeededSet(set) => {
                    if let Some(change) = needed(&self.session, &set.request) {
                        return Some(change);
                    }
                    // An entry replaced by one we do not answer (no longer a pending
                    // confirmation) is, for us, gone.
                    if let Some(request_id) = request_id(&set.request) {
                        return Some(InputChange::Removed { request_id });
                    }
                }
                StateAction::SessionInputNeededRemoved(removed) => {
                    return Some(InputChange::Removed {
                        request_id: removed.id,
                    });
                }
                _ => {}
            }
        }
    }
}

/// The entry's id, for the kinds whose shape we read.
fn request_id(request: &SessionInputRequest) -> Option<String> {
    match request {
        SessionInputRequest::ToolConfirmation(r) => Some(r.id.clone()),
        SessionInputRequest::ChatInput(r) => Some(r.id.clone()),
        SessionInputRequest::ToolClientExecution(r) => Some(r.id.clone()),
        SessionInputRequest::ToolAuthentication(r) => Some(r.id.clone()),
        SessionInputRequest::Unknown(raw) => {
            raw.get("id").and_then(|id| id.as_str()).map(str::to_owned)
        }
    }
}

/// A pending tool confirmation as an [`InputChange::Needed`]; `None` for anything else.
fn needed(session: &str, request: &SessionInputRequest) -> Option<InputChange> {
    let SessionInputRequest::ToolConfirmation(request) = request else {
        return None;
    };
    let ToolCallConfirmationState::PendingConfirmation(call) = &request.tool_call else {
        return None;
    };
    Some(InputChange::Needed {
        request_id: request.id.clone(),
        approval: Box::new(PendingApproval {
            session: session.to_owned(),
            chat: request.chat.clone(),
            turn_id: request.turn_id.clone(),
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            display_name: call.display_name.clone(),
            message: text_of(&call.invocation_message),
            title: call.confirmation_title.as_ref().map(text_of),
            options: call.options.clone().unwrap_or_default(),
        }),
    })
}

fn text_of(value: &StringOrMarkdown) -> String {
    match value {
        StringOrMarkdown::Plain(text) => text.clone(),
        StringOrMarkdown::Markdown { markdown } => markdown.clone(),
    }
}
