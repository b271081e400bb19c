//! The engine crate's one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
