//! `cross-agent sessions`: list the sessions every agent keeps on disk, or resolve one by id or
//! exact name.
//!
//! The listing defaults to scope `any`: it is an inventory, and a person running it wants to see
//! what exists, not only what a send from this directory would pick (that is `--scope cwd`).
//! `resolve` defaults to `any` too, because an explicit id or name addresses a session wherever
//! it works; `--scope` narrows it. Both ask the daemon's live index, starting the daemon when
//! none answers as every command does; only when it cannot start do they read the stores
//! themselves, through the persisted index (`$CROSS_AGENT_HOME/cache/sessions-index.bin`, so a
//! warm run opens only files that changed), saying why on stderr. Skipped files are reported on
//! stderr, one line per file naming it (its damaged lines counted, not listed); stdout carries
//! only the listing (or the JSON), so it can be piped.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use cross_agent_home::{Error as HomeError, Home};
use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_ipc::oneshot::OneShot;
use cross_agent_ipc::{ConnectOptions, Error as IpcError};
use cross_agent_protocol::bridge::{
    AgentFilter, CallerContext, IndexListingParams, IndexResolve, IndexSessionsParams,
    IndexSessionsResponse, RefusalReason,
};
use cross_agent_protocol::rpc::{ClientKind, ErrorCode};
use cross_agent_stores::held::SessionRef;
use cross_agent_stores::index::RefreshOptions;
use cross_agent_stores::render::{self, Chosen, SessionView, Spent};
use cross_agent_stores::resolve::{
    self, ActiveWindow, Candidate, Lookup, MatchedBy, ScanBound, Scope,
};
use cross_agent_stores::scan::{self, Listing, ScanOptions};
use cross_agent_stores::{Agent, Session, StoreError, StoreRoots, UnixMillis};
use serde_json::{Value, json};

use crate::display::table::{Column, Plain, fit, fit_tail};
use crate::display::when::ago;
use crate::display::{escape, escape_cell};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SessionsArgs {
    #[command(subcommand)]
    action: Option<SessionsAction>,

    #[command(flatten)]
    list: ListArgs,
}

#[derive(Debug, Subcommand)]
enum SessionsAction {
    /// Print the one session an id or exact name resolves to, or why it does not resolve.
    Resolve(ResolveArgs),
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Which agent's sessions to list.
    #[arg(long, value_enum, default_value_t = AgentChoice::All)]
    agent: AgentChoice,
    /// Which sessions relative to --cwd: `cwd` (that directory and its subdirectories), `tree`
    /// (also its parents) or `any`.
    #[arg(long, value_enum, default_value_t = Scope::Any)]
    scope: Scope,
    /// The directory scopes are relative to (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// At most this many sessions per agent, newest first.
    #[arg(long)]
    limit: Option<usize>,
    /// An object keyed by agent instead of a table.
    #[arg(long)]
    json: bool,
    /// List the sessions of that machine (a host of `cross-agent hosts list`) instead.
    #[arg(long, value_name = "NAME", conflicts_with = "hosts")]
    host: Option<String>,
    /// `all`: this machine's sessions and every host's, merged, each naming its host.
    #[arg(long, value_name = "all", value_parser = ["all"])]
    hosts: Option<String>,
}

#[derive(Debug, Args)]
struct ResolveArgs {
    /// The agent whose sessions to search.
    #[arg(value_enum)]
    agent: Agent,
    /// A session id, or a session's exact name (no partial matching).
    query: String,
    /// Only sessions in this scope relative to --cwd.
    #[arg(long, value_enum, default_value_t = Scope::Any)]
    scope: Scope,
    /// The directory scopes are relative to (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The session (or the refusal) as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AgentChoice {
    Claude,
    Codex,
    Grok,
    Copilot,
    All,
}

impl AgentChoice {
    fn agents(self) -> Vec<Agent> {
        match self {
            AgentChoice::Claude => vec![Agent::Claude],
            AgentChoice::Codex => vec![Agent::Codex],
            AgentChoice::Grok => vec![Agent::Grok],
            AgentChoice::Copilot => vec![Agent::Copilot],
            AgentChoice::All => Agent::ALL.to_vec(),
        }
    }
}

impl SessionsArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self.action {
            Some(SessionsAction::Resolve(args)) => args.run(),
            None => self.list.run(),
        }
    }
}

/// Every agent's sessions as `sessions` lists them (newest first across agents), for the
/// desktop app's Sessions panel.
pub(crate) fn load_all() -> Vec<Session> {
    let loaded = load(Agent::ALL.to_vec(), None);
    let mut sessions = loaded.sessions;
    sessions.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| a.agent.cmp(&b.agent))
    });
    sessions
}

/// The sessions a command works on, and — when the daemon resolved the query itself — how it
/// matched (its one session is then the only one).
struct Loaded {
    sessions: Vec<Session>,
    matched_by: Option<MatchedBy>,
}

impl Loaded {
    fn of(&self, agent: Agent) -> impl Iterator<Item = &Session> {
        self.sessions.iter().filter(move |s| s.agent == agent)
    }
}

/// Every agent's sessions, as the listing loads them (the daemon's live index, else the
/// stores): what `windows` puts beside each workspace.
pub(super) fn every_session() -> Vec<Session> {
    load(Agent::ALL.to_vec(), None).sessions
}

/// The sessions of `agents` from the daemon's live index (started when none answers, as for
/// every command); when it cannot serve them, from the stores directly, saying why on stderr.
/// Skipped files are reported on stderr either way, one line per file.
fn load(agents: Vec<Agent>, resolve: Option<IndexResolve>) -> Loaded {
    match from_daemon(&agents, resolve) {
        Ok(response) => {
            let mut stderr = std::io::stderr().lock();
            for warning in &response.warnings {
                let _ = writeln!(stderr, "warning: {}", escape(warning));
            }
            let matched_by = response.matched_by.as_deref().and_then(|m| {
                serde_json::from_value::<MatchedBy>(Value::String(m.to_owned())).ok()
            });
            Loaded {
                sessions: response.sessions.into_iter().map(Session::from).collect(),
                matched_by,
            }
        }
        Err(why) => {
            eprintln!("note: {why}; reading the stores directly");
            Loaded {
                sessions: scan_directly(agents).sessions,
                matched_by: None,
            }
        }
    }
}

/// Asks the daemon for its index, starting it when nothing answers. The error says why it
/// did not serve them, for the note on stderr.
fn from_daemon(
    agents: &[Agent],
    resolve: Option<IndexResolve>,
) -> Result<IndexSessionsResponse, String> {
    let home = state_home()?;
    let params = IndexSessionsParams {
        agents: agents.to_vec(),
        resolve,
        caller: index_caller(),
    };
    let ask = |params: IndexSessionsParams| daemon_client(&home)?.call(params);
    match ask(params.clone()) {
        Err(error) if answers_nothing(&error) => {
            start_daemon(&home)?;
            ask(params)
        }
        other => other,
    }
    .map_err(|e| not_served(e, "list the sessions"))
}

/// The state directory, or why there is none to use (the note on stderr says it).
pub(super) fn state_home() -> Result<Home, String> {
    Home::from_env().map_err(|e| not_served(IpcError::Home(e), "start"))
}

/// A connection to the daemon for one or two requests: blocking, without an async runtime (a
/// resolution's whole budget is a few milliseconds). It never starts one: [`start_daemon`]
/// does, when this finds nothing answering.
pub(super) fn daemon_client(home: &Home) -> Result<OneShot, IpcError> {
    let options = ConnectOptions::new(ClientKind::Cli);
    OneShot::connect(home, ClientKind::Cli, options.hello_timeout)
}

/// Nothing is there to answer: no daemon, or one that went away as it was asked.
pub(super) fn answers_nothing(error: &IpcError) -> bool {
    matches!(error, IpcError::NotRunning { .. } | IpcError::Closed { .. })
}

/// Starts the daemon as every other command does (`ipc::connect_or_start`: one start among
/// clients racing, its own words if it fails). A listing through it costs milliseconds where a
/// scan of the stores costs a tenth of a second and more. The error says why it did not start.
pub(super) fn start_daemon(home: &Home) -> Result<(), String> {
    BlockingClient::connect_or_start(home, &ConnectOptions::new(ClientKind::Cli))
        .map(drop)
        .map_err(|e| {
            format!(
                "the cross-agent daemon could not be started ({})",
                escape(&e.to_string())
            )
        })
}

/// Why the daemon did not serve a request, for the note on stderr.
pub(super) fn not_served(error: IpcError, what: &str) -> String {
    match error {
        IpcError::Rpc {
            code: ErrorCode::MethodNotFound,
            ..
        } => "the running cross-agent daemon is older than this command".to_owned(),
        // The direct read says why in full, as it lists without the cache.
        IpcError::Home(
            HomeError::HomeUnsafe { .. } | HomeError::HomeRefused { .. } | HomeError::NoHome,
        ) => {
            "the cross-agent state directory cannot be used (the warning below says why)".to_owned()
        }
        // No daemon: the hello was sent on connecting, its absence shows only now.
        error @ (IpcError::NotRunning { .. } | IpcError::Closed { .. }) => format!(
            "no cross-agent daemon answered ({})",
            escape(&error.to_string())
        ),
        other => format!(
            "the cross-agent daemon did not {what} ({})",
            escape(&other.to_string())
        ),
    }
}

/// The caller as the index needs it: only where the stores are (`HOME` and the variables that
/// move a store), not the whole environment and process ancestry a send carries.
pub(super) fn index_caller() -> CallerContext {
    use cross_agent_protocol::settings as var;
    const STORE_VARS: [&str; 11] = [
        "HOME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "GROK_HOME",
        var::GROK_NAMES_DB,
        // Where VS Code keeps its user data, and Copilot's SDK its sessions.
        "XDG_CONFIG_HOME",
        "COPILOT_HOME",
        var::COPILOT_HOST_DB,
        var::COPILOT_SESSION_DIR,
        var::COPILOT_SDK_SESSION_DIR,
        var::COPILOT_ENDPOINT_DIR,
    ];
    CallerContext {
        child_env: STORE_VARS
            .iter()
            .filter_map(|name| Some(((*name).to_owned(), std::env::var(name).ok()?)))
            .collect(),
        ..CallerContext::default()
    }
}

/// Whether the daemon printed the listing.
enum Rendered {
    Printed,
    /// The daemon cannot serve it (it could not start, or it is older), and why: the caller
    /// then lists as before, and the note on stderr says why.
    NotServed(String),
}

/// `sessions --json` printed from the daemon's rendering of its live index, copied to stdout
/// as it arrives (the daemon started when none answers). An error is one that listing again
/// cannot mend (stdout gone, or the daemon gone halfway through).
fn print_rendered(
    args: &ListArgs,
    cwd: &Path,
    window: ActiveWindow,
    out: &mut dyn Write,
) -> anyhow::Result<Rendered> {
    let home = match state_home() {
        Ok(home) => home,
        Err(why) => return Ok(Rendered::NotServed(why)),
    };
    let params = IndexListingParams {
        agents: args.agent.agents(),
        scope: args.scope,
        cwd: cwd.to_string_lossy().into_owned(),
        limit: args.limit.map(|l| l as u64),
        now: UnixMillis::now().0,
        active_window_min: window.minutes(),
        caller: index_caller(),
    };
    let mut counted = Counted {
        inner: out,
        bytes: 0,
    };
    let ask = |counted: &mut Counted<'_>| {
        daemon_client(&home)?.call_with_trailer(params.clone(), |answer| answer.bytes, counted)
    };
    let mut answer = ask(&mut counted);
    if matches!(&answer, Err(error) if answers_nothing(error) && counted.bytes == 0) {
        if let Err(why) = start_daemon(&home) {
            return Ok(Rendered::NotServed(why));
        }
        answer = ask(&mut counted);
    }
    match answer {
        Ok(answer) => {
            let mut stderr = std::io::stderr().lock();
            for warning in &answer.warnings {
                let _ = writeln!(stderr, "warning: {}", escape(warning));
            }
            Ok(Rendered::Printed)
        }
        // Stdout went away (`| head`), or the daemon did after part of the listing was
        // printed: listing again would print it twice.
        Err(error @ IpcError::Io { .. }) => Err(error.into()),
        Err(error) if counted.bytes > 0 => Err(anyhow::Error::new(error)
            .context("the cross-agent daemon stopped in the middle of the listing")),
        Err(error) => Ok(Rendered::NotServed(not_served(error, "render the listing"))),
    }
}

/// A writer that counts what went through it.
struct Counted<'a> {
    inner: &'a mut dyn Write,
    bytes: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Lists every session through the persisted index and reports skipped files on stderr.
///
/// The cache lives in the state directory, validated by the same rules as every other piece of
/// cross-agent state (`ipc::Home`: never `/`, `$HOME` or an agent's own store). A home that is
/// refused does not stop the listing: it just runs without a cache, and says why.
fn scan_directly(agents: Vec<Agent>) -> Listing {
    let roots = StoreRoots::from_env();
    // `ensure_root` verifies (the cache is written there, so the home must be this user's alone,
    // docs/spec/cross-agent-mcp.md §7) and creates the home: the cache writer only makes `cache/` inside it.
    let cache_file = match Home::from_env().and_then(|home| home.ensure_root().map(|()| home)) {
        Ok(home) => Some(scan::cache_file(home.root())),
        Err(e) => {
            eprintln!(
                "warning: {}; listing without the session cache",
                escape(&e.to_string())
            );
            None
        }
    };
    let listing = scan::list_sessions(
        &roots,
        &ScanOptions {
            cache_file,
            refresh: RefreshOptions::default(),
            agents,
        },
    );
    let mut stderr = std::io::stderr().lock();
    for warning in &listing.warnings {
        let _ = writeln!(stderr, "warning: {}", escape(&warning.to_string()));
    }
    listing
}

/// `--cwd` made absolute (a relative one is taken from the current directory, as a shell
/// would), or the current directory. Not canonicalised: sessions record the path their agent
/// was started in, and a scope compares paths as written.
fn cwd_or_current(cwd: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match cwd {
        Some(cwd) if cwd.is_absolute() => Ok(cwd),
        Some(cwd) => Ok(std::env::current_dir()
            .context("cannot tell the current directory to resolve --cwd against")?
            .join(cwd)),
        None => std::env::current_dir().context("cannot tell the current directory; pass --cwd"),
    }
}

impl ListArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        if let Some(host) = self.host.as_deref().or(self.hosts.as_deref()) {
            let agent = match self.agent {
                AgentChoice::Claude => AgentFilter::Claude,
                AgentChoice::Codex => AgentFilter::Codex,
                AgentChoice::Grok => AgentFilter::Grok,
                AgentChoice::Copilot => AgentFilter::Copilot,
                AgentChoice::All => AgentFilter::All,
            };
            // The directory a scope is relative to is the other machine's: given, or none.
            let cwd = self.cwd.as_ref().map(|c| c.to_string_lossy().into_owned());
            return super::sessions_hosts::list(
                host, agent, self.scope, cwd, self.limit, self.json,
            );
        }
        let window = ActiveWindow::from_env()?;
        let cwd = cwd_or_current(self.cwd.clone())?;
        let scope = self.scope;
        // Buffered: stdout is line-buffered, and 22,000 sessions are 200,000 lines of JSON.
        let mut stdout = BufWriter::with_capacity(256 << 10, std::io::stdout().lock());
        // The editors' open workspaces and live windows: each session's window and branch.
        let mut places = read_places();
        let daemon = if self.json {
            // The daemon keeps the listing rendered: its bytes go to stdout, with the places.
            let mut rendered = Vec::new();
            match print_rendered(&self, &cwd, window, &mut rendered)? {
                Rendered::Printed => {
                    stdout.write_all(&super::session_places::with_places(rendered, &mut places))?;
                    stdout.flush()?;
                    return Ok(ExitCode::SUCCESS);
                }
                Rendered::NotServed(why) if why.contains("older than this command") => None,
                Rendered::NotServed(why) => Some(why),
            }
        } else {
            None
        };
        // What each session cost so far, from where the listing comes from.
        let spent = super::usage::session_spent(daemon.is_none());
        let listing = match daemon {
            // No daemon to ask twice: straight to the stores.
            Some(why) => {
                eprintln!("note: {why}; reading the stores directly");
                Loaded {
                    sessions: scan_directly(self.agent.agents()).sessions,
                    matched_by: None,
                }
            }
            None => load(self.agent.agents(), None),
        };
        let now = UnixMillis::now();
        let live = LiveClaude::read(&self.agent.agents());

        let mut chosen: Vec<(Agent, Vec<&Session>)> = Vec::new();
        for agent in self.agent.agents() {
            let mut sessions: Vec<&Session> = listing
                .of(agent)
                .filter(|s| resolve::scope_rank(scope, *s, &cwd).is_some())
                .collect();
            if let Some(limit) = self.limit {
                sessions.truncate(limit);
            }
            chosen.push((agent, sessions));
        }

        if self.json {
            let by_agent: Vec<(Agent, Chosen<'_>)> = chosen
                .into_iter()
                .map(|(agent, sessions)| (agent, Chosen::Sessions(sessions)))
                .collect();
            // Written as it is made: at 100,000 sessions the listing is 40 MB that need not
            // be held beside the sessions it was made from. Each entry gets its place as it
            // goes out.
            let spent_of =
                |s: SessionRef<'_>| spent.get(s.session_id()).cloned().unwrap_or_default();
            let mut sink = super::session_places::PlacesSink::new(&mut stdout, &mut places);
            render::write_listing_spent(
                &mut sink,
                &by_agent,
                window,
                now,
                Some(&live.0),
                Some(&spent_of),
            );
            sink.finish()?;
        } else {
            let mut rows: Vec<&Session> = chosen.into_iter().flat_map(|(_, s)| s).collect();
            scan_order(&mut rows);
            write_table(&mut stdout, &rows, window, now, &live, &spent, &mut places)?;
        }
        stdout.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}

/// The editors' open workspaces and live windows, their problems said on stderr.
fn read_places() -> cross_agent_workspaces::Places {
    let (places, warnings) = cross_agent_workspaces::Places::from_env();
    let mut stderr = std::io::stderr().lock();
    for warning in &warnings {
        let _ = writeln!(stderr, "warning: {}", escape(&warning.to_string()));
    }
    places
}

/// Newest first across agents, as the listing is.
fn scan_order(rows: &mut [&Session]) {
    rows.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| a.agent.cmp(&b.agent))
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
}

impl ResolveArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let agent = self.agent;
        let window = ActiveWindow::from_env()?;
        let scope = self.scope;
        let bound = ScanBound::from_env(agent, scope)?;
        let cwd = cwd_or_current(self.cwd)?;
        // Only this agent's store is walked: a name is looked up among one agent's sessions.
        // The daemon resolves it in place; it sends them all only when it did not resolve, and
        // the lookup below then words the refusal.
        let listing = load(
            vec![agent],
            Some(IndexResolve {
                agent,
                query: self.query.clone(),
                scope,
                cwd: cwd.to_string_lossy().into_owned(),
                bound: bound.map(|b| b.limit as u64),
            }),
        );
        let now = UnixMillis::now();
        let lookup = Lookup {
            agent,
            scope,
            cwd: &cwd,
            bound,
        };
        let mut stdout = BufWriter::new(std::io::stdout().lock());
        let resolved = match (listing.matched_by, listing.sessions.as_slice()) {
            (Some(matched_by), [session]) => Ok(resolve::Resolved {
                session,
                matched_by,
            }),
            _ => resolve::lookup(&listing.sessions, &self.query, lookup),
        };
        match resolved {
            Ok(found) => {
                if self.json {
                    let mut value = session_json(found.session, window, now);
                    if let Value::Object(map) = &mut value {
                        map.insert("agent".to_owned(), json!(agent.as_str()));
                        map.insert("matched_by".to_owned(), json!(found.matched_by));
                    }
                    serde_json::to_writer_pretty(&mut stdout, &value)?;
                    writeln!(stdout)?;
                } else {
                    write_resolved(&mut stdout, found.session, found.matched_by, window, now)?;
                }
                stdout.flush()?;
                Ok(ExitCode::SUCCESS)
            }
            Err(refusal) => {
                if self.json {
                    serde_json::to_writer_pretty(&mut stdout, &refusal_json(&refusal))?;
                    writeln!(stdout)?;
                    stdout.flush()?;
                }
                eprintln!("cross-agent: {}", escape(&refusal.to_string()));
                Ok(ExitCode::FAILURE)
            }
        }
    }
}

/// Claude Code's registry of running sessions (relays and entries a crash left behind
/// excluded), read when Claude's sessions are listed.
#[derive(Default)]
struct LiveClaude(cross_agent_stores::claude_registry::Registry);

impl LiveClaude {
    fn read(agents: &[Agent]) -> LiveClaude {
        if !agents.contains(&Agent::Claude) {
            return LiveClaude::default();
        }
        let Some(config) = StoreRoots::from_env().claude_config else {
            return LiveClaude::default();
        };
        let mut warnings = cross_agent_stores::Warnings::default();
        let registry = cross_agent_stores::claude_registry::Registry::read(&config, &mut warnings);
        let mut stderr = std::io::stderr().lock();
        for warning in &warnings.items {
            let _ = writeln!(stderr, "warning: {}", escape(&warning.to_string()));
        }
        LiveClaude(registry)
    }

    fn of(
        &self,
        agent: Agent,
        session: &str,
    ) -> Option<&cross_agent_stores::claude_registry::RegistryEntry> {
        (agent == Agent::Claude)
            .then(|| self.0.live_session(session))
            .flatten()
    }
}

/// One session as `--json` shows it, as a JSON value (to add fields to).
fn session_json(s: &Session, window: ActiveWindow, now: UnixMillis) -> Value {
    let live = LiveClaude::read(&[s.agent]);
    serde_json::to_value(SessionView::new(s, window, now).live(s, Some(&live.0)))
        .unwrap_or(Value::Null)
}

/// A refusal as `--json` shows it: the kind, the message, and the candidates or similar titles.
fn refusal_json(error: &StoreError) -> Value {
    let (kind, details) = match error {
        StoreError::AmbiguousName { candidates, .. } => (
            json!(RefusalReason::AmbiguousName),
            json!({ "candidates": candidates.iter().map(candidate_json).collect::<Vec<_>>() }),
        ),
        StoreError::ScanBoundReached {
            candidate,
            reached,
            total,
            bound_setting,
            ..
        } => (
            json!(RefusalReason::ScanBoundReached),
            json!({
                "candidates": [candidate_json(candidate)],
                "reached": reached,
                "total": total,
                "bound_setting": bound_setting,
            }),
        ),
        StoreError::NoSuchSession {
            similar, reached, ..
        } => (
            // The protocol's word, as the daemon and the MCP tools say it.
            json!(RefusalReason::NoSuchSession),
            json!({
                "similar_titles": similar.iter().map(|t| json!({
                    "title": t.title,
                    "title_is_assigned": t.title_is_assigned,
                    "session_id": t.session_id,
                    "last_activity": t.last_activity.map(UnixMillis::to_rfc3339),
                })).collect::<Vec<_>>(),
                "reached": reached.map(|(reached, _, _)| reached),
                "total": reached.map(|(_, total, _)| total),
            }),
        ),
        StoreError::Io { .. }
        | StoreError::Zstd { .. }
        | StoreError::Sqlite { .. }
        | StoreError::Format { .. }
        | StoreError::InvalidSetting { .. }
        | StoreError::Cache { .. } => (json!("error"), json!({})),
    };
    let mut value = json!({ "error": kind, "message": error.to_string() });
    if let (Value::Object(map), Value::Object(extra)) = (&mut value, details) {
        map.extend(extra);
    }
    value
}

/// A candidate of a refused name, shaped like a listing entry.
fn candidate_json(c: &Candidate) -> Value {
    json!({
        "session_id": c.session_id,
        "title": c.title,
        "title_is_assigned": c.title_is_assigned,
        "cwd": c.cwd.as_deref().map(|p| p.display().to_string()),
        "last_activity": c.last_activity.map(UnixMillis::to_rfc3339),
        "path": c.path.display().to_string(),
    })
}

fn write_resolved(
    out: &mut impl Write,
    s: &Session,
    matched_by: MatchedBy,
    window: ActiveWindow,
    now: UnixMillis,
) -> std::io::Result<()> {
    let how = match matched_by {
        MatchedBy::SessionId => "by id",
        MatchedBy::AssignedName => "by its assigned name",
        MatchedBy::GeneratedTitle => "by its generated title",
    };
    writeln!(
        out,
        "{} {} (matched {how})",
        s.agent,
        escape_cell(&s.session_id)
    )?;
    writeln!(out, "  title:       {}", escape_cell(&title_cell(s)))?;
    writeln!(
        out,
        "  cwd:         {}",
        escape_cell(&cwd_cell(s.cwd.as_deref()))
    )?;
    writeln!(
        out,
        "  last active: {} ({})",
        s.last_activity
            .map_or_else(|| "never".to_owned(), UnixMillis::to_rfc3339),
        ago(s.last_activity.map(|at| at.0), now.0)
    )?;
    writeln!(
        out,
        "  state:       {}",
        flags(s, window, now, &LiveClaude::read(&[s.agent]))
    )?;
    writeln!(
        out,
        "  path:        {}",
        escape_cell(&s.path.display().to_string())
    )?;
    Ok(())
}

const TITLE_WIDTH: usize = 48;
const CWD_WIDTH: usize = 40;
const PLACE_WIDTH: usize = 32;

fn write_table(
    out: &mut impl Write,
    rows: &[&Session],
    window: ActiveWindow,
    now: UnixMillis,
    live: &LiveClaude,
    spent: &HashMap<String, Spent>,
    places: &mut cross_agent_workspaces::Places,
) -> std::io::Result<()> {
    if rows.is_empty() {
        writeln!(out, "no sessions found")?;
        return Ok(());
    }
    let mut table = Plain::new(&[
        Column::left("AGENT"),
        Column::left("ID"),
        Column::left("TITLE"),
        Column::left("CWD"),
        Column::left("PLACE"),
        Column::left("LAST ACTIVE"),
        Column::left("STATE"),
        Column::right("COST"),
    ]);
    for s in rows {
        // Escaped before fitting, so the cut is made on what the terminal shows.
        let title = title_cell(s);
        let cwd = cwd_cell(s.cwd.as_deref());
        table.row([
            Cow::Borrowed(s.agent.as_str()),
            escape_cell(&s.session_id),
            Cow::Owned(fit(&escape_cell(&title), TITLE_WIDTH).into_owned()),
            Cow::Owned(fit_tail(&escape_cell(&cwd), CWD_WIDTH).into_owned()),
            Cow::Owned(
                fit(
                    &escape_cell(&place_cell(s, window, now, places)),
                    PLACE_WIDTH,
                )
                .into_owned(),
            ),
            Cow::Owned(ago(s.last_activity.map(|at| at.0), now.0)),
            Cow::Owned(flags(s, window, now, live)),
            Cow::Owned(cost_cell(spent.get(&s.session_id))),
        ]);
    }
    table.write(out)?;
    writeln!(
        out,
        "{} session(s). Titles: [name] was assigned by a person; [gen] was generated from the first message.",
        rows.len()
    )?;
    Ok(())
}

/// What the session cost so far: dollars to the cent, `unknown` when a call has no price
/// (never $0.00 for it), `-` when its files record no usage.
fn cost_cell(spent: Option<&Spent>) -> String {
    match spent {
        Some(Spent {
            cost_usd: Some(exact),
            ..
        }) => cross_agent_usage::Money::parse_dollars_exact(exact).map_or_else(
            || "unknown".to_owned(),
            cross_agent_usage::Money::dollars_cents,
        ),
        Some(Spent {
            tokens: Some(_), ..
        }) => "unknown".to_owned(),
        _ => "-".to_owned(),
    }
}

/// The branch and window of a session in an open editor workspace, or active or working
/// (`docs/desktop.md`); `-` otherwise.
fn place_cell(
    s: &Session,
    window: ActiveWindow,
    now: UnixMillis,
    places: &mut cross_agent_workspaces::Places,
) -> String {
    let busy = s.is_working || window.is_active(s.last_activity, now);
    s.cwd
        .as_deref()
        .and_then(|cwd| places.of(cwd, busy))
        .map_or_else(|| "-".to_owned(), |place| place.short())
}

/// The title with its kind: `[name] billing-api` or `[gen] fix the failing tests…`.
fn title_cell(s: &Session) -> String {
    match (&s.title, s.title_is_assigned) {
        (Some(title), true) => format!("[name] {title}"),
        (Some(title), false) => format!("[gen] {title}"),
        (None, _) => "-".to_owned(),
    }
}

fn cwd_cell(cwd: Option<&Path>) -> String {
    cwd.map_or_else(|| "-".to_owned(), |p| p.display().to_string())
}

fn flags(s: &Session, window: ActiveWindow, now: UnixMillis, live: &LiveClaude) -> String {
    let mut flags = Vec::new();
    if window.is_active(s.last_activity, now) {
        flags.push("active".to_owned());
    }
    if s.is_working {
        flags.push("working".to_owned());
    }
    // A running Claude Code holds it: its registry name (what peers address) and status.
    if let Some(entry) = live.of(s.agent, &s.session_id) {
        flags.push(format!(
            "live:{}({})",
            escape_cell(entry.name.as_deref().unwrap_or("?")),
            entry.status.as_deref().unwrap_or("?")
        ));
    }
    // A Copilot session: archived in the editor, whether a running Agent Host serves its
    // editor, and whether its turn waits for the user.
    if let Some(copilot) = s.copilot.as_deref() {
        if copilot.archived {
            flags.push("archived".to_owned());
        }
        if copilot.live {
            flags.push("host-live".to_owned());
        }
        // A turn waiting for the user, as the live host tells it (a running one is `working`).
        if copilot.input_needed {
            flags.push("input-needed".to_owned());
        }
    }
    if flags.is_empty() {
        "-".to_owned()
    } else {
        flags.join(",")
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use cross_agent_protocol::bridge::SessionEntry;

    use super::*;

    /// What `--json` prints reads back as the protocol's entry, field for field.
    #[test]
    fn a_listed_session_has_the_protocol_entrys_shape() {
        let session = Session {
            agent: Agent::Claude,
            session_id: "s-1".into(),
            cwd: Some(PathBuf::from("/work/api")),
            title: Some("fix the parser".into()),
            title_is_assigned: true,
            first_activity: None,
            last_activity: Some(UnixMillis(1_796_000_000_000)),
            is_working: true,
            path: PathBuf::from("/home/u/.claude/projects/p/s-1.jsonl"),
            copilot: None,
        };
        let now = UnixMillis(1_796_000_060_000);
        let printed =
            serde_json::to_value(SessionView::new(&session, ActiveWindow::default(), now)).unwrap();
        let entry: SessionEntry = serde_json::from_value(printed.clone()).unwrap();
        assert_eq!(entry.session_id, "s-1");
        assert_eq!(entry.cwd.as_deref(), Some("/work/api"));
        assert!(entry.is_working && entry.is_active && entry.title_is_assigned);
        let mut round_trip = serde_json::to_value(&entry).unwrap();
        let fields = round_trip.as_object_mut().unwrap();
        assert_eq!(fields.remove("is_caller"), Some(Value::Bool(false)));
        assert_eq!(fields.remove("is_pinned"), Some(Value::Bool(false)));
        // This machine's own listing names no host; a listing merged over hosts does.
        assert_eq!(fields.remove("host"), Some(Value::Null));
        assert_eq!(round_trip, printed);
    }
}
