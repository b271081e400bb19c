//! The engine: session resolution rules, guards, deliveries, replies, recovery, late answers and
//! the decisions log, over SQLite state. Filled in by the messaging issues; the crate exists now
//! so the dependency direction (`protocol` ← `stores` ← `hub` ← `daemon`) is fixed from the start.
//!
//! So far it holds the store itself ([`db`]): `hub.db` with its append-only migrations.

pub mod db;
mod error;

pub use error::{Error, Result};
