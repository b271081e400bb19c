//! The testkit test binary: the scripted endpoint on its own, and the real agent CLIs against it.

mod suite;
