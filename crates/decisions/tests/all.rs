//! The one test binary of the decisions log: every file under `suite/`. Each test uses its own
//! temporary directory as `CROSS_AGENT_HOME`.

// Test helpers outside `#[test]` functions unwrap too: a failed setup should fail the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
