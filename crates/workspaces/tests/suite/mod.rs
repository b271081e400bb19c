//! The workspaces crate's suites: the editors' state files, git state on real repositories,
//! live windows under Xvfb, and the listing that puts them together.

mod git;
mod listing;
mod state;
mod support;
mod x11;
