//! The telegram crate's one error enum. No variant ever carries the bot token: request errors
//! are stripped of their URL (which holds it) before they are kept.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Bot API answered `ok: false`.
    #[error("Telegram refused {method}: {description} (error {code})")]
    Api {
        method: &'static str,
        code: i64,
        description: String,
        /// `parameters.retry_after` of a 429, in seconds.
        retry_after: Option<u64>,
    },
    /// The request did not get an answer (connection refused, timed out, …).
    #[error("could not reach the Telegram Bot API for {method}: {source}")]
    Network {
        method: &'static str,
        #[source]
        source: reqwest::Error,
    },
    /// An answer that is not the Bot API's JSON.
    #[error("the Telegram Bot API's answer to {method} is not what it documents: {source}")]
    Decode {
        method: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A `getUpdates` answer with updates and not one `update_id` that can be read: nothing can
    /// be confirmed, so asking again at once would only bring the same updates back.
    #[error(
        "Telegram's answer to getUpdates held {count} update(s) and no readable update_id, so \
         none can be confirmed; backing off before asking again"
    )]
    UnconfirmableUpdates { count: usize },
    #[error("the bot token is empty or has a line break in it; paste the token BotFather gave you")]
    BadToken,
    #[error("no bot is set up: run `cross-agent telegram setup` first")]
    NotSetUp,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: {reason}")]
    Gate { path: PathBuf, reason: String },
    #[error("cannot make the directory of the per-token poller locks: {0}")]
    LockDir(#[source] cross_agent_home::Error),
    #[error("another poller holds this bot's token ({0})")]
    Locked(#[source] cross_agent_home::Error),
    /// A file from the phone bigger than the inbox takes.
    #[error("the file is larger than {limit} bytes, the most the inbox takes")]
    TooLarge { limit: u64 },
    /// A file from the phone that could not be put in a session's inbox.
    #[error("{path}: {reason}")]
    Inbox { path: PathBuf, reason: String },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// The Bot API's error code, when it answered.
    pub fn code(&self) -> Option<i64> {
        match self {
            Error::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}
