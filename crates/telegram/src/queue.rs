//! The outbound queue: every notification goes through one FIFO per chat, so what one chat
//! receives arrives in the order it was queued, and a 429 (`retry_after`) holds that chat's
//! queue for as long as Telegram asks and then sends the same message again: nothing queued is
//! dropped for a rate limit. A parse error is retried once as plain text; a network error is
//! retried with a growing pause a few times; any other refusal is recorded as failed with the
//! API's description and the queue goes on. Every message's outcome is one decision line.
//!
//! A worker task per chat (tokio's unbounded mpsc, in order by construction); other chats are
//! never held up by one that is rate limited.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
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

    /// Queues plain `text` for `chat_id` as HTML (escaped here), in pieces of at most 4,096
    /// characters, in order.
    pub fn text(&self, chat_id: i64, text: &str, what: &'static str) {
        let text = self.scrubber.scrub(text);
        for piece in chunk(&escape_html(&text), MAX_TEXT_CHARS) {
            self.push(
                chat_id,
                Job {
                    item: Outgoing::Text {
                        text: piece,
                        mode: ParseMode::Html,
                        markup: None,
                    },
                    what,
                    reply: None,
                },
            );
        }
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
            },
        );
    }

    fn push(&self, chat_id: i64, mut job: Job) {
        job.item = match job.item {
            Outgoing::Text { text, mode, markup } => Outgoing::Text {
                text: self.scrubber.scrub(&text),
                mode,
                markup,
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
        let mut chats = self.chats.lock().unwrap_or_else(PoisonError::into_inner);
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

impl<A> OutboundQueue<A> {
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
        decisions.record(decision);
        if let Some(reply) = job.reply {
            let _ = reply.send(result);
        }
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
            Outgoing::Text { text, mode, markup } => {
                if plain {
                    api.send_message(
                        chat_id,
                        &unescape_html(text),
                        ParseMode::Plain,
                        markup.clone(),
                    )
                    .await
                } else {
                    api.send_message(chat_id, text, *mode, markup.clone()).await
                }
            }
            Outgoing::Document {
                file_name,
                bytes,
                caption,
                markup,
            } => {
                let caption = if plain {
                    unescape_html(caption)
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

fn unescape_html(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}
