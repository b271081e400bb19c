//! The one test binary of the desktop app: its panels driven through AccessKit with
//! `egui_kittest` over a temporary `CROSS_AGENT_HOME`, and the real window on Xvfb.

// Test helpers outside `#[test]` functions unwrap too: a failed setup should fail the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
