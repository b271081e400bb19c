//! Sessions of agents the bridge does not deliver to but can hand work over from: Cursor
//! ([`cursor`]) and Antigravity ([`antigravity`]). Each is read where it lies, read-only, into
//! the same [`Turn`] model as Claude, Codex and Grok, so a handoff brief is
//! built the same way whatever the source.

pub mod antigravity;
pub mod cursor;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::model::UnixMillis;
use crate::turns::{Message, Role, Turn, TurnItem};

/// One foreign session, read whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignSession {
    pub session_id: String,
    /// The working directory: recorded by the agent, or derived (see `cwd_derived`).
    pub cwd: Option<PathBuf>,
    /// True when `cwd` was derived from the paths the session worked on rather than recorded.
    pub cwd_derived: bool,
    pub title: Option<String>,
    /// The store this was read from (Cursor's `store.db`, Antigravity's `transcript.jsonl`).
    pub path: PathBuf,
    pub turns: Vec<Turn>,
}

/// Builds turns from items fed in order: a user message opens a turn, and items before any
/// prompt go into a turn of their own.
#[derive(Debug, Default)]
struct TurnBuilder {
    turns: Vec<Turn>,
}

impl TurnBuilder {
    fn prompt(&mut self, text: String, at: Option<UnixMillis>) {
        if let Some(last) = self.turns.last_mut() {
            last.finished = true;
        }
        self.turns.push(Turn {
            started_at: at,
            ended_at: at,
            finished: false,
            items: vec![TurnItem::Message(Message {
                role: Role::User,
                text,
                timestamp: at,
            })],
        });
    }

    fn push(&mut self, item: TurnItem, at: Option<UnixMillis>) {
        if self.turns.is_empty() {
            self.turns.push(Turn {
                started_at: at,
                ..Turn::default()
            });
        }
        if let Some(turn) = self.turns.last_mut() {
            if at.is_some() {
                turn.ended_at = at.max(turn.ended_at);
            }
            turn.items.push(item);
        }
    }

    /// Marks the last turn finished when its last item is the assistant's prose: the format
    /// records no end-of-turn, and a reply that ends on a tool call is still working.
    fn into_turns(mut self) -> Vec<Turn> {
        if let Some(last) = self.turns.last_mut() {
            last.finished = matches!(
                last.items.last(),
                Some(TurnItem::Message(m)) if m.role == Role::Assistant
            );
        }
        self.turns
    }
}
