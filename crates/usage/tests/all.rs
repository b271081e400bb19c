//! The usage crate's one test binary.
mod suite;
