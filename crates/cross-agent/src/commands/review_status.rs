//! `cross-agent review status [--json]`: whether the review robot and steering are on, the
//! cadence, which live sessions are due and when, and the robot's last reviews.
//!
//! The robot's state file names sessions only by a keyed hash (`review::cadence`), so this
//! command names an entry by hashing the ids the daemon's live index lists with the install's
//! secret; an entry no live session matches is shown without a name.

use std::process::ExitCode;

use clap::Args;
use cross_agent_daemon::robot::{self, RobotSettings};
use cross_agent_protocol::bridge::{AgentFilter, ListSessionsParams};
use cross_agent_review::cadence::{self, Candidate, InstallKey, Standing};
use cross_agent_stores::UnixMillis;
use serde_json::{Value, json};

use super::bridge_client::{self, print_json};

/// How many sessions of the live index are looked at.
const LISTED: u32 = 200;
/// How many of the robot's last reviews are shown.
const LAST_REVIEWS: usize = 10;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

struct Live {
    candidate: Candidate,
    title: Option<String>,
}

impl StatusArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let (home, client) = bridge_client::connect()?;
        let root = home.root();
        let settings: RobotSettings =
            robot::read_settings(root).map_err(|problem| anyhow::anyhow!(problem))?;
        let key = InstallKey::read(root)?;
        let loaded = cadence::load(root)?;
        if let Some(aside) = &loaded.quarantined {
            eprintln!(
                "the review robot's state file was damaged; it was moved to {}",
                aside.display()
            );
        }
        let listed = client
            .call(ListSessionsParams {
                agent: AgentFilter::All,
                scope: None,
                cwd: None,
                limit: Some(LISTED),
                // The listing the robot sees: no caller, so no project scope of this shell's cwd.
                caller: cross_agent_protocol::bridge::CallerContext::default(),
            })
            .map_err(|e| bridge_client::explain("list_sessions", e))?;
        let live: Vec<Live> = Candidate::of_listing(listed.sessions)
            .map(|(candidate, title)| Live { candidate, title })
            .collect();
        let report = status(&settings, key.as_ref(), &loaded.state, &live);
        if self.json {
            print_json(&report)?;
        } else {
            print!("{}", render(&report));
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn at(ms: i64) -> String {
    UnixMillis(ms).to_rfc3339()
}

/// The status as JSON (what `--json` prints and the text is rendered from).
fn status(
    settings: &RobotSettings,
    key: Option<&InstallKey>,
    state: &cadence::State,
    live: &[Live],
) -> Value {
    let now = UnixMillis::now().0;
    let candidates: Vec<Candidate> = live.iter().map(|l| l.candidate.clone()).collect();
    // Without a secret yet the robot never ran: every session stands as if the state were empty.
    let fresh = InstallKey::from_bytes([0; 32]);
    let key_used = key.unwrap_or(&fresh);
    let standings = cadence::plan(state, key_used, &candidates, now, &settings.cadence);
    let name_of = |hash: &str| {
        key.and_then(|key| {
            live.iter()
                .find(|l| key.hash(&l.candidate.agent, &l.candidate.session_id) == hash)
        })
    };
    let sessions: Vec<Value> = live
        .iter()
        .zip(standings)
        .map(|(l, standing)| {
            let (word, due_at) = match standing {
                Standing::Working => ("working", None),
                Standing::TooOld => ("idle_too_long", None),
                Standing::Reviewed => ("reviewed", None),
                Standing::DueAt(t) if t <= now => ("due", Some(at(t))),
                Standing::DueAt(t) => ("waiting", Some(at(t))),
            };
            json!({
                "agent": l.candidate.agent,
                "session_id": l.candidate.session_id,
                "title": l.title,
                "last_turn_ended": at(l.candidate.last_turn_ended_ms),
                "standing": word,
                "due_at": due_at,
            })
        })
        .collect();
    let mut entries: Vec<(&String, &cadence::Entry)> = state.sessions.iter().collect();
    entries.sort_by_key(|(_, e)| std::cmp::Reverse(e.reviewed_at_ms));
    let last: Vec<Value> = entries
        .into_iter()
        .take(LAST_REVIEWS)
        .map(|(hash, e)| {
            let named = name_of(hash);
            json!({
                "agent": named.map(|l| l.candidate.agent.clone()),
                "session_id": named.map(|l| l.candidate.session_id.clone()),
                "title": named.and_then(|l| l.title.clone()),
                "reviewed_at": at(e.reviewed_at_ms),
                "outcome": e.outcome,
                "verdict": e.verdict,
                "correction": e.correction,
            })
        })
        .collect();
    json!({
        "robot": settings.robot,
        "steer": settings.steer,
        "robot_after_idle_minutes": settings.cadence.after_idle.as_secs() / 60,
        "robot_interval_minutes": settings.cadence.interval.as_secs() / 60,
        "per_pass": settings.cadence.per_pass,
        "sessions": sessions,
        "last_reviews": last,
    })
}

fn render(report: &Value) -> String {
    let on = |v: &Value| {
        if v.as_bool() == Some(true) {
            "on"
        } else {
            "off"
        }
    };
    let mut out = format!(
        "review robot: {} · steering: {} · due {} min after a session's last turn, at most every \
         {} min, {} a pass\n",
        on(&report["robot"]),
        on(&report["steer"]),
        report["robot_after_idle_minutes"],
        report["robot_interval_minutes"],
        report["per_pass"],
    );
    let name = |v: &Value| {
        let id = v["session_id"].as_str().unwrap_or("");
        let title = v["title"].as_str().unwrap_or("");
        let agent = v["agent"].as_str().unwrap_or("");
        let text = if title.is_empty() {
            format!("{agent} {id}")
        } else {
            format!("{agent} {id} ({title})")
        };
        crate::display::escape::escape_cell(&text).into_owned()
    };
    out.push_str("sessions:\n");
    let sessions = report["sessions"].as_array().cloned().unwrap_or_default();
    if sessions.is_empty() {
        out.push_str("  (no live session)\n");
    }
    for s in &sessions {
        let when = match (s["standing"].as_str().unwrap_or(""), s["due_at"].as_str()) {
            ("due", Some(t)) => format!("due now (since {t})"),
            ("waiting", Some(t)) => format!("due at {t}"),
            ("reviewed", _) => "reviewed in this idle period".to_owned(),
            ("working", _) => "working".to_owned(),
            _ => "idle too long for the robot".to_owned(),
        };
        out.push_str(&format!("  {} — {when}\n", name(s)));
    }
    out.push_str("last reviews:\n");
    let last = report["last_reviews"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if last.is_empty() {
        out.push_str("  (none)\n");
    }
    for r in &last {
        let who = if r["session_id"].is_string() {
            name(r)
        } else {
            "(a session not live now)".to_owned()
        };
        let mut line = format!(
            "  {} {who}: {}",
            r["reviewed_at"].as_str().unwrap_or(""),
            r["outcome"].as_str().unwrap_or("")
        );
        if let Some(v) = r["verdict"].as_str() {
            line.push_str(&format!(" {v}"));
        }
        if let Some(c) = r["correction"].as_str() {
            line.push_str(&format!(", correction {c}"));
        }
        out.push_str(&crate::display::escape::escape_cell(&line));
        out.push('\n');
    }
    out
}
