//! The review crate's one test binary (house style: `tests/all.rs` and `tests/suite/`).

mod suite;
