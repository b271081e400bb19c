//! The provider pool's tests: one binary, the suites under `suite/`.

mod suite;
