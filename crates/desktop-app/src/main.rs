//! The `cross-agent-desktop` binary: opens the window and hands over to
//! [`cross_agent_desktop::run`].

use std::process::ExitCode;

fn main() -> ExitCode {
    cross_agent_desktop::run()
}
