//! `cross-agent hook <event>`: what a Claude Code hook runs. Reads the hook JSON on stdin,
//! forwards it to the daemon (never starting one) and prints the daemon's answer. Whatever goes
//! wrong — no daemon, bad input, an older daemon — it exits 0 with nothing on stdout, so the
//! session goes on as if there were no hook (exit 2 would block the tool call).

use std::io::Read;
use std::process::ExitCode;

use clap::Args;
use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_protocol::hook::HookParams;
use cross_agent_protocol::rpc::ClientKind;

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook event: PreToolUse, PostToolUse, UserPromptSubmit, SessionStart, Notification, Stop.
    event: String,
}

impl HookArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        if let Err(reason) = self.forward() {
            // On stderr only: Claude Code shows it in its debug output, and the session goes on.
            eprintln!("cross-agent hook {}: {reason}", self.event);
        }
        Ok(ExitCode::SUCCESS)
    }

    fn forward(&self) -> Result<(), String> {
        let mut input = Vec::new();
        std::io::stdin()
            .read_to_end(&mut input)
            .map_err(|e| format!("could not read the hook's stdin: {e}"))?;
        let payload: serde_json::Value = serde_json::from_slice(&input)
            .map_err(|e| format!("the hook's stdin is not JSON: {e}"))?;
        let home = Home::from_env().map_err(|e| e.to_string())?;
        // Never autostart: a hook must not hold a session up starting a daemon.
        let Ok(client) = BlockingClient::connect(&home, &ConnectOptions::new(ClientKind::Cli))
        else {
            return Ok(());
        };
        let response = client
            .call(HookParams {
                event: self.event.clone(),
                payload,
            })
            .map_err(|e| format!("the daemon did not answer: {e}"))?;
        if let Some(output) = response.output {
            println!("{output}");
        }
        Ok(())
    }
}
