//! The control crate's tests: one binary, suites under `tests/suite/`.
mod suite;
