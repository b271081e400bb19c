//! The host's own listing of its sessions, in our terms, and the root notifications that keep a
//! listing current (`docs/observed/copilot.md` §3.2).

use ahp::{SessionSubscription, SubscriptionEvent};
use ahp_types::state::{SessionStatus, SessionSummary};

/// A session's `status` bit set (`SessionStatus` in `ahp-types`), tested bit by bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionStatusBits(pub u32);

impl SessionStatusBits {
    fn has(self, bits: SessionStatus) -> bool {
        SessionStatus::from_bits(self.0).contains(bits)
    }
    /// Bit 64: the user archived the session.
    pub fn archived(self) -> bool {
        self.has(SessionStatus::IsArchived)
    }
    /// Bits 8|16: a turn waits for the user (a tool confirmation, a question).
    pub fn input_needed(self) -> bool {
        self.has(SessionStatus::InputNeeded)
    }
    /// Bit 8: a turn is running.
    pub fn in_progress(self) -> bool {
        self.has(SessionStatus::InProgress)
    }
    /// Bit 1: nothing is running.
    pub fn idle(self) -> bool {
        self.has(SessionStatus::Idle)
    }
    /// Bit 2: the last turn failed.
    pub fn error(self) -> bool {
        self.has(SessionStatus::Error)
    }
    /// Bit 32: the user has seen the latest turn.
    pub fn read(self) -> bool {
        self.has(SessionStatus::IsRead)
    }
}

/// One session as the host lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The session's URI, opaque, exactly as the host gave it (`copilotcli:/…` or
    /// `ahp-session:/…`).
    pub uri: String,
    /// The editor's UUID: the URI's path without its leading `/` (`AgentSession.id`).
    pub editor_id: String,
    /// The agent provider (`copilotcli` in current VS Code).
    pub provider: String,
    pub title: String,
    pub status: SessionStatusBits,
    /// ISO 8601, as the host wrote it.
    pub created_at: String,
    /// ISO 8601, as the host wrote it.
    pub modified_at: String,
    /// `file://` URIs.
    pub working_directories: Vec<String>,
    /// The default chat's URI when the summary carries it; when absent, subscribing to the
    /// session tells it. Never derived from the session URI.
    pub default_chat: Option<String>,
}

impl SessionInfo {
    pub(crate) fn from_summary(summary: SessionSummary) -> Self {
        Self {
            editor_id: editor_id(&summary.resource),
            uri: summary.resource,
            provider: summary.provider,
            title: summary.title,
            status: SessionStatusBits(summary.status),
            created_at: summary.created_at,
            modified_at: summary.modified_at,
            working_directories: summary.working_directories.unwrap_or_default(),
            default_chat: summary.default_chat,
        }
    }

    /// Whether the user archived the session.
    pub fn archived(&self) -> bool {
        self.status.archived()
    }
}

/// The path of a URI without its leading `/`: what VS Code's `AgentSession.id(uri)` returns,
/// and the directory name under `agentSessionData/`.
pub fn editor_id(uri: &str) -> String {
    let rest = uri.split_once(':').map_or(uri, |(_, rest)| rest);
    let path = match rest.strip_prefix("//") {
        // `scheme://authority/path`: the path starts at the authority's end.
        Some(after) => after.find('/').map_or("", |at| &after[at..]),
        None => rest,
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    path.strip_prefix('/').unwrap_or(path).to_owned()
}

/// A change to the host's listing (`root/*` notifications). They are not replayed after a
/// reconnect: list again then.
#[derive(Debug, Clone, PartialEq)]
pub enum RootEvent {
    /// `root/sessionAdded`.
    Added(SessionInfo),
    /// `root/sessionRemoved`.
    Removed { uri: String },
    /// `root/sessionSummaryChanged`: the fields that changed.
    Changed {
        uri: String,
        title: Option<String>,
        status: Option<SessionStatusBits>,
        modified_at: Option<String>,
        working_directories: Option<Vec<String>>,
        default_chat: Option<String>,
    },
}

/// The stream of [`RootEvent`]s of one connection, from [`crate::HostConnection::root_events`].
pub struct RootEvents {
    pub(crate) sub: SessionSubscription,
}

impl RootEvents {
    /// The next change to the listing; `None` once the connection has ended.
    pub async fn next(&mut self) -> Option<RootEvent> {
        loop {
            let event = match self.sub.recv().await? {
                SubscriptionEvent::SessionAdded(p) => {
                    RootEvent::Added(SessionInfo::from_summary(p.summary))
                }
                SubscriptionEvent::SessionRemoved(p) => RootEvent::Removed { uri: p.session },
                SubscriptionEvent::SessionSummaryChanged(p) => RootEvent::Changed {
                    uri: p.session,
                    title: p.changes.title,
                    status: p.changes.status.map(SessionStatusBits),
                    modified_at: p.changes.modified_at,
                    working_directories: p.changes.working_directories,
                    default_chat: p.changes.default_chat,
                },
                // Root actions (agents, config) and auth signals do not change the listing.
                _ => continue,
            };
            return Some(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::editor_id;

    #[test]
    fn editor_id_is_the_path_without_its_slash() {
        assert_eq!(editor_id("copilotcli:/2f0e-11"), "2f0e-11");
        assert_eq!(editor_id("ahp-session:/2f0e-11"), "2f0e-11");
        assert_eq!(editor_id("x://host/abc?q#f"), "abc");
        assert_eq!(editor_id("plain"), "plain");
    }
}
