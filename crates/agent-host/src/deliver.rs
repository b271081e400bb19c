//! Delivering a message as a new turn in a session's default chat, and collecting its answer
//! (`docs/observed/copilot.md` §3.3-§3.6).
//!
//! The hand-over and the answer are two steps, because the caller records them apart:
//! [`HostConnection::deliver`] returns once the host echoed our `chat/turnStarted` (accepted),
//! echoed it with a `rejectionReason` (refused), or neither before the connection ended or the
//! wait ran out ([`Error::UnknownOutcome`]: it may have started, so it is never resent). Then
//! [`DeliveredTurn::answer`] collects the turn's markdown until it completes, fails or is
//! cancelled, within the caller's deadline.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use ahp::SubscriptionEvent;
use ahp_types::actions::{
    ActionEnvelope, ChatToolCallConfirmedAction, ChatToolCallReadyAction, ChatTurnStartedAction,
    StateAction,
};
use ahp_types::common::StringOrMarkdown;
use ahp_types::state::{
    ChatInteractivity, ChatState, ConfirmationOption, Message, MessageKind, MessageOrigin,
    ResponsePart, SessionInputRequest, SessionLifecycle, SessionState, SnapshotState,
    ToolCallCancellationReason, ToolCallConfirmationReason, ToolCallConfirmationState,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::client::{Channel, HostConnection};
use crate::error::{Error, Result};

/// How long to wait for the echo of a dispatched action unless told otherwise. A local host
/// echoes within milliseconds; past this the outcome is unknown.
const DEFAULT_ECHO_TIMEOUT: Duration = Duration::from_secs(15);

/// What to deliver, and where the turn's approvals go.
#[derive(Debug)]
pub struct DeliverRequest {
    session: String,
    text: String,
    echo_timeout: Duration,
    approvals: Option<mpsc::UnboundedSender<PendingApproval>>,
}

impl DeliverRequest {
    /// `text` as a new user turn in the default chat of the session `session_uri` (the URI
    /// exactly as the host lists it).
    pub fn new(session_uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            session: session_uri.into(),
            text: text.into(),
            echo_timeout: DEFAULT_ECHO_TIMEOUT,
            approvals: None,
        }
    }

    /// How long to wait for the host's echo before the outcome is unknown.
    pub fn echo_timeout(mut self, timeout: Duration) -> Self {
        self.echo_timeout = timeout;
        self
    }

    /// Where tool calls of this turn that wait for a confirmation are sent while
    /// [`DeliveredTurn::answer`] runs.
    pub fn approvals(mut self, sender: mpsc::UnboundedSender<PendingApproval>) -> Self {
        self.approvals = Some(sender);
        self
    }
}

/// A tool call of our turn that waits for the user's confirmation.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    pub session: String,
    pub chat: String,
    pub turn_id: String,
    pub tool_call_id: String,
    /// The internal tool name (`toolName`), empty when the host never said it.
    pub tool_name: String,
    /// The human-readable tool name (`displayName`).
    pub display_name: String,
    /// What the tool will do, in the host's words (`invocationMessage`).
    pub message: String,
    /// The confirmation's short title, when given (`confirmationTitle`).
    pub title: Option<String>,
    /// The choices the host offers; empty means a plain approve/deny.
    pub options: Vec<ConfirmationOption>,
}

/// Copilot's answer to a delivered turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub chat: String,
    pub turn_id: String,
    /// The turn's markdown parts, in order, joined by a blank line.
    pub text: String,
}

/// Whether our answer to a tool confirmation was the one that counted.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfirmOutcome {
    /// The host applied it.
    Applied,
    /// The host refused it, typically because the call was answered already (in the editor),
    /// in its words.
    Refused { reason: String },
}

/// A turn the host accepted; [`DeliveredTurn::answer`] collects its reply.
pub struct DeliveredTurn {
    conn: HostConnection,
    session: String,
    chat: String,
    turn_id: String,
    chat_channel: Channel,
    session_channel: Channel,
    approvals: Option<mpsc::UnboundedSender<PendingApproval>>,
}

impl std::fmt::Debug for DeliveredTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveredTurn")
            .field("session", &self.session)
            .field("chat", &self.chat)
            .field("turn_id", &self.turn_id)
            .finish()
    }
}

impl HostConnection {
    /// Starts a user turn with `request`'s text in its session's default chat and waits for
    /// the host to accept or refuse it. Refuses first, without sending anything, when the
    /// session is not ready, names no default chat, or the chat is busy or not interactive.
    pub async fn deliver(&self, request: DeliverRequest) -> Result<DeliveredTurn> {
        let session = request.session;
        let session_channel = self
            .subscribe(&session, "subscribing to the session")
            .await?;
        let state = match &session_channel.snapshot.state {
            SnapshotState::Session(state) => state,
            _ => {
                return Err(self.malformed(
                    "subscribe",
                    format!("the snapshot of {session} is not a session"),
                ));
            }
        };
        let chat = ready_default_chat(&session, state)?;
        let mut chat_channel = self
            .subscribe(&chat, "subscribing to the session's default chat")
            .await?;
        let chat_state = match &chat_channel.snapshot.state {
            SnapshotState::Chat(state) => state,
            _ => {
                return Err(
                    self.malformed("subscribe", format!("the snapshot of {chat} is not a chat"))
                );
            }
        };
        check_chat_takes_turn(&chat, chat_state)?;
        let (model, agent) = selection_of(chat_state);
        let from_seq = chat_channel.snapshot.from_seq;

        let turn_id = uuid::Uuid::new_v4().to_string();
        let action = StateAction::ChatTurnStarted(ChatTurnStartedAction {
            turn_id: turn_id.clone(),
            started_at: now_rfc3339(),
            message: Message {
                text: request.text,
                origin: MessageOrigin {
                    kind: MessageKind::User,
                },
                attachments: None,
                model,
                agent,
                meta: None,
            },
            queued_message_id: None,
            meta: None,
        });
        let client_seq = self
            .inner
            .client
            .dispatch(chat.clone(), action)
            .await
            // The frame never left: the connection had ended before it was queued.
            .map_err(|err| {
                self.inner
                    .client_error("dispatchAction", "handing the message over", err)
            })?
            .client_seq;
        match self
            .await_echo(
                &mut chat_channel,
                &chat,
                client_seq,
                from_seq,
                "chat/turnStarted",
                request.echo_timeout,
            )
            .await
        {
            Echo::Accepted => Ok(DeliveredTurn {
                conn: self.clone(),
                session,
                chat,
                turn_id,
                chat_channel,
                session_channel,
                approvals: request.approvals,
            }),
            Echo::Rejected(reason) => Err(Error::Rejected { chat, reason }),
            Echo::Unknown(why) => Err(Error::UnknownOutcome { chat, turn_id, why }),
        }
    }

    /// Answers a tool call waiting for confirmation (`chat/toolCallConfirmed`). `option` is
    /// the id of the host's own confirmation option that was chosen (`selectedOptionId`), when
    /// it offered some; `approved` must be that option's kind. The host applies only the first
    /// answer; a later one comes back refused.
    pub async fn confirm_tool_call(
        &self,
        chat: &str,
        turn_id: &str,
        tool_call_id: &str,
        approved: bool,
        option: Option<&str>,
    ) -> Result<ConfirmOutcome> {
        let mut channel = self
            .subscribe(chat, "subscribing to the chat to confirm a tool call")
            .await?;
        let from_seq = channel.snapshot.from_seq;
        let action = StateAction::ChatToolCallConfirmed(ChatToolCallConfirmedAction {
            turn_id: turn_id.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            meta: None,
            approved,
            confirmed: approved.then_some(ToolCallConfirmationReason::UserAction),
            reason: (!approved).then_some(ToolCallCancellationReason::Denied),
            edited_tool_input: None,
            user_suggestion: None,
            reason_message: None,
            selected_option_id: option.map(str::to_owned),
        });
        let client_seq = self
            .inner
            .client
            .dispatch(chat.to_owned(), action)
            .await
            .map_err(|err| {
                self.inner
                    .client_error("dispatchAction", "confirming a tool call", err)
            })?
            .client_seq;
        match self
            .await_echo(
                &mut channel,
                chat,
                client_seq,
                from_seq,
                "chat/toolCallConfirmed",
                DEFAULT_ECHO_TIMEOUT,
            )
            .await
        {
            Echo::Accepted => Ok(ConfirmOutcome::Applied),
            Echo::Rejected(reason) => Ok(ConfirmOutcome::Refused { reason }),
            Echo::Unknown(why) => Err(Error::UnknownOutcome {
                chat: chat.to_owned(),
                turn_id: turn_id.to_owned(),
                why,
            }),
        }
    }

    /// Waits for the echo of our dispatch: same channel, our `{clientId, clientSeq}`, the
    /// action type we sent, and a `serverSeq` past the snapshot we dispatched on (the
    /// `clientSeq` restarts at 1 on every connection, so the fence tells them apart).
    async fn await_echo(
        &self,
        channel: &mut Channel,
        chat: &str,
        client_seq: i64,
        from_seq: i64,
        action_type: &str,
        timeout: Duration,
    ) -> Echo {
        let deadline = Instant::now() + timeout;
        loop {
            let event = match tokio::time::timeout_at(deadline, channel.events.recv()).await {
                Err(_) => return Echo::Unknown(format!("no echo within {timeout:?}")),
                Ok(None) => {
                    return Echo::Unknown(format!(
                        "the connection ended before the echo: {}",
                        self.close_reason()
                    ));
                }
                Ok(Some(event)) => event,
            };
            let SubscriptionEvent::Action(envelope) = event else {
                continue;
            };
            let ours = envelope.channel == chat
                && envelope.origin.as_ref().is_some_and(|origin| {
                    origin.client_id == self.inner.client_id && origin.client_seq == client_seq
                })
                && i128::from(envelope.server_seq) > i128::from(from_seq)
                && action_type_of(&envelope.action).as_deref() == Some(action_type);
            if ours {
                return match envelope.rejection_reason {
                    Some(reason) => Echo::Rejected(reason),
                    None => Echo::Accepted,
                };
            }
        }
    }
}

enum Echo {
    Accepted,
    Rejected(String),
    Unknown(String),
}

/// The session's default chat, when the session can take a turn.
fn ready_default_chat(session: &str, state: &SessionState) -> Result<String> {
    match &state.lifecycle {
        SessionLifecycle::Ready => {}
        other => {
            return Err(Error::SessionNotReady {
                session: session.to_owned(),
                lifecycle: match other {
                    SessionLifecycle::Creating => "creating".to_owned(),
                    SessionLifecycle::Failed => "failed".to_owned(),
                    SessionLifecycle::Unknown(word) => word.clone(),
                    SessionLifecycle::Ready => "ready".to_owned(),
                },
            });
        }
    }
    let chat = state
        .default_chat
        .clone()
        .ok_or_else(|| Error::NoDefaultChat {
            session: session.to_owned(),
        })?;
    if !state.chats.iter().any(|summary| summary.resource == chat) {
        return Err(Error::ChatNotInSession {
            session: session.to_owned(),
            chat,
        });
    }
    Ok(chat)
}

fn check_chat_takes_turn(chat: &str, state: &ChatState) -> Result<()> {
    match state.interactivity {
        None | Some(ChatInteractivity::Full) => {}
        Some(ChatInteractivity::ReadOnly) => {
            return Err(Error::ChatNotInteractive {
                chat: chat.to_owned(),
                interactivity: "read-only".to_owned(),
            });
        }
        Some(ChatInteractivity::Hidden) => {
            return Err(Error::ChatNotInteractive {
                chat: chat.to_owned(),
                interactivity: "hidden".to_owned(),
            });
        }
    }
    if let Some(active) = &state.active_turn {
        return Err(Error::ChatBusy {
            chat: chat.to_owned(),
            turn: active.id.clone(),
        });
    }
    Ok(())
}

/// The chat's own model and agent selection, as its running or latest turn carries them,
/// passed on unchanged so our turn runs the way the user's would.
fn selection_of(
    state: &ChatState,
) -> (
    Option<ahp_types::state::ModelSelection>,
    Option<ahp_types::state::AgentSelection>,
) {
    let message = state
        .active_turn
        .as_ref()
        .map(|turn| &turn.message)
        .or_else(|| state.turns.last().map(|turn| &turn.message));
    match message {
        Some(message) => (message.model.clone(), message.agent.clone()),
        None => (None, None),
    }
}

fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

/// The `type` of an action, also for one `ahp-types` could not read (`Unknown`).
fn action_type_of(action: &StateAction) -> Option<String> {
    match action {
        StateAction::Unknown(raw) => raw.get("type").and_then(|t| t.as_str()).map(str::to_owned),
        known => serde_json::to_value(known)
            .ok()
            .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned)),
    }
}

fn text_of(value: &StringOrMarkdown) -> String {
    match value {
        StringOrMarkdown::Plain(text) => text.clone(),
        StringOrMarkdown::Markdown { markdown } => markdown.clone(),
    }
}

/// How a turn ended, as far as the answer goes.
enum End {
    Complete,
    Failed(String),
    Cancelled,
}

/// The answer as it streams: markdown parts by id, in the order they were created.
#[derive(Default)]
struct Collected {
    order: Vec<String>,
    parts: HashMap<String, String>,
    /// `toolCallId` → (`toolName`, `displayName`) from `chat/toolCallStart`.
    tools: HashMap<String, (String, String)>,
    surfaced: HashSet<String>,
}

impl Collected {
    fn text(&self) -> String {
        self.order
            .iter()
            .filter_map(|id| self.parts.get(id))
            .filter(|text| !text.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

impl DeliveredTurn {
    /// The turn's id (ours, fresh for each delivery).
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The chat the turn runs in (the session's default chat).
    pub fn chat(&self) -> &str {
        &self.chat
    }

    /// Collects the turn's answer until `chat/turnComplete`; `chat/error` and
    /// `chat/turnCancelled` fail with the host's words, and nothing is waited on past
    /// `timeout`. Tool calls waiting for a confirmation go to the request's approvals sender.
    pub async fn answer(mut self, timeout: Duration) -> Result<Answer> {
        let deadline = Instant::now() + timeout;
        let mut collected = Collected::default();
        let mut session_open = true;
        loop {
            let next = tokio::select! {
                event = self.chat_channel.events.recv() => Source::Chat(event),
                event = self.session_channel.events.recv(), if session_open => Source::Session(event),
                () = tokio::time::sleep_until(deadline) => Source::Deadline,
            };
            match next {
                Source::Deadline => {
                    return Err(self.no_answer(format!("it did not end within {timeout:?}")));
                }
                Source::Chat(None) => {
                    return Err(self.no_answer(format!(
                        "the connection ended before the turn did: {}",
                        self.conn.close_reason()
                    )));
                }
                Source::Session(None) => session_open = false,
                Source::Chat(Some(SubscriptionEvent::Action(envelope))) => {
                    if let Some(end) = self.on_chat_action(envelope, &mut collected) {
                        return match end {
                            End::Complete => Ok(Answer {
                                chat: self.chat.clone(),
                                turn_id: self.turn_id.clone(),
                                text: collected.text(),
                            }),
                            End::Failed(message) => Err(Error::TurnFailed {
                                chat: self.chat.clone(),
                                turn_id: self.turn_id.clone(),
                                message,
                            }),
                            End::Cancelled => Err(Error::TurnCancelled {
                                chat: self.chat.clone(),
                                turn_id: self.turn_id.clone(),
                            }),
                        };
                    }
                }
                Source::Session(Some(SubscriptionEvent::Action(envelope))) => {
                    self.on_session_action(envelope, &mut collected);
                }
                Source::Chat(Some(_)) | Source::Session(Some(_)) => {}
            }
        }
    }

    fn no_answer(&self, why: String) -> Error {
        Error::NoAnswer {
            chat: self.chat.clone(),
            turn_id: self.turn_id.clone(),
            why,
        }
    }

    fn on_chat_action(&self, envelope: ActionEnvelope, collected: &mut Collected) -> Option<End> {
        // A refused action changed nothing.
        if envelope.rejection_reason.is_some() || envelope.channel != self.chat {
            return None;
        }
        let ours = |turn_id: &str| turn_id == self.turn_id;
        match envelope.action {
            StateAction::ChatResponsePart(a) if ours(&a.turn_id) => {
                if let ResponsePart::Markdown(part) = a.part {
                    collected.order.push(part.id.clone());
                    collected.parts.insert(part.id, part.content);
                }
            }
            StateAction::ChatDelta(a) if ours(&a.turn_id) => {
                // Deltas only append to markdown parts we saw created; reasoning and other
                // parts are not answer text.
                if let Some(text) = collected.parts.get_mut(&a.part_id) {
                    text.push_str(&a.content);
                }
            }
            StateAction::ChatToolCallStart(a) if ours(&a.turn_id) => {
                collected
                    .tools
                    .insert(a.tool_call_id, (a.tool_name, a.display_name));
            }
            StateAction::ChatToolCallReady(a) if ours(&a.turn_id) && a.confirmed.is_none() => {
                self.surface_ready(a, collected);
            }
            StateAction::ChatTurnComplete(a) if ours(&a.turn_id) => return Some(End::Complete),
            StateAction::ChatTurnCancelled(a) if ours(&a.turn_id) => return Some(End::Cancelled),
            StateAction::ChatError(a) if ours(&a.turn_id) => {
                return Some(End::Failed(a.part.error.message));
            }
            // A known type whose fields drifted parses as `Unknown`: the ends of a turn are
            // still recognised by `type` and `turnId`, so a drift never means waiting forever.
            StateAction::Unknown(raw) => {
                if raw.get("turnId").and_then(|t| t.as_str()) != Some(self.turn_id.as_str()) {
                    return None;
                }
                match raw.get("type").and_then(|t| t.as_str()) {
                    Some("chat/turnComplete") => return Some(End::Complete),
                    Some("chat/turnCancelled") => return Some(End::Cancelled),
                    Some("chat/error") => {
                        let message = raw
                            .pointer("/part/error/message")
                            .and_then(|m| m.as_str())
                            .unwrap_or("the host reported an error it did not describe");
                        return Some(End::Failed(message.to_owned()));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        None
    }

    fn surface_ready(&self, ready: ChatToolCallReadyAction, collected: &mut Collected) {
        let (tool_name, display_name) = collected
            .tools
            .get(&ready.tool_call_id)
            .cloned()
            .unwrap_or_default();
        self.surface(
            collected,
            PendingApproval {
                session: self.session.clone(),
                chat: self.chat.clone(),
                turn_id: self.turn_id.clone(),
                tool_call_id: ready.tool_call_id,
                tool_name,
                display_name,
                message: text_of(&ready.invocation_message),
                title: ready.confirmation_title.as_ref().map(text_of),
                options: ready.options.unwrap_or_default(),
            },
        );
    }

    fn on_session_action(&self, envelope: ActionEnvelope, collected: &mut Collected) {
        if envelope.rejection_reason.is_some() {
            return;
        }
        let StateAction::SessionInputNeededSet(set) = envelope.action else {
            return;
        };
        let SessionInputRequest::ToolConfirmation(request) = set.request else {
            return;
        };
        if request.chat != self.chat || request.turn_id != self.turn_id {
            return;
        }
        let ToolCallConfirmationState::PendingConfirmation(call) = request.tool_call else {
            return;
        };
        self.surface(
            collected,
            PendingApproval {
                session: self.session.clone(),
                chat: self.chat.clone(),
                turn_id: self.turn_id.clone(),
                tool_call_id: call.tool_call_id,
                tool_name: call.tool_name,
                display_name: call.display_name,
                message: text_of(&call.invocation_message),
                title: call.confirmation_title.as_ref().map(text_of),
                options: call.options.unwrap_or_default(),
            },
        );
    }

    /// Sends an approval once per tool call, whichever channel told of it first.
    fn surface(&self, collected: &mut Collected, approval: PendingApproval) {
        if !collected.surfaced.insert(approval.tool_call_id.clone()) {
            return;
        }
        if let Some(sender) = &self.approvals {
            // A receiver that went away no longer wants approvals; the turn goes on.
            let _ = sender.send(approval);
        }
    }
}

enum Source {
    Chat(Option<SubscriptionEvent>),
    Session(Option<SubscriptionEvent>),
    Deadline,
}
