//! Sessions from the phone: `/sessions` cards, prompts and files sent to a session, forum
//! topics, and the Hand off and Review buttons.
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
//! refused), `telegram_topic` (created, failed), `telegram_handoff` (done, failed),
//! `telegram_review` (the review's outcome, or failed), `telegram_correction` (sent, refused
//! with the guard's rule, failed).
//!
//! Nothing here sends by itself: cards, receipts, answers and notices go out through the bot's
//! [`OutboundQueue`] (in order with the notifications of the same chat, 429s waited out, a parse
//! error retried as plain text, secrets scrubbed; each a `telegram_delivery` line), in the
//! session's topic when there is one; a card waits for its message id, for replies to it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::api::{CallbackQuery, Message, TelegramApi};
use crate::cards::{self, Action, Keys};
use crate::desk_store::{self, CardRef, ChatTarget, DeskFile, Relay};
use crate::queue::OutboundQueue;
use crate::text::escape_html;
use crate::topics;

mod files;
mod handoff;
mod limits;
mod listing;
mod prompt;
mod review;

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
    /// What it has cost so far, one short line (`$1.23 · 45k tok`); `None` when its files
    /// record no usage.
    pub usage: Option<String>,
    /// Its git branch and the editor window it is in (`main · api - Visual Studio Code`), when
    /// known (`docs/desktop.md`).
    pub place: Option<String>,
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

/// What a review from the phone came to (the daemon's `cross-agent review`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReviewCard {
    /// The review's id (`rv_…`), what Send correction names.
    pub review_id: String,
    /// `verdict`, `unparseable`, `reviewer_failed` or `no_reviewer`.
    pub outcome: String,
    /// `on_track`, `drifting`, `off_track`, `blocked` (with a verdict).
    pub verdict: Option<String>,
    pub task: Option<String>,
    pub gaps: Vec<String>,
    pub correction: Option<String>,
    /// "provider model (family)".
    pub reviewer: Option<String>,
    /// Why there is no verdict (a failure, no reviewer configured).
    pub reason: Option<String>,
}

/// What became of a correction the guard was asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorrectionAnswer {
    /// It went into the session as delivery `delivery_id`.
    Sent { delivery_id: String },
    /// The guard refused it: the first rule that did, and why.
    Refused { rule: String, reason: String },
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
    /// Reviews `session` with a reviewer of another model family (blocking, up to minutes).
    fn review(&self, session: &SessionRef) -> Result<ReviewCard, String> {
        let _ = session;
        Err("review is not available on this daemon".to_owned())
    }
    /// Asks the escalation guard to send review `review_id`'s correction into `session`, as
    /// requested from Telegram.
    fn send_correction(
        &self,
        session: &SessionRef,
        review_id: &str,
    ) -> Result<CorrectionAnswer, String> {
        let _ = (session, review_id);
        Err("corrections are not available on this daemon".to_owned())
    }
    /// Codex's rate-limit windows as `cross-agent usage --limits` shows them, as text for the
    /// phone (blocking: it may read the stores).
    fn limits(&self) -> Result<String, String> {
        Err("usage is not available on this daemon".to_owned())
    }
    /// What happens to the hub's deliveries from now on, typed and in process; `None` when the
    /// host has no engine to listen to. Not blocking.
    fn engine_events(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<cross_agent_protocol::events::EngineEvent>> {
        None
    }
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
    is_command(text, "/sessions")
}

/// Whether `text` is `command`, alone or addressed to the bot (`/limits@our_bot`).
fn is_command(text: &str, command: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    first == command
        || first
            .strip_prefix(command)
            .is_some_and(|rest| rest.starts_with('@'))
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
        let _one_at_a_time = self.save_lock.lock();
        let mut file = self.state.lock().to_file();
        if let Err(error) = desk_store::write(&self.home, &mut file) {
            tracing::warn!(%error, "could not save the telegram desk");
        }
    }

    /// Whether this daemon has let go of the bot.
    fn stopped(&self) -> bool {
        self.stop.lock().as_ref().is_some_and(|stop| *stop.borrow())
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
        *self.stop.lock() = Some(stop);
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
        *self.state.lock() = DeskState::from_file(file);
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
        let mut state = self.state.lock();
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
            && let Some(session) = self.state.lock().cards.get(&(chat, reply.message_id))
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
        let mut state = self.state.lock();
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
        if is_command(&text, "/limits") {
            let desk = Arc::clone(self);
            let out = out.clone();
            tokio::spawn(async move { desk.limits(&out, place).await });
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
        let Some(action) = self.state.lock().keys.get(key).cloned() else {
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
                self.state
                    .lock()
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
                self.state.lock().focus.insert(place.chat, session.clone());
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
            Action::Review(session) => {
                tokio::spawn(async move { desk.review(&out, place, session).await });
                "Reviewing"
            }
            Action::SendCorrection(session, review_id) => {
                tokio::spawn(
                    async move { desk.send_correction(&out, place, session, review_id).await },
                );
                "Asking the guard"
            }
        }
    }
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
