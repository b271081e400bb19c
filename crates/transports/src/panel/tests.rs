//! The panel transport's reading, window and selection rules, on registration files these tests
//! write and on sockets they listen on.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;

use cross_agent_protocol::panel::{
    PANEL_PROTOCOL_VERSION, PanelRegistration, PanelSession, PanelSessionState, ShimEvent,
    ShimRequest,
};
use cross_agent_protocol::vocabulary::Agent;
use pretty_assertions::assert_eq;

use super::client::{self, Next, ShimError};
use super::registry::{self, LivePanel};
use super::window::{self, SelectedBy, Vantage, WindowMatch};

fn session(id: Option<&str>, opened: u64, human: Option<u64>) -> PanelSession {
    PanelSession {
        session_id: id.map(str::to_owned),
        cwd: None,
        state: PanelSessionState::Idle,
        opened_at_ms: opened,
        last_human_input_ms: human,
        last_activity_ms: None,
        has_history: true,
        unanswered_human_prompts: 0,
        pending_approvals: Vec::new(),
        bridged_delivery_id: None,
        title: None,
    }
}

fn registration(
    dir: &Path,
    agent: Agent,
    pid: u32,
    ancestors: &[u32],
    sessions: Vec<PanelSession>,
) -> PanelRegistration {
    PanelRegistration {
        protocol: PANEL_PROTOCOL_VERSION,
        agent,
        pid,
        pid_start_ticks: cross_agent_process::start_ticks(pid),
        agent_pid: None,
        ancestors: ancestors.to_vec(),
        socket: dir
            .join(format!("{agent}-{pid}.sock"))
            .to_string_lossy()
            .into_owned(),
        real_binary: "/bin/true".into(),
        cwd: None,
        started_at_ms: 1,
        updated_at_ms: 1,
        intercepting: true,
        sessions,
    }
}

fn live(registration: PanelRegistration) -> LivePanel {
    LivePanel {
        file: format!("{}-{}.json", registration.agent, registration.pid).into(),
        registration,
    }
}

fn write(dir: &Path, registration: &PanelRegistration, mode: u32) -> std::path::PathBuf {
    fs::create_dir_all(dir).unwrap();
    let file = dir.join(format!("{}-{}.json", registration.agent, registration.pid));
    fs::write(&file, serde_json::to_vec(registration).unwrap()).unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(mode)).unwrap();
    file
}

/// A pid that ran and is gone: a child that exited and was reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn a_live_registration_is_read_and_a_dead_one_removed_with_its_socket() {
    let home = tempfile::tempdir().unwrap();
    let dir = registry::panels_dir(home.path());
    let me = std::process::id();
    let alive = registration(&dir, Agent::Claude, me, &[1], vec![]);
    write(&dir, &alive, 0o600);
    let gone = dead_pid();
    let dead = registration(&dir, Agent::Codex, gone, &[1], vec![]);
    let dead_file = write(&dir, &dead, 0o600);
    let dead_socket = UnixListener::bind(&dead.socket).unwrap();

    let scan = registry::scan(home.path());
    assert_eq!(scan.live.len(), 1, "{scan:?}");
    assert_eq!(scan.live[0].registration, alive);
    assert_eq!(scan.removed.len(), 1);
    assert_eq!(scan.removed[0].pid, gone);
    assert!(scan.removed[0].reason.contains("is gone"), "{scan:?}");
    assert!(!dead_file.exists());
    assert!(!Path::new(&dead.socket).exists());
    drop(dead_socket);
}

#[test]
fn a_reused_pid_is_not_taken_for_the_shim() {
    let home = tempfile::tempdir().unwrap();
    let dir = registry::panels_dir(home.path());
    let mut reused = registration(&dir, Agent::Claude, std::process::id(), &[1], vec![]);
    reused.pid_start_ticks = reused.pid_start_ticks.map(|t| t + 1);
    let file = write(&dir, &reused, 0o600);
    let scan = registry::scan(home.path());
    assert!(scan.live.is_empty());
    assert!(
        scan.removed[0].reason.contains("another process"),
        "{scan:?}"
    );
    assert!(!file.exists());
}

#[test]
fn registrations_that_are_not_safe_or_not_ours_are_skipped_and_kept() {
    let home = tempfile::tempdir().unwrap();
    let dir = registry::panels_dir(home.path());
    let me = std::process::id();
    // Readable by others.
    let open = registration(&dir, Agent::Claude, me, &[1], vec![]);
    let open_file = write(&dir, &open, 0o644);
    // Another protocol version.
    let mut newer = registration(&dir, Agent::Codex, me, &[1], vec![]);
    newer.protocol = PANEL_PROTOCOL_VERSION + 1;
    write(&dir, &newer, 0o600);
    // A link to a registration elsewhere.
    let elsewhere = home.path().join("elsewhere.json");
    let grok = registration(&dir, Agent::Grok, me, &[1], vec![]);
    fs::write(&elsewhere, serde_json::to_vec(&grok).unwrap()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join(format!("grok-{me}.json"))).unwrap();
    // A file whose name is not the registration it holds.
    let misnamed = registration(&dir, Agent::Claude, me, &[1], vec![]);
    fs::write(
        dir.join("claude-1.json"),
        serde_json::to_vec(&misnamed).unwrap(),
    )
    .unwrap();
    fs::set_permissions(dir.join("claude-1.json"), fs::Permissions::from_mode(0o600)).unwrap();

    let scan = registry::scan(home.path());
    assert!(scan.live.is_empty(), "{scan:?}");
    assert!(scan.removed.is_empty(), "{scan:?}");
    let reasons: Vec<String> = scan.skipped.iter().map(|s| s.reason.clone()).collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("owner-only")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("panel protocol")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("symbolic link")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("not its file name")),
        "{reasons:?}"
    );
    assert!(open_file.exists());
}

#[test]
fn a_missing_folder_is_no_panel() {
    let home = tempfile::tempdir().unwrap();
    assert_eq!(registry::scan(home.path()), registry::PanelScan::default());
}

// Fake pids well above any real one here, so no process name is looked up by accident.
const HOST_A: u32 = 4_000_001;
const HOST_B: u32 = 4_000_002;
const MAIN: u32 = 4_000_100;
const SHELL: u32 = 4_000_200;

fn vantage(chain: &[u32]) -> Vantage {
    Vantage {
        caller_chain: chain.to_vec(),
        daemon_chain: vec![4_000_900, 1],
    }
}

#[test]
fn a_shim_is_in_the_window_of_a_caller_below_its_extension_host() {
    let dir = Path::new("/p");
    let a = live(registration(
        dir,
        Agent::Codex,
        100,
        &[HOST_A, MAIN, 1],
        vec![],
    ));
    let b = live(registration(
        dir,
        Agent::Codex,
        200,
        &[HOST_B, MAIN, 1],
        vec![],
    ));
    let all = vec![a.clone(), b.clone()];
    // The caller runs under window A's extension host.
    let caller = vantage(&[300, HOST_A, MAIN, 1]);
    assert_eq!(
        window::window_match(&a, &all, &caller),
        Some(WindowMatch::Parent)
    );
    // The editor's main process is above both windows: it names neither.
    assert_eq!(window::window_match(&b, &all, &caller), None);
    // A caller inside the shim's own panel process.
    let inside = vantage(&[301, 100, HOST_A, MAIN, 1]);
    assert_eq!(
        window::window_match(&a, &all, &inside),
        Some(WindowMatch::Parent)
    );
}

#[test]
fn init_the_daemons_ancestors_and_a_process_above_two_windows_never_make_a_window() {
    let dir = Path::new("/p");
    let a = live(registration(
        dir,
        Agent::Claude,
        100,
        &[HOST_A, MAIN, 1],
        vec![],
    ));
    let b = live(registration(
        dir,
        Agent::Claude,
        200,
        &[HOST_B, MAIN, 1],
        vec![],
    ));
    // Only init in common.
    let terminal = vantage(&[SHELL, 1]);
    assert_eq!(
        window::window_match(&a, std::slice::from_ref(&a), &terminal),
        None
    );
    // The main process is above every shim: it names no window, with one window open or two.
    let integrated_terminal = vantage(&[SHELL, MAIN, 1]);
    assert_eq!(
        window::window_match(&a, std::slice::from_ref(&a), &integrated_terminal),
        None
    );
    assert_eq!(
        window::window_match(&a, &[a.clone(), b.clone()], &integrated_terminal),
        None
    );
    // A caller under another window's extension host, with one shim registered: not its window.
    let other_window = vantage(&[SHELL, HOST_B, MAIN, 1]);
    assert_eq!(
        window::window_match(&a, std::slice::from_ref(&a), &other_window),
        None
    );
    // A wrapper between the extension host and the shim: the host still tells windows apart.
    let wrapped = live(registration(
        dir,
        Agent::Claude,
        101,
        &[SHELL, HOST_A, MAIN, 1],
        vec![],
    ));
    let caller_in_a = vantage(&[300, HOST_A, MAIN, 1]);
    let both = [wrapped.clone(), b.clone()];
    assert_eq!(
        window::window_match(&wrapped, &both, &caller_in_a),
        Some(WindowMatch::SharedAncestor(HOST_A))
    );
    assert_eq!(window::window_match(&b, &both, &caller_in_a), None);
    // The daemon's own ancestor is never a window.
    let mut beside_daemon = caller_in_a.clone();
    beside_daemon.daemon_chain = vec![4_000_900, HOST_A, MAIN, 1];
    assert_eq!(window::window_match(&wrapped, &both, &beside_daemon), None);
}

#[test]
fn the_tab_a_human_typed_into_last_wins_then_the_transcript_then_the_newest() {
    let dir = Path::new("/p");
    let here = live(registration(
        dir,
        Agent::Claude,
        100,
        &[HOST_A, 1],
        vec![session(Some("typed-early"), 10, Some(1_000))],
    ));
    let here2 = live(registration(
        dir,
        Agent::Claude,
        101,
        &[HOST_A, 1],
        vec![session(Some("typed-late"), 5, Some(2_000))],
    ));
    let here3 = live(registration(
        dir,
        Agent::Claude,
        102,
        &[HOST_A, 1],
        vec![session(Some("untouched-newest"), 50, None)],
    ));
    let other = live(registration(
        dir,
        Agent::Claude,
        200,
        &[HOST_B, 1],
        vec![session(Some("other-window"), 99, Some(9_000))],
    ));
    let panels = vec![here, here2, here3, other];
    let caller = vantage(&[300, HOST_A, 1]);
    let tabs = window::tabs(&panels, Agent::Claude, &caller);
    let no_transcripts = |_: &str| None;
    let (tab, why) = window::select(&tabs, None, no_transcripts).unwrap();
    assert_eq!(tab.session.session_id.as_deref(), Some("typed-late"));
    assert_eq!(why, SelectedBy::HumanInput);
    // The caller's own session is never picked.
    let (tab, _) = window::select(&tabs, Some("typed-late"), no_transcripts).unwrap();
    assert_eq!(tab.session.session_id.as_deref(), Some("typed-early"));

    // Nobody typed: the transcript written last, then the newest tab.
    let quiet: Vec<LivePanel> = panels
        .iter()
        .cloned()
        .map(|mut p| {
            for s in &mut p.registration.sessions {
                s.last_human_input_ms = None;
            }
            p
        })
        .collect();
    let tabs = window::tabs(&quiet, Agent::Claude, &caller);
    let transcripts = |id: &str| (id == "typed-early").then_some(7);
    let (tab, why) = window::select(&tabs, None, transcripts).unwrap();
    assert_eq!(
        (tab.session.session_id.as_deref(), why),
        (Some("typed-early"), SelectedBy::TranscriptActivity)
    );
    let (tab, why) = window::select(&tabs, None, no_transcripts).unwrap();
    assert_eq!(
        (tab.session.session_id.as_deref(), why),
        (Some("untouched-newest"), SelectedBy::Newest)
    );
    // Another window's tab is never auto-selected, but a named session is found there.
    assert!(tabs.iter().any(|t| !t.in_caller_window));
    let held = window::holding(&tabs, "other-window").unwrap();
    assert!(!held.in_caller_window);
    assert_eq!(held.panel.registration.pid, 200);
}

#[test]
fn a_new_conversation_opens_only_where_the_panel_can() {
    let dir = Path::new("/p");
    let caller = vantage(&[300, HOST_A, 1]);
    let busy_claude = live(registration(
        dir,
        Agent::Claude,
        100,
        &[HOST_A, 1],
        vec![session(Some("s"), 1, None)],
    ));
    assert!(window::new_conversation_host(&[busy_claude], Agent::Claude, &caller).is_none());
    let fresh_claude = live(registration(dir, Agent::Claude, 101, &[HOST_A, 1], vec![]));
    assert!(window::new_conversation_host(&[fresh_claude], Agent::Claude, &caller).is_some());
    let mut empty = session(Some("empty"), 1, None);
    empty.has_history = false;
    let grok = live(registration(
        dir,
        Agent::Grok,
        102,
        &[HOST_A, 1],
        vec![session(Some("used"), 1, None), empty],
    ));
    let (_, into) =
        window::new_conversation_host(std::slice::from_ref(&grok), Agent::Grok, &caller).unwrap();
    assert_eq!(into.as_deref(), Some("empty"));
    // The empty Grok session is no conversation to select.
    let tabs = window::tabs(std::slice::from_ref(&grok), Agent::Grok, &caller);
    let (tab, _) = window::select(&tabs, None, |_| None).unwrap();
    assert_eq!(tab.session.session_id.as_deref(), Some("used"));
    let codex_elsewhere = live(registration(dir, Agent::Codex, 103, &[HOST_B, 1], vec![]));
    assert!(window::new_conversation_host(&[codex_elsewhere], Agent::Codex, &caller).is_none());
}

#[test]
fn the_callers_own_panel_is_the_shim_above_it_or_the_one_hosting_its_codex_thread() {
    let dir = Path::new("/p");
    let claude = live(registration(
        dir,
        Agent::Claude,
        100,
        &[HOST_A, 1],
        vec![session(Some("mine"), 1, None)],
    ));
    let codex = live(registration(
        dir,
        Agent::Codex,
        101,
        &[HOST_A, 1],
        vec![session(Some("t1"), 1, None), session(Some("t2"), 1, None)],
    ));
    let panels = vec![claude, codex];
    let in_claude_panel = vantage(&[400, 100, HOST_A, 1]);
    let own = window::own_panel(&panels, Agent::Claude, Some("mine"), &in_claude_panel);
    assert_eq!(own.map(|p| p.registration.pid), Some(100));
    // Another session id is not this panel's.
    assert!(window::own_panel(&panels, Agent::Claude, Some("x"), &in_claude_panel).is_none());
    // A Claude caller outside any panel has none.
    assert!(window::own_panel(&panels, Agent::Claude, Some("mine"), &vantage(&[400, 1])).is_none());
    // Codex: the thread named, whichever process tree.
    let own = window::own_panel(&panels, Agent::Codex, Some("t2"), &vantage(&[500, 1]));
    assert_eq!(own.map(|p| p.registration.pid), Some(101));
    assert!(window::own_panel(&panels, Agent::Codex, None, &in_claude_panel).is_none());
    assert_eq!(
        window::hosting(&panels, Agent::Codex, "t1").map(|p| p.registration.pid),
        Some(101)
    );
}

#[test]
fn the_client_writes_one_request_and_reads_events_until_the_shim_closes() {
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("shim.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&stream).read_line(&mut line).unwrap();
        let request: ShimRequest = serde_json::from_str(&line).unwrap();
        let mut out = &stream;
        let event = ShimEvent::Written { session_id: None };
        writeln!(out, "{}", serde_json::to_string(&event).unwrap()).unwrap();
        request
    });
    let mut connection = client::open(&socket, &ShimRequest::Status).unwrap();
    let first = connection
        .next(std::time::Duration::from_secs(120))
        .unwrap();
    assert!(
        matches!(first, Next::Event(ShimEvent::Written { .. })),
        "{first:?}"
    );
    assert_eq!(server.join().unwrap(), ShimRequest::Status);
    let end = connection
        .next(std::time::Duration::from_secs(120))
        .unwrap();
    assert!(matches!(end, Next::Closed), "{end:?}");
}

#[test]
fn a_shim_that_does_not_answer_is_treated_as_gone_and_a_link_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("silent.sock");
    let _listener = UnixListener::bind(&socket).unwrap();
    // It gives up on its own (after its status timeout), well inside this ceiling, rather than
    // waiting on the silent shim for ever; the ceiling is a hang guard, not a measure.
    let (tx, rx) = std::sync::mpsc::channel();
    let asking = socket.clone();
    std::thread::spawn(move || {
        let _ = tx.send(client::status(&asking));
    });
    let error = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the status call gives up on a silent shim")
        .unwrap_err();
    assert!(matches!(error, ShimError::Unreachable { .. }), "{error}");

    let link = home.path().join("link.sock");
    std::os::unix::fs::symlink(&socket, &link).unwrap();
    let error = client::open(&link, &ShimRequest::Status).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    let error = client::open(&home.path().join("none.sock"), &ShimRequest::Status).unwrap_err();
    assert!(matches!(error, ShimError::Unreachable { .. }), "{error}");
}
