//! The engine: who is calling, session resolution, guards, deliveries and their workers, over
//! SQLite state. The daemon serves it; the thin clients never link it.
//!
//! - [`db`]: `hub.db` with its append-only migrations; [`records`]: the messaging tables;
//!   [`integrity`]: its check at start, and a damaged store moved aside.
//! - [`caller`]: the reply address (who is calling).
//! - [`settings`]: the caller registration's settings in effect for one call.
//! - [`envelope`]: the text a peer receives.
//! - [`engine`]: `send`, `pin`, `list_sessions`, `bridge_status`, and the worker pool.

pub mod caller;
pub mod db;
pub mod engine;
pub mod envelope;
mod error;
pub mod integrity;
pub mod records;
pub mod settings;

pub use cross_agent_protocol::bridge::Agent;
pub use engine::{Engine, EngineConfig, EngineInfo, NativeSettings};
pub use error::{Error, Result};
