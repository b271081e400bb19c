//! How a message enters an agent session: the agents' own headless CLIs (`claude -p --resume`,
//! `codex exec resume`, `grok --single`), which append a turn to the session's transcript so the
//! peer keeps its context (docs/spec/cross-agent-mcp.md §3, §5 rule 4), and the panel shims, which put it into a
//! conversation an editor panel holds ([`panel`]).
//!
//! - [`settings`]: the `CROSS_AGENT_*` settings of the *caller's* registration that shape a CLI
//!   turn (binaries, models, sandbox, permission modes, the no-headless switch).
//! - [`headless`]: the exact command line and environment of one turn, built without running it
//!   so tests can compare it whole.
//! - [`run`]: running it — own process group, inactivity timeout, cancellation — and
//! - [`parse`]: reading the answer, the new session's id and the failure out of its output.
//! - [`process`]: pid liveness and process-group signals.
//! - [`panel`]: the shims' registrations, the caller's window and tab, a shim's socket.

mod error;
pub mod headless;
pub mod panel;
pub mod parse;
pub mod process;
pub mod run;
pub mod settings;

pub use error::{Error, Result};
