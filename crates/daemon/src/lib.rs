//! The per-user daemon: process lifecycle, the RPC server, autostart and watchers. Everything
//! stateful lives behind it.
//!
//! - [`Daemon`] is the server à la mini-redis: [`Daemon::bind`] takes the home's pidfile lock,
//!   checks and opens `hub.db` (moving a damaged one aside; recording this start's generation)
//!   and binds `daemon.sock`;
//!   [`Daemon::run`] serves until the shutdown future passed in resolves or a client asks it to
//!   stop, then drains and records its stop. Tests run it in-process with a future of their own.
//! - [`entry::run_process`] is what `cross-agent daemon run` calls: umask, logging, signals,
//!   runtime, then the two steps above.
//! - [`handover`] replaces a running daemon with a new one without cutting anything off
//!   (`cross-agent daemon restart`, `cross-agent reload`).
//! - `telegram_sessions`: what the Telegram bot asks of the hub (session cards, prompts from
//!   the phone and their answers, handoffs).
//! - `own_caller`: the daemon as a caller, for the doors inside it (no ancestry, no session).
//! - `review_correction`: a cross review's correction into a session past the escalation
//!   guard, for every door (the CLI's `review --send`, the Telegram tap, the robot).
//! - `copilot_hosts`: one connection to every running Copilot Agent Host, keeping the
//!   listing current from the host itself and putting its tool confirmations on the phone.
//! - `robot` and `review_door`: the review robot's passes over idle sessions (with
//!   `review.robot = true`), and how a review (a child `cross-agent review --json`) and a
//!   correction (the escalation guard) are asked for, by the robot and the Review button.
//! - [`budget_watch`]: the daily budgets of `[usage.budget]`, announced at 80 % and 100 % once
//!   each (a Telegram notice, a decision line), from today's spend through a [`budget_watch::UsageSource`].
//! - `descriptors`: the file-descriptor limit raised at start, and the descriptors a detached
//!   daemon inherited closed.
//! - [`logging`] writes `logs/daemon.log.<date>` (rotated daily, two weeks kept).

pub mod budget_watch;
mod copilot_hosts;
mod descriptors;
pub mod entry;
mod error;
pub mod handover;
mod link_approvals;
pub mod logging;
pub mod memory;
mod own_caller;
mod passes;
mod review_correction;
mod review_door;
pub mod robot;
mod server;
pub mod signals;
mod telegram_sessions;

pub use error::{Error, Result};
pub use server::{
    ConnectionLimits, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, Daemon, DaemonInfo, MAX_DRAIN,
};

/// This daemon's cross-agent version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
