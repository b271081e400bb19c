//! The review robot end to end: the built binary's daemon with `review.robot = true` reviews
//! idle sessions on its own, at most the cap per pass (no burst on a fresh state), remembers
//! them in a state file that names none of them, and after a restart reviews none of them
//! again until they are due; `review status` names them from the live index.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::telegram::{BIN, WAIT, wait_within};

const SESSIONS: usize = 5;

pub(super) struct Place {
    _dir: tempfile::TempDir,
    pub(super) home: PathBuf,
    pub(super) state: PathBuf,
    pub(super) ids: Vec<String>,
}

impl Place {
    /// A HOME with `SESSIONS` Claude Code sessions whose last turn ended 30 minutes ago, and the
    /// robot on.
    fn new() -> Place {
        Place::with_config("[review]\nrobot = true\nrobot_after_idle_minutes = 0\n")
    }

    /// The same with `config` as `config.toml`.
    pub(super) fn with_config(config: &str) -> Place {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let state = dir.path().join("state");
        // The sessions' folder is gone (never made), so a correction that passes the guard is
        // refused by the bridge, deterministically, instead of starting an agent.
        let cwd = dir.path().join("proj-gone").to_string_lossy().into_owned();
        let encoded: String = cwd
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let project = home.join(".claude/projects").join(encoded);
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        let ended =
            cross_agent_stores::UnixMillis(cross_agent_stores::UnixMillis::now().0 - 30 * 60_000)
                .to_rfc3339();
        let ids: Vec<String> = (0..SESSIONS)
            .map(|i| {
                let id = uuid::Uuid::new_v4().to_string();
                let line = |kind: &str, message: Value| {
                    json!({"type": kind, "sessionId": id, "uuid": uuid::Uuid::new_v4().to_string(),
                           "timestamp": ended, "cwd": cwd, "message": message})
                    .to_string()
                };
                let text = format!(
                    "{}\n{}\n",
                    line(
                        "user",
                        json!({"role": "user", "content": format!("fix the build {i}")})
                    ),
                    line(
                        "assistant",
                        json!({"role": "assistant", "model": "claude-sonnet-4-5",
                               "content": [{"type": "text", "text": "done"}]})
                    ),
                );
                std::fs::write(project.join(format!("{id}.jsonl")), text).unwrap();
                id
            })
            .collect();
        std::fs::write(state.join("config.toml"), config).unwrap();
        Place {
            _dir: dir,
            home,
            state,
            ids,
        }
    }

    pub(super) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("HOME", &self.home)
            .env("CROSS_AGENT_HOME", &self.state)
            .env("CROSS_AGENT_REVIEW_ROBOT_PASS_SECONDS", "1")
            .env_remove("CROSS_AGENT_PROVIDERS")
            .env_remove("CROSS_AGENT_HANDOFF_PROVIDERS");
        command
    }

    pub(super) fn daemon(&self) -> Child {
        self.command(&["daemon", "run"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// The robot's review lines, oldest first.
    fn reviews(&self) -> Vec<Value> {
        self.lines("review_robot")
    }

    fn lines(&self, kind: &str) -> Vec<Value> {
        decisions(&self.state)
            .into_iter()
            .filter(|d| d["kind"] == kind)
            .collect()
    }
}

pub(super) fn decisions(state: &Path) -> Vec<Value> {
    std::fs::read_to_string(state.join("decisions.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub(super) fn stop(place: &Place, mut daemon: Child) {
    let _ = place.command(&["daemon", "stop"]).output();
    let _ = daemon.wait();
}

fn millis(d: &Value) -> i64 {
    cross_agent_stores::UnixMillis::parse_rfc3339(d["at"].as_str().unwrap())
        .unwrap()
        .0
}

#[test]
fn the_robot_reviews_at_most_the_cap_a_pass_and_after_a_restart_none_until_due() {
    let place = Place::new();
    let daemon = place.daemon();
    assert!(
        wait_within(WAIT, || place.reviews().len() >= SESSIONS),
        "every idle session reviewed in the end: {:?}",
        place.reviews()
    );
    let first = place.reviews();
    // No burst: two a pass, passes a second apart, so any three reviews span most of a second.
    let at: Vec<i64> = first.iter().map(millis).collect();
    for three in at.windows(3) {
        assert!(
            three[2] - three[0] >= 500,
            "three reviews in one pass: {at:?}"
        );
    }
    let reviewed: std::collections::BTreeSet<&str> = first
        .iter()
        .map(|d| d["session"].as_str().unwrap())
        .collect();
    assert_eq!(reviewed.len(), SESSIONS, "each session once: {first:?}");
    // The state file says nothing about which sessions exist.
    let text = std::fs::read_to_string(place.state.join("robot-review-state.json")).unwrap();
    for id in &place.ids {
        assert!(!text.contains(id.as_str()), "{text}");
    }
    stop(&place, daemon);

    // A restart reads the state back: several passes, no review.
    let daemon = place.daemon();
    let out = place
        .command(&["review", "status", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(place.reviews().len(), SESSIONS, "{:?}", place.reviews());

    // `review status` names every session from the live index, none due now.
    let out = place
        .command(&["review", "status", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["robot"], true);
    assert_eq!(status["steer"], false);
    assert_eq!(status["robot_after_idle_minutes"], 0);
    let sessions = status["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), SESSIONS, "{status:#}");
    for s in sessions {
        assert!(
            place.ids.iter().any(|id| s["session_id"] == id.as_str()),
            "{s}"
        );
        assert_ne!(s["standing"], "due", "{s}");
    }
    let last = status["last_reviews"].as_array().unwrap();
    assert_eq!(last.len(), SESSIONS);
    assert!(
        last.iter()
            .all(|r| place.ids.iter().any(|id| r["session_id"] == id.as_str())),
        "every entry named by hashing the live ids: {status:#}"
    );
    let out = place.command(&["review", "status"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("review robot: on · steering: off"),
        "{text}"
    );
    assert!(text.contains(&place.ids[0]), "{text}");
    stop(&place, daemon);
}

#[test]
fn with_steering_on_the_robots_correction_goes_to_the_escalation_guard() {
    let place =
        Place::with_config("[review]\nrobot = true\nsteer = true\nrobot_after_idle_minutes = 0\n");
    let endpoint = cross_agent_testkit::ModelEndpoint::start().unwrap();
    endpoint.push(
        cross_agent_testkit::Rule::on_any()
            .reply_text(
                json!({"verdict": "drifting", "task": "fix the build", "gaps": ["no tests run"],
                       "correction": "Run the tests before anything else."})
                .to_string(),
            )
            .include_side_requests(),
    );
    let mut command = place.command(&["daemon", "run"]);
    command
        .env(
            "CROSS_AGENT_PROVIDERS",
            format!("chat {} - gpt-reviewer openai", endpoint.openai_base_url()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let daemon = command.spawn().unwrap();
    assert!(
        wait_within(WAIT, || !place.lines("review_robot_correction").is_empty()),
        "the robot asked the guard: {:?}",
        place.reviews()
    );
    let asked = place.lines("review_robot_correction");
    // Steering is on and the verdict drifts, so every rule of the guard passes; the bridge
    // then refuses the delivery because the session's folder is gone — the guard's own
    // decision line says the same, asked by the robot.
    assert_eq!(asked[0]["outcome"], "refused", "{asked:?}");
    assert_eq!(asked[0]["guard"], "send_refused", "{asked:?}");
    assert_eq!(asked[0]["details"]["requested_by"], "robot");
    let guard = place.lines("review_correction_refused");
    assert!(
        guard
            .iter()
            .any(|d| d["details"]["rule"] == "send_refused"
                && d["details"]["requested_by"] == "robot"),
        "{guard:?}"
    );
    let reviews = place.reviews();
    assert_eq!(reviews[0]["outcome"], "verdict", "{reviews:?}");
    stop(&place, daemon);
}
