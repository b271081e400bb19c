//! Which calls of an agent binary are panel sessions the shim sits in (docs/spec/cross-agent-mcp.md "Shared
//! rules"): Claude with `--input-format stream-json`, Codex plain `app-server`, Grok `agent …
//! stdio`. Everything else — `--version`, `login`, `claude -p "…"`, `app-server daemon`,
//! `grok update`, `grok agent serve` — is exec'ed straight to the real binary.
//!
//! Decided from the arguments alone, before anything else happens, so a call that is not
//! intercepted costs an argument scan and an exec.

use std::ffi::OsString;

use cross_agent_protocol::vocabulary::Agent;

/// True when `args` (the real binary's arguments) start a panel session of `agent`.
pub fn is_panel_call(agent: Agent, args: &[OsString]) -> bool {
    let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap_or("")).collect();
    if args
        .iter()
        .any(|a| matches!(*a, "-h" | "--help" | "-V" | "--version"))
    {
        return false;
    }
    match agent {
        Agent::Claude => claude(&args),
        Agent::Codex => codex(&args),
        Agent::Grok => grok(&args),
        Agent::Copilot => false,
    }
}

/// `--input-format stream-json` or `--input-format=stream-json`.
fn claude(args: &[&str]) -> bool {
    args.iter().enumerate().any(|(i, arg)| {
        *arg == "--input-format=stream-json"
            || (*arg == "--input-format" && args.get(i + 1) == Some(&"stream-json"))
    })
}

/// Codex options that take a value as the next argument, before or after the subcommand.
const CODEX_VALUE_OPTIONS: &[&str] = &[
    "-c",
    "--config",
    "-p",
    "--profile",
    "-m",
    "--model",
    "-C",
    "--cd",
    "-s",
    "--sandbox",
    "-a",
    "--ask-for-approval",
    "-i",
    "--image",
    "--enable",
    "--disable",
    "--local-provider",
    "--listen",
];

/// The positional arguments, skipping options and the values of those that take one.
fn positionals<'a>(args: &[&'a str], value_options: &[&str]) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut skip_next = false;
    for arg in args {
        if skip_next {
            skip_next = false;
        } else if arg.starts_with('-') {
            skip_next = value_options.contains(arg);
        } else {
            found.push(*arg);
        }
    }
    found
}

/// Plain `app-server` over stdio: no subcommand after it (`app-server daemon`,
/// `app-server generate-json-schema`), no `--listen` other than stdio.
fn codex(args: &[&str]) -> bool {
    if positionals(args, CODEX_VALUE_OPTIONS) != ["app-server"] {
        return false;
    }
    let listen = args.iter().enumerate().find_map(|(i, arg)| {
        if *arg == "--listen" {
            Some(args.get(i + 1).copied().unwrap_or(""))
        } else {
            arg.strip_prefix("--listen=")
        }
    });
    listen.is_none_or(|url| url == "stdio://" || url == "stdio")
}

/// `agent [--reasoning-effort L] [--always-approve] stdio`.
fn grok(args: &[&str]) -> bool {
    let found = positionals(args, &["--reasoning-effort", "-m", "--model"]);
    found.first() == Some(&"agent") && args.last() == Some(&"stdio")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(agent: Agent, line: &str) -> bool {
        let args: Vec<OsString> = line.split_whitespace().map(OsString::from).collect();
        is_panel_call(agent, &args)
    }

    #[test]
    fn claude_panel_sessions_are_the_stream_json_ones() {
        let sdk = "--output-format stream-json --verbose --input-format stream-json \
                   --permission-prompt-tool=stdio --resume=abc";
        assert!(call(Agent::Claude, sdk));
        assert!(call(
            Agent::Claude,
            "--output-format stream-json --input-format=stream-json"
        ));
        for other in [
            "--version",
            "-p hello --output-format stream-json",
            "--input-format text",
            "login",
            "--input-format",
            "",
        ] {
            assert!(!call(Agent::Claude, other), "{other}");
        }
        assert!(!call(Agent::Claude, &format!("{sdk} --help")));
    }

    #[test]
    fn codex_panel_sessions_are_plain_app_server() {
        assert!(call(Agent::Codex, "app-server"));
        assert!(call(Agent::Codex, "-c model=x app-server"));
        assert!(call(Agent::Codex, "app-server --listen stdio://"));
        for other in [
            "app-server daemon",
            "app-server generate-json-schema --out x",
            "app-server --listen ws://127.0.0.1:1",
            "--version",
            "login",
            "exec hi",
            "",
        ] {
            assert!(!call(Agent::Codex, other), "{other}");
        }
    }

    #[test]
    fn grok_panel_sessions_are_agent_stdio() {
        assert!(call(Agent::Grok, "agent stdio"));
        assert!(call(Agent::Grok, "agent --reasoning-effort high stdio"));
        assert!(call(Agent::Grok, "agent --always-approve stdio"));
        for other in ["agent serve", "update", "--version", "stdio", ""] {
            assert!(!call(Agent::Grok, other), "{other}");
        }
    }
}
