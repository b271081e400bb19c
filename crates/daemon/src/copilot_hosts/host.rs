//! Following one live Agent Host: connect, list, apply the root notifications, publish the
//! listing; on any failure or end, withdraw the listing and try again after a back-off, until
//! the host's entry goes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_agent_host::{ConnectionToken, HostConnection, RootEvent, SessionInfo};
use cross_agent_stores::copilot::HostSession;
use cross_agent_stores::model::UnixMillis;
use tokio::sync::oneshot;

use super::Ctx;
use super::approvals::Inputs;

/// The first wait before trying a host again, doubled on each failure up to [`BACKOFF_MAX`].
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// A live endpoint to follow.
pub(super) struct Host {
    pub user_data: PathBuf,
    /// The registry entry file: what every warning names (never the token).
    pub entry: PathBuf,
    pub socket: PathBuf,
    pub token: ConnectionToken,
}

/// Follows `host` until `retired` resolves (its entry went, or the watcher stopped).
pub(super) async fn follow(ctx: Arc<Ctx>, host: Host, mut retired: oneshot::Receiver<()>) {
    let mut backoff = BACKOFF_FIRST;
    // The last failure said at `warn`; the same one again is only a debug line.
    let mut last_said: Option<String> = None;
    loop {
        let ended = tokio::select! {
            _ = &mut retired => break,
            ended = connected(&ctx, &host) => ended,
        };
        withdraw(&ctx, &host);
        match ended {
            Ok(()) => {
                // It was up: the next try is a reconnect, not a failure.
                backoff = BACKOFF_FIRST;
                last_said = None;
                tracing::info!(entry = %host.entry.display(), "the connection to the Copilot agent host ended; reconnecting");
            }
            Err(error) => {
                let said = error.to_string();
                if last_said.as_deref() == Some(said.as_str()) {
                    tracing::debug!(entry = %host.entry.display(), error = %said, "copilot agent host still unreachable");
                } else {
                    tracing::warn!(
                        entry = %host.entry.display(),
                        error = %said,
                        retry_in_s = backoff.as_secs(),
                        "cannot follow the Copilot agent host of this endpoint entry"
                    );
                    last_said = Some(said);
                }
            }
        }
        tokio::select! {
            _ = &mut retired => break,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
    withdraw(&ctx, &host);
}

/// The host's listing no longer counts.
fn withdraw(ctx: &Ctx, host: &Host) {
    if ctx.hosts.remove(&host.user_data, &host.entry) {
        ctx.engine.copilot_hosts_changed();
    }
}

/// One connection, from connect to its end: `Ok` once it was up and ended, `Err` when it could
/// not be set up.
async fn connected(ctx: &Arc<Ctx>, host: &Host) -> cross_agent_agent_host::Result<()> {
    let conn = HostConnection::connect(&host.socket, &host.token, ctx.client_id.as_str()).await?;
    // Subscribed to before listing, so a change made meanwhile is applied after the listing,
    // never lost (applying one twice changes nothing).
    let mut events = conn.root_events().await;
    let mut sessions: BTreeMap<String, SessionInfo> = conn
        .list_sessions()
        .await?
        .into_iter()
        .map(|s| (s.uri.clone(), s))
        .collect();
    tracing::info!(
        entry = %host.entry.display(),
        sessions = sessions.len(),
        version = conn.protocol_version(),
        "following a Copilot agent host"
    );
    let mut inputs = Inputs::new(conn.clone(), ctx.clone());
    publish(ctx, host, &sessions);
    inputs.sync(&sessions);
    while let Some(event) = events.next().await {
        apply(&mut sessions, event);
        publish(ctx, host, &sessions);
        inputs.sync(&sessions);
    }
    Ok(())
}

/// One root notification applied to the listing.
fn apply(sessions: &mut BTreeMap<String, SessionInfo>, event: RootEvent) {
    match event {
        RootEvent::Added(info) => {
            sessions.insert(info.uri.clone(), info);
        }
        RootEvent::Removed { uri } => {
            sessions.remove(&uri);
        }
        RootEvent::Changed {
            uri,
            title,
            status,
            modified_at,
            working_directories,
            default_chat,
        } => {
            // A change for a session we never heard of waits for the next listing.
            let Some(info) = sessions.get_mut(&uri) else {
                return;
            };
            if let Some(title) = title {
                info.title = title;
            }
            if let Some(status) = status {
                info.status = status;
            }
            if let Some(at) = modified_at {
                info.modified_at = at;
            }
            if let Some(dirs) = working_directories {
                info.working_directories = dirs;
            }
            if let Some(chat) = default_chat {
                info.default_chat = Some(chat);
            }
        }
    }
}

fn publish(ctx: &Ctx, host: &Host, sessions: &BTreeMap<String, SessionInfo>) {
    let listed = sessions.values().map(host_session).collect();
    ctx.hosts.set(&host.user_data, &host.entry, listed);
    ctx.engine.copilot_hosts_changed();
}

fn host_session(info: &SessionInfo) -> HostSession {
    HostSession {
        uri: info.uri.clone(),
        editor_id: info.editor_id.clone(),
        title: info.title.clone(),
        archived: info.status.archived(),
        in_progress: info.status.in_progress(),
        input_needed: info.status.input_needed(),
        created_at: UnixMillis::parse_rfc3339(&info.created_at),
        modified_at: UnixMillis::parse_rfc3339(&info.modified_at),
        working_directories: info.working_directories.clone(),
        default_chat: info.default_chat.clone(),
    }
}
