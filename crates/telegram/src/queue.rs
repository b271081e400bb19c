//! The outbound queue: every notification goes through one FIFO per chat, so what one chat
//! receives arrives in the order it was queued, and a 429 (`retry_after`) holds that chat's
//! queue for as long as Telegram asks and then sends the same message again: nothing queued is
//! dropped for a rate limit. A parse error is retried once as plain text; a network error is
//! retried with a growing pause a few times; any other refusal is recorded as failed with the
//! API's description and the queue goes on. Every message's outcome is one decision line.
//!
//! A worker task per chat (tokio's unbounded mpsc, in order by construction); other chats are
//! never held up by one that is rate limited.
//!
//! It is the bot's only way out: notifications, approval cards, session cards, receipts and
//! answers from [`crate::sessions`], the pairing reply. A message for a forum topic carries its
//! `thread`; one whose message id is needed (a card, for replies and edits) is sent with
//! [`OutboundQueue::send`], which waits for its turn and hands the sent message back.
//! [`OutboundQueue::snapshot`] is what `telegram status` shows of it (messages waiting per
//! chat, the last 429).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::api::{MAX_TEXT_CHARS, Message, ParseMode, TelegramApi};
use crate::error::{Error, Result};
use crate::secrets::Scrubber;
use crate::text::{chunk, escape_html};

/// How many times a network failure is retried before the message is recorded failed.
const NETWORK_TRIES: u32 = 5;
/// The pause after a 429 that names no `retry_after`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);
/// The longest `retry_after` honoured as given (a larger one is waited in turns of this, so a
/// stop is seen).
const MAX_ONE_WAIT: Duration = Duration::from_secs(60);

/// One message to send.
#[derive(Debug, Clone)]
pub enum Outgoing {
    /// Text already in the form `mode` reads (escaped, for HTML), at most 4,096 characters.
    Text {
        text: String,
        mode: ParseMode,
        markup: Option<Value>,
        /// The forum topic it goes to (`message_thread_id`), else the chat itself.
        thread: Option<i64>,
    },
    /// A file with an HTML caption.
    Document {
        file_name: String,
        bytes: Vec<u8>,
        caption: String,
        markup: Option<Value>,
    },
}

struct Job {
    item: Outgoing,
    /// What it is, for the decision line (`turn_ended`, `approval`, …).
    what: &'static str,
    reply: Option<oneshot::Sender<Result<Message>>>,
    /// (piece, pieces) of a text sent in several messages.
    part: Option<(usize, usize)>,
}

/// The last 429 the queue waited out.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RateLimited {
    pub chat_id: i64,
    /// When it came (RFC 3339).
    pub at: String,
    /// The `retry_after` Telegram named, in seconds.
    #[serde(default)]
    pub retry_after_s: Option<u64>,
}

/// What is waiting in the queue now, for `telegram status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueSnapshot {
    /// Messages queued and not yet sent (or failed), per chat; chats with none are left out.
    pub waiting: std::collections::BTreeMap<i64, usize>,
    #[serde(default)]
    pub last_rate_limited: Option<RateLimited>,
    pub sent: u64,
    pub failed: u64,
    pub rate_limited: u64,
    pub retried_plain: u64,
}

/// What the queue counted, for `telegram status` and the bench.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    pub sent: u64,
    pub failed: u64,
    /// 429s waited out (each followed by a retry of the same message).
    pub rate_limited: u64,
    pub retried_plain: u64,
}

#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    failed: AtomicU64,
    rate_limited: AtomicU64,
    retried_plain: AtomicU64,
    /// Queued and not yet finished.
    in_flight: AtomicUsize,
    idle: Notify,
    /// Queued and not yet finished, per chat.
    waiting: Mutex<HashMap<i64, usize>>,
    last_rate_limited: Mutex<Option<RateLimited>>,
}

/// The per-chat FIFOs; cheap to clone.
pub struct OutboundQueue<A> {
    api: A,
    decisions: DecisionLog,
    scrubber: Scrubber,
    chats: Arc<Mutex<HashMap<i64, mpsc::UnboundedSender<Job>>>>,
    counters: Arc<Counters>,
}

impl<A: Clone> Clone for OutboundQueue<A> {
    fn clone(&self) -> Self {
        OutboundQueue {
            api: self.api.clone(),
            decisions: self.decisions.clone(),
            scrubber: self.scrubber.clone(),
            chats: Arc::clone(&self.chats),
            counters: Arc::clone(&self.counters),
        }
    }
}

impl<A> std::fmt::Debug for OutboundQueue<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundQueue")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl<A> OutboundQueue<A> {
    /// What every text is scrubbed with (the poller scrubs what it records with it too).
    pub(crate) fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }
}

impl<A: TelegramApi + Clone + 'static> OutboundQueue<A> {
    /// A queue sending through `api`; every text and caption passes `scrubber` first.
    pub fn new(api: A, decisions: DecisionLog, scrubber: Scrubber) -> OutboundQueue<A> {
        OutboundQueue {
            api,
            decisions,
            scrubber,
            chats: Arc::new(Mutex::new(HashMap::new())),
            counters: Arc::new(Counters::default()),
        }
    }

    /// The client it sends with (for the calls that are not messages: topics, files).
    pub fn api(&self) -> &A {
        &self.api
    }

    /// Queues plain `text` for `chat_id` as HTML (escaped here), in pieces of at most 4,096
    /// characters, in order.
    pub fn text(&self, chat_id: i64, text: &str, what: &'static str) {
        self.text_in(chat_id, None, text, what);
    }

    /// [`OutboundQueue::text`] into forum topic `thread` (or the chat itself).
    pub fn text_in(&self, chat_id: i64, thread: Option<i64>, text: &str, what: &'static str) {
        let text = self.scrubber.scrub(text);
        // Chunk what is sent: an entity made by escaping must not push a piece past the limit.
        let pieces = chunk(&escape_html(&text), MAX_TEXT_CHARS);
        let count = pieces.len();
        for (index, piece) in pieces.into_iter().enumerate() {
            self.push(
                chat_id,
                Job {
                    item: Outgoing::Text {
                        text: piece,
                        mode: ParseMode::Html,
                        markup: None,
                        thread,
                    },
                    what,
                    reply: None,
                    part: (count > 1).then_some((index + 1, count)),
                },
            );
        }
    }

    /// Queues `html` (already escaped where it must be, at most 4,096 characters) for
    /// `chat_id`, in topic `thread`, without waiting for it.
    pub fn html_in(&self, chat_id: i64, thread: Option<i64>, html: &str, what: &'static str) {
        self.push_item(
            chat_id,
            Outgoing::Text {
                text: html.to_owned(),
                mode: ParseMode::Html,
                markup: None,
                thread,
            },
            what,
        );
    }

    /// Queues `item` for `chat_id` and waits for its outcome (a card whose message id is kept).
    pub async fn send(&self, chat_id: i64, item: Outgoing, what: &'static str) -> Result<Message> {
        let (reply, answer) = oneshot::channel();
        self.push(
            chat_id,
            Job {
                item,
                what,
                reply: Some(reply),
                part: None,
            },
        );
        answer.await.unwrap_or_else(|_| {
            Err(Error::Api {
                method: "sendMessage",
                code: 0,
                description: "the outbound queue stopped".into(),
                retry_after: None,
            })
        })
    }

    /// Queues `item` without waiting for it.
    pub fn push_item(&self, chat_id: i64, item: Outgoing, what: &'static str) {
        self.push(
            chat_id,
            Job {
                item,
                what,
                reply: None,
                part: None,
            },
        );
    }

    fn push(&self, chat_id: i64, mut job: Job) {
        job.item = match job.item {
            Outgoing::Text {
                text,
                mode,
                markup,
                thread,
            } => Outgoing::Text {
                text: self.scrubber.scrub(&text),
                mode,
                markup,
                thread,
            },
            Outgoing::Document {
                file_name,
                bytes,
                caption,
                markup,
            } => Outgoing::Document {
                file_name,
                bytes: self.scrubber.scrub_bytes(bytes),
                caption: self.scrubber.scrub(&caption),
                markup,
            },
        };
        self.counters.in_flight.fetch_add(1, Ordering::SeqCst);
        *self.counters.waiting.lock().entry(chat_id).or_insert(0) += 1;
        let mut chats = self.chats.lock();
        let sender = chats.entry(chat_id).or_insert_with(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            tokio::spawn(worker(
                self.api.clone(),
                self.decisions.clone(),
                self.scrubber.clone(),
                Arc::clone(&self.counters),
                chat_id,
                receiver,
            ));
            sender
        });
        if let Err(mpsc::error::SendError(job)) = sender.send(job) {
            // The worker is gone (its runtime is stopping): the message is recorded, not lost
            // silently.
            self.counters.in_flight.fetch_sub(1, Ordering::SeqCst);
            self.counters.done_in(chat_id);
            self.counters.failed.fetch_add(1, Ordering::SeqCst);
            self.decisions.record(
                Decision::new(
                    DecisionKind::new("telegram_delivery"),
                    Outcome::new("failed"),
                )
                .reason("the outbound queue stopped")
                .detail("chat_id", chat_id)
                .detail("what", job.what),
            );
        }
    }

    /// Waits until everything queued so far is sent or recorded failed.
    pub async fn idle(&self) {
        loop {
            let notified = self.counters.idle.notified();
            if self.counters.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Counters {
    /// One message of `chat_id` is finished (sent or failed).
    fn done_in(&self, chat_id: i64) {
        let mut waiting = self.waiting.lock();
        if let Some(count) = waiting.get_mut(&chat_id) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                waiting.remove(&chat_id);
            }
        }
    }
}

impl<A> OutboundQueue<A> {
    /// What waits now, per chat, and the last 429.
    pub fn snapshot(&self) -> QueueSnapshot {
        let counts = self.counts();
        QueueSnapshot {
            waiting: self
                .counters
                .waiting
                .lock()
                .iter()
                .map(|(chat, count)| (*chat, *count))
                .collect(),
            last_rate_limited: self.counters.last_rate_limited.lock().clone(),
            sent: counts.sent,
            failed: counts.failed,
            rate_limited: counts.rate_limited,
            retried_plain: counts.retried_plain,
        }
    }

    pub fn counts(&self) -> QueueCounts {
        QueueCounts {
            sent: self.counters.sent.load(Ordering::SeqCst),
            failed: self.counters.failed.load(Ordering::SeqCst),
            rate_limited: self.counters.rate_limited.load(Ordering::SeqCst),
            retried_plain: self.counters.retried_plain.load(Ordering::SeqCst),
        }
    }
}

async fn worker<A: TelegramApi>(
    api: A,
    decisions: DecisionLog,
    scrubber: Scrubber,
    counters: Arc<Counters>,
    chat_id: i64,
    mut jobs: mpsc::UnboundedReceiver<Job>,
) {
    while let Some(job) = jobs.recv().await {
        let (result, outcome, waits) = deliver(&api, &counters, chat_id, &job.item).await;
        let decision = match &result {
            Ok(_) => {
                counters.sent.fetch_add(1, Ordering::SeqCst);
                Decision::new(
                    DecisionKind::new("telegram_delivery"),
                    Outcome::new(outcome),
                )
            }
            Err(error) => {
                counters.failed.fetch_add(1, Ordering::SeqCst);
                Decision::new(
                    DecisionKind::new("telegram_delivery"),
                    Outcome::new("failed"),
                )
                // Telegram's description can quote what was sent.
                .reason(scrubber.scrub(&error.to_string()))
            }
        };
        let mut decision = decision.detail("chat_id", chat_id).detail("what", job.what);
        if waits > 0 {
            decision = decision.detail("rate_limited", waits);
        }
        if let Outgoing::Document { file_name, .. } = &job.item {
            decision = decision.detail("file", file_name.clone());
        }
        if let Outgoing::Text {
            thread: Some(thread),
            ..
        } = &job.item
        {
            decision = decision.detail("thread_id", *thread);
        }
        if let Some((piece, pieces)) = job.part {
            decision = decision.detail("chunk", piece).detail("chunks", pieces);
        }
        decisions.record(decision);
        if let Some(reply) = job.reply {
            let _ = reply.send(result);
        }
        counters.done_in(chat_id);
        if counters.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            counters.idle.notify_waiters();
        }
    }
}

fn is_parse_error(error: &Error) -> bool {
    matches!(error, Error::Api { code: 400, description, .. }
        if description.to_ascii_lowercase().contains("can't parse entities"))
}

/// Sends one item until it goes out or fails for good: (result, outcome, 429s waited).
async fn deliver<A: TelegramApi>(
    api: &A,
    counters: &Counters,
    chat_id: i64,
    item: &Outgoing,
) -> (Result<Message>, &'static str, u64) {
    let mut outcome = "sent";
    let mut plain = false;
    let mut waits = 0;
    let mut network_failures = 0;
    loop {
        let result = match item {
            Outgoing::Text {
                text,
                mode,
                markup,
                thread,
            } => {
                if plain {
                    api.send_message_in(
                        chat_id,
                        *thread,
                        &crate::text::html_to_plain(text),
                        ParseMode::Plain,
                        markup.clone(),
                    )
                    .await
                } else {
                    api.send_message_in(chat_id, *thread, text, *mode, markup.clone())
                        .await
                }
            }
            Outgoing::Document {
                file_name,
                bytes,
                caption,
                markup,
            } => {
                let caption = if plain {
                    crate::text::html_to_plain(caption)
                } else {
                    caption.clone()
                };
                api.send_document(chat_id, file_name, bytes.clone(), &caption, markup.clone())
                    .await
            }
        };
        match result {
            Ok(message) => return (Ok(message), outcome, waits),
            Err(Error::Api {
                code: 429,
                retry_after,
                ..
            }) => {
                waits += 1;
                counters.rate_limited.fetch_add(1, Ordering::SeqCst);
                *counters.last_rate_limited.lock() = Some(RateLimited {
                    chat_id,
                    at: cross_agent_protocol::timestamp::now_rfc3339(),
                    retry_after_s: retry_after,
                });
                let pause = retry_after
                    .map_or(DEFAULT_RETRY_AFTER, Duration::from_secs)
                    .clamp(Duration::from_millis(100), MAX_ONE_WAIT);
                tokio::time::sleep(pause).await;
            }
            Err(error) if !plain && is_parse_error(&error) => {
                plain = true;
                outcome = "retried_plain";
                counters.retried_plain.fetch_add(1, Ordering::SeqCst);
            }
            Err(error @ (Error::Network { .. } | Error::Decode { .. }))
                if network_failures + 1 < NETWORK_TRIES =>
            {
                network_failures += 1;
                tracing::debug!(%error, "telegram send failed; trying again");
                tokio::time::sleep(Duration::from_millis(250) * (1 << network_failures)).await;
            }
            Err(error) => return (Err(error), "failed", waits),
        }
    }
}
