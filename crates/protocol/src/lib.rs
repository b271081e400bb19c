//! Wire and record types shared by every cross-agent process: daemon RPC params and responses,
//! MCP tool arguments and receipts, delivery records, envelopes and decision events, the
//! engine's in-process events ([`events::EngineEvent`]), and the
//! JSON Schemas generated from them.
//!
//! Types only — no I/O and no behaviour beyond (de)serialisation, so the thin processes (`mcp`,
//! shims, CLI) can link it without pulling in the engine.

pub mod acp;
pub mod bridge;
pub mod decisions;
pub mod events;
pub mod hook;
pub mod hosts;
pub mod panel;
pub mod review;
pub mod rpc;
pub mod schema;
pub mod settings;
pub mod timestamp;
pub mod tools;
pub mod usage;
pub mod vocabulary;

pub use vocabulary::{Agent, Scope, TargetKey, Transport};
