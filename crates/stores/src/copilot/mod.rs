//! GitHub Copilot's sessions in VS Code, found read-only where the editor's Agent Host keeps
//! them (`docs/observed/copilot.md` §2, §4): the endpoint registry says which editors have a
//! live host, the host's catalog (`agent-host.db`) which sessions exist, each session's
//! `session.db` its title, working directories and default chat's SDK session, and the SDK's
//! `events.jsonl` when it last did something.
//!
//! - [`places`]: where those files are (defaults, the `CROSS_AGENT_COPILOT_*` lists);
//! - [`endpoints`]: the registry of running hosts, the unsafe entries refused, the token kept
//!   unprintable;
//! - [`catalog`]: the SQLite files, read without ever locking against the editor;
//! - [`events`]: the SDK's events: last activity, and the completed answer for a token.
//!
//! - [`live`]: what the running hosts say of their sessions, laid over the catalog's.
//!
//! [`list`] puts them together into the one session model every agent is listed in; the
//! daemon's live index calls [`list_cached`], whose [`Cache`] keeps what each session database
//! and events file said at its last stamp, so a walk opens only the files that changed. Each
//! session is keyed by its editor UUID (the host URI's path, `copilotcli:/<uuid>` or
//! `ahp-session:/<uuid>`); a UUID found under two editors is refused (listed under neither,
//! said in a warning naming both), never picked. Tombstoned sessions and chat backings
//! (`peerChatBacking`) are not sessions; archived ones are listed, marked.

pub mod catalog;
pub mod endpoints;
pub mod events;
pub mod live;
pub mod places;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

pub use endpoints::{ConnectionToken, Endpoint, EndpointProblem};
pub use live::{HostSession, LiveHosts};
pub use places::{
    CopilotPlace, CopilotPlaces, EditorUserData, Os, vscode_family_user_data, vscode_user_data,
};

use crate::model::{Agent, CopilotDetails, Session, UnixMillis, Warnings};
use crate::roots::FileStamp;

/// The Copilot sessions of every place, newest first, with what could not be read as warnings
/// naming each file. Never fails.
pub fn list(places: &CopilotPlaces, warnings: &mut Warnings) -> Vec<Session> {
    list_cached(places, &mut Cache::default(), warnings)
}

/// [`list`] for a long-lived process: the session databases and SDK events whose files have
/// not changed since the last walk are taken from `cache` instead of being opened again.
pub fn list_cached(
    places: &CopilotPlaces,
    cache: &mut Cache,
    warnings: &mut Warnings,
) -> Vec<Session> {
    list_with(places, &cross_agent_process::is_alive, cache, warnings)
}

/// What earlier walks read, by file and its stamp. A `session.db` is read again when its own
/// stamp or its `-wal`'s changed (a commit changes one of them); an `events.jsonl` when its
/// stamp changed. Only what was read cleanly is kept: a problem is looked at again next time.
#[derive(Debug, Default)]
pub struct Cache {
    session_dbs: HashMap<PathBuf, (DbStamp, catalog::SessionMetadata)>,
    events: HashMap<PathBuf, (FileStamp, Option<UnixMillis>)>,
    /// The live hosts' own listings, when a host watcher keeps them (the daemon).
    live: Option<LiveHosts>,
}

/// A database's stamp and its write-ahead log's, if it has one.
type DbStamp = (FileStamp, Option<FileStamp>);

fn db_stamp(path: &Path) -> Option<DbStamp> {
    let meta = fs::symlink_metadata(path).ok()?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = fs::symlink_metadata(PathBuf::from(wal))
        .ok()
        .map(|m| FileStamp::of(&m));
    Some((FileStamp::of(&meta), wal))
}

impl Cache {
    /// Lays the listings `hosts` holds over every walk from now on.
    pub fn attach_live_hosts(&mut self, hosts: LiveHosts) {
        self.live = Some(hosts);
    }

    /// `session.db`'s metadata, from the cache when its stamp is unchanged.
    fn session_db(
        &mut self,
        path: &Path,
    ) -> Result<catalog::SessionMetadata, catalog::CatalogProblem> {
        let stamp = db_stamp(path);
        if let (Some(stamp), Some((seen, metadata))) = (stamp, self.session_dbs.get(path))
            && *seen == stamp
        {
            return Ok(metadata.clone());
        }
        let read = catalog::read_session_db(path);
        match (&read, stamp) {
            (Ok(metadata), Some(stamp)) => {
                self.session_dbs
                    .insert(path.to_path_buf(), (stamp, metadata.clone()));
            }
            _ => {
                self.session_dbs.remove(path);
            }
        }
        read
    }

    /// The time of the last event in `path`, from the cache when its stamp is unchanged.
    fn last_event(&mut self, path: &Path) -> Option<UnixMillis> {
        let stamp = FileStamp::read(path)?;
        if let Some((seen, time)) = self.events.get(path)
            && *seen == stamp
        {
            return *time;
        }
        let time = events::last_event_time(path);
        self.events.insert(path.to_path_buf(), (stamp, time));
        time
    }

    /// Forgets the files a walk did not look at (their sessions are gone).
    fn keep_only(&mut self, seen: &HashSet<PathBuf>) {
        self.session_dbs.retain(|path, _| seen.contains(path));
        self.events.retain(|path, _| seen.contains(path));
    }
}

/// [`list_cached`] with the pid check given (tests pass their own).
pub fn list_with(
    places: &CopilotPlaces,
    is_alive: &dyn Fn(u32) -> bool,
    cache: &mut Cache,
    warnings: &mut Warnings,
) -> Vec<Session> {
    if let Some(problem) = &places.problem {
        warnings.push(Path::new("CROSS_AGENT_COPILOT_*"), None, problem.clone());
        return Vec::new();
    }
    // Every place's sessions by editor UUID, then the UUIDs found in more than one place
    // refused.
    let mut by_id: BTreeMap<String, Vec<Session>> = BTreeMap::new();
    let mut seen = HashSet::new();
    for place in &places.places {
        for session in list_place(place, places.explicit, is_alive, cache, &mut seen, warnings) {
            by_id
                .entry(session.session_id.clone())
                .or_default()
                .push(session);
        }
    }
    cache.keep_only(&seen);
    let mut sessions = Vec::with_capacity(by_id.len());
    for (id, mut found) in by_id {
        if found.len() == 1 {
            sessions.extend(found.pop());
            continue;
        }
        let wheres: Vec<String> = found.iter().map(|s| s.path.display().to_string()).collect();
        warnings.push(
            &found[0].path,
            None,
            format!(
                "the Copilot session {id} is in {} editors' catalogs ({}); it is listed under \
                 neither rather than one picked: remove it from the editor it does not belong to",
                found.len(),
                wheres.join(", ")
            ),
        );
    }
    crate::scan::sort_newest_first(&mut sessions);
    sessions
}

/// The live endpoints of one place, with the unsafe ones as problems: for `doctor` and the
/// connection.
pub fn registry(place: &CopilotPlace) -> endpoints::Registry {
    match &place.endpoint_dir {
        Some(dir) => endpoints::read_registry(dir, cross_agent_process::is_alive),
        None => endpoints::Registry::default(),
    }
}

/// The SDK `events.jsonl` of a session's default chat — its transcript — from the place its
/// editor's user data is in and the SDK session id its `session.db` names; `None` when either is
/// unknown (or the id is not a plain name, see [`events::events_path`]).
pub fn events_of(places: &CopilotPlaces, details: &CopilotDetails) -> Option<PathBuf> {
    let sdk_id = details.sdk_session_id.as_deref()?;
    let place = places
        .places
        .iter()
        .find(|p| p.user_data.to_string_lossy() == details.user_data_dir.as_str())?;
    events::events_path(place.sdk_session_dir.as_deref()?, sdk_id)
}

/// The editor UUID of a host session URI: its path without the leading `/`
/// (`AgentSession.id(uri)`), for the schemes a Copilot session has; `None` for any other.
pub fn editor_uuid(session_uri: &str) -> Option<&str> {
    let (scheme, rest) = session_uri.split_once(':')?;
    if !matches!(scheme, "copilotcli" | "copilot" | "ahp-session") {
        return None;
    }
    let id = rest.trim_start_matches('/');
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// The folder name VS Code keeps a session's data under: the id with every character outside
/// `[a-zA-Z0-9_.-]` replaced by `-`.
pub fn sanitized_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// One editor's sessions.
fn list_place(
    place: &CopilotPlace,
    explicit: bool,
    is_alive: &dyn Fn(u32) -> bool,
    cache: &mut Cache,
    seen: &mut HashSet<PathBuf>,
    warnings: &mut Warnings,
) -> Vec<Session> {
    let live = match &place.endpoint_dir {
        Some(dir) => {
            let registry = endpoints::read_registry(dir, is_alive);
            for problem in &registry.problems {
                warnings.push(&problem.path, None, problem_text(problem));
            }
            !registry.endpoints.is_empty()
        }
        None => false,
    };

    // The host's catalog says which sessions exist. Without it (not there, or unreadable), the
    // session folders do: a session the catalog would have tombstoned may then show.
    let mut rows: Option<Vec<catalog::HostSession>> = None;
    if let Some(db) = &place.host_db {
        if fs::symlink_metadata(db).is_ok() {
            match catalog::read_host_db(db) {
                Ok(found) => rows = Some(found),
                Err(problem) => warnings.push(&problem.path, None, problem.message),
            }
        } else if explicit {
            warnings.push(db, None, "Agent Host catalog not found");
        }
    }
    if explicit
        && let Some(dir) = &place.session_dir
        && !dir.is_dir()
    {
        warnings.push(dir, None, "Copilot session folder not found");
    }

    // Editor UUID → (session URI, catalog row).
    let mut wanted: BTreeMap<String, (String, Option<catalog::HostSession>)> = BTreeMap::new();
    match rows {
        Some(rows) => {
            for row in rows {
                let Some(id) = editor_uuid(&row.session_uri).map(str::to_owned) else {
                    continue;
                };
                // The same session under both schemes (VS Code mirrors an identity to its
                // counterpart): one session, the most recently modified row.
                match wanted.get(&id) {
                    Some((_, Some(kept))) if kept.modified_time >= row.modified_time => {}
                    _ => {
                        wanted.insert(id, (row.session_uri.clone(), Some(row)));
                    }
                }
            }
        }
        None => {
            for id in session_folders(place.session_dir.as_deref()) {
                wanted.insert(id.clone(), (format!("copilotcli:/{id}"), None));
            }
        }
    }

    let mut sessions = Vec::with_capacity(wanted.len());
    for (id, (session_uri, row)) in wanted {
        let db = place
            .session_dir
            .as_deref()
            .map(|dir| dir.join(sanitized_id(&id)).join("session.db"));
        let read = db
            .as_deref()
            .filter(|db| fs::symlink_metadata(db).is_ok())
            .map(|db| {
                seen.insert(db.to_path_buf());
                cache.session_db(db)
            });
        let metadata = match read {
            Some(read) => match read {
                Ok(metadata) => Some(metadata),
                Err(problem) => {
                    // Listed from the catalog row alone when there is one.
                    warnings.push(&problem.path, None, problem.message);
                    if row.is_none() {
                        continue;
                    }
                    None
                }
            },
            None => None,
        };
        let metadata = metadata.unwrap_or_default();
        if metadata.is_chat_backing {
            continue;
        }
        let events = metadata
            .sdk_session_id
            .as_deref()
            .and_then(|sdk| events::events_path(place.sdk_session_dir.as_deref()?, sdk));
        let last_event = events.as_deref().and_then(|path| {
            seen.insert(path.to_path_buf());
            cache.last_event(path)
        });
        let row_time = |t: Option<i64>| t.filter(|t| *t > 0).map(UnixMillis);
        let first_activity = row.as_ref().and_then(|r| row_time(r.start_time));
        let last_activity = [
            row.as_ref().and_then(|r| row_time(r.modified_time)),
            last_event,
            first_activity,
        ]
        .into_iter()
        .flatten()
        .max();
        let path = match (&db, &place.host_db) {
            (Some(db), _) if db.is_file() => db.clone(),
            (_, Some(host_db)) => host_db.clone(),
            _ => place.user_data.clone(),
        };
        let working_directories: Vec<String> = metadata
            .working_directories
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        sessions.push(Session {
            agent: Agent::Copilot,
            session_id: id,
            cwd: metadata.working_directories.first().cloned(),
            title_is_assigned: metadata.custom_title.is_some(),
            title: metadata.custom_title,
            first_activity,
            last_activity,
            is_working: false,
            path,
            copilot: Some(Box::new(CopilotDetails {
                session_uri,
                working_directories,
                archived: metadata.archived,
                in_progress: false,
                input_needed: false,
                default_chat: None,
                sdk_session_id: metadata.sdk_session_id,
                user_data_dir: place.user_data.to_string_lossy().into_owned(),
                live,
            })),
        });
    }
    if let Some(hosts) = &cache.live {
        let path = place.host_db.as_deref().unwrap_or(&place.user_data);
        live::overlay(
            &mut sessions,
            hosts.sessions_of(&place.user_data),
            &place.user_data,
            path,
        );
    }
    sessions
}

/// The names of the session folders that hold a `session.db`.
fn session_folders(dir: Option<&Path>) -> Vec<String> {
    let Some(entries) = dir.and_then(|dir| fs::read_dir(dir).ok()) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| e.path().join("session.db").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

/// An endpoint problem as a warning's message (the path is the warning's own).
fn problem_text(problem: &EndpointProblem) -> String {
    format!(
        "Agent Host endpoint not used: {}; {}",
        problem.problem, problem.fix
    )
}

/// The places whose changes can alter the Copilot listing, for the live index's watch.
pub fn watched(places: &CopilotPlaces) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = Vec::new();
    for place in &places.places {
        for path in place.watched() {
            if !folders.iter().any(|f| f == path) {
                folders.push(path.to_path_buf());
            }
        }
    }
    folders
}
