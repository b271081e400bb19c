//! The daemon's Telegram bot: one bot for every session, reached over outbound long polling
//! only (docs/spec/vsc-relay.txt, VSC Relay).
//!
//! - [`api`]: the Bot API calls we make, behind the [`TelegramApi`] trait, over plain reqwest.
//! - [`store`]: the token, the allowlist and the poller's status under `CROSS_AGENT_HOME/telegram/`.
//! - [`poller`]: the one long poller per token (a lock across daemons), its back-offs, pairing
//!   and refusing every chat that is not paired; [`updates`]: each update of a poll decoded on
//!   its own, so one the decoder rejects is skipped, never the whole poll.
//! - [`text`]: escaping and chunking for the queue.
//! - [`limit`]: our own pace for edits, which no Bot API client library throttles.
//! - [`sessions`] ([`cards`], [`topics`], [`inbox`]): `/sessions` cards, prompts and files
//!   sent to a session from the phone, one forum topic per session, Hand off; the daemon answers
//!   through the [`sessions::SessionHost`] trait, so this crate never links the hub;
//!   [`desk_store`] keeps what they need across a daemon restart.
//! - [`queue`]: the outbound per-chat FIFOs every message of the bot goes through (cards,
//!   notifications, receipts, answers; 429s waited out, order kept, plain-text retry); [`secrets`] scrubs the token and `CROSS_AGENT_CHILD_ENV` values.
//! - [`approval_card`], [`diff`]: approval cards that show the full command or the diff (inline, or as
//!   a `.diff` file); `panel_approvals`: the panels' approval requests answered from the phone.
//! - [`notify`]: which events notify the chats, and what the hooks tell of each session.
//! - [`Bot`]: what the daemon holds: the poller's lifetime (waits for a token, takes its lock,
//!   polls) and hook calls (the [`gate`], approvals from the phone).

pub mod api;
pub mod approval_ask;
pub mod approval_card;
mod bot;
pub mod cards;
pub mod copilot_approvals;
pub mod desk_store;
pub mod diff;
mod error;
pub mod gate;
pub mod inbox;
pub mod limit;
pub mod notify;
mod panel_approvals;
pub mod poller;
pub mod queue;
pub mod secrets;
pub mod sessions;
pub mod store;
pub mod text;
pub mod topics;
pub mod updates;

use std::path::Path;

pub use api::{HttpApi, TelegramApi};
pub use bot::{Bot, DEFAULT_APPROVAL_WAIT, WeakBot};
pub use error::{Error, Result};

/// Checks `token` with `getMe` (at `CROSS_AGENT_TELEGRAM_API` or the public API) and, when the
/// Bot API knows it, stores it owner-only in `home`. Returns the bot. Blocking.
pub fn setup_blocking(home: &Path, token: &str) -> Result<api::User> {
    let base = std::env::var(cross_agent_protocol::settings::TELEGRAM_API).ok();
    setup_blocking_at(home, base.as_deref(), token)
}

/// [`setup_blocking`] against the Bot API at `base` (`None`: the public one); the desktop app
/// passes the base it was started with.
pub fn setup_blocking_at(home: &Path, base: Option<&str>, token: &str) -> Result<api::User> {
    let api = HttpApi::new(base, token)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    let bot = runtime.block_on(api.get_me())?;
    store::write_token(home, token.trim())?;
    Ok(bot)
}

/// Issues a new pairing code (replacing any pending one), good for ten minutes.
pub fn new_pair_code(home: &Path) -> Result<store::PendingCode> {
    if store::read_token(home)?.is_none() {
        return Err(Error::NotSetUp);
    }
    let mut access = store::read_access(home)?;
    let code: String = uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .chars()
        .take(8)
        .collect::<String>()
        .to_ascii_uppercase();
    let pending = store::PendingCode {
        code,
        expires_at_ms: poller::now_ms() + store::PAIR_CODE_TTL_MS,
    };
    access.pending = Some(pending.clone());
    store::write_access(home, &access)?;
    Ok(pending)
}

/// Removes every pairing of `user_id`; says how many there were.
pub fn unpair(home: &Path, user_id: i64) -> Result<usize> {
    let mut access = store::read_access(home)?;
    let before = access.paired.len();
    access.paired.retain(|p| p.user_id != user_id);
    let removed = before - access.paired.len();
    if removed > 0 {
        store::write_access(home, &access)?;
    }
    Ok(removed)
}

/// Reads the bot token from stdin: its first line. On a terminal, echo is off while it is typed
/// (and back on after), so the token never shows on screen.
pub fn read_token_from_stdin() -> Result<String> {
    use std::io::BufRead;
    let stdin = std::io::stdin();
    let echo_off = terminal::EchoOff::on_stdin();
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    drop(echo_off);
    read.map_err(|e| Error::io("stdin", e))?;
    let token = line.trim().to_owned();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(Error::BadToken);
    }
    Ok(token)
}

mod terminal {
    //! Turning a terminal's echo off for the length of one read.

    use rustix::termios::{self, LocalModes, OptionalActions, Termios};

    pub struct EchoOff(Option<Termios>);

    impl EchoOff {
        pub fn on_stdin() -> EchoOff {
            let stdin = std::io::stdin();
            if !termios::isatty(&stdin) {
                return EchoOff(None);
            }
            let Ok(saved) = termios::tcgetattr(&stdin) else {
                return EchoOff(None);
            };
            let mut quiet = saved.clone();
            quiet.local_modes.remove(LocalModes::ECHO);
            if termios::tcsetattr(&stdin, OptionalActions::Now, &quiet).is_err() {
                return EchoOff(None);
            }
            eprint!("Bot token (from BotFather; not shown): ");
            EchoOff(Some(saved))
        }
    }

    impl Drop for EchoOff {
        fn drop(&mut self) {
            if let Some(saved) = self.0.take() {
                let _ = termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &saved);
                eprintln!();
            }
        }
    }
}
