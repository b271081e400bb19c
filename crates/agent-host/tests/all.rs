//! The agent-host crate against the fake VS Code Agent Host over real Unix sockets.

// Test helpers outside `#[test]` functions unwrap too: a failed setup should fail the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
