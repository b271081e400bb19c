//! The one error type of the transports crate.

use std::path::PathBuf;

/// Why a turn could not be started at all. A turn that started and then failed is not an
/// error here: it is a [`crate::run::TurnOutcome`] with its failure, so the caller records it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `CROSS_AGENT_DISABLE_HEADLESS` is on for the caller: no CLI is ever started.
    #[error(
        "CROSS_AGENT_DISABLE_HEADLESS is set, so no headless {agent} CLI is started for session \
         {session}; no editor panel holds it"
    )]
    HeadlessDisabled {
        /// The target agent.
        agent: &'static str,
        /// The target session, or `a new session`.
        session: String,
    },

    /// The agent's binary could not be started.
    #[error("cannot start the {agent} CLI {binary} in {cwd}: {source}")]
    Spawn {
        /// The target agent.
        agent: &'static str,
        /// The binary that was tried.
        binary: PathBuf,
        /// The directory it was to run in.
        cwd: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// A message too long to pass as an argument, to an agent that takes it no other way.
    #[error(
        "the message is {bytes} bytes; the {agent} CLI takes its prompt only as a command-line \
         argument, which holds at most {limit} bytes here. Send a shorter message (put the bulk \
         in a file in the session's folder and name the file)"
    )]
    MessageTooLong {
        /// The target agent.
        agent: &'static str,
        /// The message's length.
        bytes: usize,
        /// [`crate::headless::MAX_ARGUMENT_BYTES`].
        limit: usize,
    },

    /// The agent has no CLI cross-agent may start: Copilot lives in the editor's Agent Host,
    /// and a turn reaches it only through that host, never through a command line.
    #[error(
        "no CLI is started for {agent} session {session}: {agent} sessions are reached only \
         through the editor's Agent Host"
    )]
    NoCli {
        /// The target agent.
        agent: &'static str,
        /// The target session, or `a new session`.
        session: String,
    },

    /// The session's directory does not exist (the CLI would not find the session from
    /// anywhere else).
    #[error("the {agent} session's directory {cwd} does not exist; the CLI must run from it")]
    MissingCwd {
        /// The target agent.
        agent: &'static str,
        /// The directory.
        cwd: PathBuf,
    },
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
