//! Sessions from the phone: `/sessions` cards, prompts and files sent to a session, forum
//! topics, and the Hand off button.
//!
//! The bot does not know the hub: the daemon gives it a [`SessionHost`] (a small blocking
//! trait; `docs/architecture.md`, layering) that lists the live sessions, sends a prompt as a
//! delivery from "telegram", reports that delivery's answer, and runs a handoff. Everything
//! that calls the host runs in a task of its own, off the poller's loop, so a slow store read,
//! a long turn or a handoff never holds up the next update (or the next tap).
//!
//! Where a message goes, first match wins: a reply to a session card; a message in a session's
//! topic (forum supergroups); the chat's next message after Prompt was tapped; the session the
//! chat is focused on (Focus). A photo or a document goes the same way: it is saved in the
//! session's inbox ([`crate::inbox`]) and the prompt names its path. In a forum supergroup each
//! session gets its topic ([`crate::topics`]) on its first activity there, and everything about
//! it (its card, the receipt, the answer) is posted into that topic.
//!
//! Every step is a decision line: `telegram_prompt` (sent, refused), `telegram_file` (saved,
//! refused), `telegram_topic` (created, failed), `telegram_handoff` (done, failed).
//!
//! Nothing here sends by itself: cards, receipts, answers and notices go out through the bot's
//! [`OutboundQueue`] (in order with the notifications of the same chat, 429s waited out, a parse
//! error retried as plain text, secrets scrubbed; each a `telegram_delivery` line), in the
//! session's topic when there is one; a card waits for its message id, for replies to it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_protocol::timestamp::now_rfc3339;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::{CallbackQuery, Message, ParseMode, TelegramApi};
use crate::cards::{self, Action, Keys};
use crate::desk_store::{self, CardRef, ChatTarget, DeskFile, Relay};
use crate::error::Error;
use crate::queue::{OutboundQueue, Outgoing};
use crate::text::escape_html;
use crate::{inbox, topics};

/// How often a prompt's delivery is looked at for its answer.
const ANSWER_POLL: Duration = Duration::from_secs(1);
/// How long an answer is waited for before the chat is told to look in the session itself
/// (a delivery's own limit is an inactivity timeout, so a turn may run this long).
const ANSWER_WAIT: Duration = Duration::from_secs(6 * 60 * 60);
/// How many cards are remembered for replies (the oldest forgotten first).
pub(crate) const MAX_CARDS: usize = 4096;
/// The most destinations a Hand off offers as buttons.
const MAX_DESTINATIONS: usize = 24;

/// A session as the bot names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SessionRef {
    /// `claude`, `codex`, `grok`.
    pub agent: String,
    pub session_id: String,
    #[serde(default)]
    pub title: Option<String>,
    /// Its working directory, where files from the phone are saved.
    #[serde(default)]
    pub cwd: Option<String>,
}

impl SessionRef {
    /// The title, else the first 8 characters of the id.
    pub fn label(&self) -> String {
        match self.title.as_deref().map(str::trim) {
            Some(title) if !title.is_empty() => title.to_owned(),
            _ => format!(
                "session {}",
                self.session_id.chars().take(8).collect::<String>()
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    Working,
    Idle,
    AwaitingApproval,
}

/// One live session, for its card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSession {
    pub session: SessionRef,
    pub state: SessionState,
    pub last_answer_head: Option<String>,
    /// When it last did something (RFC 3339).
    pub last_activity: Option<String>,
}

/// A prompt the hub accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptReceipt {
    pub delivery_id: String,
    /// How it travels: `panel` or `headless_cli`.
    pub transport: String,
}

/// Where a prompt's delivery stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Not answered yet.
    Waiting,
    Answered(String),
    Failed(String),
}

/// A place a session can be handed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// What `handoff --to` takes: `chat:ID`, `app:NAME`, `cli:NAME`.
    pub id: String,
    pub label: String,
}

/// What the daemon does for the bot. Blocking: the bot calls it from blocking tasks. An error is
/// a sentence for the person on the phone.
pub trait SessionHost: Send + Sync + 'static {
    /// The live sessions of every agent, newest first.
    fn live_sessions(&self) -> Result<Vec<LiveSession>, String>;
    /// Sends `text` to `session` through the hub, as a delivery from "telegram".
    fn prompt(&self, session: &SessionRef, text: &str) -> Result<PromptReceipt, String>;
    /// Where delivery `delivery_id` stands.
    fn progress(&self, delivery_id: &str) -> Progress;
    /// Where `session` can be handed (`handoff destinations`).
    fn destinations(&self, session: &SessionRef) -> Result<Vec<Destination>, String>;
    /// Hands `session` to `destination`; says what was done.
    fn hand_off(&self, session: &SessionRef, destination: &str) -> Result<String, String>;
    /// What happens to the hub's deliveries from now on, typed and in process; `None` when the
    /// host has no engine to listen to. Not blocking.
    fn engine_events(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<cross_agent_protocol::events::EngineEvent>> {
        None
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Default)]
struct DeskState {
    keys: Keys,
    /// (chat, message) of each card posted, for replies to it.
    cards: HashMap<(i64, i64), SessionRef>,
    card_order: VecDeque<(i64, i64)>,
    /// After Prompt: the chat's next message goes there.
    awaiting: HashMap<i64, SessionRef>,
    /// After Focus: every plain message of the chat goes there.
    focus: HashMap<i64, SessionRef>,
    /// Prompts whose answer goes back to a chat, oldest first.
    relays: Vec<Relay>,
}

impl DeskState {
    fn to_file(&self) -> DeskFile {
        let targets = |map: &HashMap<i64, SessionRef>| {
            let mut list: Vec<ChatTarget> = map
                .iter()
                .map(|(chat, session)| ChatTarget {
                    chat_id: *chat,
                    session: session.clone(),
                })
                .collect();
            list.sort_by_key(|t| t.chat_id);
            list
        };
        DeskFile {
            keys: self.keys.entries(),
            cards: self
                .card_order
                .iter()
                .filter_map(|at| {
                    Some(CardRef {
                        chat_id: at.0,
                        message_id: at.1,
                        session: self.cards.get(at)?.clone(),
                    })
                })
                .collect(),
            awaiting: targets(&self.awaiting),
            focus: targets(&self.focus),
            relays: self.relays.clone(),
        }
    }

    fn from_file(file: DeskFile) -> DeskState {
        let mut state = DeskState {
            keys: Keys::restore(file.keys),
            ..DeskState::default()
        };
        for card in file.cards {
            let at = (card.chat_id, card.message_id);
            if state.cards.insert(at, card.session).is_none() {
                state.card_order.push_back(at);
            }
        }
        state.awaiting = file
            .awaiting
            .into_iter()
            .map(|t| (t.chat_id, t.session))
            .collect();
        state.focus = file
            .focus
            .into_iter()
            .map(|t| (t.chat_id, t.session))
            .collect();
        state.relays = file.relays;
        state
    }
}

/// Where in Telegram something is said.
#[derive(Debug, Clone, Copy)]
struct Place {
    chat: i64,
    thread: Option<i64>,
    is_forum: bool,
}

/// The bot's session side; held by [`crate::Bot`].
pub(crate) struct Desk {
    home: PathBuf,
    decisions: DecisionLog,
    host: OnceLock<Arc<dyn SessionHost>>,
    state: Mutex<DeskState>,
    /// One topic per session: creations are one at a time.
    topic_lock: tokio::sync::Mutex<()>,
    /// `desk.json` writes, one at a time (each writes the state as it is when it runs, so the
    /// last one to run leaves the newest state).
    save_lock: Mutex<()>,
    /// The poller's stop: set once this daemon lets go of the bot, after which a successor
    /// relays the answers still awaited and this one posts nothing more.
    stop: Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
}

fn kind(name: &'static str) -> DecisionKind {
    DecisionKind::new(name)
}

fn is_sessions_command(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    first == "/sessions" || first.starts_with("/sessions@")
}

impl Desk {
    pub(crate) fn new(home: &Path, decisions: DecisionLog) -> Desk {
        Desk {
            home: home.to_owned(),
            decisions,
            host: OnceLock::new(),
            state: Mutex::new(DeskState::default()),
            topic_lock: tokio::sync::Mutex::new(()),
            save_lock: Mutex::new(()),
            stop: Mutex::new(None),
        }
    }

    /// Stores what must survive a restart (see [`crate::desk_store`]). The state is copied
    /// under the desk's lock and written after it is let go.
    fn save(&self) {
        let _one_at_a_time = lock(&self.save_lock);
        let mut file = lock(&self.state).to_file();
        if let Err(error) = desk_store::write(&self.home, &mut file) {
            tracing::warn!(%error, "could not save the telegram desk");
        }
    }

    /// Whether this daemon has let go of the bot.
    fn stopped(&self) -> bool {
        lock(&self.stop).as_ref().is_some_and(|stop| *stop.borrow())
    }

    /// Called when this daemon starts polling the bot (it holds the token's lock): takes back
    /// the cards, buttons, Prompt and Focus a previous daemon left in `desk.json`, and waits
    /// again for the answers it had not relayed yet. Stops relaying once `stop` is set.
    pub(crate) fn resume<A>(
        self: &Arc<Self>,
        out: &OutboundQueue<A>,
        stop: tokio::sync::watch::Receiver<bool>,
    ) where
        A: TelegramApi + Clone + 'static,
    {
        *lock(&self.stop) = Some(stop);
        let file = match desk_store::read(&self.home) {
            Ok(file) => file,
            Err(error) => {
                // Buttons of old cards answer "expired"; nothing else is lost.
                tracing::warn!(%error, "could not read the telegram desk; starting afresh");
                return;
            }
        };
        let pending: Vec<Relay> = file
            .relays
            .iter()
            .filter(|r| r.relayed_at_ms.is_none())
            .cloned()
            .collect();
        *lock(&self.state) = DeskState::from_file(file);
        for relay in pending {
            self.record(
                Decision::new(kind("telegram_prompt"), Outcome::new("rearmed"))
                    .session(relay.session.session_id.clone())
                    .agent(relay.session.agent.clone())
                    .detail("chat_id", relay.chat_id)
                    .detail("delivery_id", relay.delivery_id.clone()),
            );
            let desk = Arc::clone(self);
            let out = out.clone();
            tokio::spawn(async move { desk.relay(&out, relay).await });
        }
    }

    /// Sets the host once; later calls are ignored.
    pub(crate) fn set_host(&self, host: Arc<dyn SessionHost>) {
        let _ = self.host.set(host);
    }

    fn host(&self) -> Option<Arc<dyn SessionHost>> {
        self.host.get().cloned()
    }

    /// The host's event stream from now on (see [`SessionHost::engine_events`]).
    pub(crate) fn engine_events(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<cross_agent_protocol::events::EngineEvent>> {
        self.host()?.engine_events()
    }

    fn record(&self, decision: Decision) {
        self.decisions.record(decision);
    }

    fn remember_card(&self, chat: i64, message: i64, session: &SessionRef) {
        let mut state = lock(&self.state);
        state.cards.insert((chat, message), session.clone());
        state.card_order.push_back((chat, message));
        while state.card_order.len() > MAX_CARDS {
            if let Some(old) = state.card_order.pop_front() {
                state.cards.remove(&old);
            }
        }
    }

    /// The session a message from a paired person is meant for.
    fn target_of(&self, message: &Message) -> Option<SessionRef> {
        let chat = message.chat.id;
        if let Some(reply) = &message.reply_to_message
            && let Some(session) = lock(&self.state).cards.get(&(chat, reply.message_id))
        {
            return Some(session.clone());
        }
        // Read before the desk's lock is taken: no file I/O under it.
        if let Some(thread) = message.message_thread_id {
            match topics::read(&self.home) {
                Ok(topics) => {
                    if let Some(topic) = topics.of_thread(chat, thread) {
                        return Some(topic.session.clone());
                    }
                }
                Err(error) => tracing::warn!(%error, "could not read the telegram topics"),
            }
        }
        let mut state = lock(&self.state);
        if let Some(session) = state.awaiting.remove(&chat) {
            return Some(session);
        }
        state.focus.get(&chat).cloned()
    }

    /// A message from a paired person (the poller checked the allowlist).
    pub(crate) async fn on_message<A>(
        self: &Arc<Self>,
        out: &OutboundQueue<A>,
        message: Message,
        awaiting_approval: HashSet<String>,
    ) where
        A: TelegramApi + Clone + 'static,
    {
        let place = Place {
            chat: message.chat.id,
            thread: message.message_thread_id,
            is_forum: message.chat.is_forum,
        };
        let text = message.text.as_deref().unwrap_or("").trim().to_owned();
        if is_sessions_command(&text) {
            let desk = Arc::clone(self);
            let out = out.clone();
            tokio::spawn(async move { desk.list(&out, place, None, &awaiting_approval).await });
            return;
        }
        let has_file = message.document.is_some() || !message.photo.is_empty();
        if text.starts_with('/') && !has_file {
            // Another command (`/pair` is the poller's); nothing to send anywhere.
            return;
        }
        let Some(session) = self.target_of(&message) else {
            if has_file || !text.is_empty() {
                say(
                    out,
                    place,
                    "Which session is this for? Send /sessions, then reply to a session's card \
                     (or tap its Prompt or Focus button).",
                );
            }
            return;
        };
        let desk = Arc::clone(self);
        let out = out.clone();
        if has_file {
            tokio::spawn(async move { desk.file(&out, place, session, message).await });
        } else if !text.is_empty() {
            tokio::spawn(async move { desk.prompt(&out, place, session, text).await });
        }
    }

    /// A tap on one of our session buttons (`s:<key>`) from a paired person.
    pub(crate) fn tap<A>(
        self: &Arc<Self>,
        out: &OutboundQueue<A>,
        query: &CallbackQuery,
        awaiting_approval: HashSet<String>,
    ) -> &'static str
    where
        A: TelegramApi + Clone + 'static,
    {
        let key = query
            .data
            .as_deref()
            .and_then(|d| d.strip_prefix("s:"))
            .unwrap_or("");
        let Some(action) = lock(&self.state).keys.get(key).cloned() else {
            return "This button has expired; send /sessions again";
        };
        let Some(message) = &query.message else {
            return "This card is too old to answer";
        };
        let place = Place {
            chat: message.chat.id,
            thread: message.message_thread_id,
            is_forum: message.chat.is_forum,
        };
        let desk = Arc::clone(self);
        let out = out.clone();
        match action {
            Action::Prompt(session) => {
                lock(&self.state)
                    .awaiting
                    .insert(place.chat, session.clone());
                tokio::spawn(async move {
                    desk.save();
                    let text = format!(
                        "✍️ Your next message here goes to <b>{}</b>.",
                        escape_html(&cards::header(&session))
                    );
                    say(&out, place, &text);
                });
                "Send the prompt"
            }
            Action::Focus(session) => {
                lock(&self.state).focus.insert(place.chat, session.clone());
                tokio::spawn(async move {
                    desk.save();
                    let text = format!(
                        "🎯 Plain messages in this chat now go to <b>{}</b> (Focus on another \
                         card to change it).",
                        escape_html(&cards::header(&session))
                    );
                    say(&out, place, &text);
                });
                "Focused"
            }
            Action::Status(session) => {
                tokio::spawn(async move {
                    desk.list(&out, place, Some(&session), &awaiting_approval)
                        .await
                });
                "Status"
            }
            Action::HandOff(session) => {
                tokio::spawn(async move { desk.offer_destinations(&out, place, session).await });
                "Where to?"
            }
            Action::HandOffTo(session, destination) => {
                tokio::spawn(async move { desk.hand_off(&out, place, session, destination).await });
                "Handing off"
            }
        }
    }

    /// Posts the cards of the live sessions (or of `only` that one).
    async fn list<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        only: Option<&SessionRef>,
        awaiting_approval: &HashSet<String>,
    ) {
        let Some(host) = self.host() else {
            say(out, place, "Sessions are not available on this daemon.");
            return;
        };
        let listed = tokio::task::spawn_blocking(move || host.live_sessions())
            .await
            .unwrap_or_else(|e| Err(format!("the session listing failed: {e}")));
        let mut sessions = match listed {
            Ok(sessions) => sessions,
            Err(reason) => {
                say(
                    out,
                    place,
                    &format!("Could not list the sessions: {}", escape_html(&reason)),
                );
                return;
            }
        };
        if let Some(only) = only {
            sessions.retain(|s| {
                s.session.agent == only.agent && s.session.session_id == only.session_id
            });
            if sessions.is_empty() {
                let text = format!(
                    "<b>{}</b> is not live any more (no activity in the window /sessions shows).",
                    escape_html(&cards::header(only))
                );
                say(out, place, &text);
                return;
            }
        }
        if sessions.is_empty() {
            say(
                out,
                place,
                "No live sessions: none of Claude Code, Codex or Grok was active in the last 24 hours.",
            );
            return;
        }
        for mut live in sessions {
            if awaiting_approval.contains(&live.session.session_id) {
                live.state = SessionState::AwaitingApproval;
            }
            let thread = self.thread_for(out, place, &live.session).await;
            let markup = cards::card_markup(&mut lock(&self.state).keys, &live.session);
            let html = cards::card_html(&live);
            // Sent through the queue (in order with the rest of the chat, 429s waited out),
            // waiting for the message id that replies to the card are matched by.
            let sent = out
                .send(
                    place.chat,
                    Outgoing::Text {
                        text: html,
                        mode: ParseMode::Html,
                        markup: Some(markup),
                        thread,
                    },
                    "session_card",
                )
                .await;
            if let Ok(message) = sent {
                self.remember_card(place.chat, message.message_id, &live.session);
            }
        }
        // The cards' buttons and replies work after a restart.
        self.save();
    }

    /// Where things about `session` are posted: its topic in a forum (made on first use),
    /// else where the person wrote.
    async fn thread_for<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: &SessionRef,
    ) -> Option<i64> {
        if !place.is_forum {
            return None;
        }
        self.ensure_topic(out, place.chat, session)
            .await
            .or(place.thread)
    }

    /// The topic of `session` in forum `chat`, created (once) if it has none.
    async fn ensure_topic<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        chat: i64,
        session: &SessionRef,
    ) -> Option<i64> {
        let _one_at_a_time = self.topic_lock.lock().await;
        let mut stored = match topics::read(&self.home) {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(%error, "could not read the telegram topics");
                return None;
            }
        };
        if let Some(topic) = stored.of_session(chat, &session.agent, &session.session_id) {
            return Some(topic.thread_id);
        }
        let name = topics::name_of(session);
        let topic_decision = |outcome: &'static str| {
            Decision::new(kind("telegram_topic"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", chat)
                .detail("name", name.clone())
        };
        match out.api().create_forum_topic(chat, &name).await {
            Ok(topic) => {
                stored.topics.push(topics::Topic {
                    chat_id: chat,
                    thread_id: topic.message_thread_id,
                    session: session.clone(),
                    name: name.clone(),
                    created_at: now_rfc3339(),
                });
                if let Err(error) = topics::write(&self.home, &stored) {
                    tracing::warn!(%error, "could not save the telegram topics");
                }
                self.record(topic_decision("created").detail("thread_id", topic.message_thread_id));
                Some(topic.message_thread_id)
            }
            Err(error) => {
                // The bot may not be an admin with "manage topics": the chat itself still works.
                self.record(topic_decision("failed").reason(error.to_string()));
                None
            }
        }
    }

    /// Sends `text` to `session` through the host, says so, then relays the answer.
    async fn prompt<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
        text: String,
    ) {
        let thread = self.thread_for(out, place, &session).await;
        let here = Place { thread, ..place };
        let header = escape_html(&cards::header(&session));
        let Some(host) = self.host() else {
            say(out, here, "Sessions are not available on this daemon.");
            return;
        };
        let chars = text.chars().count();
        let sent = {
            let host = Arc::clone(&host);
            let session = session.clone();
            tokio::task::spawn_blocking(move || host.prompt(&session, &text))
                .await
                .unwrap_or_else(|e| Err(format!("the send failed: {e}")))
        };
        let decision = |outcome: &'static str| {
            Decision::new(kind("telegram_prompt"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", place.chat)
                .detail("chars", chars)
        };
        let receipt = match sent {
            Ok(receipt) => receipt,
            Err(reason) => {
                // A Prompt this message used up is gone for good.
                self.save();
                self.record(decision("refused").reason(reason.clone()));
                let text = format!("❌ Not sent to <b>{header}</b>: {}", escape_html(&reason));
                say(out, here, &text);
                return;
            }
        };
        self.record(
            decision("sent")
                .detail("delivery_id", receipt.delivery_id.clone())
                .detail("transport", receipt.transport.clone()),
        );
        let relay = Relay {
            delivery_id: receipt.delivery_id.clone(),
            chat_id: here.chat,
            thread_id: here.thread,
            session: session.clone(),
            sent_at_ms: crate::poller::now_ms(),
            relayed_at_ms: None,
        };
        {
            let mut state = lock(&self.state);
            state.relays.push(relay.clone());
            desk_store::bound_relays(&mut state.relays);
        }
        // Stored before the receipt is posted: from here on a restart re-arms the wait.
        self.save();
        let route = if receipt.transport == "panel" {
            "into its panel"
        } else {
            "by resuming it headless"
        };
        let text = format!(
            "📨 Sent to <b>{header}</b> {route} (delivery <code>{}</code>). The answer comes here.",
            escape_html(&receipt.delivery_id)
        );
        say(out, here, &text);
        self.relay(out, relay).await;
    }

    /// Waits for the answer of `relay`'s delivery and posts it (or its failure) where the
    /// prompt was asked, once: marked relayed in `desk.json` first. Returns without posting
    /// when this daemon lets go of the bot (its successor re-arms the wait).
    async fn relay<A: TelegramApi + Clone + 'static>(&self, out: &OutboundQueue<A>, relay: Relay) {
        let Some(host) = self.host() else {
            return;
        };
        let here = Place {
            chat: relay.chat_id,
            thread: relay.thread_id,
            is_forum: relay.thread_id.is_some(),
        };
        let session = &relay.session;
        let header = escape_html(&cards::header(session));
        let waited_ms =
            u64::try_from(crate::poller::now_ms().saturating_sub(relay.sent_at_ms)).unwrap_or(0);
        let deadline =
            Instant::now() + ANSWER_WAIT.saturating_sub(Duration::from_millis(waited_ms));
        loop {
            if self.stopped() {
                return;
            }
            let progress = {
                let host = Arc::clone(&host);
                let id = relay.delivery_id.clone();
                tokio::task::spawn_blocking(move || host.progress(&id))
                    .await
                    .unwrap_or(Progress::Waiting)
            };
            let text = match progress {
                Progress::Answered(answer) => {
                    format!("💬 {}:\n\n{}", cards::header(session), answer.trim())
                }
                Progress::Failed(reason) => format!(
                    "❌ The prompt to <b>{header}</b> failed: {}",
                    escape_html(&reason)
                ),
                Progress::Waiting if Instant::now() >= deadline => format!(
                    "⌛ No answer from <b>{header}</b> after {} hours; it will be in the session.",
                    ANSWER_WAIT.as_secs() / 3600
                ),
                Progress::Waiting => {
                    tokio::time::sleep(ANSWER_POLL).await;
                    continue;
                }
            };
            if self.stopped() || !self.mark_relayed(&relay.delivery_id) {
                return;
            }
            if text.starts_with("💬") {
                say_long(out, here, &text);
            } else {
                say(out, here, &text);
            }
            return;
        }
    }

    /// Marks `delivery_id` relayed and stores it; false when it already was (or is unknown),
    /// so the answer is posted by whoever marked it first, and only once.
    fn mark_relayed(&self, delivery_id: &str) -> bool {
        {
            let mut state = lock(&self.state);
            let Some(relay) = state
                .relays
                .iter_mut()
                .find(|r| r.delivery_id == delivery_id && r.relayed_at_ms.is_none())
            else {
                return false;
            };
            relay.relayed_at_ms = Some(crate::poller::now_ms());
        }
        self.save();
        true
    }

    /// A photo or a document for `session`: saved in its inbox, then a prompt naming it.
    async fn file<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
        message: Message,
    ) {
        let thread = self.thread_for(out, place, &session).await;
        let here = Place { thread, ..place };
        let (file_id, name, declared) = match (&message.document, largest(&message.photo)) {
            (Some(document), _) => (
                document.file_id.clone(),
                document
                    .file_name
                    .clone()
                    .unwrap_or_else(|| "document".to_owned()),
                document.file_size,
            ),
            (None, Some(photo)) => (
                photo.file_id.clone(),
                "photo.jpg".to_owned(),
                photo.file_size,
            ),
            (None, None) => return,
        };
        match self
            .save_file(out, &session, &file_id, &name, declared)
            .await
        {
            Ok((path, size)) => {
                self.record(
                    Decision::new(kind("telegram_file"), Outcome::new("saved"))
                        .session(session.session_id.clone())
                        .agent(session.agent.clone())
                        .detail("chat_id", place.chat)
                        .detail("path", path.to_string_lossy().into_owned())
                        .detail("bytes", size),
                );
                let said = message
                    .caption
                    .as_deref()
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .unwrap_or("I sent you a file from my phone.");
                let prompt = format!(
                    "{said}\n\n(The file is saved at {} — {size} bytes. Read it from there.)",
                    path.display()
                );
                self.prompt(out, here, session, prompt).await;
            }
            Err(reason) => {
                self.record(
                    Decision::new(kind("telegram_file"), Outcome::new("refused"))
                        .session(session.session_id.clone())
                        .agent(session.agent.clone())
                        .detail("chat_id", place.chat)
                        .detail("name", name.clone())
                        .reason(reason.clone()),
                );
                let text = format!(
                    "📎 Not saved for <b>{}</b>: {} (the inbox takes files up to {} MB).",
                    escape_html(&cards::header(&session)),
                    escape_html(&reason),
                    inbox::MAX_FILE_BYTES / (1024 * 1024)
                );
                say(out, here, &text);
            }
        }
    }

    async fn save_file<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        session: &SessionRef,
        file_id: &str,
        name: &str,
        declared: Option<u64>,
    ) -> Result<(PathBuf, usize), String> {
        let too_big = |size: u64| {
            format!(
                "it is {size} bytes, more than the {} bytes the inbox takes",
                inbox::MAX_FILE_BYTES
            )
        };
        if let Some(size) = declared.filter(|s| *s > inbox::MAX_FILE_BYTES) {
            return Err(too_big(size));
        }
        let Some(cwd) = session.cwd.clone() else {
            return Err(
                "the session's directory is not known, so there is no inbox to put it in".into(),
            );
        };
        let file = out
            .api()
            .get_file(file_id)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(size) = file.file_size.filter(|s| *s > inbox::MAX_FILE_BYTES) {
            return Err(too_big(size));
        }
        let Some(path) = file.file_path else {
            return Err("Telegram gave no path to download it from".into());
        };
        let bytes = out
            .api()
            .download_file(&path, inbox::MAX_FILE_BYTES)
            .await
            .map_err(|e| match e {
                Error::TooLarge { .. } => "it is larger than the inbox takes".to_owned(),
                other => other.to_string(),
            })?;
        let size = bytes.len();
        let stamp = crate::poller::now_ms().to_string();
        let name = name.to_owned();
        let saved = tokio::task::spawn_blocking(move || {
            inbox::save(Path::new(&cwd), &stamp, &name, &bytes)
        })
        .await
        .map_err(|e| format!("saving failed: {e}"))?
        .map_err(|e| e.to_string())?;
        Ok((saved, size))
    }

    async fn offer_destinations<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
    ) {
        let header = escape_html(&cards::header(&session));
        let Some(host) = self.host() else {
            say(out, place, "Handoff is not available on this daemon.");
            return;
        };
        let found = {
            let session = session.clone();
            tokio::task::spawn_blocking(move || host.destinations(&session))
                .await
                .unwrap_or_else(|e| Err(format!("the lookup failed: {e}")))
        };
        let destinations = match found {
            Ok(d) if d.is_empty() => {
                let text = format!(
                    "Nowhere to hand <b>{header}</b> to: no other session, editor or CLI agent was found."
                );
                say(out, place, &text);
                return;
            }
            Ok(d) => d,
            Err(reason) => {
                let text = format!(
                    "Could not list where <b>{header}</b> can go: {}",
                    escape_html(&reason)
                );
                say(out, place, &text);
                return;
            }
        };
        let rows: Vec<Value> = {
            let mut state = lock(&self.state);
            destinations
                .iter()
                .take(MAX_DESTINATIONS)
                .map(|d| {
                    let label: String = d.label.chars().take(60).collect();
                    json!([cards::button(
                        &mut state.keys,
                        &label,
                        Action::HandOffTo(session.clone(), d.id.clone()),
                    )])
                })
                .collect()
        };
        self.save();
        let text = format!("🤝 Hand <b>{header}</b> to:");
        out.push_item(
            place.chat,
            Outgoing::Text {
                text,
                mode: ParseMode::Html,
                markup: Some(json!({"inline_keyboard": rows})),
                thread: place.thread,
            },
            "handoff_destinations",
        );
    }

    async fn hand_off<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        place: Place,
        session: SessionRef,
        destination: String,
    ) {
        let header = escape_html(&cards::header(&session));
        let Some(host) = self.host() else {
            say(out, place, "Handoff is not available on this daemon.");
            return;
        };
        let text = format!(
            "⏳ Handing <b>{header}</b> to <code>{}</code>: reading the session and writing HANDOFF.md…",
            escape_html(&destination)
        );
        say(out, place, &text);
        let result = {
            let session = session.clone();
            let destination = destination.clone();
            tokio::task::spawn_blocking(move || host.hand_off(&session, &destination))
                .await
                .unwrap_or_else(|e| Err(format!("the handoff task failed: {e}")))
        };
        let decision = |outcome: &'static str| {
            Decision::new(kind("telegram_handoff"), Outcome::new(outcome))
                .session(session.session_id.clone())
                .agent(session.agent.clone())
                .detail("chat_id", place.chat)
                .detail("destination", destination.clone())
        };
        let text = match result {
            Ok(done) => {
                self.record(decision("done"));
                format!("✅ Handed <b>{header}</b> over: {}", escape_html(&done))
            }
            Err(reason) => {
                self.record(decision("failed").reason(reason.clone()));
                format!(
                    "❌ The handoff of <b>{header}</b> failed: {}",
                    escape_html(&reason)
                )
            }
        };
        say(out, place, &text);
    }
}

/// The largest size of a photo: the most pixels, then the most bytes; of equals, the later
/// (Telegram lists the sizes smallest first).
fn largest(sizes: &[crate::api::PhotoSize]) -> Option<&crate::api::PhotoSize> {
    sizes
        .iter()
        .enumerate()
        .max_by_key(|(index, p)| {
            (
                u64::from(p.width) * u64::from(p.height),
                p.file_size.unwrap_or(0),
                *index,
            )
        })
        .map(|(_, p)| p)
}

/// Queues a short HTML message at `place` (its outcome is the queue's decision line).
fn say<A: TelegramApi + Clone + 'static>(out: &OutboundQueue<A>, place: Place, html: &str) {
    out.html_in(place.chat, place.thread, html, "session_notice");
}

/// Queues plain `text` (an answer: any length) at `place`, escaped and in pieces of at most
/// 4,096 characters, in order.
fn say_long<A: TelegramApi + Clone + 'static>(out: &OutboundQueue<A>, place: Place, text: &str) {
    out.text_in(place.chat, place.thread, text, "answer");
}
