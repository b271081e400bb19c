//! Suites: synthetic files for each rule (hand-computed totals), and files written by the real
//! pinned Claude Code and Codex against the scripted endpoint.
mod ccusage;
mod claude;
mod codex;
mod compact;
mod handoff;
mod idle;
mod layout;
mod ledger;
mod live;
mod prices;
mod reader;
mod real;
mod real_hard;
mod records;
mod slots;
mod steps;
