//! Which connections the daemon serves, and for how long they may sit idle.
//!
//! At most [`ConnectionLimits::max_connections`] connections are served at once (a semaphore,
//! as mini-redis does): each holds one permit for its life. One more is still accepted, but
//! only to be told why it is not served — its `hello` is read (briefly) and answered with
//! `too_many_connections`, a message naming the limit and how to raise it, which the client
//! prints — and closed. The daemon logs once when it reaches the cap and once when it is below
//! it again, not once per refusal.
//!
//! The cap keeps clients from taking the file descriptors the daemon needs for its own work
//! (the store, the logs, every turn's pipes): unless set, it is at most half the descriptor
//! limit. A connection that sends no request for [`ConnectionLimits::idle_timeout`] is closed
//! ([`super::connection`]), so clients that connect and wait free their slot; the clients that
//! keep one connection (the MCP server) connect again on their next call.

use std::sync::Arc;
use std::time::Duration;

use cross_agent_ipc::frame::{self, FrameReader};
use cross_agent_ipc::transport::Stream;
use cross_agent_protocol::rpc::{ErrorCode, RequestId, RpcError, ServerMessage};
use cross_agent_protocol::settings as var;
use tokio::io::BufReader;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The cap when none is set (and the descriptor limit leaves room for it). The clients that
/// hold a connection are one MCP server per open agent session and the hooks of sessions
/// waiting on an approval; 512 is far past what one person runs.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// How long a connection may wait between requests when nothing else is set. Long enough that
/// an agent between two tool calls mostly keeps its connection; short enough that clients that
/// connect and never speak give their slot back within minutes.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a refused connection is given to send its `hello`, so the refusal can answer it
/// by id (every client sends it as soon as it connects). Also bounds the write of the refusal.
const REFUSAL_WAIT: Duration = Duration::from_secs(1);

/// Refusals handled at once; past this, one more connection is closed without a word rather
/// than let refusals hold descriptors of their own.
const REFUSALS_AT_ONCE: usize = 32;

/// The longest `hello` a refusal reads: a real one is about 150 bytes.
const REFUSAL_FRAME_LIMIT: usize = 4096;

/// Where the cap came from: what the refusal tells a person to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CapSource {
    /// [`DEFAULT_MAX_CONNECTIONS`].
    Default,
    /// `CROSS_AGENT_DAEMON_MAX_CONNECTIONS` (or a test's own value).
    Setting,
    /// Half the descriptor limit, no more than the default.
    DescriptorLimit { soft: u64 },
}

/// How many connections the daemon serves at once, and how long one may sit idle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// The most connections served at once; one more is refused.
    pub max_connections: usize,
    /// How long a connection may wait between requests; `None`: for ever.
    pub idle_timeout: Option<Duration>,
    source: CapSource,
}

impl ConnectionLimits {
    /// Limits given outright (tests, or a caller with its own settings).
    pub fn new(max_connections: usize, idle_timeout: Option<Duration>) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: max_connections.max(1),
            idle_timeout,
            source: CapSource::Setting,
        }
    }

    /// The limits from `CROSS_AGENT_DAEMON_MAX_CONNECTIONS` and `CROSS_AGENT_DAEMON_IDLE_TIMEOUT`
    /// as looked up by `var`, with the process's soft descriptor limit `soft_limit` (`None`:
    /// unlimited). Returns what the log should warn about: a value that cannot be read (the
    /// default is used, and the warning names the variable), or a cap set past what the
    /// descriptor limit leaves room for (it is honoured: the person asked for it).
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
        soft_limit: Option<u64>,
    ) -> (ConnectionLimits, Vec<String>) {
        let mut warnings = Vec::new();
        let mut number = |name: &str| {
            let value = var(name)?;
            match value.trim().parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    warnings.push(format!(
                        "{name}={value:?} is not a whole number; using the default"
                    ));
                    None
                }
            }
        };
        let set_cap = number(var::DAEMON_MAX_CONNECTIONS).filter(|n| *n > 0);
        let idle = number(var::DAEMON_IDLE_TIMEOUT);
        // Half the descriptors are left for the daemon's own work.
        let room = soft_limit.map(|soft| usize::try_from(soft / 2).unwrap_or(usize::MAX).max(1));
        let (max_connections, source) = match (set_cap, room) {
            (Some(cap), room) => {
                let cap = usize::try_from(cap).unwrap_or(usize::MAX);
                if let (Some(room), Some(soft)) = (room, soft_limit)
                    && cap > room
                {
                    warnings.push(format!(
                        "{}={cap} is more than the file-descriptor limit ({soft}) leaves room \
                         for beside the daemon's own files and turns; connections past it may \
                         fail to be accepted and turns to start",
                        var::DAEMON_MAX_CONNECTIONS
                    ));
                }
                (cap, CapSource::Setting)
            }
            (None, Some(room)) if room <= DEFAULT_MAX_CONNECTIONS => (
                room,
                CapSource::DescriptorLimit {
                    soft: soft_limit.unwrap_or_default(),
                },
            ),
            (None, _) => (DEFAULT_MAX_CONNECTIONS, CapSource::Default),
        };
        let idle_timeout = match idle {
            Some(0) => None,
            Some(seconds) => Some(Duration::from_secs(seconds)),
            None => Some(DEFAULT_IDLE_TIMEOUT),
        };
        (
            ConnectionLimits {
                max_connections,
                idle_timeout,
                source,
            },
            warnings,
        )
    }

    /// What a refused client is told: the cap, why it is that, and what raises it.
    fn refusal(&self, daemon_pid: u32) -> String {
        let cap = self.max_connections;
        let served = format!(
            "the cross-agent daemon (pid {daemon_pid}) already serves {cap} connections, the \
             most it serves at once, and closed this one"
        );
        match self.source {
            CapSource::DescriptorLimit { soft } => format!(
                "{served}: its file-descriptor limit is {soft}, and half of it is kept for its \
                 own files and turns. Raise the limit where the daemon is started (`ulimit -n` \
                 in the shell that starts it, or `LimitNOFILE=` in its service unit) and run \
                 `cross-agent daemon restart`, or close clients you do not need"
            ),
            CapSource::Default | CapSource::Setting => format!(
                "{served} ({} = {cap}). Close clients you do not need, or restart the daemon \
                 with a higher limit: `{}={} cross-agent daemon restart`",
                var::DAEMON_MAX_CONNECTIONS,
                var::DAEMON_MAX_CONNECTIONS,
                cap.saturating_mul(2)
            ),
        }
    }
}

/// The accept loop's gate: a permit per served connection, and the cap's episodes logged.
#[derive(Debug)]
pub(super) struct Gate {
    limits: ConnectionLimits,
    refusal: String,
    permits: Arc<Semaphore>,
    refusals: Arc<Semaphore>,
    /// Connections refused since the cap was last reached; `None` while below it.
    refused_since_full: Option<u64>,
}

/// What to do with a connection just accepted.
pub(super) enum Admission {
    /// Serve it, holding this permit until it ends.
    Serve(OwnedSemaphorePermit),
    /// Tell it why not ([`refuse`]).
    Refuse {
        message: String,
        slot: OwnedSemaphorePermit,
    },
    /// Too many refusals at once already: close it without a word.
    Drop,
}

impl Gate {
    pub(super) fn new(limits: ConnectionLimits, daemon_pid: u32) -> Gate {
        Gate {
            refusal: limits.refusal(daemon_pid),
            permits: Arc::new(Semaphore::new(limits.max_connections)),
            refusals: Arc::new(Semaphore::new(REFUSALS_AT_ONCE)),
            limits,
            refused_since_full: None,
        }
    }

    pub(super) fn admit(&mut self) -> Admission {
        if let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() {
            if let Some(refused) = self.refused_since_full.take() {
                tracing::info!(
                    refused,
                    cap = self.limits.max_connections,
                    "serving new connections again"
                );
            }
            return Admission::Serve(permit);
        }
        let refused = self.refused_since_full.get_or_insert_with(|| {
            tracing::warn!(
                cap = self.limits.max_connections,
                setting = var::DAEMON_MAX_CONNECTIONS,
                "serving the most connections allowed; refusing new ones until some close"
            );
            0
        });
        *refused += 1;
        match Arc::clone(&self.refusals).try_acquire_owned() {
            Ok(slot) => Admission::Refuse {
                message: self.refusal.clone(),
                slot,
            },
            Err(_) => Admission::Drop,
        }
    }
}

/// Answers a connection past the cap: reads its `hello` (if it comes within [`REFUSAL_WAIT`])
/// so the refusal carries that request's id, writes `too_many_connections`, and closes.
pub(super) async fn refuse(stream: Stream, message: String, _slot: OwnedSemaphorePermit) {
    let (read, mut write) = stream.into_split();
    let mut frames = FrameReader::with_limit(BufReader::new(read), REFUSAL_FRAME_LIMIT);
    let id = match tokio::time::timeout(REFUSAL_WAIT, frames.next_frame()).await {
        Ok(Ok(Some(bytes))) => serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|request| {
                serde_json::from_value::<RequestId>(request.get("id")?.clone()).ok()
            }),
        _ => None,
    };
    let reply = ServerMessage::Error {
        id,
        error: RpcError::new(ErrorCode::TooManyConnections, message),
    };
    if let Ok(Err(error)) =
        tokio::time::timeout(REFUSAL_WAIT, frame::write_frame(&mut write, &reply)).await
    {
        tracing::debug!(%error, "could not tell a refused connection why");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(vars: &[(&str, &str)], soft: Option<u64>) -> (ConnectionLimits, Vec<String>) {
        ConnectionLimits::from_vars(
            |name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            },
            soft,
        )
    }

    #[test]
    fn the_default_cap_leaves_half_the_descriptors_to_the_daemon() {
        let (roomy, warnings) = limits(&[], Some(1_048_576));
        assert_eq!(roomy.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert_eq!(roomy.idle_timeout, Some(DEFAULT_IDLE_TIMEOUT));
        assert!(warnings.is_empty(), "{warnings:?}");

        let (tight, _) = limits(&[], Some(600));
        assert_eq!(tight.max_connections, 300);
        let message = tight.refusal(42);
        assert!(message.contains("pid 42"), "{message}");
        assert!(
            message.contains("already serves 300 connections"),
            "{message}"
        );
        assert!(
            message.contains("file-descriptor limit is 600"),
            "{message}"
        );
        assert!(message.contains("LimitNOFILE="), "{message}");

        let (unlimited, _) = limits(&[], None);
        assert_eq!(unlimited.max_connections, DEFAULT_MAX_CONNECTIONS);
    }

    #[test]
    fn a_set_cap_is_honoured_and_one_past_the_descriptors_is_warned_about() {
        let (set, warnings) = limits(&[(var::DAEMON_MAX_CONNECTIONS, "20")], Some(1024));
        assert_eq!(set.max_connections, 20);
        assert!(warnings.is_empty(), "{warnings:?}");
        let message = set.refusal(7);
        assert!(
            message.contains("CROSS_AGENT_DAEMON_MAX_CONNECTIONS = 20"),
            "{message}"
        );
        assert!(
            message.contains("`CROSS_AGENT_DAEMON_MAX_CONNECTIONS=40 cross-agent daemon restart`"),
            "{message}"
        );

        let (past, warnings) = limits(&[(var::DAEMON_MAX_CONNECTIONS, "4000")], Some(1024));
        assert_eq!(past.max_connections, 4000);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("CROSS_AGENT_DAEMON_MAX_CONNECTIONS=4000"));
        assert!(warnings[0].contains("(1024)"));
    }

    #[test]
    fn unreadable_values_are_named_and_the_defaults_kept() {
        let (limits, warnings) = limits(
            &[
                (var::DAEMON_MAX_CONNECTIONS, "lots"),
                (var::DAEMON_IDLE_TIMEOUT, "5m"),
            ],
            Some(1_048_576),
        );
        assert_eq!(limits.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert_eq!(limits.idle_timeout, Some(DEFAULT_IDLE_TIMEOUT));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("CROSS_AGENT_DAEMON_MAX_CONNECTIONS=\"lots\""));
        assert!(warnings[1].starts_with("CROSS_AGENT_DAEMON_IDLE_TIMEOUT=\"5m\""));
    }

    #[test]
    fn an_idle_timeout_of_zero_never_closes() {
        let (limits, _) = limits(&[(var::DAEMON_IDLE_TIMEOUT, "0")], None);
        assert_eq!(limits.idle_timeout, None);
    }
}
