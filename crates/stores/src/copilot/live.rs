//! What the running Agent Hosts say of their own sessions, laid over the catalog's listing.
//!
//! The daemon's host watcher (`crates/daemon/src/copilot_hosts.rs`) holds a connection to
//! every live host and keeps that host's own listing (`listSessions`, then the `root/*`
//! notifications) in a [`LiveHosts`]; the live index walks the catalog as before and
//! `overlay` merges the two: the same editor UUID is one session, whose live fields (title,
//! status, last change, working directories, default chat) are the host's; a session the host
//! lists but the catalog does not have yet is added. A host that stops is removed by the
//! watcher, and its sessions fall back to what the catalog says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::model::{Agent, CopilotDetails, Session, UnixMillis};

/// One session as a live host lists it, in the listing's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSession {
    /// The URI exactly as the host gave it.
    pub uri: String,
    /// The editor UUID (the URI's path).
    pub editor_id: String,
    pub title: String,
    pub archived: bool,
    /// A turn is running.
    pub in_progress: bool,
    /// A turn waits for the user (a tool confirmation, a question).
    pub input_needed: bool,
    pub created_at: Option<UnixMillis>,
    pub modified_at: Option<UnixMillis>,
    /// As the host gave them (`file://` URIs).
    pub working_directories: Vec<String>,
    pub default_chat: Option<String>,
}

/// Every live host's listing, by the user-data directory it serves and its registry entry
/// file. Cheap to clone; the watcher writes, the live index reads.
#[derive(Debug, Clone, Default)]
pub struct LiveHosts {
    hosts: Arc<RwLock<BTreeMap<PathBuf, PlaceHosts>>>,
}

/// One editor's live hosts: each registry entry's listing.
type PlaceHosts = BTreeMap<PathBuf, Vec<HostSession>>;

impl LiveHosts {
    /// The whole listing of the host published by `entry` under `user_data`.
    pub fn set(&self, user_data: &Path, entry: &Path, sessions: Vec<HostSession>) {
        self.hosts
            .write()
            .entry(user_data.to_path_buf())
            .or_default()
            .insert(entry.to_path_buf(), sessions);
    }

    /// The host published by `entry` is gone (or not connected): its listing no longer counts.
    /// Says whether it had one.
    pub fn remove(&self, user_data: &Path, entry: &Path) -> bool {
        let mut hosts = self.hosts.write();
        let Some(of_place) = hosts.get_mut(user_data) else {
            return false;
        };
        let had = of_place.remove(entry).is_some();
        if of_place.is_empty() {
            hosts.remove(user_data);
        }
        had
    }

    /// The sessions the live hosts of `user_data` list (a UUID listed by two hosts of one
    /// editor once, the most recently modified).
    pub fn sessions_of(&self, user_data: &Path) -> Vec<HostSession> {
        let hosts = self.hosts.read();
        let mut by_id: BTreeMap<String, HostSession> = BTreeMap::new();
        for session in hosts
            .get(user_data)
            .into_iter()
            .flat_map(|h| h.values())
            .flatten()
        {
            match by_id.get(&session.editor_id) {
                Some(kept) if kept.modified_at >= session.modified_at => {}
                _ => {
                    by_id.insert(session.editor_id.clone(), session.clone());
                }
            }
        }
        by_id.into_values().collect()
    }
}

/// Lays `live` (one place's live listing) over `sessions` (the same place's catalog listing).
pub(crate) fn overlay(
    sessions: &mut Vec<Session>,
    live: Vec<HostSession>,
    user_data: &Path,
    path: &Path,
) {
    for host in live {
        let working: Vec<PathBuf> = host
            .working_directories
            .iter()
            .filter_map(|uri| super::catalog::path_of(uri))
            .collect();
        let working_text: Vec<String> = working
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        match sessions.iter_mut().find(|s| s.session_id == host.editor_id) {
            Some(session) => {
                if !host.title.is_empty() {
                    session.title = Some(host.title.clone());
                }
                if !working.is_empty() {
                    session.cwd = working.first().cloned();
                }
                session.last_activity = session.last_activity.max(host.modified_at);
                session.is_working = host.in_progress;
                if let Some(details) = session.copilot.as_deref_mut() {
                    details.session_uri = host.uri;
                    details.archived = host.archived;
                    details.in_progress = host.in_progress;
                    details.input_needed = host.input_needed;
                    if !working_text.is_empty() {
                        details.working_directories = working_text;
                    }
                    if host.default_chat.is_some() {
                        details.default_chat = host.default_chat;
                    }
                    details.live = true;
                }
            }
            None => sessions.push(Session {
                agent: Agent::Copilot,
                session_id: host.editor_id,
                cwd: working.first().cloned(),
                title: (!host.title.is_empty()).then_some(host.title),
                title_is_assigned: false,
                first_activity: host.created_at,
                last_activity: host.modified_at.or(host.created_at),
                is_working: host.in_progress,
                path: path.to_path_buf(),
                copilot: Some(Box::new(CopilotDetails {
                    session_uri: host.uri,
                    working_directories: working_text,
                    archived: host.archived,
                    in_progress: host.in_progress,
                    input_needed: host.input_needed,
                    default_chat: host.default_chat,
                    sdk_session_id: None,
                    user_data_dir: user_data.to_string_lossy().into_owned(),
                    live: true,
                })),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog_session(id: &str) -> Session {
        Session {
            agent: Agent::Copilot,
            session_id: id.to_owned(),
            cwd: Some(PathBuf::from("/work/old")),
            title: Some("From the catalog".to_owned()),
            title_is_assigned: true,
            first_activity: Some(UnixMillis(1_000)),
            last_activity: Some(UnixMillis(2_000)),
            is_working: false,
            path: PathBuf::from("/u/session.db"),
            copilot: Some(Box::new(CopilotDetails {
                session_uri: format!("ahp-session:/{id}"),
                working_directories: vec!["/work/old".to_owned()],
                archived: false,
                in_progress: false,
                input_needed: false,
                default_chat: None,
                sdk_session_id: Some("sdk-1".to_owned()),
                user_data_dir: "/u".to_owned(),
                live: false,
            })),
        }
    }

    fn host_session(id: &str, title: &str) -> HostSession {
        HostSession {
            uri: format!("copilotcli:/{id}"),
            editor_id: id.to_owned(),
            title: title.to_owned(),
            archived: true,
            in_progress: true,
            input_needed: true,
            created_at: Some(UnixMillis(500)),
            modified_at: Some(UnixMillis(9_000)),
            working_directories: vec!["file:///work/my%20new".to_owned()],
            default_chat: Some("ahp-chat://default/x".to_owned()),
        }
    }

    #[test]
    fn the_live_host_wins_for_its_fields_and_adds_what_the_catalog_lacks() {
        let hosts = LiveHosts::default();
        let (user_data, entry) = (Path::new("/u"), Path::new("/u/entries/a.json"));
        hosts.set(
            user_data,
            entry,
            vec![host_session("one", "Live title"), host_session("two", "")],
        );
        let mut sessions = vec![catalog_session("one")];
        overlay(
            &mut sessions,
            hosts.sessions_of(user_data),
            user_data,
            Path::new("/u/agent-host.db"),
        );
        assert_eq!(sessions.len(), 2);
        let one = &sessions[0];
        assert_eq!(one.title.as_deref(), Some("Live title"));
        assert_eq!(one.cwd.as_deref(), Some(Path::new("/work/my new")));
        assert_eq!(one.last_activity, Some(UnixMillis(9_000)));
        assert!(one.is_working);
        let details = one.copilot.as_deref().unwrap();
        assert_eq!(details.session_uri, "copilotcli:/one");
        assert!(details.archived && details.in_progress && details.input_needed && details.live);
        assert_eq!(
            details.default_chat.as_deref(),
            Some("ahp-chat://default/x")
        );
        // What only the catalog knows stays.
        assert_eq!(details.sdk_session_id.as_deref(), Some("sdk-1"));
        let two = &sessions[1];
        assert_eq!(two.session_id, "two");
        assert_eq!(two.title, None);
        assert_eq!(two.path, Path::new("/u/agent-host.db"));

        // The host goes: nothing is laid over any more.
        assert!(hosts.remove(user_data, entry));
        assert!(hosts.sessions_of(user_data).is_empty());
        assert!(!hosts.remove(user_data, entry));
    }
}
