//! `cross-agent focus`, driven through the built binary on a temporary home under a real
//! desktop (Xvfb + openbox, stand-in VS Code windows from testkit): the session named by its
//! name raises the window of its folder (checked in `_NET_ACTIVE_WINDOW`); `--type` pastes
//! into that window and submits when the GUI fallback is on, and is refused when it is off;
//! without a display it says so; on Wayland alone it asks the editor's CLI.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use cross_agent_control::Control as _;
use cross_agent_control::x11::X11;
use cross_agent_testkit::desktop::{Desktop, wait_for};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};

const MINUTE: i64 = 60_000;
use pretty_assertions::assert_eq;

use super::handoff::{User, assert_success, stderr_of_exit_1};

const ID: &str = "c-focus-beta";

/// A user with one Claude session working in `/work/beta/src`, named "port beta".
fn user_with_session() -> User {
    let user = User::new();
    let mut t = ClaudeTranscript::new(user.home.path(), "/work/beta/src", ID);
    t.user("hello", now_millis() - 2 * MINUTE)
        .custom_title("port beta")
        .assistant_text("Hi.", now_millis() - MINUTE);
    t.write().unwrap();
    std::fs::create_dir_all(&user.state).unwrap();
    std::fs::set_permissions(&user.state, std::fs::Permissions::from_mode(0o700)).unwrap();
    user
}

fn write_config(user: &User, text: &str) {
    let path = user.state.join("config.toml");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn focus_raises_the_sessions_window_and_type_pastes_into_it() {
    let user = user_with_session();
    let desktop = Desktop::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let alpha = desktop
        .open_window("a.rs — alpha — Visual Studio Code", &dir.path().join("a"))
        .unwrap();
    let beta = desktop
        .open_window("b.rs — beta — Visual Studio Code", &dir.path().join("b"))
        .unwrap();
    let control = X11::connect(desktop.display()).unwrap();
    wait_for("both windows", Duration::from_secs(10), || {
        Ok(control.windows()?.len() == 2)
    })
    .unwrap();
    let beta_id = control
        .windows()
        .unwrap()
        .iter()
        .find(|w| w.pid == Some(beta.pid()))
        .unwrap()
        .id;

    let out = user
        .command(&["focus", "port beta"])
        .env("DISPLAY", desktop.display())
        .output()
        .unwrap();
    assert_success(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("raised window {beta_id:#x}")),
        "{said}"
    );
    assert_eq!(control.active().unwrap(), Some(beta_id));

    // --type with the fallback off (the default): refused, nothing typed.
    let out = user
        .command(&["focus", ID, "--type", "run the tests"])
        .env("DISPLAY", desktop.display())
        .output()
        .unwrap();
    let err = stderr_of_exit_1(&out);
    assert!(err.contains("the GUI fallback is off"), "{err}");

    // On, and the person away for a second: pasted into beta and submitted.
    write_config(&user, "[control]\nidle_seconds = 1\n");
    wait_for("the person to be idle", Duration::from_secs(10), || {
        Ok(control.idle()? >= Duration::from_millis(1200))
    })
    .unwrap();
    let out = user
        .command(&["focus", ID, "--type", "run the tests\nthen report"])
        .env("DISPLAY", desktop.display())
        .env("CROSS_AGENT_GUI_FALLBACK", "1")
        .output()
        .unwrap();
    assert_success(&out);
    wait_for("the paste", Duration::from_secs(5), || {
        Ok(!beta.pastes().is_empty())
    })
    .unwrap();
    assert_eq!(beta.pastes(), vec!["run the tests\nthen report".to_owned()]);
    assert_eq!(alpha.pastes(), Vec::<String>::new());
    let outcomes: Vec<String> = user
        .decisions()
        .iter()
        .filter(|d| d["kind"] == "gui_fallback")
        .map(|d| format!("{} {}", d["outcome"], d["details"]["window_title"]))
        .collect();
    assert_eq!(
        outcomes,
        [
            r#""refused" null"#,
            r#""submitted" "b.rs — beta — Visual Studio Code""#
        ]
    );
}

#[test]
fn without_a_display_focus_says_so_and_on_wayland_asks_the_editor_cli() {
    let user = user_with_session();
    let out = user.command(&["focus", ID]).output().unwrap();
    // Said once: the backend's own refusal, not wrapped in another "no desktop".
    assert_eq!(
        stderr_of_exit_1(&out),
        "cross-agent focus: no desktop to control: neither DISPLAY nor WAYLAND_DISPLAY is set \
         (no graphical session here)\n"
    );

    // Wayland alone: the editor CLI raises the folder's window (a stand-in that records).
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("args");
    let cli = dir.path().join("code");
    std::fs::write(
        &cli,
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\n", record.display()),
    )
    .unwrap();
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = user
        .command(&["focus", ID])
        .env("WAYLAND_DISPLAY", "wayland-0")
        .env("CROSS_AGENT_EDITOR_CLI", &cli)
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        "--reuse-window\n/work/beta/src\n"
    );
    // And without an editor CLI, Wayland's limits and the missing CLI are both named.
    let out = user
        .command(&["focus", ID])
        .env("WAYLAND_DISPLAY", "wayland-0")
        .env("CROSS_AGENT_EDITOR_CLI", Path::new("/nonexistent/code"))
        .output()
        .unwrap();
    let err = stderr_of_exit_1(&out);
    assert!(err.contains("Wayland cannot list windows"), "{err}");
    assert!(err.contains("/nonexistent/code"), "{err}");
}

/// A live panel shim (the real `cross-agent shim claude`, in front of `cat`) started in the
/// session's folder under a `sh` standing for the editor's process: the editor pid its
/// registration names (an ancestor) owns one of two windows titled with the folder, and a
/// third editor's window names a nearer folder (`src`). `focus` raises the shim's editor's
/// window; without the shim the title alone decides, and the nearer folder's window wins.
#[test]
fn focus_picks_the_window_a_live_shims_editor_owns_over_a_title_match() {
    let user = User::new();
    let cwd = user.home.path().join("work/beta/src");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut t = ClaudeTranscript::new(user.home.path(), &cwd.to_string_lossy(), ID);
    t.user("hello", now_millis() - 2 * MINUTE)
        .assistant_text("Hi.", now_millis() - MINUTE);
    t.write().unwrap();

    // The "editor": sh, the shim's parent (`; exit` keeps sh there, no exec); it starts the
    // shim when the test writes a line.
    let agent = user.home.path().join("agent.sh");
    std::fs::write(&agent, "#!/bin/sh\nexec cat\n").unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut editor = std::process::Command::new("sh");
    editor
        .arg("-c")
        .arg("read go; \"$@\"; exit $?")
        .arg("editor")
        .arg(super::telegram::BIN)
        .args(["shim", "claude"])
        .arg(&agent)
        .args(["--input-format", "stream-json"])
        .current_dir(&cwd)
        .env("HOME", user.home.path())
        .env("CROSS_AGENT_HOME", &user.state)
        .env_remove("DISPLAY")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut editor = editor.spawn().unwrap();
    let editor_pid = editor.id();

    let desktop = Desktop::start().unwrap();
    let records = tempfile::tempdir().unwrap();
    let _nearer = desktop
        .open_window("z.rs — src — Visual Studio Code", &records.path().join("z"))
        .unwrap();
    let _other = desktop
        .open_window(
            "x.rs — beta — Visual Studio Code",
            &records.path().join("x"),
        )
        .unwrap();
    let _owned = desktop
        .open_window_of(
            "y.rs — beta — Visual Studio Code",
            &records.path().join("y"),
            Some(editor_pid),
        )
        .unwrap();
    let control = X11::connect(desktop.display()).unwrap();
    wait_for("three windows", Duration::from_secs(10), || {
        Ok(control.windows()?.len() == 3)
    })
    .unwrap();
    let windows = control.windows().unwrap();
    let id_of = |title: &str| windows.iter().find(|w| w.title == title).unwrap().id;
    let (nearer_id, owned_id) = (
        id_of("z.rs — src — Visual Studio Code"),
        id_of("y.rs — beta — Visual Studio Code"),
    );
    let focus = || {
        let out = user
            .command(&["focus", ID])
            .env("DISPLAY", desktop.display())
            .output()
            .unwrap();
        assert_success(&out);
        control.active().unwrap()
    };

    // No shim yet: the title alone, the nearest folder first.
    assert_eq!(focus(), Some(nearer_id));

    use std::io::Write as _;
    editor.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    wait_for("the shim's registration", Duration::from_secs(60), || {
        let panels = user.state.join("panels");
        Ok(std::fs::read_dir(&panels).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                e.path().extension().is_some_and(|x| x == "json")
                    && std::fs::read_to_string(e.path()).is_ok_and(|text| {
                        serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|r| {
                            r["ancestors"][0] == editor_pid && r["agent_pid"].is_u64()
                        })
                    })
            })
        }))
    })
    .unwrap();
    assert_eq!(focus(), Some(owned_id));

    drop(editor.stdin.take());
    let _ = editor.kill();
    let _ = editor.wait();
}
