//! Read-only readers of every agent's own session store (Claude Code, Codex, Grok Build, Copilot
//! in VS Code's Agent Host) into one model. The agents' files are the source of truth and are
//! never written.
//!
//! - [`roots`]: where each store is, and the (size, mtime) stamps discovery lists without reading;
//! - [`lines`]: reading complete lines from a byte offset, so a fold resumes where it stopped;
//! - [`claude`], [`codex`], [`grok`]: each agent's discovery, listing fold and side names;
//! - [`claude_registry`]: Claude Code's registry of running sessions (name, busy/idle, socket)
//!   and whether each entry's process still runs; relays (`xa-…`) are never sessions;
//! - [`live`]: the index a long-lived process keeps current by file-system notifications;
//! - [`held`]: the sessions it holds, compact, and the borrowed view every reader takes;
//! - [`render`]: the listing `sessions --json` prints, kept rendered by the daemon;
//! - [`summary`]: warnings said once per file, damaged lines counted by what was wrong;
//! - [`human`]: which user messages a person wrote (not the bridge's, not injected context);
//! - [`turns`]: one session's turns, messages, tool calls and results, for recovering answers.
//! - [`foreign`]: Cursor and Antigravity sessions, read into the same turns for handoff briefs.
//! - [`codex_config`]: the variable Codex's selected model provider reads its key from.
//! - [`copilot`]: GitHub Copilot's sessions in VS Code's Agent Host: the endpoint registry,
//!   the on-disk catalog, the SDK's events.

pub mod claude;
pub mod claude_registry;
pub mod codex;
pub mod codex_config;
pub mod copilot;
pub mod error;
pub mod foreign;
pub mod grok;
pub mod held;
pub mod human;
pub mod index;
pub mod lines;
pub mod live;
pub mod model;
pub mod parallel;
pub mod render;
pub mod resolve;
pub mod roots;
pub mod scan;
pub mod skim;
pub mod summary;
pub mod tap;
pub mod turns;
pub mod walk;

pub use error::{Result, StoreError};
pub use model::{
    Agent, LineContext, LineProblem, Session, StoreWarning, TranscriptFold, UnixMillis, Warnings,
};
pub use roots::{FileStamp, Sidecar, SourceFile, StoreRoots};
