//! The daemon's answer to the Telegram bot's questions about sessions
//! ([`cross_agent_telegram::sessions::SessionHost`]): the telegram crate never links the hub
//! (docs/architecture.md, layering), so this file is where the two meet.
//!
//! - Live sessions: the hub's index (`list_agent_sessions` of every agent), those active in the
//!   last [`LIVE_WINDOW`] or working now, newest first, at most [`MAX_CARDS`]; each with the
//!   head of its last answer read from its transcript. With hosts linked (docs/remote.md) the
//!   listing of every connected host is asked over its link too, each session naming its host;
//!   a host that cannot be asked is a line of its own, not a silent gap.
//! - A prompt from the phone is an ordinary `send` through the engine — panel first when a shim
//!   hosts the session, else a headless resume, by the hub's own rules — from a caller whose
//!   client name is `telegram` (the envelope says it is the human user), with this daemon's
//!   `CROSS_AGENT_*` settings and the child environment the usual baseline rules allow. For a
//!   session on another host it is the CLI's forwarded send: recorded here, delivered there
//!   by that daemon's doors under the same id, its record kept in step by the follower.
//! - Its answer: the delivery record once finished, the answer re-read from the transcript
//!   (a forwarded one's from the copy of the remote record).
//! - Hand off, Review and files stay on this machine: a session of another host is refused
//!   them in words naming it.
//! - Review: `cross-agent review SESSION --json` as a child (`review_door`); the card is held
//!   here (the newest [`HELD_REVIEWS`]) so Send correction names it by id, and the correction
//!   goes through the escalation guard as `requested_by: telegram`.
//! - Raise: the session's window on this daemon's desktop, found and raised as `cross-agent
//!   focus` does (`control::focus`, the panel shims' ancestry telling two windows apart); a
//!   card offers it only when that window is found.
//! - `/limits`: Codex's rate-limit windows, from the daemon's [`UsageSource`].
//! - Handoff: `cross-agent handoff destinations` / `handoff SESSION --to DEST`, run as this
//!   daemon's own binary in a process group of its own (the bot calls from a blocking task, so
//!   the poller's loop never waits for it).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_control::focus::Focused;
use cross_agent_control::matching;
use cross_agent_hosts::Links;
use cross_agent_hub::Engine;
use cross_agent_hub::envelope::TELEGRAM_CLIENT;
use cross_agent_protocol::bridge::{
    Agent, AgentFilter, CallerContext, DeliveryState, ListSessionsParams, SendParams, SendResponse,
};
use cross_agent_protocol::vocabulary::Transport;
use cross_agent_stores::UnixMillis;
use cross_agent_telegram::sessions::{
    CorrectionAnswer, Destination, Listing, LiveSession, Progress, PromptReceipt, ReviewCard,
    SessionHost, SessionRef, SessionState,
};
use cross_agent_transports::panel::registry;

use crate::budget_watch::UsageSource;
use crate::review_door::{Corrections, RequestedBy, Reviews};
use crate::server::remote::{self, Forwarding};
use serde_json::Value;

/// A session counts as live when it did something this recently (or is working now).
pub const LIVE_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);
/// The most cards one `/sessions` posts.
pub const MAX_CARDS: usize = 10;
/// How many reviews from the phone are held for their Send correction button.
pub const HELD_REVIEWS: usize = 64;
/// `handoff destinations` looks at the stores, PATH and the CLIs' login state.
const DESTINATIONS_TIMEOUT: Duration = Duration::from_secs(60);
/// A handoff reads the session and asks for a compact (which has its own timeouts and
/// fallbacks) before it starts the receiver.
const HANDOFF_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The hub, as the bot sees it.
pub struct Host {
    engine: Engine,
    /// The caller a prompt from the phone is sent as (its `cwd` set per prompt).
    caller: CallerContext,
    /// This daemon's binary, for `cross-agent handoff`.
    exe: Option<PathBuf>,
    reviews: Reviews,
    corrections: Arc<dyn Corrections>,
    /// The newest reviews from the phone: (agent, session id, card), oldest first.
    held: parking_lot::Mutex<VecDeque<(String, String, ReviewCard)>>,
    /// Where `/limits` reads Codex's rate-limit windows.
    usage: Arc<dyn UsageSource>,
    /// The links to the other machines (`hosts.toml`).
    links: Links,
    /// The sends being forwarded right now (shared with `on_host` and the follower).
    forwarding: Arc<Forwarding>,
    /// The daemon's runtime: the bot calls from blocking tasks, the links are async.
    runtime: tokio::runtime::Handle,
}

impl Host {
    pub fn new(
        engine: Engine,
        corrections: Arc<dyn Corrections>,
        usage: Arc<dyn UsageSource>,
        links: Links,
        forwarding: Arc<Forwarding>,
    ) -> Host {
        let caller = crate::own_caller::daemon_caller(TELEGRAM_CLIENT);
        Host {
            engine,
            caller,
            exe: std::env::current_exe().ok(),
            reviews: Reviews::new(),
            corrections,
            held: parking_lot::Mutex::new(VecDeque::new()),
            usage,
            links,
            forwarding,
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// The live sessions of every connected host, each naming its host, and a line for each
    /// host that could not be asked.
    fn remote_sessions(&self) -> (Vec<(i64, LiveSession)>, Vec<String>) {
        let hosts = remote::host_names(&self.links);
        if hosts.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let params = ListSessionsParams {
            agent: AgentFilter::All,
            scope: None,
            cwd: None,
            limit: Some(MAX_CARDS as u32),
            caller: self.caller(None),
        };
        let links = self.links.clone();
        // Every host at once: the slowest one sets the wait, not their sum.
        let answers = self.runtime.block_on(async move {
            remote::ask_every_host(&links, move |links, host| {
                let params = params.clone();
                async move { remote::list_on(&links, &host, params).await }
            })
            .answers()
            .await
        });
        let now = UnixMillis::now().0;
        let (mut live, mut unreachable) = (Vec::new(), Vec::new());
        for (host, answer) in answers {
            match answer {
                Ok(listed) => {
                    for (agent_name, entries) in listed.sessions {
                        for entry in entries {
                            // Its transcript, usage and editor window are the other machine's.
                            if let Some(at) = live_at(&entry, now) {
                                live.push((
                                    at,
                                    live_session(
                                        &agent_name,
                                        &entry,
                                        Some(&host),
                                        None,
                                        None,
                                        None,
                                        None,
                                    ),
                                ));
                            }
                        }
                    }
                }
                Err(why) => unreachable.push(format!(
                    "🖥 {host} is down, its sessions are not listed: {why}"
                )),
            }
        }
        (live, unreachable)
    }

    /// A session of another host is refused what does not travel over the link.
    fn here_only(session: &SessionRef, what: &str) -> Result<(), String> {
        match &session.host {
            Some(host) => Err(format!(
                "{what} works on this machine's sessions only; this one is on host `{host}` \
                 (run it there: `ssh {host} cross-agent …`)"
            )),
            None => Ok(()),
        }
    }

    fn caller(&self, cwd: Option<&str>) -> CallerContext {
        CallerContext {
            cwd: cwd.map(str::to_owned),
            ..self.caller.clone()
        }
    }

    fn run_cli(&self, args: &[&str], timeout: Duration) -> Result<Value, String> {
        let Some(exe) = &self.exe else {
            return Err(
                "this daemon cannot find its own binary to run `cross-agent handoff`".into(),
            );
        };
        let mut command = Command::new(exe);
        command.args(args);
        let finished =
            cross_agent_process::run::run(command, None, timeout).map_err(|error| match error {
                cross_agent_process::run::RunError::TimedOut => {
                    format!(
                        "`cross-agent {}` took longer than {} s",
                        args.join(" "),
                        timeout.as_secs()
                    )
                }
                other => format!("`cross-agent {}` could not run: {other:?}", args.join(" ")),
            })?;
        let value: Option<Value> = serde_json::from_slice(&finished.stdout).ok();
        match value {
            Some(value) => Ok(value),
            None => {
                let stderr = String::from_utf8_lossy(&finished.stderr);
                let last = stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                Err(format!(
                    "`cross-agent {}` failed ({}): {}",
                    args.first().copied().unwrap_or(""),
                    finished.status,
                    last.trim()
                ))
            }
        }
    }
}

/// When `entry` last did something (ms), if it counts as live: active within [`LIVE_WINDOW`]
/// or working now.
fn live_at(entry: &cross_agent_protocol::bridge::SessionEntry, now: i64) -> Option<i64> {
    let window = i64::try_from(LIVE_WINDOW.as_millis()).unwrap_or(i64::MAX);
    let at = entry
        .last_activity
        .as_deref()
        .and_then(UnixMillis::parse_rfc3339)
        .map_or(0, |t| t.0);
    (entry.is_working || now.saturating_sub(at) <= window).then_some(at)
}

/// The card's view of `entry`, of `agent_name`, on `host` (`None`: this machine).
fn live_session(
    agent_name: &str,
    entry: &cross_agent_protocol::bridge::SessionEntry,
    host: Option<&str>,
    last_answer_head: Option<String>,
    usage: Option<String>,
    place: Option<String>,
    window: Option<String>,
) -> LiveSession {
    LiveSession {
        session: SessionRef {
            agent: agent_name.to_owned(),
            session_id: entry.session_id.clone(),
            title: entry.title.clone(),
            cwd: entry.cwd.clone(),
            host: host.map(str::to_owned),
        },
        state: if entry.is_working {
            SessionState::Working
        } else {
            SessionState::Idle
        },
        last_answer_head,
        last_activity: entry.last_activity.clone(),
        usage,
        place,
        window,
    }
}

/// The windows of this daemon's X11 desktop and the live panel shims, read once per
/// `/sessions`: a card offers Raise when its session's window is found here as `cross-agent
/// focus` would find it. No X11 display (none, or Wayland alone): no window, no Raise.
struct Desktop {
    windows: Vec<cross_agent_control::Window>,
    panels: Vec<registry::LivePanel>,
}

impl Desktop {
    fn read(state_root: &Path) -> Desktop {
        let windows = cross_agent_control::from_env()
            .and_then(|control| control.windows())
            .unwrap_or_default();
        let panels = if windows.is_empty() {
            Vec::new()
        } else {
            registry::scan(state_root).live
        };
        Desktop { windows, panels }
    }

    /// The title of the window `focus` would raise for this session, when there is one.
    fn window_of(&self, session_id: &str, cwd: &Path) -> Option<String> {
        if self.windows.is_empty() {
            return None;
        }
        let editor_pids = registry::editor_pids(&self.panels, Some(session_id), cwd);
        matching::window_for_cwd(&self.windows, cwd, &editor_pids)
            .ok()
            .map(|window| window.title.clone())
    }
}

fn agent_of(name: &str) -> Option<Agent> {
    Agent::ALL.into_iter().find(|a| a.as_str() == name)
}

/// The last assistant text of the transcript at `path`, without a closing request id.
fn last_answer(agent: Agent, path: &str) -> Option<String> {
    let mut warnings = cross_agent_stores::Warnings::default();
    let transcript = cross_agent_stores::turns::read_recent_turns(
        agent,
        std::path::Path::new(path),
        cross_agent_stores::turns::answer_window(agent),
        &mut warnings,
    )
    .ok()?;
    let text = transcript
        .turns
        .iter()
        .rev()
        .find_map(|turn| turn.final_text())?
        .trim_end();
    let body = match text.rsplit_once('\n') {
        Some((body, last)) if last.trim().starts_with("req_") && !last.trim().contains(' ') => body,
        _ => text,
    };
    Some(body.trim().to_owned()).filter(|t| !t.is_empty())
}

impl SessionHost for Host {
    fn limits(&self) -> Result<String, String> {
        let limits = self.usage.rate_limits()?;
        let view = limits.map(|l| cross_agent_usage::limits::view(&l, UnixMillis::now()));
        Ok(cross_agent_usage::limits::text(view.as_ref()))
    }

    fn engine_events(
        &self,
    ) -> Option<tokio::sync::broadcast::Receiver<cross_agent_protocol::events::EngineEvent>> {
        Some(self.engine.subscribe())
    }

    fn live_sessions(&self) -> Result<Vec<LiveSession>, String> {
        let listed = self
            .engine
            .list_sessions(ListSessionsParams {
                agent: AgentFilter::All,
                scope: None,
                cwd: None,
                limit: Some(MAX_CARDS as u32),
                caller: self.caller(None),
            })
            .map_err(|e| e.to_string())?;
        let usage_line = self.engine.card_usage_lines(&self.caller(None));
        let now = UnixMillis::now().0;
        // The editors' open workspaces and windows: each card's branch and window. A state
        // file the editor left malformed is the listing's to say; a card just goes without.
        let (mut places, _) = cross_agent_workspaces::Places::from_env();
        let desktop = Desktop::read(&self.engine.info().state_root);
        let mut live: Vec<(i64, LiveSession)> = Vec::new();
        for (agent_name, entries) in listed.sessions {
            let Some(agent) = agent_of(&agent_name) else {
                continue;
            };
            for entry in entries {
                let Some(at) = live_at(&entry, now) else {
                    continue;
                };
                let place = entry
                    .cwd
                    .as_deref()
                    .and_then(|cwd| places.of(std::path::Path::new(cwd), true))
                    .map(|place| place.card());
                live.push((
                    at,
                    live_session(
                        &agent_name,
                        &entry,
                        None,
                        last_answer(agent, &entry.path),
                        usage_line(&entry.session_id),
                        place,
                        entry
                            .cwd
                            .as_deref()
                            .and_then(|cwd| desktop.window_of(&entry.session_id, Path::new(cwd))),
                    ),
                ));
            }
        }
        live.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        Ok(live.into_iter().take(MAX_CARDS).map(|(_, s)| s).collect())
    }

    fn live_sessions_everywhere(&self) -> Result<Listing, String> {
        let here = self.live_sessions()?;
        let (there, unreachable) = self.remote_sessions();
        if there.is_empty() {
            return Ok(Listing {
                sessions: here,
                unreachable,
            });
        }
        // Newest first over every machine, at most MAX_CARDS in all.
        let at = |s: &LiveSession| {
            s.last_activity
                .as_deref()
                .and_then(UnixMillis::parse_rfc3339)
                .map_or(0, |t| t.0)
        };
        let mut all: Vec<(i64, LiveSession)> = here.into_iter().map(|s| (at(&s), s)).collect();
        all.extend(there);
        all.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        Ok(Listing {
            sessions: all.into_iter().take(MAX_CARDS).map(|(_, s)| s).collect(),
            unreachable,
        })
    }

    fn raise(&self, session: &SessionRef) -> Result<String, String> {
        let cwd = session.cwd.as_deref().map(Path::new).ok_or_else(|| {
            format!(
                "session {} records no working directory, so its window cannot be told",
                session.session_id
            )
        })?;
        let editor_pids = registry::editor_pids(
            &registry::scan(&self.engine.info().state_root).live,
            Some(&session.session_id),
            cwd,
        );
        match cross_agent_control::focus::focus_from_env(cwd, &editor_pids) {
            Ok(Focused::Window { window }) => Ok(format!("Raised window “{}”", window.title)),
            Ok(other) => Ok(other.describe()),
            Err(e) => Err(e.to_string()),
        }
    }

    fn prompt(&self, session: &SessionRef, text: &str) -> Result<PromptReceipt, String> {
        let Some(agent) = agent_of(&session.agent) else {
            return Err(format!(
                "{} is not an agent the bridge delivers to",
                session.agent
            ));
        };
        let params = SendParams {
            agent,
            message: text.to_owned(),
            session_id: Some(session.session_id.clone()),
            new_session: false,
            scope: None,
            cwd: session.cwd.clone(),
            timeout: None,
            conversation_id: None,
            raw: false,
            allow_same_agent: false,
            caller: self.caller(session.cwd.as_deref()),
        };
        let sent = match &session.host {
            None => self.engine.send(params).map_err(|e| e.to_string())?,
            // The CLI's forwarded send: recorded here, delivered there under the same id; the
            // follower copies the remote record's outcome and answer here for `progress`.
            Some(host) => self
                .runtime
                .block_on(remote::forward_send(
                    host,
                    params,
                    &self.engine,
                    &self.links,
                    &self.forwarding,
                ))
                .map_err(|e| e.message)?,
        };
        match sent {
            SendResponse::Accepted(receipt) => {
                // The receipt names the carrier the hub chose; re-reading the record could
                // only lose it (an unreadable store would have passed for a headless run).
                let transport = match receipt.transport {
                    Transport::Panel => "panel",
                    Transport::HeadlessCli => "headless_cli",
                    Transport::ClaudeNative => "claude_native",
                    Transport::AgentHost => "agent_host",
                    Transport::Gui => "gui",
                };
                Ok(PromptReceipt {
                    delivery_id: receipt.delivery_id,
                    transport: transport.to_owned(),
                })
            }
            SendResponse::Refused(refusal) => Err(refusal.message),
        }
    }

    fn progress(&self, delivery_id: &str) -> Progress {
        match self.engine.delivery_answer(delivery_id) {
            Ok(Some((record, answer))) => match record.state {
                DeliveryState::Delivered => Progress::Answered(
                    answer
                        .filter(|a| !a.trim().is_empty())
                        .unwrap_or_else(|| "(the session answered with no text)".to_owned()),
                ),
                DeliveryState::Failed => Progress::Failed(
                    record
                        .error
                        .unwrap_or_else(|| "the delivery failed without a reason".to_owned()),
                ),
                DeliveryState::Queued | DeliveryState::Delivering | DeliveryState::AwaitingPeer => {
                    Progress::Waiting
                }
            },
            Ok(None) => Progress::Failed(format!("delivery {delivery_id} is not in the store")),
            Err(error) => {
                tracing::warn!(%error, "could not read a telegram prompt's delivery");
                Progress::Waiting
            }
        }
    }

    fn review(&self, session: &SessionRef) -> Result<ReviewCard, String> {
        Host::here_only(session, "Review")?;
        let card = self.reviews.review(&session.session_id)?;
        if card.correction.is_some() && !card.review_id.is_empty() {
            let mut held = self.held.lock();
            held.push_back((
                session.agent.clone(),
                session.session_id.clone(),
                card.clone(),
            ));
            while held.len() > HELD_REVIEWS {
                held.pop_front();
            }
        }
        Ok(card)
    }

    fn send_correction(
        &self,
        session: &SessionRef,
        review_id: &str,
    ) -> Result<CorrectionAnswer, String> {
        Host::here_only(session, "Send correction")?;
        let card = self
            .held
            .lock()
            .iter()
            .find(|(agent, id, card)| {
                *agent == session.agent && *id == session.session_id && card.review_id == review_id
            })
            .map(|(_, _, card)| card.clone());
        let Some(card) = card else {
            return Err(format!(
                "review {review_id} is no longer held by this daemon; tap Review again"
            ));
        };
        Ok(self.corrections.request(
            &session.agent,
            &session.session_id,
            &card,
            RequestedBy::Telegram,
        ))
    }

    fn destinations(&self, session: &SessionRef) -> Result<Vec<Destination>, String> {
        Host::here_only(session, "Hand off")?;
        let listed = self.run_cli(
            &["handoff", "destinations", &session.session_id, "--json"],
            DESTINATIONS_TIMEOUT,
        )?;
        Ok(listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| {
                Some(Destination {
                    id: d["id"].as_str()?.to_owned(),
                    label: d["label"].as_str().unwrap_or(d["id"].as_str()?).to_owned(),
                })
            })
            .collect())
    }

    fn hand_off(&self, session: &SessionRef, destination: &str) -> Result<String, String> {
        Host::here_only(session, "Hand off")?;
        let done = self.run_cli(
            &[
                "handoff",
                &session.session_id,
                "--to",
                destination,
                "--json",
            ],
            HANDOFF_TIMEOUT,
        )?;
        let file = done["file"].as_str().unwrap_or("HANDOFF.md");
        if done["delivered"].as_bool() == Some(true) {
            Ok(format!(
                "the brief is in {file} and {destination} was started on it"
            ))
        } else {
            Err(format!(
                "the brief is in {file}, but {destination} was not started: {}",
                done["error"].as_str().unwrap_or("no reason given")
            ))
        }
    }
}
