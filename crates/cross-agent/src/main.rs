//! The `cross-agent` binary: parses arguments and hands over to [`cross_agent::run`].

use std::process::ExitCode;

fn main() -> ExitCode {
    cross_agent::run()
}
