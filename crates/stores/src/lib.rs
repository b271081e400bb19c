//! Read-only readers of every agent's own session store (Claude Code, Codex, Grok Build) into one
//! model. The agents' files are the source of truth and are never written.

pub mod model;

pub use model::{Agent, LineContext, Session, StoreWarning, TranscriptFold, UnixMillis, Warnings};
