//! `cross-agent telegram setup | pair | status | unpair`: the daemon's Telegram bot from a shell.
//! The token is read from stdin only (never an argument, never echoed) and never printed.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use cross_agent_home::Home;
use cross_agent_telegram::store;
use serde_json::json;

use crate::display::escape_cell;

#[derive(Debug, Args)]
pub struct TelegramArgs {
    #[command(subcommand)]
    command: TelegramCommand,
}

#[derive(Debug, Subcommand)]
enum TelegramCommand {
    /// Read the bot token from stdin, check it with Telegram (getMe) and store it owner-only.
    Setup {
        /// Print JSON (the bot's username).
        #[arg(long)]
        json: bool,
    },
    /// Print a one-time code (10 minutes); send `/pair CODE` to the bot to allow your user and chat.
    Pair {
        #[arg(long)]
        json: bool,
    },
    /// Paired users and chats, the poller's state, the last update received, the last error,
    /// the updates it could not read and skipped.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Take a user (by numeric id) off the allowlist.
    Unpair {
        /// The Telegram user id, as `telegram status` shows it.
        user_id: i64,
    },
}

impl TelegramArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let home = Home::from_env()?;
        home.ensure_root()?;
        let root = home.root();
        match self.command {
            TelegramCommand::Setup { json } => {
                let token = cross_agent_telegram::read_token_from_stdin()?;
                let bot = match cross_agent_telegram::setup_blocking(root, &token) {
                    Ok(bot) => bot,
                    Err(error) => {
                        eprintln!("cross-agent: the token was not stored: {error}");
                        return Ok(ExitCode::FAILURE);
                    }
                };
                let username = bot.username.unwrap_or_default();
                if json {
                    println!("{}", json!({"username": username, "id": bot.id}));
                } else {
                    println!(
                        "set up @{}; the daemon polls it while it runs (cross-agent daemon start). Next: cross-agent telegram pair",
                        escape_cell(&username)
                    );
                }
            }
            TelegramCommand::Pair { json } => {
                let pending = cross_agent_telegram::new_pair_code(root)?;
                if json {
                    println!(
                        "{}",
                        json!({"code": pending.code, "expires_at_ms": pending.expires_at_ms})
                    );
                } else {
                    println!(
                        "send this to the bot within 10 minutes:\n\n    /pair {}",
                        pending.code
                    );
                }
            }
            TelegramCommand::Status { json } => {
                let access = store::read_access(root)?;
                let status = store::read_status(root)?;
                let set_up = store::read_token(root)?.is_some();
                let outbound = store::read_outbound(root)?;
                let hooks = cross_agent_telegram::notify::hook_summary(root);
                if json {
                    println!(
                        "{}",
                        json!({"set_up": set_up, "paired": access.paired,
                               "pairing_pending": access.pending.is_some(), "poller": status,
                               "outbound": outbound, "hook_sessions": hooks})
                    );
                } else {
                    print_status(set_up, &access, &status);
                    if set_up {
                        print_outbound(&outbound, &hooks);
                    }
                }
            }
            TelegramCommand::Unpair { user_id } => {
                let removed = cross_agent_telegram::unpair(root, user_id)?;
                if removed == 0 {
                    eprintln!("cross-agent: user {user_id} is not paired");
                    return Ok(ExitCode::FAILURE);
                }
                println!("unpaired user {user_id}");
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn print_outbound(
    outbound: &cross_agent_telegram::queue::QueueSnapshot,
    hooks: &cross_agent_telegram::notify::HookSummary,
) {
    let waiting: usize = outbound.waiting.values().sum();
    let per_chat: Vec<String> = outbound
        .waiting
        .iter()
        .map(|(chat, count)| format!("{count} for chat {chat}"))
        .collect();
    if per_chat.is_empty() {
        println!(
            "outbound:     nothing waiting ({} sent, {} failed)",
            outbound.sent, outbound.failed
        );
    } else {
        println!("outbound:     {waiting} waiting: {}", per_chat.join(", "));
    }
    match &outbound.last_rate_limited {
        Some(limited) => println!(
            "last 429:     {} in chat {} (retry after {} s)",
            limited.at,
            limited.chat_id,
            limited
                .retry_after_s
                .map_or("-".to_owned(), |s| s.to_string())
        ),
        None => println!("last 429:     -"),
    }
    println!(
        "hook sessions: {} ({} awaiting approval{})",
        hooks.count,
        hooks.awaiting_approval.len(),
        if hooks.awaiting_approval.is_empty() {
            String::new()
        } else {
            let ids: Vec<String> = hooks
                .awaiting_approval
                .iter()
                .map(|id| escape_cell(id).into_owned())
                .collect();
            format!(": {}", ids.join(", "))
        }
    );
}

fn print_status(set_up: bool, access: &store::Access, status: &store::PollerStatus) {
    if !set_up {
        println!("no bot set up (cross-agent telegram setup)");
        return;
    }
    let show = |value: &Option<String>| {
        value
            .as_deref()
            .map_or("-".to_owned(), |v| escape_cell(v).into_owned())
    };
    println!("bot:          @{}", show(&status.bot_username));
    let state = if status.state.is_empty() {
        "not started"
    } else {
        &status.state
    };
    println!("poller:       {state}");
    println!(
        "last update:  {} ({} received)",
        show(&status.last_update_at),
        status.updates_received
    );
    println!("last error:   {}", show(&status.last_error));
    match &status.last_skipped {
        Some(last) => println!(
            "skipped:      {} unreadable update(s); last: {} ({}) at {}: {}",
            status.updates_skipped,
            last.update
                .update_id
                .map_or("an update with no readable id".to_owned(), |id| format!(
                    "update {id}"
                )),
            escape_cell(last.update.kind.as_deref().unwrap_or("unknown kind")),
            escape_cell(&last.at),
            escape_cell(&last.update.reason)
        ),
        None => println!("skipped:      none"),
    }
    if access.paired.is_empty() {
        println!("paired:       nobody (cross-agent telegram pair)");
    }
    for paired in &access.paired {
        println!(
            "paired:       user {} in chat {} ({}, since {})",
            paired.user_id,
            paired.chat_id,
            escape_cell(&paired.name),
            paired.paired_at
        );
    }
}
