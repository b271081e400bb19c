//! [`Bot`]: what the daemon holds of its Telegram bot. It runs the poller ([`Bot::supervise`])
//! and answers hook calls ([`Bot::hook`]): a `PreToolUse` goes through the [`gate`];
//! an escalation is posted to every paired chat with Allow / Deny buttons showing what the call
//! would do (the full command, or the diff for a file tool) and waits for a tap, at most the
//! approval wait; the first tap wins and the messages are edited so they cannot be answered
//! again. No tap in time: `"ask"` (the editor's own prompt). Every verdict is a decision line.
//! Every hook event also feeds [`crate::notify`]. While the poller runs, the bot also watches
//! the panels' approval requests (`panel_approvals`) and failed deliveries, and every message
//! goes out through the per-chat [`crate::queue`], scrubbed of secrets.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_protocol::hook::{HookParams, HookResponse};
use cross_agent_protocol::settings as var;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::api::{HttpApi, Message, ParseMode, TelegramApi};
use crate::approval_card::{ApprovalCard, Rendered};
use crate::gate::{self, Gate, Verdict};
use crate::limit::{EditLimiter, edit_text};
use crate::queue::{OutboundQueue, Outgoing};
use crate::secrets::Scrubber;
use crate::text::escape_html;
use crate::{poller, store};

/// How long an escalated call waits for a tap by default.
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(120);

/// How often the daemon looks for a newly set-up token, or for a lock another poller let go.
const SUPERVISE_PAUSE: Duration = Duration::from_secs(1);

/// A tap: allowed or not, which of the card's own choices (its index) when it has some, and by
/// whom.
#[derive(Debug, Clone, Copy)]
pub struct Tap {
    pub allow: bool,
    pub choice: Option<usize>,
    pub user_id: i64,
}

struct Pending {
    answer: Option<oneshot::Sender<Tap>>,
    posted: Vec<(i64, i64)>,
    summary: String,
    /// The session that waits, for its card's "awaiting approval".
    session: String,
    /// The card's own choices: what an `o:` tap picks.
    choices: Vec<crate::approval_card::Choice>,
}

struct Inner {
    home: PathBuf,
    decisions: DecisionLog,
    approval_wait: Duration,
    /// The client, while this daemon's poller runs (without it nothing reaches the phone).
    api: Mutex<Option<HttpApi>>,
    /// Every outbound message goes through it (per-chat order, 429s waited out); with `api`.
    queue: Mutex<Option<OutboundQueue<HttpApi>>>,
    /// The token and `CROSS_AGENT_CHILD_ENV` values, kept out of every message and decision.
    scrubber: Mutex<Scrubber>,
    pending: Mutex<HashMap<String, Pending>>,
    edits: EditLimiter,
    /// Session cards, prompts, files, topics and handoffs from the phone.
    desk: Arc<crate::sessions::Desk>,
    /// What the hooks told of each Claude session (see [`crate::notify`]).
    hook_sessions: Mutex<HashMap<String, crate::notify::HookSession>>,
    /// Told when a chat pairs: approvals that found nobody to ask are offered then.
    paired: tokio::sync::Notify,
    /// Approvals held for a linked daemon's bot when this one cannot ask.
    held: crate::link_approvals::Held,
}

/// The daemon's bot; cheap to clone.
#[derive(Clone)]
pub struct Bot {
    inner: Arc<Inner>,
}

/// A bot held without keeping it alive: what an object the bot itself holds (its session host)
/// keeps of it, so the two do not keep each other — and the daemon's store — alive past
/// shutdown.
#[derive(Clone)]
pub struct WeakBot {
    inner: std::sync::Weak<Inner>,
}

impl WeakBot {
    /// The bot, while it still exists.
    pub fn upgrade(&self) -> Option<Bot> {
        self.inner.upgrade().map(|inner| Bot { inner })
    }
}

impl std::fmt::Debug for WeakBot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakBot").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Bot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bot")
            .field("home", &self.inner.home)
            .finish_non_exhaustive()
    }
}

fn hook_answer(decision: &str, reason: &str) -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }})
}

impl Bot {
    /// The bot of `home`, its approval wait read from `var` (`CROSS_AGENT_APPROVAL_WAIT`).
    pub fn new(home: &Path, var: impl Fn(&str) -> Option<String>) -> Bot {
        let approval_wait = var(var::APPROVAL_WAIT)
            .and_then(|v| v.trim().parse().ok())
            .map_or(DEFAULT_APPROVAL_WAIT, Duration::from_secs);
        // The daemon's: a home deleted under it is not re-created by a decision.
        let decisions = DecisionLog::in_existing_home(home);
        Bot {
            inner: Arc::new(Inner {
                home: home.to_owned(),
                decisions: decisions.clone(),
                approval_wait,
                api: Mutex::new(None),
                queue: Mutex::new(None),
                // Secrets are scrubbed from the first hook on (the token is added again
                // when the poller starts, for one set up since).
                scrubber: Mutex::new(Scrubber::new(
                    store::read_token(home).ok().flatten().as_deref(),
                    &var,
                )),
                pending: Mutex::new(HashMap::new()),
                edits: EditLimiter::default(),
                desk: Arc::new(crate::sessions::Desk::new(home, decisions)),
                hook_sessions: Mutex::new(HashMap::new()),
                paired: tokio::sync::Notify::new(),
                held: crate::link_approvals::Held::default(),
            }),
        }
    }

    pub(crate) fn held(&self) -> &crate::link_approvals::Held {
        &self.inner.held
    }

    pub(crate) fn record(&self, decision: Decision) {
        self.inner.decisions.record(decision);
    }

    /// Runs for the daemon's whole life: once a token is stored, takes that token's lock
    /// (waiting while another poller, maybe another daemon's, holds it) and polls until `stop`.
    pub async fn supervise(self, stop: watch::Receiver<bool>) {
        let home = self.inner.home.clone();
        let config = poller::PollerConfig::from_vars(|name| std::env::var(name).ok());
        let mut told_locked = false;
        // The hub's events from the start, not from when the token is ours: a failure a
        // replaced daemon forwards while its poller lets go of the token is still told.
        let mut engine_events = self.engine_events();
        // The panels are watched for the daemon's whole life, not only while a poller runs:
        // with no bot here that can ask, their requests are held for a linked daemon's
        // (docs/remote.md, "What the phone sees").
        tokio::spawn(crate::panel_approvals::watch(self.clone(), stop.clone()));
        loop {
            if *stop.borrow() {
                return;
            }
            if let Some(token) = store::read_token(&home).ok().flatten() {
                let held = {
                    let token = token.clone();
                    tokio::task::spawn_blocking(move || poller::lock_token(&token)).await
                };
                match held {
                    Ok(Ok(token_lock)) => match HttpApi::from_env(&token) {
                        Ok(api) => {
                            tracing::info!("telegram poller started");
                            let scrubber = Scrubber::from_env(Some(&token));
                            *self.inner.scrubber.lock() = scrubber.clone();
                            let queue = OutboundQueue::new(
                                api.clone(),
                                self.inner.decisions.clone(),
                                scrubber,
                            );
                            *self.inner.queue.lock() = Some(queue.clone());
                            *self.inner.api.lock() = Some(api.clone());
                            self.inner.desk.resume(&queue, stop.clone());
                            let failures = tokio::spawn(crate::notify::watch_failed_deliveries(
                                self.clone(),
                                engine_events.take(),
                                stop.clone(),
                            ));
                            let outbound = tokio::spawn(keep_outbound_status(
                                home.clone(),
                                queue.clone(),
                                stop.clone(),
                            ));
                            poller::Poller::new(
                                api,
                                &home,
                                config.clone(),
                                self.inner.decisions.clone(),
                            )
                            .with_bot(self.clone())
                            .with_queue(queue)
                            .run(stop.clone())
                            .await;
                            // The lock goes first (a successor may poll at once).
                            failures.abort();
                            outbound.abort();
                            if let Some(queue) = self.inner.queue.lock().as_ref() {
                                write_outbound(&home, &queue.snapshot());
                            }
                            self.inner.api.lock().take();
                            self.inner.queue.lock().take();
                            drop(token_lock);
                            tracing::info!("telegram poller stopped");
                            return;
                        }
                        Err(error) => {
                            tracing::warn!(%error, "the stored telegram token is unusable")
                        }
                    },
                    Ok(Err(error)) => {
                        if !told_locked {
                            tracing::info!(%error, "another poller has this bot; waiting for it");
                            told_locked = true;
                        }
                    }
                    Err(error) => tracing::warn!(%error, "the telegram lock task failed"),
                }
            }
            let mut stop = stop.clone();
            tokio::select! {
                () = tokio::time::sleep(SUPERVISE_PAUSE) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Answers one hook call: `PreToolUse` goes through the gate (and maybe the phone); every
    /// event also updates what the bot knows of the session and may notify
    /// ([`crate::notify`]). Only `PreToolUse` ever prints an answer.
    pub async fn hook(&self, params: HookParams) -> HookResponse {
        self.observe_hook(&params.event, &params.payload);
        if params.event != "PreToolUse" {
            return HookResponse { output: None };
        }
        let payload = &params.payload;
        let tool = payload["tool_name"].as_str().unwrap_or("").to_owned();
        let input = payload.get("tool_input").cloned().unwrap_or(Value::Null);
        let session = payload["session_id"].as_str().unwrap_or("").to_owned();
        let subject = gate::subject(&tool, &input);
        let verdict = match Gate::load(&self.inner.home) {
            Ok(gate) => gate.judge(&tool, &subject),
            Err(error) => {
                // A broken gate.toml must not let anything through unseen, nor block work: the
                // editor asks as it would without us.
                self.record(
                    Decision::new(DecisionKind::new("gate_verdict"), Outcome::new("ask"))
                        .session(session.clone())
                        .reason(error.to_string())
                        .detail("tool", tool.clone()),
                );
                return HookResponse {
                    output: Some(hook_answer("ask", &format!("cross-agent: {error}"))),
                };
            }
        };
        let base = |outcome: &'static str| {
            Decision::new(DecisionKind::new("gate_verdict"), Outcome::new(outcome))
                .session(session.clone())
                .agent("claude")
                .detail("tool", tool.clone())
        };
        match verdict {
            Verdict::Pass => {
                self.record(base("pass"));
                HookResponse { output: None }
            }
            Verdict::Allow { rule } => {
                self.record(base("allow").guard(rule.clone()));
                HookResponse {
                    output: Some(hook_answer(
                        "allow",
                        &format!("allowed by gate.toml rule {rule}"),
                    )),
                }
            }
            Verdict::Deny { rule } => {
                self.record(base("deny").guard(rule.clone()));
                HookResponse {
                    output: Some(hook_answer(
                        "deny",
                        &format!("denied by gate.toml rule {rule}"),
                    )),
                }
            }
            Verdict::Escalate { rule, danger } => {
                let mut decision = base("escalate");
                if let Some(rule) = &rule {
                    decision = decision.guard(rule.clone());
                }
                self.record(decision);
                if let Some(pattern) = &danger {
                    self.record(
                        Decision::new(DecisionKind::new("danger_match"), Outcome::new("escalate"))
                            .session(session.clone())
                            .agent("claude")
                            .guard(pattern.clone())
                            .detail("tool", tool.clone()),
                    );
                }
                let card = Card {
                    tool: &tool,
                    input: &input,
                    session: &session,
                    cwd: payload["cwd"].as_str().unwrap_or(""),
                    danger: danger.as_deref(),
                };
                let answer = self.escalate(&card).await;
                HookResponse {
                    output: Some(answer),
                }
            }
        }
    }

    async fn escalate(&self, card: &Card<'_>) -> Value {
        let approval = |outcome: &'static str| {
            Decision::new(DecisionKind::new("approval"), Outcome::new(outcome))
                .session(card.session.to_owned())
                .agent("claude")
                .detail("tool", card.tool.to_owned())
        };
        let shown = ApprovalCard {
            headline: card.headline(),
            what: crate::diff::what_it_does(
                card.tool,
                card.input,
                Some(Path::new(card.cwd)).filter(|p| p.is_absolute()),
            ),
            partial: false,
            choices: Vec::new(),
        };
        let Some(mut posted) = self.post_card(&shown, card.session).await else {
            if self.link_is_watching() {
                return self.escalate_over_link(card, &shown).await;
            }
            self.record(approval("ask").reason("no paired Telegram chat is being polled"));
            return hook_answer("ask", "cross-agent: no phone to ask; asking here");
        };
        self.set_awaiting_approval(card.session, true);
        let tapped = tokio::time::timeout(self.inner.approval_wait, &mut posted.answer).await;
        self.set_awaiting_approval(card.session, false);
        let waited_ms = posted.started.elapsed().as_millis() as u64;
        match tapped {
            Ok(Ok(tap)) => {
                let (outcome, word) = if tap.allow {
                    ("allowed", "allow")
                } else {
                    ("denied", "deny")
                };
                self.record(
                    approval(outcome)
                        .detail("user_id", tap.user_id)
                        .detail("waited_ms", waited_ms),
                );
                let verb = if tap.allow { "allowed" } else { "denied" };
                hook_answer(
                    word,
                    &format!("{verb} from Telegram by user {}", tap.user_id),
                )
            }
            _ => {
                let text = format!(
                    "⌛ No answer in {} s; asked in the editor instead.",
                    self.inner.approval_wait.as_secs(),
                );
                self.close_card(&posted.key, &text).await;
                self.record(
                    approval("ask")
                        .detail("waited_ms", waited_ms)
                        .reason("no tap in time"),
                );
                hook_answer("ask", "cross-agent: no answer from the phone in time")
            }
        }
    }

    /// `escalate` when this daemon's own bot cannot ask but a linked daemon's can: the
    /// approval is held for it ([`crate::link_approvals`]) for the usual wait.
    async fn escalate_over_link(&self, card: &Card<'_>, shown: &ApprovalCard) -> Value {
        let approval = |outcome: &'static str| {
            Decision::new(DecisionKind::new("approval"), Outcome::new(outcome))
                .session(card.session.to_owned())
                .agent("claude")
                .detail("tool", card.tool.to_owned())
                .detail("via", "link")
        };
        let started = Instant::now();
        self.record(approval("held_for_link"));
        self.set_awaiting_approval(card.session, true);
        let tapped = self
            .hold_for_link("claude", card.session, shown, self.inner.approval_wait)
            .await;
        self.set_awaiting_approval(card.session, false);
        let waited_ms = started.elapsed().as_millis() as u64;
        match tapped {
            Some((tap, machine)) => {
                let (outcome, word, verb) = if tap.allow {
                    ("allowed", "allow", "allowed")
                } else {
                    ("denied", "deny", "denied")
                };
                let from = machine.unwrap_or_else(|| "a linked machine".to_owned());
                self.record(
                    approval(outcome)
                        .detail("user_id", tap.user_id)
                        .detail("waited_ms", waited_ms)
                        .detail("from_machine", from.clone()),
                );
                hook_answer(
                    word,
                    &format!(
                        "{verb} from Telegram by user {} (the bot on {from})",
                        tap.user_id
                    ),
                )
            }
            None => {
                self.record(
                    approval("ask")
                        .detail("waited_ms", waited_ms)
                        .reason("no tap in time"),
                );
                hook_answer("ask", "cross-agent: no answer from the phone in time")
            }
        }
    }

    /// The chats that receive the bot's messages: every paired one.
    pub(crate) fn paired_chats(&self) -> Vec<i64> {
        store::read_access(&self.inner.home)
            .map(|access| {
                let mut chats: Vec<i64> = access.paired.iter().map(|p| p.chat_id).collect();
                chats.sort_unstable();
                chats.dedup();
                chats
            })
            .unwrap_or_default()
    }

    /// Whether an approval card would reach someone: a poller runs and a chat is paired.
    pub(crate) fn can_post(&self) -> bool {
        self.queue().is_some() && !self.paired_chats().is_empty()
    }

    /// A chat was just paired (the poller calls this).
    pub(crate) fn chat_paired(&self) {
        self.inner.paired.notify_waiters();
    }

    pub(crate) fn paired_signal(&self) -> &tokio::sync::Notify {
        &self.inner.paired
    }

    /// The outbound queue, while the poller runs.
    pub(crate) fn queue(&self) -> Option<OutboundQueue<HttpApi>> {
        self.inner.queue.lock().clone()
    }

    /// `text` with every secret replaced.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.inner.scrubber.lock().scrub(text)
    }

    pub(crate) fn hook_sessions(&self) -> &Mutex<HashMap<String, crate::notify::HookSession>> {
        &self.inner.hook_sessions
    }

    pub(crate) fn home(&self) -> &Path {
        &self.inner.home
    }

    /// Posts `card` to every paired chat (through the queue, so in order with what came
    /// before) and registers it for a tap. `None` when no chat is polled: nobody to ask.
    pub(crate) async fn post_card(&self, card: &ApprovalCard, session: &str) -> Option<PostedCard> {
        let chats = self.paired_chats();
        let queue = self.queue().filter(|_| !chats.is_empty())?;
        let key = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let (answer_tx, answer_rx) = oneshot::channel();
        let summary = self.scrub(&card.headline);
        self.inner.pending.lock().insert(
            key.clone(),
            Pending {
                answer: Some(answer_tx),
                posted: Vec::new(),
                summary,
                session: session.to_owned(),
                choices: card.choices.clone(),
            },
        );
        let started = Instant::now();
        let rendered = card.render(|text| self.scrub(text));
        let markup = card.buttons(&key, |text| self.scrub(text));
        for chat in chats {
            let html = match &rendered {
                Rendered::Inline { html } => html.clone(),
                Rendered::WithFile {
                    file_name,
                    bytes,
                    caption,
                    html,
                } => {
                    // Never approve blind: the whole of it goes first, then the buttons.
                    queue.push_item(
                        chat,
                        Outgoing::Document {
                            file_name: file_name.clone(),
                            bytes: bytes.clone(),
                            caption: escape_html(caption),
                            markup: None,
                        },
                        "approval_file",
                    );
                    html.clone()
                }
            };
            let sent: crate::Result<Message> = queue
                .send(
                    chat,
                    Outgoing::Text {
                        text: html,
                        mode: ParseMode::Html,
                        markup: Some(markup.clone()),
                        thread: None,
                    },
                    "approval",
                )
                .await;
            if let Ok(message) = sent
                && let Some(pending) = self.inner.pending.lock().get_mut(&key)
            {
                pending.posted.push((chat, message.message_id));
            }
        }
        Some(PostedCard {
            key,
            answer: answer_rx,
            started,
        })
    }

    /// Closes the card keyed `key` with `text` (plain; escaped here) over its summary, unless a
    /// tap got there first. Says whether it was still open.
    pub(crate) async fn close_card(&self, key: &str, text: &str) -> bool {
        let Some(pending) = self.inner.pending.lock().remove(key) else {
            return false;
        };
        let Some(api) = self.inner.api.lock().clone() else {
            return true;
        };
        let html = format!(
            "{}\n{}",
            escape_html(&self.scrub(text)),
            escape_html(&pending.summary)
        );
        for (chat, message) in pending.posted {
            edit_text(
                &api,
                &self.inner.edits,
                &self.inner.decisions,
                chat,
                message,
                &html,
            )
            .await;
        }
        true
    }

    /// Edits the messages of a card already closed by a tap (the tap's answer did not take).
    pub(crate) async fn amend_card(&self, posted: &[(i64, i64)], text: &str) {
        let Some(api) = self.inner.api.lock().clone() else {
            return;
        };
        let html = escape_html(&self.scrub(text));
        for (chat, message) in posted {
            edit_text(
                &api,
                &self.inner.edits,
                &self.inner.decisions,
                *chat,
                *message,
                &html,
            )
            .await;
        }
    }

    /// The messages of an open card.
    pub(crate) fn card_messages(&self, key: &str) -> Vec<(i64, i64)> {
        self.inner
            .pending
            .lock()
            .get(key)
            .map(|p| p.posted.clone())
            .unwrap_or_default()
    }

    /// A button tap from a paired user (the poller checked the allowlist): the first wins.
    /// Returns the text for `answerCallbackQuery`.
    pub(crate) async fn tap<A: TelegramApi>(
        &self,
        api: &A,
        data: &str,
        user_id: i64,
    ) -> &'static str {
        let (allow, key, choice) = match data.split_once(':') {
            Some(("a", key)) => (Some(true), key, None),
            Some(("d", key)) => (Some(false), key, None),
            Some(("o", rest)) => match rest.split_once(':') {
                Some((key, index)) => match index.parse::<usize>() {
                    Ok(index) => (None, key, Some(index)),
                    Err(_) => return "Unknown button",
                },
                None => return "Unknown button",
            },
            _ => return "Unknown button",
        };
        let mut pending = {
            let mut all = self.inner.pending.lock();
            let Some(found) = all.get(key) else {
                return "Already answered";
            };
            // A choice the card does not have answers nothing (and keeps the card open).
            if choice.is_some_and(|i| i >= found.choices.len()) {
                return "Unknown button";
            }
            let Some(pending) = all.remove(key) else {
                return "Already answered";
            };
            pending
        };
        let picked = choice.and_then(|i| pending.choices.get(i)).cloned();
        let allow = picked.as_ref().map_or(allow.unwrap_or(false), |c| c.allow);
        if let Some(answer) = pending.answer.take() {
            let _ = answer.send(Tap {
                allow,
                choice,
                user_id,
            });
        }
        let verdict = if allow { "✅ Allowed" } else { "❌ Denied" };
        // The choice's words, unless they only say what the verdict says.
        let label = picked
            .map(|c| c.shown_label(|t| self.scrub(t)))
            .filter(|l| !l.eq_ignore_ascii_case("allow") && !l.eq_ignore_ascii_case("deny"))
            .map(|l| format!(" (“{}”)", escape_html(&l)))
            .unwrap_or_default();
        let text = format!(
            "{verdict}{label} by user {user_id}\n{}",
            escape_html(&pending.summary)
        );
        for (chat, message) in pending.posted {
            edit_text(
                api,
                &self.inner.edits,
                &self.inner.decisions,
                chat,
                message,
                &text,
            )
            .await;
        }
        if allow { "Allowed" } else { "Denied" }
    }
}

impl Bot {
    /// What the bot asks about sessions (the daemon's hub); set once.
    pub fn set_session_host(&self, host: Arc<dyn crate::sessions::SessionHost>) {
        self.inner.desk.set_host(host);
    }

    /// The hub's events from now on, through the session host; `None` without one.
    pub(crate) fn engine_events(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<cross_agent_protocol::events::EngineEvent>> {
        self.inner.desk.engine_events()
    }

    /// This bot, held weakly (see [`WeakBot`]).
    pub fn downgrade(&self) -> WeakBot {
        WeakBot {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// The sessions with an approval waiting for a tap (the review's escalation guard sends
    /// no correction into them).
    pub fn awaiting_approval(&self) -> std::collections::HashSet<String> {
        self.inner
            .pending
            .lock()
            .values()
            .map(|p| p.session.clone())
            .collect()
    }

    /// A message from a paired person that is not `/pair`.
    pub(crate) async fn on_message<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        message: crate::api::Message,
    ) {
        let awaiting = self.awaiting_approval();
        self.inner.desk.on_message(out, message, awaiting).await;
    }

    /// A tap on a session card's button (`s:…`) from a paired person.
    pub(crate) fn session_tap<A: TelegramApi + Clone + 'static>(
        &self,
        out: &OutboundQueue<A>,
        query: &crate::api::CallbackQuery,
    ) -> crate::sessions::TapAnswer {
        self.inner.desk.tap(out, query, self.awaiting_approval())
    }
}

/// How often `telegram/outbound.json` is brought up to date (when it changed).
const OUTBOUND_STATUS_EVERY: Duration = Duration::from_millis(500);

fn write_outbound(home: &Path, snapshot: &crate::queue::QueueSnapshot) {
    if let Err(error) = store::write_outbound(home, snapshot) {
        tracing::warn!(%error, "could not write the telegram outbound status");
    }
}

/// Keeps `telegram/outbound.json` (what `telegram status` shows of the queue) up to date
/// until `stop`: the queue lives in the daemon, the status command reads files.
async fn keep_outbound_status(
    home: PathBuf,
    queue: OutboundQueue<HttpApi>,
    mut stop: watch::Receiver<bool>,
) {
    let mut written: Option<crate::queue::QueueSnapshot> = None;
    loop {
        let now = queue.snapshot();
        if written.as_ref() != Some(&now) {
            write_outbound(&home, &now);
            written = Some(now);
        }
        tokio::select! {
            () = tokio::time::sleep(OUTBOUND_STATUS_EVERY) => {}
            _ = stop.changed() => return,
        }
    }
}

/// What an approval card shows.
struct Card<'a> {
    tool: &'a str,
    input: &'a Value,
    session: &'a str,
    cwd: &'a str,
    danger: Option<&'a str>,
}

impl Card<'_> {
    fn headline(&self) -> String {
        let session: String = self.session.chars().take(8).collect();
        let mut line = format!("Claude · {} in {} (session {session})", self.tool, self.cwd);
        if let Some(pattern) = self.danger {
            line.push_str(&format!(" — danger: {pattern}"));
        }
        line
    }
}

/// A card posted for a tap.
pub(crate) struct PostedCard {
    pub key: String,
    pub answer: oneshot::Receiver<Tap>,
    pub started: Instant,
}
