//! One test binary for the crate (house style): the suites are under `suite/`.

mod suite;
