//! The shim's entry, decided from argv before anything heavy (no logging set up, no command
//! tree): the binary is a shim when its name is one of [`crate::links::LINKS`] or its first
//! argument is `shim`. A call that is not a panel session is exec'ed to the real binary at once,
//! which keeps the editor's `--version` and login calls as fast as without the shim.
//!
//! ```text
//! cross-agent shim claude <real-claude> <args…>     (also <node> <cli.js> <args…>)
//! cross-agent shim codex <args…>
//! cross-agent shim grok <args…>
//! cross-agent shim links [DIR]
//! cross-agent-claude-shim <real-claude> <args…>     (and -codex-, -grok- likewise)
//! cross-agent-claude-shim --output-format … <args…>  (an SDK host's pathToClaudeCodeExecutable:
//!                                                    the real claude is found)
//! ```

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::ExitCode;

use cross_agent_protocol::vocabulary::Agent;

use crate::real_binary::{self, RealCommand};
use crate::registration::now_ms;
use crate::{agents, intercept, links, runtime};

pub const USAGE: &str = "\
usage: cross-agent shim claude <real-claude> <args…>   (claudeCode.claudeProcessWrapper)
       cross-agent shim claude <claude's options…>     (an SDK's pathToClaudeCodeExecutable:
                                                      CROSS_AGENT_REAL_CLAUDE, ~/.claude/local,
                                                      ~/.local/bin, then PATH)
       cross-agent shim codex <args…>                  (chatgpt.cliExecutable)
       cross-agent shim grok <args…>                   (grok.cliPath)
       cross-agent shim links [DIR]   create cross-agent-{claude,codex,grok}-shim in DIR
                                      (default: beside this binary) and print the settings";

/// Runs the shim when `args` (the whole argv) ask for one; `None` for any other command.
pub fn entry(args: &[OsString]) -> Option<ExitCode> {
    let name = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .and_then(OsStr::to_str)
        .unwrap_or("");
    if let Some(agent) = agent_of_link(name) {
        return Some(run_agent(agent, &args[1..]));
    }
    if args.get(1).map(OsString::as_os_str) != Some(OsStr::new("shim")) {
        return None;
    }
    let rest = &args[2.min(args.len())..];
    let what = rest.first().and_then(|a| a.to_str()).unwrap_or("");
    Some(match what {
        "claude" => run_agent(Agent::Claude, &rest[1..]),
        "codex" => run_agent(Agent::Codex, &rest[1..]),
        "grok" => run_agent(Agent::Grok, &rest[1..]),
        "links" => make_links(rest.get(1).map(Path::new)),
        "-h" | "--help" | "help" => {
            eprintln!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    })
}

fn agent_of_link(name: &str) -> Option<Agent> {
    match name {
        "cross-agent-claude-shim" => Some(Agent::Claude),
        "cross-agent-codex-shim" => Some(Agent::Codex),
        "cross-agent-grok-shim" => Some(Agent::Grok),
        _ => None,
    }
}

/// A shim call: exec'ed straight through unless it is a panel session.
fn run_agent(agent: Agent, args: &[OsString]) -> ExitCode {
    let env = |name: &str| std::env::var_os(name);
    let real = match agent {
        Agent::Claude => real_binary::claude(args, &env),
        Agent::Codex => real_binary::codex(args, &env),
        Agent::Grok => real_binary::grok(args, &env),
        Agent::Copilot => {
            eprintln!(
                "cross-agent shim copilot: there is no Copilot shim; Copilot runs in VS Code's \
                 Agent Host"
            );
            return ExitCode::from(2);
        }
    };
    let real: RealCommand = match real {
        Ok(real) => real,
        Err(error) => {
            eprintln!("cross-agent shim {}: {error}", agent.as_str());
            return ExitCode::from(127);
        }
    };
    if !intercept::is_panel_call(agent, &real.args) {
        return runtime::exec(&real);
    }
    let adapter = agents::adapter_for(agent, &real.args, now_ms());
    runtime::run(agent, real, adapter)
}

fn make_links(dir: Option<&Path>) -> ExitCode {
    match links::create(dir) {
        Ok(dir) => {
            eprintln!(
                "Created cross-agent-claude-shim, cross-agent-codex-shim and \
                 cross-agent-grok-shim in {}.",
                dir.display()
            );
            eprintln!(
                "Add these to your VS Code user settings (settings.json), then reload the window:"
            );
            // The settings on stdout, so they can be piped or copied as they are.
            println!("{}", links::settings_text(&dir));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("cross-agent shim links: {error}");
            ExitCode::FAILURE
        }
    }
}
