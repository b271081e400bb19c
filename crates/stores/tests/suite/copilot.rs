//! Copilot's sessions in VS Code's Agent Host files. Nothing of VS Code runs here: every file is
//! made by `testkit::synthetic_stores::copilot` in the shape `docs/observed/copilot.md` documents
//! (§2.1 the endpoint entry, §4.1 `agent-host.db` v4, §4.2 `session.db`, §4.3 `events.jsonl`),
//! with real SQLite.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cross_agent_stores::copilot::events::{TokenAnswer, answer_for_token};
use cross_agent_stores::copilot::{self, CopilotPlace, CopilotPlaces};
use cross_agent_stores::model::CopilotDetails;
use cross_agent_stores::{Agent, Session, StoreRoots, UnixMillis, Warnings};
use cross_agent_testkit::synthetic_stores::{CopilotEditor, SdkEvents};
use pretty_assertions::assert_eq;

const ONE: &str = "2f0e6a8e-0000-4000-8000-000000000001";
const TWO: &str = "2f0e6a8e-0000-4000-8000-000000000002";
const SDK_ONE: &str = "9a9a9a9a-0000-4000-8000-000000000001";
const T0: i64 = 1_796_000_000_000;
const TOKEN: &str = "tkn-must-never-print-4f1c";

/// An editor's user-data folder and the SDK's folder in a temp home.
struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    editor: CopilotEditor,
    sdk: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_path_buf();
        let editor = CopilotEditor::new(&home.join(".config/Code"));
        let sdk = home.join(".copilot/session-state");
        Fixture {
            _tmp: tmp,
            home,
            editor,
            sdk,
        }
    }

    fn places(&self) -> CopilotPlaces {
        CopilotPlaces {
            places: vec![CopilotPlace::under(
                self.editor.user_data.clone(),
                Some(self.sdk.clone()),
            )],
            explicit: false,
            problem: None,
        }
    }

    /// The listing with every pid alive.
    fn list(&self) -> (Vec<Session>, Vec<String>) {
        list(&self.places(), &|_| true)
    }

    /// Two sessions: ONE with a title, a folder and SDK events; TWO bare.
    fn two_sessions(&self) {
        self.editor
            .register(&format!("copilotcli:/{ONE}"), T0, T0 + 1_000)
            .unwrap();
        self.editor
            .register(&format!("copilotcli:/{TWO}"), T0 + 10, T0 + 500)
            .unwrap();
        let one = self.editor.session(ONE).unwrap();
        one.title("Fix the tests").unwrap();
        one.default_chat(SDK_ONE, "claude-sonnet-4.5").unwrap();
        one.working_directory("/work/my%20proj").unwrap();
        let mut events = SdkEvents::new(&self.sdk, SDK_ONE);
        events
            .user_message("hello", T0 + 2_000)
            .assistant("hi", None, T0 + 5_000);
        events.write().unwrap();
    }
}

fn list(places: &CopilotPlaces, alive: &dyn Fn(u32) -> bool) -> (Vec<Session>, Vec<String>) {
    let mut warnings = Warnings::default();
    let sessions = copilot::list_with(places, alive, &mut copilot::Cache::default(), &mut warnings);
    let warnings = warnings.items.iter().map(ToString::to_string).collect();
    (sessions, warnings)
}

fn ids(sessions: &[Session]) -> Vec<&str> {
    sessions.iter().map(|s| s.session_id.as_str()).collect()
}

#[test]
fn sessions_are_listed_with_their_catalog_fields() {
    let fx = Fixture::new();
    fx.two_sessions();
    let (sessions, warnings) = fx.list();
    assert_eq!(warnings, Vec::<String>::new());
    let user_data = fx.editor.user_data.to_string_lossy().into_owned();
    assert_eq!(
        sessions,
        vec![
            Session {
                agent: Agent::Copilot,
                session_id: ONE.to_owned(),
                cwd: Some(PathBuf::from("/work/my proj")),
                title: Some("Fix the tests".to_owned()),
                title_is_assigned: true,
                first_activity: Some(UnixMillis(T0)),
                // The SDK's last event is later than the catalog's modified time.
                last_activity: Some(UnixMillis(T0 + 5_000)),
                is_working: false,
                path: fx.editor.session_dir().join(ONE).join("session.db"),
                copilot: Some(Box::new(CopilotDetails {
                    session_uri: format!("copilotcli:/{ONE}"),
                    working_directories: vec!["/work/my proj".to_owned()],
                    archived: false,
                    in_progress: false,
                    input_needed: false,
                    default_chat: None,
                    sdk_session_id: Some(SDK_ONE.to_owned()),
                    user_data_dir: user_data.clone(),
                    live: false,
                })),
            },
            Session {
                agent: Agent::Copilot,
                session_id: TWO.to_owned(),
                cwd: None,
                title: None,
                title_is_assigned: false,
                first_activity: Some(UnixMillis(T0 + 10)),
                last_activity: Some(UnixMillis(T0 + 500)),
                is_working: false,
                path: fx.editor.host_db(),
                copilot: Some(Box::new(CopilotDetails {
                    session_uri: format!("copilotcli:/{TWO}"),
                    working_directories: vec![],
                    archived: false,
                    in_progress: false,
                    input_needed: false,
                    default_chat: None,
                    sdk_session_id: None,
                    user_data_dir: user_data,
                    live: false,
                })),
            },
        ]
    );
}

#[test]
fn both_uri_schemes_name_the_same_session_once() {
    let fx = Fixture::new();
    fx.editor
        .register(&format!("ahp-session:/{ONE}"), T0, T0 + 5)
        .unwrap();
    fx.editor
        .register(&format!("copilotcli:/{ONE}"), T0, T0 + 9)
        .unwrap();
    let (sessions, _) = fx.list();
    assert_eq!(ids(&sessions), [ONE]);
    // The most recently modified row's URI, as it is (the catalog reads `ahp-session:` first).
    assert_eq!(
        sessions[0].copilot.as_ref().unwrap().session_uri,
        format!("copilotcli:/{ONE}")
    );
}

#[test]
fn archived_is_marked_and_backings_and_tombstones_are_not_sessions() {
    let fx = Fixture::new();
    fx.two_sessions();
    fx.editor
        .session(ONE)
        .unwrap()
        .set("archived", "true")
        .unwrap();
    // TWO is the backing SDK session of another session's chat.
    fx.editor
        .session(TWO)
        .unwrap()
        .set("peerChatBacking", "ahp-chat://side/xyz")
        .unwrap();
    let three = "2f0e6a8e-0000-4000-8000-000000000003";
    fx.editor
        .register(&format!("copilotcli:/{three}"), T0, T0)
        .unwrap();
    fx.editor
        .tombstone(&format!("copilotcli:/{three}"))
        .unwrap();
    let (sessions, warnings) = fx.list();
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(ids(&sessions), [ONE]);
    assert!(sessions[0].copilot.as_ref().unwrap().archived);
}

#[test]
fn a_uuid_in_two_editors_is_refused_naming_both() {
    let fx = Fixture::new();
    fx.two_sessions();
    let insiders = CopilotEditor::new(&fx.home.join(".config/Code - Insiders"));
    insiders
        .register(&format!("copilotcli:/{ONE}"), T0, T0)
        .unwrap();
    let mut places = fx.places();
    places
        .places
        .push(CopilotPlace::under(insiders.user_data.clone(), None));
    let (sessions, warnings) = list(&places, &|_| true);
    assert_eq!(ids(&sessions), [TWO]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(ONE)
            && warnings[0].contains(&insiders.host_db().display().to_string())
            && warnings[0].contains(&fx.editor.session_dir().display().to_string()),
        "{}",
        warnings[0]
    );
}

#[test]
fn the_variables_lists_place_the_files_and_disagreeing_lengths_are_said() {
    let fx = Fixture::new();
    fx.two_sessions();
    let vars = |pairs: Vec<(&'static str, String)>| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone().into())
        }
    };
    let roots = StoreRoots::from_vars(
        Some(Path::new("/nowhere")),
        vars(vec![
            (
                "CROSS_AGENT_COPILOT_HOST_DB",
                fx.editor.host_db().display().to_string(),
            ),
            (
                "CROSS_AGENT_COPILOT_SESSION_DIR",
                fx.editor.session_dir().display().to_string(),
            ),
            (
                "CROSS_AGENT_COPILOT_SDK_SESSION_DIR",
                fx.sdk.display().to_string(),
            ),
        ]),
    );
    let (sessions, warnings) = list(&roots.copilot, &|_| true);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(ids(&sessions), [ONE, TWO]);
    assert_eq!(
        sessions[0].copilot.as_ref().unwrap().user_data_dir,
        fx.editor.user_data.display().to_string()
    );

    let roots = StoreRoots::from_vars(
        Some(Path::new("/nowhere")),
        vars(vec![
            (
                "CROSS_AGENT_COPILOT_HOST_DB",
                format!("{}:/other/agent-host.db", fx.editor.host_db().display()),
            ),
            (
                "CROSS_AGENT_COPILOT_SESSION_DIR",
                fx.editor.session_dir().display().to_string(),
            ),
        ]),
    );
    let (sessions, warnings) = list(&roots.copilot, &|_| true);
    assert!(sessions.is_empty());
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("CROSS_AGENT_COPILOT_HOST_DB has 2")
            && warnings[0].contains("CROSS_AGENT_COPILOT_SESSION_DIR has 1"),
        "{}",
        warnings[0]
    );
}

/// A host of this process listening on a real socket, its entry written as VS Code writes it.
fn live_host(fx: &Fixture) -> (std::os::unix::net::UnixListener, PathBuf) {
    let socket = fx.home.join("host.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let entry = fx
        .editor
        .endpoint(std::process::id(), "inst-1", &socket, TOKEN)
        .unwrap();
    (listener, entry)
}

#[test]
fn a_live_endpoint_marks_its_editors_sessions_live() {
    let fx = Fixture::new();
    fx.two_sessions();
    let (_listener, _entry) = live_host(&fx);
    let (sessions, warnings) = fx.list();
    assert_eq!(warnings, Vec::<String>::new());
    assert!(sessions.iter().all(|s| s.copilot.as_ref().unwrap().live));
    let registry = copilot::endpoints::read_registry(&fx.editor.endpoint_dir(), |_| true);
    assert_eq!(registry.endpoints.len(), 1);
    let endpoint = &registry.endpoints[0];
    assert_eq!(endpoint.token.expose(), TOKEN);
    assert_eq!(endpoint.protocol_version, "0.10.0");
    // The endpoint whole, debug-printed, holds no token.
    assert!(!format!("{endpoint:?}").contains(TOKEN));
}

#[test]
fn a_dead_pid_a_misnamed_entry_and_another_schema_are_skipped_quietly() {
    let fx = Fixture::new();
    fx.two_sessions();
    let (_listener, entry) = live_host(&fx);
    // The pid is dead.
    let (sessions, warnings) = list(&fx.places(), &|_| false);
    assert_eq!(warnings, Vec::<String>::new());
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
    // A valid entry under another name.
    let misnamed = entry.with_file_name(format!("{}.json", "0".repeat(64)));
    std::fs::rename(&entry, &misnamed).unwrap();
    let (sessions, warnings) = fx.list();
    assert_eq!(warnings, Vec::<String>::new());
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
    // VS Code's temporary file (`<hex>.tmp`), complete: not an entry.
    let temporary = entry.with_extension("tmp");
    std::fs::rename(&misnamed, &temporary).unwrap();
    let (sessions, warnings) = fx.list();
    assert_eq!(warnings, Vec::<String>::new());
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
    std::fs::rename(&temporary, &entry).unwrap();
    assert!(fx.list().0.iter().all(|s| s.copilot.as_ref().unwrap().live));
    // Schema 1.
    let text = std::fs::read_to_string(&entry).unwrap();
    std::fs::write(
        &entry,
        text.replace("\"schemaVersion\":2", "\"schemaVersion\":1"),
    )
    .unwrap();
    let (sessions, warnings) = fx.list();
    assert_eq!(warnings, Vec::<String>::new());
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
}

#[test]
fn an_entry_readable_by_others_is_refused_naming_it_without_its_token() {
    let fx = Fixture::new();
    fx.two_sessions();
    let (_listener, entry) = live_host(&fx);
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (sessions, warnings) = fx.list();
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    assert!(
        warning.contains(&entry.display().to_string())
            && warning.contains("0644")
            && warning.contains("chmod 600"),
        "{warning}"
    );
    assert!(!warning.contains(TOKEN), "{warning}");
    let registry = copilot::endpoints::read_registry(&fx.editor.endpoint_dir(), |_| true);
    assert!(registry.endpoints.is_empty());
    assert!(!format!("{registry:?}").contains(TOKEN));

    // The registry folder open to others: nothing in it is used.
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dir = fx.editor.endpoint_dir();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (sessions, warnings) = fx.list();
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
    assert!(
        warnings.len() == 1 && warnings[0].contains(&dir.display().to_string()),
        "{warnings:?}"
    );
}

#[test]
fn a_socket_of_another_user_is_refused() {
    let fx = Fixture::new();
    fx.two_sessions();
    let (_listener, entry) = live_host(&fx);
    let socket = fx.home.join("host.sock");
    // Only root can give a file away; elsewhere this case cannot be made.
    if std::os::unix::fs::chown(&socket, Some(54_321), None).is_err() {
        eprintln!("skipped: not allowed to chown (not root)");
        return;
    }
    let (sessions, warnings) = fx.list();
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(&entry.display().to_string())
            && warnings[0].contains("uid 54321")
            && !warnings[0].contains(TOKEN),
        "{}",
        warnings[0]
    );

    // The entry file itself another user's, mode 0600 or not: not used.
    std::os::unix::fs::chown(&socket, Some(0), None).unwrap();
    std::os::unix::fs::chown(&entry, Some(54_321), None).unwrap();
    let (sessions, warnings) = fx.list();
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
    assert!(
        warnings.len() == 1
            && warnings[0].contains(&entry.display().to_string())
            && warnings[0].contains("owned by uid 54321"),
        "{warnings:?}"
    );
}

#[test]
fn a_symlinked_entry_is_not_followed() {
    let fx = Fixture::new();
    fx.two_sessions();
    let (_listener, entry) = live_host(&fx);
    let real = fx.home.join("elsewhere.json");
    std::fs::rename(&entry, &real).unwrap();
    std::os::unix::fs::symlink(&real, &entry).unwrap();
    let (sessions, warnings) = fx.list();
    assert!(sessions.iter().all(|s| !s.copilot.as_ref().unwrap().live));
    assert!(
        warnings.len() == 1
            && warnings[0].contains(&entry.display().to_string())
            && warnings[0].contains("symbolic link"),
        "{warnings:?}"
    );
}

#[test]
fn a_catalog_being_written_is_a_problem_and_the_rest_still_lists() {
    let fx = Fixture::new();
    fx.two_sessions();
    // The editor in the middle of a write to ONE's session.db: a write lock held, a journal.
    let writer =
        rusqlite::Connection::open(fx.editor.session_dir().join(ONE).join("session.db")).unwrap();
    writer
        .execute_batch(
            "BEGIN IMMEDIATE; INSERT OR REPLACE INTO session_metadata VALUES ('customTitle', 'x');",
        )
        .unwrap();
    let (sessions, warnings) = fx.list();
    // Still listed, from the catalog row alone.
    assert_eq!(ids(&sessions), [ONE, TWO]);
    assert_eq!(sessions[0].title, None);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(&format!("{ONE}/session.db")) && warnings[0].contains("being written"),
        "{}",
        warnings[0]
    );
    writer.execute_batch("ROLLBACK").unwrap();
    let (sessions, warnings) = fx.list();
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(sessions[0].title.as_deref(), Some("Fix the tests"));

    // The host catalog locked: the sessions are listed from their folders (TWO has none).
    let writer = rusqlite::Connection::open(fx.editor.host_db()).unwrap();
    writer
        .execute_batch("BEGIN IMMEDIATE; DELETE FROM sessions;")
        .unwrap();
    let (sessions, warnings) = fx.list();
    assert_eq!(ids(&sessions), [ONE]);
    assert!(
        warnings.len() == 1 && warnings[0].contains("agent-host.db"),
        "{warnings:?}"
    );
    writer.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn a_truncated_or_foreign_catalog_is_a_problem_and_the_rest_still_lists() {
    let fx = Fixture::new();
    fx.two_sessions();
    // Make ONE's database big enough that half of it is a cut-off SQLite file.
    let one = fx.editor.session(ONE).unwrap();
    one.set("padding", &"x".repeat(20_000)).unwrap();
    drop(one);
    let db = fx.editor.session_dir().join(ONE).join("session.db");
    let bytes = std::fs::read(&db).unwrap();
    std::fs::write(&db, &bytes[..bytes.len() / 2]).unwrap();
    // TWO's is not SQLite at all; its catalog row still lists it.
    let two = fx.editor.session_dir().join(TWO).join("session.db");
    std::fs::create_dir_all(two.parent().unwrap()).unwrap();
    std::fs::write(&two, "this is not a database").unwrap();
    let (sessions, warnings) = fx.list();
    assert_eq!(ids(&sessions), [ONE, TWO]);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&db.display().to_string())),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&two.display().to_string()) && w.contains("not an SQLite")),
        "{warnings:?}"
    );

    // The host catalog not SQLite: listed from the session folders, said once.
    std::fs::write(fx.editor.host_db(), "garbage").unwrap();
    let (_, warnings) = fx.list();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("agent-host.db") && w.contains("not an SQLite")),
        "{warnings:?}"
    );
}

#[test]
fn an_unknown_catalog_shape_is_refused_naming_its_columns() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.editor.host_db().parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(fx.editor.host_db()).unwrap();
    conn.execute_batch("CREATE TABLE sessions (uri TEXT, started INTEGER);")
        .unwrap();
    let (_, warnings) = fx.list();
    assert!(
        warnings.len() == 1
            && warnings[0].contains("session_uri")
            && warnings[0].contains("uri, started"),
        "{warnings:?}"
    );
}

#[test]
fn the_answer_for_a_token_follows_vs_codes_turn_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let mut events = SdkEvents::new(tmp.path(), SDK_ONE);
    events
        .user_message("earlier", T0)
        .assistant("not this", None, T0 + 1)
        .user_message("request: req_42\nping\n<reminder>x</reminder>", T0 + 2)
        .turn_start(T0 + 3)
        .assistant("let me look", Some("bash"), T0 + 4)
        .tool_start("bash", T0 + 5)
        .sub_agent_message("a sub-agent's words", T0 + 6)
        .turn_end(T0 + 7);
    events.write().unwrap();
    let path = events.path.clone();
    // A tool is running: not done.
    assert_eq!(
        answer_for_token(&path, "req_42").unwrap(),
        TokenAnswer::InProgress
    );
    events
        .turn_start(T0 + 8)
        .assistant("pong", None, T0 + 9)
        .turn_end(T0 + 10)
        .user_message("next request", T0 + 11)
        .assistant("later words", None, T0 + 12);
    events.write().unwrap();
    assert_eq!(
        answer_for_token(&path, "req_42").unwrap(),
        TokenAnswer::Completed {
            text: "pong".to_owned()
        }
    );
    assert_eq!(
        answer_for_token(&path, "req_404").unwrap(),
        TokenAnswer::NotFound
    );

    let mut aborted = SdkEvents::new(tmp.path(), "aborted");
    aborted
        .user_message("request: req_a", T0)
        .assistant("half", Some("bash"), T0 + 1)
        .abort(T0 + 2);
    aborted.write().unwrap();
    assert_eq!(
        answer_for_token(&aborted.path, "req_a").unwrap(),
        TokenAnswer::Cancelled
    );

    let mut failed = SdkEvents::new(tmp.path(), "failed");
    failed
        .user_message("request: req_e", T0)
        .session_error("rate limited", T0 + 1);
    failed.write().unwrap();
    assert_eq!(
        answer_for_token(&failed.path, "req_e").unwrap(),
        TokenAnswer::Failed {
            message: "rate limited".to_owned()
        }
    );
    // A tool started after a message that would have ended the turn: not done.
    let mut reopened = SdkEvents::new(tmp.path(), "reopened");
    reopened
        .user_message("request: req_t", T0)
        .assistant("done, I think", None, T0 + 1)
        .tool_start("bash", T0 + 2);
    reopened.write().unwrap();
    assert_eq!(
        answer_for_token(&reopened.path, "req_t").unwrap(),
        TokenAnswer::InProgress
    );
    // A half-written last line is not read.
    let mut partial = SdkEvents::new(tmp.path(), "partial");
    partial.user_message("request: req_p", T0);
    partial.write().unwrap();
    cross_agent_testkit::synthetic_stores::append_raw(
        &partial.path,
        br#"{"type":"assistant.message","id":"x","timestamp":"2026-01-01T00:00:00Z","data":{"content":"po"#,
    )
    .unwrap();
    assert_eq!(
        answer_for_token(&partial.path, "req_p").unwrap(),
        TokenAnswer::InProgress
    );
}

#[test]
fn the_scope_admits_a_session_by_any_of_its_working_directories() {
    use cross_agent_stores::resolve::{Scope, scope_rank};
    let fx = Fixture::new();
    fx.two_sessions();
    fx.editor
        .session(ONE)
        .unwrap()
        .set(
            "copilot.workingDirectories",
            r#"["file:///work/my%20proj", "file:///work/second"]"#,
        )
        .unwrap();
    let (sessions, _) = fx.list();
    let one = &sessions[0];
    assert_eq!(
        one.copilot.as_ref().unwrap().working_directories,
        ["/work/my proj", "/work/second"]
    );
    assert_eq!(
        scope_rank(Scope::Cwd, one, Path::new("/work/second")),
        Some(0)
    );
    assert_eq!(scope_rank(Scope::Cwd, one, Path::new("/work/third")), None);
}

#[test]
fn a_cached_walk_opens_only_the_databases_that_changed() {
    let fx = Fixture::new();
    fx.two_sessions();
    let mut cache = copilot::Cache::default();
    let walk = |cache: &mut copilot::Cache| {
        let mut warnings = Warnings::default();
        let sessions = copilot::list_with(&fx.places(), &|_| true, cache, &mut warnings);
        assert_eq!(warnings.items, vec![]);
        sessions
    };
    assert_eq!(walk(&mut cache)[0].title.as_deref(), Some("Fix the tests"));

    // A committed change is seen: the file's stamp moved.
    let db = fx.editor.session_dir().join(ONE).join("session.db");
    fx.editor.session(ONE).unwrap().title("Renamed").unwrap();
    assert_eq!(walk(&mut cache)[0].title.as_deref(), Some("Renamed"));

    // An unchanged stamp is not opened again: bytes swapped under the same size and mtime
    // (which no writer does) are not read, where an uncached walk reads them.
    let meta = std::fs::metadata(&db).unwrap();
    let garbage = vec![b'x'; usize::try_from(meta.len()).unwrap()];
    std::fs::write(&db, garbage).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&db)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    assert_eq!(walk(&mut cache)[0].title.as_deref(), Some("Renamed"));
    let (_, warnings) = fx.list();
    assert!(
        warnings.len() == 1 && warnings[0].contains("not an SQLite database"),
        "{warnings:?}"
    );
}
