//! Tests of the review crate: the digest on hand-written lines for every skip rule and every
//! damage, a Copilot session's digest and review from its SDK events, the digest of
//! transcripts the real Claude Code and Codex wrote with bridged turns among them, the
//! verdict's committed schema and its validator, and the reviewer prompt.

mod cadence;
mod copilot;
mod digest_lines;
mod digest_real;
mod prompt;
mod run;
mod schema;
mod verdict;
