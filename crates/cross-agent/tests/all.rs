//! The one test binary of the `cross-agent` CLI: every file under `suite/`. Each test runs the
//! real binary over its stdio with a temporary HOME, never the developer's own stores.

// Test helpers outside `#[test]` functions unwrap too: a failed setup should fail the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
