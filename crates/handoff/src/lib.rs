//! Handing a session to another agent (docs/spec/vsc-relay.txt, "A session can be handed to another chat"):
//! the library under `cross-agent handoff`. It sits beside the hub in `docs/architecture.md`:
//! it reads the agents' stores through `cross-agent-stores` and never talks to the daemon; the
//! CLI delivers to a chat through the daemon itself.
//!
//! - [`source`]: finding a session by id in any store (Claude Code, Codex, Grok, Cursor,
//!   Antigravity) and reading it whole, read-only;
//! - [`brief`]: the deterministic reading — contract, files, commands with outcomes, failures,
//!   where it stands — built without a model;
//! - [`compact`]: the narrative compact from the family's own CLI, then providers;
//! - [`render`], the Markdown of `HANDOFF.md`;
//! - [`destinations`]: chats, editors and CLI agents it can go to, with login state;
//! - [`login_cache`]: login checks remembered until the CLI or its credentials file changes;
//! - [`deliver`]: writing the brief where the work is, the launcher script, the terminal;
//!   [`safe_write`]: how it writes into folders it did not make, never through a link;
//! - [`receipt`]: the receipt check (contract anchors the receipt never mentions);
//! - [`decisions`]: the decision line of every handoff and receipt check.

pub mod brief;
pub mod compact;
pub mod decisions;
pub mod deliver;
pub mod destinations;
mod error;
pub mod login_cache;
pub mod receipt;
pub mod render;
pub mod safe_write;
use cross_agent_process::run;
pub mod source;

pub use error::{HandoffError, Result};

/// A brief ready to write: the deterministic part, the compact (or why there is none) and the
/// Markdown of both.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub brief: brief::Brief,
    pub compact: compact::CompactResult,
    pub markdown: String,
}

/// Builds the brief of `session`, asking for the compact when `settings` are given (the
/// `brief` command shows the deterministic part alone and asks no one).
pub fn prepare(session: &source::SourceSession, settings: Option<&compact::Settings>) -> Prepared {
    let brief = brief::build(session);
    let compact = match settings {
        Some(settings) => compact::ask(session, &brief, settings),
        None => compact::CompactResult {
            compact: None,
            attempts: Vec::new(),
        },
    };
    let section = match (settings, &compact.compact) {
        (None, _) => render::CompactSection::NotAsked,
        (Some(_), None) => render::CompactSection::Unanswered,
        (Some(_), Some(c)) => render::CompactSection::Written(c),
    };
    let markdown = render::markdown(&brief, section);
    Prepared {
        brief,
        compact,
        markdown,
    }
}
