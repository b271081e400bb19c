//! The one long poller of a bot token, run by the daemon.
//!
//! One per token, even across daemons of different homes: [`token_lock_path`] is a file
//! outside every home, named by a hash of the token, and the poller holds its `flock` for as
//! long as it runs. What the users of other bridges suffer (observed: 409 poller wars, a bot
//! gone deaf after a few conflicts, or for good after one update it could not decode) is
//! answered here: a 409 backs off (≥ 60 s by default) and is never fatal, a 429 waits
//! `retry_after`, a network error backs off with jitter, an update that cannot be read is
//! skipped (logged, a `telegram_update` decision, shown by `telegram status`) with the offset
//! past it ([`crate::updates`]), and the health `telegram status` shows is the last update
//! actually received.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_protocol::settings as var;
use cross_agent_protocol::timestamp::{UnixMillis, now_rfc3339};
use tokio::sync::watch;

use crate::api::{Message, TelegramApi, Update};
use crate::error::{Error, Result};
use crate::queue::OutboundQueue;
use crate::secrets::Scrubber;
use crate::store::{self, Paired};
use crate::updates::SkippedUpdate;

/// The poller's knobs.
#[derive(Debug, Clone)]
pub struct PollerConfig {
    /// How long one `getUpdates` waits for an update.
    pub poll_timeout: Duration,
    /// The pause after a 409 (another `getUpdates` on this token). Telegram holds the old long
    /// poll's slot for about 50 s, so anything shorter only feeds the conflict.
    pub conflict_backoff: Duration,
    /// The longest pause after network errors.
    pub max_network_backoff: Duration,
}

impl Default for PollerConfig {
    fn default() -> PollerConfig {
        PollerConfig {
            poll_timeout: Duration::from_secs(30),
            conflict_backoff: Duration::from_secs(60),
            max_network_backoff: Duration::from_secs(60),
        }
    }
}

impl PollerConfig {
    /// Reads `CROSS_AGENT_TELEGRAM_POLL_TIMEOUT` (seconds) and the test knob
    /// `CROSS_AGENT_TELEGRAM_CONFLICT_BACKOFF_MS`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> PollerConfig {
        let mut config = PollerConfig::default();
        if let Some(secs) = var(var::TELEGRAM_POLL_TIMEOUT).and_then(|v| v.trim().parse().ok()) {
            config.poll_timeout = Duration::from_secs(secs);
        }
        if let Some(ms) = var(var::TELEGRAM_CONFLICT_BACKOFF_MS).and_then(|v| v.trim().parse().ok())
        {
            config.conflict_backoff = Duration::from_millis(ms);
        }
        config
    }
}

/// The lock file that makes one poller per token, shared by every home of this user.
pub fn token_lock_path(token: &str) -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    std::env::temp_dir()
        .join(format!("cross-agent-telegram-{uid}"))
        .join(format!(
            "{:016x}.lock",
            xxhash_rust::xxh3::xxh3_64(token.as_bytes())
        ))
}

fn kind(name: &'static str) -> DecisionKind {
    DecisionKind::new(name)
}

/// A poller running against `api` for the bot stored in `home`.
pub struct Poller<A> {
    api: A,
    home: PathBuf,
    config: PollerConfig,
    decisions: DecisionLog,
    status: store::PollerStatus,
    offset: i64,
    bot: Option<crate::Bot>,
    /// Where every message the poller (and the bot's session side) sends goes out.
    queue: OutboundQueue<A>,
    /// Fingerprints of the updates without a readable id already told (they can come again).
    told_unreadable: VecDeque<u64>,
}

/// How many unreadable updates the poller remembers having told.
const TOLD_UNREADABLE_KEPT: usize = 64;

impl<A: TelegramApi + Clone + 'static> Poller<A> {
    pub fn new(api: A, home: &Path, config: PollerConfig, decisions: DecisionLog) -> Poller<A> {
        Poller {
            home: home.to_owned(),
            config,
            decisions: decisions.clone(),
            status: store::PollerStatus {
                pid: Some(std::process::id()),
                ..Default::default()
            },
            offset: 0,
            bot: None,
            queue: OutboundQueue::new(api.clone(), decisions, Scrubber::default()),
            told_unreadable: VecDeque::new(),
            api,
        }
    }

    /// Sends through `queue` (the bot's: one per chat order with its notifications).
    pub fn with_queue(mut self, queue: OutboundQueue<A>) -> Poller<A> {
        self.queue = queue;
        self
    }

    /// Button taps go to `bot` (its pending approvals).
    pub fn with_bot(mut self, bot: crate::Bot) -> Poller<A> {
        self.bot = Some(bot);
        self
    }

    fn save_status(&mut self, state: &str) {
        self.status.state = state.to_owned();
        self.status.updated_at = now_rfc3339();
        if let Err(error) = store::write_status(&self.home, &self.status) {
            tracing::warn!(%error, "could not write the telegram status");
        }
    }

    fn note_error(&mut self, error: &Error) {
        self.status.last_error = Some(error.to_string());
        self.status.last_error_at = Some(now_rfc3339());
    }

    /// Polls until `stop` turns true.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut webhook_deleted = false;
        let mut network_failures: u32 = 0;
        if let Ok(me) = self.api.get_me().await {
            self.status.bot_username = me.username;
        }
        self.save_status("starting");
        loop {
            if *stop.borrow() {
                break;
            }
            let outcome = if webhook_deleted {
                if self.status.state != "polling" {
                    self.save_status("polling");
                }
                tokio::select! {
                    outcome = self.api.get_updates(self.offset, self.config.poll_timeout) => outcome,
                    _ = stop.changed() => break,
                }
            } else {
                // Long polling and a webhook exclude each other: a webhook left set by another
                // program would make every getUpdates fail.
                let deleted = tokio::select! {
                    deleted = self.api.delete_webhook() => deleted,
                    _ = stop.changed() => break,
                };
                match deleted {
                    Ok(()) => {
                        webhook_deleted = true;
                        let _ = self
                            .api
                            .set_my_commands(&[
                                ("pair", "Pair this chat: /pair CODE"),
                                ("sessions", "The live sessions, one card each"),
                                ("limits", "Codex's rate-limit windows: used, resets in"),
                            ])
                            .await;
                        continue;
                    }
                    Err(error) => Err(error),
                }
            };
            let pause = match outcome {
                Ok(batch) => {
                    // Past every update whose id can be read, decoded or not: one the decoder
                    // rejects is never asked for again.
                    if let Some(next) = batch.next_offset() {
                        self.offset = self.offset.max(next);
                    }
                    let told = batch
                        .skipped
                        .iter()
                        .filter(|skipped| self.skip(skipped))
                        .count();
                    let fresh = batch.updates.len() + told;
                    if fresh > 0 {
                        self.status.last_update_at = Some(now_rfc3339());
                        self.status.updates_received += fresh as u64;
                        self.save_status("polling");
                    }
                    let unconfirmable = batch.is_unconfirmable().then_some(batch.received);
                    for update in batch.updates {
                        self.handle(update).await;
                    }
                    match unconfirmable {
                        // Asking again at once would bring the same updates back at once.
                        Some(count) => Some(self.pause_after(
                            &Error::UnconfirmableUpdates { count },
                            &mut network_failures,
                        )),
                        None => {
                            network_failures = 0;
                            None
                        }
                    }
                }
                Err(error) => Some(self.pause_after(&error, &mut network_failures)),
            };
            if let Some(pause) = pause {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => break,
                }
            }
        }
        self.save_status("stopped");
    }

    /// How long to wait after `error`, recorded in the status and the log.
    fn pause_after(&mut self, error: &Error, network_failures: &mut u32) -> Duration {
        self.note_error(error);
        let (state, pause) = match error {
            Error::Api { code: 409, .. } => ("backing_off", self.config.conflict_backoff),
            Error::Api {
                code: 429,
                retry_after,
                ..
            } => (
                "backing_off",
                Duration::from_secs(retry_after.unwrap_or(5).max(1)),
            ),
            Error::Api { code: 401, .. } | Error::Api { code: 404, .. } => {
                ("unauthorized", self.config.max_network_backoff)
            }
            _ => {
                *network_failures = network_failures.saturating_add(1);
                let base = Duration::from_millis(500)
                    .saturating_mul(1 << (*network_failures).min(7))
                    .min(self.config.max_network_backoff);
                ("backing_off", base + jitter(base / 2))
            }
        };
        tracing::warn!(%error, pause_ms = pause.as_millis() as u64, "telegram poll failed; backing off");
        self.save_status(state);
        pause
    }

    /// Logs, records and counts an update that could not be read, which the poller goes past.
    /// One without a readable id may be offered again (nothing confirmed it): it is told once.
    /// Says whether it was told now.
    fn skip(&mut self, skipped: &SkippedUpdate) -> bool {
        if skipped.update_id.is_none() {
            if self.told_unreadable.contains(&skipped.fingerprint) {
                return false;
            }
            if self.told_unreadable.len() == TOLD_UNREADABLE_KEPT {
                self.told_unreadable.pop_front();
            }
            self.told_unreadable.push_back(skipped.fingerprint);
        }
        let skipped = skipped.to_record(self.queue.scrubber());
        let kind_name = skipped.kind.as_deref().unwrap_or("unknown");
        tracing::warn!(
            update_id = ?skipped.update_id,
            kind = kind_name,
            reason = %skipped.reason,
            "skipped a Telegram update that could not be read; polling goes on past it"
        );
        let mut decision = Decision::new(kind("telegram_update"), Outcome::new("skipped"))
            .reason(skipped.reason.clone())
            .detail("update_kind", kind_name);
        if let Some(id) = skipped.update_id {
            decision = decision.detail("update_id", id);
        }
        self.decisions.record(decision);
        self.status.updates_skipped += 1;
        self.status.last_skipped = Some(store::LastSkipped {
            at: now_rfc3339(),
            update: skipped,
        });
        true
    }

    async fn handle(&mut self, update: Update) {
        if let Some(message) = update.message {
            self.handle_message(message).await;
        } else if let Some(query) = update.callback_query {
            let chat = query.message.as_ref().map_or(0, |m| m.chat.id);
            // Every tap re-checks the allowlist: a forwarded card or a user unpaired since it
            // was posted answers nothing.
            let text = if !self.allowed(query.from.id, chat) {
                self.refuse(query.from.id, chat, "callback_query");
                None
            } else if let Some(bot) = &self.bot {
                let data = query.data.as_deref().unwrap_or("");
                if data.starts_with("s:") {
                    Some(bot.session_tap(&self.queue, &query))
                } else {
                    Some(bot.tap(&self.api, data, query.from.id).await)
                }
            } else {
                None
            };
            let _ = self.api.answer_callback_query(&query.id, text).await;
        }
    }

    fn allowed(&self, user_id: i64, chat_id: i64) -> bool {
        // Re-read on every update, so an unpair takes effect at once.
        match store::read_access(&self.home) {
            Ok(access) => access.allows(user_id, chat_id),
            Err(error) => {
                tracing::warn!(%error, "could not read the telegram allowlist; refusing");
                false
            }
        }
    }

    fn refuse(&self, user_id: i64, chat_id: i64, what: &str) {
        self.decisions.record(
            Decision::new(kind("telegram_refused"), Outcome::new("ignored"))
                .reason("the sender is not paired with this bot; nothing was answered")
                .detail("user_id", user_id)
                .detail("chat_id", chat_id)
                .detail("update", what),
        );
    }

    async fn handle_message(&mut self, message: Message) {
        let Some(from) = message.from.clone() else {
            return;
        };
        let text = message.text.as_deref().unwrap_or("").trim();
        if let Some(code) = text.strip_prefix("/pair") {
            let code = code.trim();
            if self.try_pair(&from, message.chat.id, code) {
                self.queue.text(
                    message.chat.id,
                    "Paired. This chat now receives cross-agent's messages.",
                    "paired",
                );
                if let Some(bot) = &self.bot {
                    // What waited for a chat to be paired is offered now.
                    bot.chat_paired();
                }
                return;
            }
        }
        if !self.allowed(from.id, message.chat.id) {
            self.refuse(from.id, message.chat.id, "message");
        } else if let Some(bot) = &self.bot {
            bot.on_message(&self.queue, message).await;
        }
    }

    /// Pairs `from` in `chat_id` when `code` is the pending, unexpired code; says whether it did.
    fn try_pair(&mut self, from: &crate::api::User, chat_id: i64, code: &str) -> bool {
        let mut access = match store::read_access(&self.home) {
            Ok(access) => access,
            Err(error) => {
                tracing::warn!(%error, "could not read the telegram allowlist");
                return false;
            }
        };
        let now = now_ms();
        let matches = access.pending.as_ref().is_some_and(|pending| {
            !code.is_empty()
                && pending.code.eq_ignore_ascii_case(code)
                && pending.expires_at_ms > now
        });
        if !matches {
            let reason = match &access.pending {
                Some(pending) if pending.expires_at_ms <= now => "the pairing code has expired",
                Some(_) => "the pairing code does not match",
                None => "no pairing code is pending",
            };
            self.decisions.record(
                Decision::new(kind("telegram_pair"), Outcome::new("refused"))
                    .reason(reason)
                    .detail("user_id", from.id)
                    .detail("chat_id", chat_id),
            );
            return false;
        }
        access.pending = None;
        access
            .paired
            .retain(|p| p.user_id != from.id || p.chat_id != chat_id);
        access.paired.push(Paired {
            user_id: from.id,
            chat_id,
            name: from
                .username
                .clone()
                .unwrap_or_else(|| from.first_name.clone()),
            paired_at: now_rfc3339(),
        });
        if let Err(error) = store::write_access(&self.home, &access) {
            tracing::warn!(%error, "could not save the telegram allowlist");
            return false;
        }
        self.decisions.record(
            Decision::new(kind("telegram_pair"), Outcome::new("paired"))
                .detail("user_id", from.id)
                .detail("chat_id", chat_id),
        );
        true
    }
}

/// Milliseconds since the Unix epoch, as the stored records keep them.
pub(crate) fn now_ms() -> i64 {
    UnixMillis::now().0
}

/// A random pause below `most` (below 1 ms when `most` is shorter), so pollers that failed
/// together do not retry together.
fn jitter(most: Duration) -> Duration {
    let most_ms = u64::try_from(most.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(fastrand::u64(..most_ms))
}

/// Takes the token's poller lock; [`Error::Locked`] when another poller holds it.
pub fn lock_token(token: &str) -> Result<cross_agent_home::pidfile::PidLock> {
    let path = token_lock_path(token);
    if let Some(parent) = path.parent() {
        cross_agent_home::home::ensure_private_dir(parent).map_err(Error::LockDir)?;
    }
    cross_agent_home::pidfile::PidLock::acquire(&path).map_err(Error::Locked)
}
