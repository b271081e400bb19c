//! The decisions log (docs/spec/vsc-relay.txt): every decision the program makes as one JSON line of
//! `$CROSS_AGENT_HOME/decisions.jsonl`, and the queries `cross-agent decisions` answers from it.
//!
//! - [`writer`]: [`DecisionLog`], the cheap cloneable handle the engine records with; appends are
//!   whole lines with several writers (threads and processes), and never fail the caller.
//! - [`rotate`]: numbered files (`decisions.1.jsonl`, …) by size, about two weeks kept.
//! - [`query`]: filters and grouped counts over every file, without a daemon; `ranges`: where in
//!   each file it reads (a `--since` window's start by bisection, pieces for the cores).
//! - [`events`]: the engine's decisions built from the values it has in hand.
//! - [`redact`]: what is withheld from a line (payloads, secrets).
//! - [`line`], [`clock`]: reading a line cheaply; the one timestamp shape.
//!
//! The record type itself ([`Decision`]) is in `cross-agent-protocol`, so a thin process can read
//! the log without linking this crate's writer. This is a crate of its own rather than a module
//! of `hub` so that the CLI reads the log without linking the engine.

pub mod clock;
mod error;
pub mod events;
pub mod line;
pub mod query;
mod ranges;
pub mod redact;
pub mod rotate;
pub mod writer;

pub use cross_agent_protocol::decisions::{Decision, DecisionKind, Outcome};
pub use error::{Error, Result};
pub use query::{Answer, Condition, FieldPath, Group, Query, Report, Stats};
pub use rotate::{CURRENT_FILE, LogConfig};
pub use writer::{DecisionLog, WriterStats};
