//! How text reaches a person's terminal: strings that came from a store or a peer escaped so
//! they cannot drive the terminal ([`escape()`]), tables aligned by display width ([`table`]), and
//! times in words ([`when`]). `--json` output goes around all of this and keeps the exact text.

pub mod escape;
pub mod table;
pub mod when;

pub use escape::{escape, escape_cell};
