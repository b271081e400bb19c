//! The provider pool's tests: one binary, the suites under `suite/`.

// Test helpers outside `#[test]` functions unwrap too: a failed setup should fail the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
