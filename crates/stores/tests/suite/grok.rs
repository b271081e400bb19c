//! Grok Build reader. Grok cannot run here, so every fixture under `tests/fixtures/grok/` is
//! written from public descriptions, each named where it is used:
//! - folder names: Grok Build's `encode_cwd_dirname` / `decode_cwd_from_dirname` (public source
//!   of its `grok_home` module: percent-encoding, `<slug>-<hash16>` plus a `.cwd` file past 255
//!   bytes);
//! - `summary.json`: Grok Build's `Summary` (public source of `session/persistence.rs`:
//!   `info.{id,cwd}`, `generated_title`, `title_is_manual` set by `/rename`, `session_kind`,
//!   `hidden`, `is_hidden()`), and docs/spec/cross-agent-mcp.md §3 ("Grok Build keeps two kinds of name") and §5
//!   (`session_kind != 'subagent'`);
//! - `updates.jsonl`: Grok Build's `SessionUpdateEnvelope` `{timestamp, method, params}` with
//!   ACP `session/update` notifications (agentclientprotocol docs, `docs/observed/telegram_ahp_grok.md`
//!   §3) and the `_x.ai/session/update` `turn_completed` seen in public Grok clients.
//! - The GUI extension's `state.vscdb` value: **no public description exists**; the test builds a
//!   database in the shape the spec names (table `ItemTable`, key
//!   `sahilrakhaiya.grok-build-gui`) with a guessed value layout.

use std::path::{Path, PathBuf};

use cross_agent_stores::grok::{self, GrokFold};
use cross_agent_stores::{Agent, Session, StoreRoots, Warnings};
use pretty_assertions::assert_eq;

use super::reader_support::{FixtureHome, ms, sessions_of};

const MANUAL: &str = "01a0630c-9370-72e0-87ad-000000000001";
const AUTO: &str = "01a0630c-9370-72e0-87ad-000000000002";
const PROMOTED: &str = "01a0630c-9370-72e0-87ad-000000000004";
const UNPROMPTED: &str = "01a0630c-9370-72e0-87ad-000000000005";
const LOST: &str = "01a0630c-9370-72e0-87ad-000000000006";

fn listing(home: &FixtureHome) -> (Vec<Session>, Warnings) {
    let mut warnings = Warnings::default();
    let files = grok::discover(&home.roots(), &mut warnings);
    let sessions = sessions_of::<GrokFold>(&files, &mut warnings);
    (sessions, warnings)
}

fn session<'a>(sessions: &'a [Session], id: &str) -> &'a Session {
    sessions.iter().find(|s| s.session_id == id).unwrap()
}

#[test]
fn subagent_sessions_are_hidden_unless_grok_says_otherwise() {
    let home = FixtureHome::new();
    let (sessions, warnings) = listing(&home);
    let ids: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, vec![MANUAL, AUTO, PROMOTED, UNPROMPTED, LOST]);
    // The hashed folder without its `.cwd` file is the one warning.
    assert_eq!(warnings.items.len(), 1, "{:#?}", warnings.items);
    assert!(warnings.items[0].path.ends_with("lost-fedcba9876543210"));
}

#[test]
fn a_rename_is_an_assigned_name_and_a_generated_title_is_not() {
    let home = FixtureHome::new();
    let (sessions, _) = listing(&home);
    let dir = home
        .path()
        .join(".grok/sessions/%2Fhome%2Fu%2Fbilling")
        .join(MANUAL);
    assert_eq!(
        session(&sessions, MANUAL),
        &Session {
            agent: Agent::Grok,
            session_id: MANUAL.to_owned(),
            cwd: Some(PathBuf::from("/home/u/billing")),
            title: Some("billing-grok".to_owned()),
            title_is_assigned: true,
            first_activity: ms("2026-11-20T10:00:00.000Z"),
            last_activity: ms("2026-11-20T10:09:00.000Z"),
            is_working: false,
            path: dir,
            copilot: None,
        }
    );
    let auto = session(&sessions, AUTO);
    assert_eq!(auto.title.as_deref(), Some("Explain the codebase"));
    assert!(!auto.title_is_assigned);
    assert!(auto.is_working, "prompted, no turn_completed yet");
    assert_eq!(auto.cwd, Some(PathBuf::from("/home/u/billing/api")));
}

#[test]
fn the_scope_is_decided_from_the_folder_name_without_opening_sessions() {
    let home = FixtureHome::new();
    let mut warnings = Warnings::default();
    let files = grok::discover(&home.roots(), &mut warnings);
    let scope = |id: &str| {
        files
            .iter()
            .find(|f| f.path.parent().unwrap().ends_with(id))
            .unwrap()
            .scope_cwd
            .clone()
    };
    assert_eq!(scope(MANUAL), Some(PathBuf::from("/home/u/billing")));
    assert_eq!(scope(AUTO), Some(PathBuf::from("/home/u/billing/api")));
    // The long cwd's hashed folder: from its `.cwd` file.
    let long = scope(UNPROMPTED).unwrap();
    assert!(long.ends_with("very-long-directory-name-11"), "{long:?}");
    assert_eq!(scope(LOST), None);

    assert_eq!(
        grok::decode_folder_name("%2Fhome%2Fu%2Fmy%20project"),
        Some(PathBuf::from("/home/u/my project"))
    );
    assert_eq!(grok::decode_folder_name("workspace-0123456789abcdef"), None);
    assert_eq!(
        grok::encode_folder_name("/home/u/a b"),
        "%2Fhome%2Fu%2Fa%20b"
    );
    for cwd in [
        "/tmp",
        "/Users/foo/project",
        "/Users/user/Documents/project-名前",
    ] {
        assert_eq!(
            grok::decode_folder_name(&grok::encode_folder_name(cwd)),
            Some(PathBuf::from(cwd))
        );
    }
}

#[test]
fn a_session_nobody_prompted_is_listed_from_its_summary() {
    let home = FixtureHome::new();
    let (sessions, _) = listing(&home);
    let s = session(&sessions, UNPROMPTED);
    assert_eq!(s.title, None);
    assert!(!s.is_working);
    assert_eq!(s.last_activity, ms("2026-11-26T10:00:00.000Z"));
}

/// Builds a `state.vscdb` like VS Code's: `ItemTable(key, value)`.
fn write_vscdb(path: &Path, value: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);")
        .unwrap();
    conn.execute(
        "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
        ["workbench.panel.position", "\"bottom\""],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
        [grok::GUI_STATE_KEY, value],
    )
    .unwrap();
}

#[test]
fn gui_tab_names_are_read_read_only_and_win_over_titles() {
    // No public description of the extension's value exists: two plausible layouts.
    let home = FixtureHome::new();
    let db = home
        .path()
        .join(".config/Code/User/globalStorage/state.vscdb");
    write_vscdb(
        &db,
        &format!(
            r#"{{"tabs":[{{"sessionId":"{AUTO}","name":"explainer"}}],"sessionNames":{{"{MANUAL}":"billing-tab"}}}}"#
        ),
    );
    let before = std::fs::read(&db).unwrap();

    let roots = home.roots();
    let mut warnings = Warnings::default();
    let names = grok::read_gui_names(&roots, &mut warnings);
    assert!(warnings.items.is_empty(), "{:#?}", warnings.items);
    assert_eq!(names.get(AUTO), Some("explainer"));
    assert_eq!(names.get(MANUAL), Some("billing-tab"));
    assert_eq!(std::fs::read(&db).unwrap(), before, "opened read-only");

    let (sessions, _) = listing(&home);
    let mut auto = session(&sessions, AUTO).clone();
    names.apply(&mut auto);
    assert_eq!(auto.title.as_deref(), Some("explainer"));
    assert!(auto.title_is_assigned);
}

#[test]
fn an_unreadable_names_database_is_a_warning_and_names_stop_resolving() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("state.vscdb");
    std::fs::write(&garbage, b"definitely not sqlite").unwrap();
    let missing = dir.path().join("missing.vscdb");
    let roots = StoreRoots {
        grok_names_dbs: vec![garbage.clone(), missing.clone()],
        grok_names_dbs_explicit: true,
        ..StoreRoots::default()
    };
    let mut warnings = Warnings::default();
    let names = grok::read_gui_names(&roots, &mut warnings);
    assert!(names.by_session.is_empty());
    let paths: Vec<&Path> = warnings.items.iter().map(|w| w.path.as_path()).collect();
    assert_eq!(paths, vec![garbage.as_path(), missing.as_path()]);

    // The default locations missing is no warning: there is simply no VS Code.
    let roots = StoreRoots::under_home(dir.path());
    let mut warnings = Warnings::default();
    grok::read_gui_names(&roots, &mut warnings);
    assert!(warnings.items.is_empty());
}

#[test]
fn names_db_variable_takes_a_colon_separated_list() {
    let roots = StoreRoots::from_vars(Some(Path::new("/home/u")), |name| {
        (name == "CROSS_AGENT_GROK_NAMES_DB").then(|| "/a/state.vscdb:/b/state.vscdb".into())
    });
    assert_eq!(
        roots.grok_names_dbs,
        vec![
            PathBuf::from("/a/state.vscdb"),
            PathBuf::from("/b/state.vscdb")
        ]
    );
    assert!(roots.grok_names_dbs_explicit);
    let roots = StoreRoots::from_vars(Some(Path::new("/home/u")), |_| None);
    assert_eq!(
        roots.grok_names_dbs[0],
        PathBuf::from("/home/u/.config/Code/User/globalStorage/state.vscdb")
    );
}

/// docs/spec/cross-agent-mcp.md §4 and §5 on a Grok store laid out as Grok Build files it (folders named for the
/// percent-encoded cwd): `cwd` from `/home/u/billing` takes in the session filed under
/// `/home/u/billing/api`, exact first; a folder for `/home/u/billing2` is beside it, not below.
#[test]
fn scope_cwd_takes_in_subdirectory_folders_and_not_their_siblings() {
    use cross_agent_stores::resolve::{self, ActiveWindow, Scope};
    use cross_agent_stores::{UnixMillis, resolve::ranked};

    const BESIDE: &str = "01a0630c-9370-72e0-87ad-000000000007";
    let home = FixtureHome::new();
    let source = home
        .path()
        .join(".grok/sessions/%2Fhome%2Fu%2Fbilling")
        .join(MANUAL);
    let beside = home
        .path()
        .join(".grok/sessions/%2Fhome%2Fu%2Fbilling2")
        .join(BESIDE);
    std::fs::create_dir_all(&beside).unwrap();
    let summary = std::fs::read_to_string(source.join("summary.json"))
        .unwrap()
        .replace(MANUAL, BESIDE)
        .replace("/home/u/billing\"", "/home/u/billing2\"")
        .replace("billing-grok", "beside-grok");
    std::fs::write(beside.join("summary.json"), summary).unwrap();
    std::fs::copy(source.join("updates.jsonl"), beside.join("updates.jsonl")).unwrap();

    let (sessions, _) = listing(&home);
    assert_eq!(
        session(&sessions, BESIDE).cwd,
        Some(PathBuf::from("/home/u/billing2"))
    );
    let ids = |scope, cwd: &str| -> Vec<String> {
        ranked(&sessions, Agent::Grok, scope, Path::new(cwd))
            .into_iter()
            .map(|s| s.session_id.clone())
            .collect()
    };
    // The exact folder's sessions (newest first), then the subdirectory's.
    assert_eq!(
        ids(Scope::Cwd, "/home/u/billing"),
        vec![PROMOTED, MANUAL, AUTO]
    );
    assert_eq!(ids(Scope::Cwd, "/home/u/billing2"), vec![BESIDE]);
    assert!(ids(Scope::Cwd, "/home/u/bill").is_empty());
    // Parents stay out of `cwd`; `tree` ranks them after the exact folder.
    assert_eq!(ids(Scope::Cwd, "/home/u/billing/api"), vec![AUTO]);
    assert_eq!(
        ids(Scope::Tree, "/home/u/billing/api"),
        vec![AUTO, PROMOTED, MANUAL]
    );

    // Resolution under `cwd`: the exact folder's active session first, else the subdirectory's.
    let latest = [MANUAL, PROMOTED, AUTO]
        .iter()
        .filter_map(|id| session(&sessions, id).last_activity)
        .max()
        .unwrap();
    let now = UnixMillis(latest.0 + 60_000);
    let pick = |sessions: &[Session]| {
        resolve::best_active(
            sessions,
            Agent::Grok,
            Scope::Cwd,
            Path::new("/home/u/billing"),
            ActiveWindow::default(),
            now,
            None,
        )
        .map(|s| s.session_id.clone())
    };
    let exact = pick(&sessions).unwrap();
    assert_eq!(
        session(&sessions, &exact).cwd,
        Some(PathBuf::from("/home/u/billing"))
    );
    let folder_left_out: Vec<Session> = sessions
        .iter()
        .filter(|s| s.cwd.as_deref() != Some(Path::new("/home/u/billing")))
        .cloned()
        .collect();
    assert_eq!(pick(&folder_left_out).as_deref(), Some(AUTO));
}

#[test]
fn a_summary_that_is_not_json_keeps_the_parser_error_as_its_source() {
    let path = Path::new("/sessions/x/summary.json");
    let err = grok::GrokSummary::parse(b"{not json", path).unwrap_err();
    assert!(err.to_string().contains("summary.json"), "{err}");
    let source = std::error::Error::source(&err).expect("the JSON error as its source");
    assert!(source.is::<serde_json::Error>(), "{source}");
}
