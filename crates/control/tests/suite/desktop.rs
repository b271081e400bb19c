//! Focus and the GUI fallback on a real desktop: Xvfb with openbox, stand-in editor windows
//! (`x11-recorder`, titled as VS Code titles its windows) that record the keys and pastes they
//! receive. Focus is checked through `_NET_ACTIVE_WINDOW`, the paste through what the window
//! got from the clipboard, the decision through the log's line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use cross_agent_control::fallback::{self, Request, Verdict};
use cross_agent_control::focus::{Focused, focus_cwd};
use cross_agent_control::settings::{self, ControlConfig};
use cross_agent_control::x11::X11;
use cross_agent_control::{Control, ControlError, WaylandOnly, Window};
use cross_agent_decisions::DecisionLog;
use cross_agent_protocol::vocabulary::Agent;
use cross_agent_testkit::desktop::{Desktop, Recorder, wait_for};
use pretty_assertions::{assert_eq, assert_ne};
use serde_json::Value;

const RETURN: u32 = 0xff0d;
const ESCAPE: u32 = 0xff1b;

/// A desktop with one stand-in window per folder name, all listed by the window manager.
struct Scene {
    // Fields drop in order: the windows close before their X server goes.
    windows: Vec<(Recorder, Window)>,
    control: X11,
    desktop: Desktop,
    dir: tempfile::TempDir,
}

impl Scene {
    fn open(folders: &[&str]) -> Result<Scene> {
        let desktop = Desktop::start()?;
        let control = X11::connect(desktop.display())?;
        let dir = tempfile::tempdir()?;
        let mut recorders = Vec::new();
        for folder in folders {
            let title = format!("main.rs — {folder} — Visual Studio Code");
            let record = dir.path().join(format!("{folder}.jsonl"));
            recorders.push(desktop.open_window(&title, &record)?);
        }
        wait_for("the windows to be listed", Duration::from_secs(10), || {
            Ok(control.windows()?.len() == folders.len())
        })?;
        let listed = control.windows()?;
        let windows = recorders
            .into_iter()
            .map(|recorder| {
                let window = listed
                    .iter()
                    .find(|w| w.pid == Some(recorder.pid()))
                    .cloned();
                (recorder, window.expect("listed with its pid"))
            })
            .collect();
        Ok(Scene {
            desktop,
            control,
            windows,
            dir,
        })
    }

    fn window(&self, i: usize) -> &Window {
        &self.windows[i].1
    }

    fn recorder(&self, i: usize) -> &Recorder {
        &self.windows[i].0
    }

    fn home(&self) -> PathBuf {
        self.dir.path().to_owned()
    }

    /// Waits until no input came for `at_least`.
    fn wait_idle(&self, at_least: Duration) -> Result<()> {
        wait_for("the person to be idle", Duration::from_secs(10), || {
            Ok(self.control.idle()? >= at_least)
        })
    }
}

fn config(text: &str, home: &Path) -> ControlConfig {
    settings::parse(text, home.join("config.toml"), None).unwrap()
}

fn decisions(home: &Path) -> Vec<Value> {
    std::fs::read_to_string(home.join(cross_agent_decisions::CURRENT_FILE))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn focus_moves_to_the_window_of_the_sessions_folder() -> Result<()> {
    let scene = Scene::open(&["alpha", "beta", "gamma"])?;
    let control: &dyn Control = &scene.control;
    for (cwd, i) in [
        ("/work/beta/src", 1),
        ("/work/alpha", 0),
        ("/srv/gamma/a/b", 2),
    ] {
        let focused = focus_cwd(Ok(control), Path::new(cwd), &[])?;
        assert_eq!(
            focused,
            Focused::Window {
                window: scene.window(i).clone()
            }
        );
        assert_eq!(control.active()?, Some(scene.window(i).id), "{cwd}");
    }
    // The window's pid is the recorder's, as VS Code's is its main process's.
    assert_eq!(scene.window(0).pid, Some(scene.recorder(0).pid()));
    // No window for the folder: refused, naming the windows seen; the active one stays.
    let e = focus_cwd(Ok(control), Path::new("/work/delta"), &[]).unwrap_err();
    assert!(matches!(e, ControlError::NoWindow { .. }), "{e}");
    assert!(e.to_string().contains("beta — Visual Studio Code"), "{e}");
    assert_eq!(control.active()?, Some(scene.window(2).id));
    Ok(())
}

#[test]
fn two_windows_of_one_folder_are_refused_as_ambiguous() -> Result<()> {
    let scene = Scene::open(&["alpha", "alpha"])?;
    let before = scene.control.active()?;
    let e = focus_cwd(Ok(&scene.control), Path::new("/w/alpha"), &[]).unwrap_err();
    assert!(
        matches!(e, ControlError::AmbiguousWindow { count: 2, .. }),
        "{e}"
    );
    assert_eq!(scene.control.active()?, before);
    // The editor's pid tells them apart.
    let pid = scene.recorder(1).pid();
    focus_cwd(Ok(&scene.control), Path::new("/w/alpha"), &[pid])?;
    assert_eq!(scene.control.active()?, Some(scene.window(1).id));
    Ok(())
}

#[test]
fn the_fallback_pastes_into_the_sessions_window_and_submits() -> Result<()> {
    let scene = Scene::open(&["alpha", "beta"])?;
    let home = scene.home();
    let config = config("[control]\ngui_fallback = true\nidle_seconds = 1\n", &home);
    scene.wait_idle(Duration::from_millis(1200))?;
    // beta is in front: the fallback has to raise alpha.
    scene.control.focus(scene.window(1))?;
    assert_ne!(scene.control.active()?, Some(scene.window(0).id));
    // Lines and characters no keyboard map has: a typed newline would have submitted early.
    let text = "first line\nsecond — ünïcode ✓ 日本";
    let report = fallback::run(
        Ok(&scene.control),
        &config,
        &Request {
            agent: Agent::Claude,
            session: Some("sess-1"),
            delivery: None,
            cwd: Path::new("/work/alpha"),
            editor_pids: &[],
            text,
        },
        &DecisionLog::new(&home),
    );
    assert_eq!(
        (report.verdict, report.guard),
        (Verdict::Submitted, "submitted"),
        "{report:?}"
    );
    let target = scene.recorder(0);
    wait_for("the submit key", Duration::from_secs(5), || {
        Ok(target.keys().contains(&RETURN))
    })?;
    assert_eq!(target.pastes(), vec![text.to_owned()]);
    // Ctrl+Escape (Claude's "Focus input"), Ctrl+V, Return — with the Control key's own presses.
    let keys: Vec<u32> = target
        .keys()
        .into_iter()
        .filter(|k| [ESCAPE, u32::from('v'), RETURN].contains(k))
        .collect();
    assert_eq!(keys, vec![ESCAPE, u32::from('v'), RETURN]);
    assert_eq!(scene.recorder(1).keys(), Vec::<u32>::new());
    assert_eq!(scene.control.active()?, Some(scene.window(0).id));
    let lines = decisions(&home);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line = &lines[0];
    assert_eq!(line["kind"], "gui_fallback");
    assert_eq!(line["outcome"], "submitted");
    assert_eq!(line["session"], "sess-1");
    assert_eq!(
        line["details"]["window_id"],
        format!("{:#x}", scene.window(0).id)
    );
    assert_eq!(
        line["details"]["window_title"],
        "main.rs — alpha — Visual Studio Code"
    );
    // The prompt itself never reaches the log.
    assert!(!line.to_string().contains("second"), "{line}");
    Ok(())
}

#[test]
fn nothing_is_typed_after_recent_input() -> Result<()> {
    let scene = Scene::open(&["alpha"])?;
    let home = scene.home();
    let config = config("[control]\ngui_fallback = true\nidle_seconds = 5\n", &home);
    scene.desktop.move_pointer()?;
    let report = fallback::run(
        Ok(&scene.control),
        &config,
        &Request {
            agent: Agent::Claude,
            session: None,
            delivery: None,
            cwd: Path::new("/work/alpha"),
            editor_pids: &[],
            text: "hello",
        },
        &DecisionLog::new(&home),
    );
    assert_eq!(
        (report.verdict, report.guard),
        (Verdict::Refused, "recent_input")
    );
    assert!(
        report.reason.contains("within idle_seconds (5 s)"),
        "{}",
        report.reason
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(scene.recorder(0).keys(), Vec::<u32>::new());
    assert_eq!(scene.recorder(0).pastes(), Vec::<String>::new());
    let lines = decisions(&home);
    assert_eq!(lines[0]["outcome"], "refused");
    assert_eq!(lines[0]["guard"], "recent_input");
    assert_eq!(
        lines[0]["details"]["window_title"],
        "main.rs — alpha — Visual Studio Code"
    );
    Ok(())
}

#[test]
fn refusals_say_why_and_type_nothing() -> Result<()> {
    let scene = Scene::open(&["alpha"])?;
    let home = scene.home();
    scene.wait_idle(Duration::from_millis(1200))?;
    let request = |agent| Request {
        agent,
        session: None,
        delivery: None,
        cwd: Path::new("/work/alpha"),
        editor_pids: &[],
        text: "hello",
    };
    let log = DecisionLog::new(&home);
    // Off (the default).
    let off = fallback::run(
        Ok(&scene.control),
        &config("", &home),
        &request(Agent::Claude),
        &log,
    );
    assert_eq!((off.verdict, off.guard), (Verdict::Refused, "off"));
    assert!(
        off.reason.contains("CROSS_AGENT_GUI_FALLBACK=1"),
        "{}",
        off.reason
    );
    // On, but Codex has no key that opens its chat input until the person binds one.
    let on = config("[control]\ngui_fallback = true\nidle_seconds = 1\n", &home);
    let codex = fallback::run(Ok(&scene.control), &on, &request(Agent::Codex), &log);
    assert_eq!(codex.guard, "no_open_keys");
    assert!(
        codex.reason.contains("chatgpt.openSidebar"),
        "{}",
        codex.reason
    );
    // No desktop at all.
    let none = fallback::run(
        Err(ControlError::NoDesktop {
            why: "neither DISPLAY nor WAYLAND_DISPLAY is set".to_owned(),
        }),
        &on,
        &request(Agent::Claude),
        &log,
    );
    assert_eq!(none.guard, "desktop");
    assert!(none.reason.contains("DISPLAY"), "{}", none.reason);
    // Wayland alone: every call says what it cannot do.
    let wayland = WaylandOnly {
        display: "wayland-0".to_owned(),
    };
    let w = fallback::run(Ok(&wayland), &on, &request(Agent::Claude), &log);
    assert_eq!(w.guard, "desktop");
    assert!(
        w.reason.contains("Wayland cannot list windows"),
        "{}",
        w.reason
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(scene.recorder(0).keys(), Vec::<u32>::new());
    let outcomes: Vec<(String, String)> = decisions(&home)
        .iter()
        .map(|l| {
            (
                l["outcome"].as_str().unwrap_or("").to_owned(),
                l["guard"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("refused", "off"),
            ("refused", "no_open_keys"),
            ("refused", "desktop"),
            ("refused", "desktop")
        ]
        .map(|(o, g)| (o.to_owned(), g.to_owned()))
    );
    Ok(())
}
