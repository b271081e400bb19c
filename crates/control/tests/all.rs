//! The one test binary of `cross-agent-control`: every file under `suite/`.

// Test helpers outside `#[test]` functions unwrap too: a failed setup should fail the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
