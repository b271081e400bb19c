//! What the messaging subcommands (`send`, `status`, `pin`, `check`) share: the caller context
//! they forward (gathered by the same rules as `cross-agent mcp`), the daemon connection, and a
//! readable rendering of the daemon's JSON sections.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use cross_agent_caller::{PerCall, Snapshot};
use cross_agent_home::{Error as HomeError, Home};
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_ipc::{ConnectOptions, Error as IpcError};
use cross_agent_protocol::bridge::CallerContext;
use cross_agent_protocol::rpc::{ClientKind, ErrorCode};
use serde_json::Value;

use crate::display::{escape, escape_cell};

/// The client name a CLI caller reports in place of an MCP `clientInfo.name`.
pub const CLI_CLIENT_NAME: &str = "cross-agent-cli";

/// This process as a caller: its environment, cwd, ancestry and settings.
pub fn caller() -> CallerContext {
    cross_agent_caller::context(
        &Snapshot::from_process(),
        PerCall {
            client_name: Some(CLI_CLIENT_NAME.to_owned()),
            codex_turn_metadata: None,
            copilot_caller_session: None,
        },
    )
}

/// Connects to the daemon, starting it when nothing answers.
pub fn connect() -> anyhow::Result<(Home, BlockingClient)> {
    let home = Home::from_env()?;
    let client =
        match BlockingClient::connect_or_start(&home, &ConnectOptions::new(ClientKind::Cli)) {
            Ok(client) => client,
            // A refused home says all there is to say; its logs are not to be trusted.
            Err(
                error @ IpcError::Home(
                    HomeError::HomeUnsafe { .. } | HomeError::SocketUnsafe { .. },
                ),
            ) => {
                return Err(error.into());
            }
            Err(error) => {
                return Err(anyhow::Error::new(error).context(format!(
                    "cannot reach the cross-agent daemon; its log is in {}",
                    home.logs_dir().display()
                )));
            }
        };
    Ok((home, client))
}

/// A daemon error in words: a method the daemon does not serve yet says so.
pub fn explain(method: &str, error: IpcError) -> anyhow::Error {
    match error {
        IpcError::Rpc {
            code: ErrorCode::MethodNotFound,
            message,
            ..
        } => anyhow::anyhow!(
            "the cross-agent daemon does not serve `{method}` yet ({message}); it may be older \
             than this command: `cross-agent daemon restart` starts the current one"
        ),
        other => anyhow::Error::new(other),
    }
}

/// An absolute `--cwd`, relative ones taken from the current directory.
pub fn absolute_cwd(cwd: Option<PathBuf>) -> anyhow::Result<Option<String>> {
    let Some(cwd) = cwd else { return Ok(None) };
    let cwd = if cwd.is_absolute() {
        cwd
    } else {
        std::env::current_dir()
            .context("reading the current directory")?
            .join(cwd)
    };
    Ok(Some(cwd.to_string_lossy().into_owned()))
}

/// Prints a JSON value pretty on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// Writes a JSON value as indented `key: value` lines: the daemon's status sections are open
/// objects that grow, so they are rendered by shape rather than field by field. Keys and values
/// (titles, paths, peers' answers and errors) are escaped; a value keeps its newlines.
pub fn write_value(out: &mut impl Write, indent: usize, value: &Value) -> std::io::Result<()> {
    let pad = "  ".repeat(indent);
    match value {
        Value::Object(map) if map.is_empty() => writeln!(out, "{pad}(none)"),
        Value::Object(map) => {
            for (key, item) in map {
                let key = escape_cell(key);
                if is_scalar(item) {
                    writeln!(out, "{pad}{key}: {}", escape(&scalar(item)))?;
                } else {
                    writeln!(out, "{pad}{key}:")?;
                    write_value(out, indent + 1, item)?;
                }
            }
            Ok(())
        }
        Value::Array(items) if items.is_empty() => writeln!(out, "{pad}(none)"),
        Value::Array(items) => {
            for item in items {
                if is_scalar(item) {
                    writeln!(out, "{pad}- {}", escape(&scalar(item)))?;
                } else {
                    writeln!(out, "{pad}-")?;
                    write_value(out, indent + 1, item)?;
                }
            }
            Ok(())
        }
        scalar_value => writeln!(out, "{pad}{}", escape(&scalar(scalar_value))),
    }
}

fn is_scalar(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => true,
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".to_owned(),
        Value::Object(_) | Value::Array(_) if is_scalar(value) => "(none)".to_owned(),
        other => other.to_string(),
    }
}

/// `call` on `host` (a name of hosts.toml, or `all`) through the local daemon's link, its
/// answer read as that method's response.
pub fn on_host<T: serde::de::DeserializeOwned>(
    client: &BlockingClient,
    host: &str,
    call: cross_agent_protocol::hosts::HostCall,
) -> anyhow::Result<T> {
    let method = call.method();
    let answer = client
        .call(cross_agent_protocol::hosts::OnHostParams {
            host: host.to_owned(),
            call,
        })
        .map_err(|error| explain(method, error))?;
    serde_json::from_value(answer.0).map_err(|e| {
        anyhow::anyhow!("host `{host}` answered `{method}` with something unreadable: {e}")
    })
}
