//! The cross review's reading side (docs/review.md, docs/architecture.md "review"): what a
//! reviewer of another model family is shown about an idle session, and the answer it must give.
//!
//! - [`digest`]: one session read from both ends — the opening goal from the head, a bounded
//!   tail of recent messages and the latest real human instruction from the end, the model
//!   family the transcript records, and the position of the last record read — skipping what
//!   the bridge and the agents put into the user role;
//! - [`verdict`]: the answer's shape (`on_track | drifting | off_track | blocked`, the task, the
//!   gaps, an optional correction), its committed JSON Schema and a validator whose error names
//!   the field;
//! - [`prompt`]: the reviewer's prompt built from a digest, and the one repair request sent back
//!   with a validation error;
//! - [`run`]: one review — the reviewer of another family picked from the provider pool, asked,
//!   its answer validated and repaired once — ending in a [`run::ReviewReport`] whatever
//!   happened;
//! - [`record`]: the report's decision line and the copy kept in the home for `review show`.
//! - [`settings`]: the `[review]` table of `CROSS_AGENT_HOME/config.toml` (steering, the robot,
//!   the guard's limits);
//! - [`guard`]: the escalation guard's rules over the facts the daemon gathers;
//! - [`correct`]: asking the daemon to send a correction (`review_correction`).
//!
//! - [`cadence`]: the review robot's timing (which idle sessions are due, a cap per pass) and
//!   its state file, session ids hashed with a per-install secret.
//!
//! Read-only as to the agents: their stores are never written; only the bridge's home is (a
//! correction reaches a session only as a bridge delivery, sent by the daemon).

pub mod cadence;
pub mod correct;
pub mod digest;
pub mod error;
pub mod guard;
pub mod prompt;
pub mod record;
pub mod run;
pub mod settings;
pub mod verdict;

pub use error::{Result, ReviewError};
pub use run::{ReviewOutcome, ReviewReport, ReviewSettings, Reviewer, review};
