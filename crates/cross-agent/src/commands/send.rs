//! `cross-agent send <agent> MESSAGE`: what `send_to_<agent>` does, from a shell. It forwards
//! this process's caller context (the same rules as `cross-agent mcp`: identity variables,
//! ancestry, `CROSS_AGENT_*` settings, the filtered child environment), prints the receipt and
//! exits non-zero with the refusal's message when the daemon refuses.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use cross_agent_protocol::bridge::{Agent, Refusal, Scope, SendParams, SendReceipt, SendResponse};

use cross_agent_protocol::hosts::HostCall;

use super::bridge_client;
use crate::display::{escape, escape_cell};

/// Exit code of a refused send (an answer, not a failure to ask).
pub const EXIT_REFUSED: u8 = 2;

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The agent to send to.
    #[arg(value_enum)]
    agent: Agent,
    /// The message; `-` reads it from stdin. The peer cannot see your conversation, so make it
    /// self-contained.
    message: String,
    /// The target session: its id or exact name, or for Copilot its session URI (default: the
    /// pin, else the active session; Copilot needs this or a sticky pin).
    #[arg(long, value_name = "ID|NAME|URI")]
    session: Option<String>,
    /// Open a new conversation even if one is active (the last resort: no context).
    #[arg(long = "new", conflicts_with = "session")]
    new_session: bool,
    /// Where the active session is looked for (default: CROSS_AGENT_SCOPE, else cwd).
    #[arg(long, value_enum)]
    scope: Option<Scope>,
    /// Basis for discovery and where a new session is created (default: here).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Continue a bridge conversation, sharing its hop budget.
    #[arg(long, value_name = "ID")]
    conversation: Option<String>,
    /// Deliver the text without the bridge header.
    #[arg(long)]
    raw: bool,
    /// Allow reaching another session of the caller's own agent (claude, grok, and copilot
    /// through a sticky pin).
    #[arg(long)]
    allow_same_agent: bool,
    /// CLI inactivity limit in seconds (default: CROSS_AGENT_TIMEOUT, else 600).
    #[arg(long, value_name = "S")]
    timeout: Option<u64>,
    /// The machine the session is on: a host of `cross-agent hosts list`, or `all` to find the
    /// one whose session answers to --session (default: this one).
    #[arg(long, value_name = "NAME|all")]
    host: Option<String>,
    /// Print the receipt (or refusal) as JSON.
    #[arg(long)]
    json: bool,
}

impl SendArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let agent = self.agent;
        if self.allow_same_agent && agent == Agent::Codex {
            anyhow::bail!(
                "send to codex has no --allow-same-agent: another Codex thread is reached only \
                 by naming it with --session"
            );
        }
        let message = if self.message == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading the message from stdin")?;
            text
        } else {
            self.message
        };
        if let Some(why) = cross_agent_protocol::tools::message_too_long(&message) {
            anyhow::bail!("{why}; nothing was sent");
        }
        let params = SendParams {
            agent,
            message,
            session_id: self.session,
            new_session: self.new_session,
            scope: self.scope,
            cwd: bridge_client::absolute_cwd(self.cwd)?,
            timeout: self.timeout.filter(|&seconds| seconds > 0),
            conversation_id: self.conversation,
            raw: self.raw,
            allow_same_agent: self.allow_same_agent,
            caller: bridge_client::caller(),
        };
        let (_home, client) = bridge_client::connect()?;
        let response: SendResponse = match &self.host {
            Some(host) => bridge_client::on_host(&client, host, HostCall::Send(params))?,
            None => client
                .call(params)
                .map_err(|error| bridge_client::explain("send", error))?,
        };
        if self.json {
            bridge_client::print_json(&response)?;
        }
        match response {
            SendResponse::Accepted(receipt) => {
                if !self.json {
                    write_receipt(&mut std::io::stdout().lock(), &receipt)?;
                }
                Ok(ExitCode::SUCCESS)
            }
            SendResponse::Refused(refusal) => {
                write_refusal(&mut std::io::stderr().lock(), &refusal)?;
                Ok(ExitCode::from(EXIT_REFUSED))
            }
        }
    }
}

/// The receipt in a few readable lines. Every string in it may quote a store (a title, a
/// session id) or the daemon's words about a peer, so each is escaped.
pub fn write_receipt(out: &mut impl Write, receipt: &SendReceipt) -> std::io::Result<()> {
    let target = match (&receipt.target_session_id, receipt.will_create_session) {
        (Some(id), _) => format!("{} session {}", receipt.target_agent, escape_cell(id)),
        (None, true) => format!("a new {} session", receipt.target_agent),
        (None, false) => format!("a {} session", receipt.target_agent),
    };
    let title = receipt
        .target_title
        .as_deref()
        .map(|title| format!(" \"{}\"", escape_cell(title)))
        .unwrap_or_default();
    writeln!(
        out,
        "accepted: delivery {} to {target}{title} (selected by {})",
        escape_cell(&receipt.delivery_id),
        serde_json::to_value(receipt.target_selected_by)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    )?;
    if let Some(host) = &receipt.host {
        writeln!(out, "on host {}", escape_cell(host))?;
    }
    writeln!(
        out,
        "request {}  conversation {}  hop {}/{}",
        escape_cell(&receipt.request_id),
        escape_cell(&receipt.conversation_id),
        receipt.hop,
        receipt.max_hops
    )?;
    if let Some(seconds) = receipt.target_last_activity_seconds_ago {
        writeln!(out, "target last active {seconds} s ago")?;
    }
    writeln!(
        out,
        "queue depth {}; reply lands in {}; return panel available now: {}",
        receipt.queue_depth,
        escape_cell(
            receipt
                .reply_lands_in_session
                .as_deref()
                .unwrap_or("(nowhere)")
        ),
        if receipt.return_panel_available_now {
            "yes"
        } else {
            "no"
        }
    )?;
    writeln!(out, "note: {}", escape(&receipt.note))?;
    for warning in &receipt.warnings {
        writeln!(out, "warning: {}", escape(warning))?;
    }
    Ok(())
}

/// A refusal: its message, then the candidates it offers, escaped like a receipt.
pub fn write_refusal(out: &mut impl Write, refusal: &Refusal) -> std::io::Result<()> {
    writeln!(out, "cross-agent: refused: {}", escape(&refusal.message))?;
    for candidate in &refusal.candidates {
        writeln!(
            out,
            "  {} {}  {}  {}  last active {}",
            candidate.agent,
            escape_cell(&candidate.session_id),
            escape_cell(candidate.title.as_deref().unwrap_or("(untitled)")),
            escape_cell(candidate.cwd.as_deref().unwrap_or("-")),
            escape_cell(candidate.last_activity.as_deref().unwrap_or("-"))
        )?;
    }
    Ok(())
}
