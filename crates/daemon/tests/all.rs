//! The daemon crate's one test binary: daemons run in-process on temporary homes, reached over
//! their real sockets. Tests that need the `cross-agent` binary itself (autostart of a real
//! process, signals, the CLI) live in `crates/cross-agent/tests/`.

// Helpers outside `#[test]` functions panic on failure too; that is what a test helper is for.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
