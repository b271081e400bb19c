//! The shim alone, for the benchmark (`benches/shim.rs`): the same entry the `cross-agent`
//! binary takes first (`cross-agent-shim shim claude <real> <args…>`), built without the rest
//! of cross-agent so `cargo bench -p cross-agent-shim` needs no release build of the workspace.
//! The installed product is the `cross-agent` binary.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    cross_agent_shim::cli::entry(&args).unwrap_or_else(|| {
        eprintln!("{}", cross_agent_shim::cli::USAGE);
        ExitCode::from(2)
    })
}
