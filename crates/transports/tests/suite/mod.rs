//! Command lines, output parsing, and runs of stand-in CLIs.

mod command_line;
mod fake_grok;
mod parse;
