//! `cross-agent handoff`: hand a session to another agent — the brief (`handoff brief`), where
//! it can go (`handoff destinations`), the handoff itself (`handoff SESSION --to DEST`, or
//! `handoff SESSION PATH` for a brief in any folder), and the receipt check (`handoff receipt`).
//! The work is `cross-agent-handoff`'s; this file parses, delivers to a chat through the daemon,
//! records the decision line and prints.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use cross_agent_decisions::DecisionLog;
use cross_agent_handoff::compact::{Programs, Settings};
use cross_agent_handoff::deliver::{self, Launcher, Opened, Written};
use cross_agent_handoff::destinations::{self, Destination, Login};
use cross_agent_handoff::login_cache::{AuthPlaces, LoginCache};
use cross_agent_handoff::receipt::{self, ReceiptReport, Verdict};
use cross_agent_handoff::source::{self, SourceSession, Stores};
use cross_agent_handoff::{HandoffError, Prepared, decisions};
use cross_agent_home::Home;
use cross_agent_protocol::bridge::{SendParams, SendResponse};
use cross_agent_stores::index::RefreshOptions;
use cross_agent_stores::resolve::ActiveWindow;
use cross_agent_stores::scan::{self, ScanOptions};
use cross_agent_stores::{Agent, Session, StoreRoots, UnixMillis, Warnings};
use serde_json::json;

use super::bridge_client;
use crate::display::escape;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HandoffArgs {
    #[command(subcommand)]
    action: Option<HandoffAction>,
    /// The session to hand over (its id, in any agent's store).
    session: Option<String>,
    /// Write the brief into this folder instead of handing to a destination.
    path: Option<PathBuf>,
    /// Where to hand it: `chat:ID`, `app:NAME` or `cli:NAME` (see `handoff destinations`).
    #[arg(long, conflicts_with = "path")]
    to: Option<String>,
    /// What was done, as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum HandoffAction {
    /// Print the brief of a session, read without a model (no compact).
    Brief(SessionArgs),
    /// List where a session can be handed: chats, installed editors, CLI agents and their login.
    Destinations(SessionArgs),
    /// Report the contract's anchors the receipt in HANDOFF.md never mentions.
    Receipt(ReceiptArgs),
}

#[derive(Debug, Args)]
struct SessionArgs {
    /// The session id.
    session: String,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ReceiptArgs {
    /// The workspace holding HANDOFF.md, or the file itself.
    path: PathBuf,
    #[arg(long)]
    json: bool,
}

impl HandoffArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self.action {
            Some(HandoffAction::Brief(args)) => brief(args),
            Some(HandoffAction::Destinations(args)) => list_destinations(args),
            Some(HandoffAction::Receipt(args)) => check_receipt(args),
            None => {
                let session = self.session.context(
                    "name a session: handoff SESSION --to DEST, handoff SESSION PATH, or one of \
                     brief / destinations / receipt",
                )?;
                match (self.to, self.path) {
                    (Some(to), None) => hand_off(&session, Target::Destination(to), self.json),
                    (None, Some(path)) => hand_off(&session, Target::Folder(path), self.json),
                    _ => anyhow::bail!(
                        "say where session {session} goes: --to DEST (see `cross-agent handoff \
                         destinations {session}`) or a folder PATH"
                    ),
                }
            }
        }
    }
}

/// The user's home: where the agents' stores are.
fn user_home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .context("HOME is not set, so the agents' stores cannot be found")
}

/// The bridge's home when it is safe to keep files in (the session cache, launchers).
fn bridge_home() -> Option<Home> {
    Home::from_env()
        .ok()
        .filter(|home| home.ensure_root().is_ok() && home.verify().is_ok())
}

fn stores(home: Option<&Home>) -> anyhow::Result<Stores> {
    Ok(Stores::under(
        &user_home()?,
        home.map(|h| scan::cache_file(h.root())),
    ))
}

fn read_session(id: &str, home: Option<&Home>) -> anyhow::Result<SourceSession> {
    let mut warnings = Warnings::default();
    let session = source::locate(&stores(home)?, id, &mut warnings)?;
    let mut stderr = std::io::stderr().lock();
    for w in warnings
        .items
        .iter()
        .filter(|w| w.path.starts_with(&session.path))
    {
        let _ = writeln!(stderr, "warning: {}", escape(&w.to_string()));
    }
    Ok(session)
}

fn brief(args: SessionArgs) -> anyhow::Result<ExitCode> {
    let home = bridge_home();
    let session = read_session(&args.session, home.as_ref())?;
    let prepared = cross_agent_handoff::prepare(&session, None);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &prepared.brief)?;
        writeln!(out)?;
    } else {
        out.write_all(prepared.markdown.as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Everything a destination lookup needs from the environment.
struct Lookup {
    dirs: Vec<PathBuf>,
    programs: Programs,
    home: PathBuf,
}

fn lookup() -> anyhow::Result<Lookup> {
    let home = user_home()?;
    Ok(Lookup {
        dirs: destinations::search_path(std::env::var_os("PATH").as_deref(), &home),
        programs: Programs::from_env(),
        home,
    })
}

/// Sessions the bridge can reach: Claude, Codex and Grok sessions active in the window.
fn reachable_chats(home: Option<&Home>, except: &str) -> Vec<Session> {
    let window = ActiveWindow::from_env().unwrap_or_default();
    let listing = scan::list_sessions(
        &StoreRoots::from_env(),
        &ScanOptions {
            cache_file: home.map(|h| scan::cache_file(h.root())),
            refresh: RefreshOptions::default(),
            agents: Agent::ALL.to_vec(),
        },
    );
    let now = UnixMillis::now();
    listing
        .sessions
        .into_iter()
        .filter(|s| s.session_id != except && window.is_active(s.last_activity, now))
        .collect()
}

fn list_destinations(args: SessionArgs) -> anyhow::Result<ExitCode> {
    let home = bridge_home();
    let found = lookup()?;
    // Login checks remembered in the bridge's cache folder, keyed on the CLI and its
    // credentials file (`login_cache`); without a usable home every CLI is asked.
    let cache = home.as_ref().map(|h| {
        LoginCache::new(
            h.root().join("cache/logins.json"),
            AuthPlaces::from_env(&found.home),
        )
    });
    // The chats (a walk of the stores) and the login checks (CLI processes) side by side: the
    // answer takes the longer of the two, not their sum.
    let (chats, (editors, clis)) = std::thread::scope(|scope| {
        let chats = scope.spawn(|| reachable_chats(home.as_ref(), &args.session));
        let editors = destinations::editors(&found.dirs, &found.home);
        let clis = destinations::cli_agents(&found.dirs, &found.programs, cache.as_ref());
        (chats.join(), (editors, clis))
    });
    let chats = chats.map_err(|_| anyhow::anyhow!("listing the reachable chats failed"))?;
    let mut all: Vec<Destination> = chats
        .iter()
        .map(|s| {
            destinations::chat(
                &s.session_id,
                s.agent.as_str(),
                s.title.as_deref(),
                s.cwd.as_deref(),
            )
        })
        .collect();
    all.extend(editors);
    all.extend(clis);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &all)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    for d in &all {
        let note = match (&d.login, d.login_cached) {
            (Some(login), None) => format!("  [{}]", login_words(login)),
            (Some(login), Some(cached)) => format!(
                "  [{}, cached {} ago]",
                login_words(login),
                age_words(cached.age_seconds)
            ),
            (None, _) => String::new(),
        };
        let place = d
            .location
            .as_deref()
            .map(|p| format!("  {}", p.display()))
            .unwrap_or_default();
        writeln!(out, "{}  {}{place}{note}", escape(&d.id), escape(&d.label))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `42s`, `5m`, `3h`: how old a remembered login check is.
fn age_words(seconds: u64) -> String {
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        _ => format!("{}h", seconds / 3600),
    }
}

fn login_words(login: &Login) -> String {
    match login {
        Login::SignedIn { checked_with } => format!("signed in ({checked_with})"),
        Login::SignedOut { checked_with, said } => {
            format!("NOT signed in ({checked_with}: {})", escape(said))
        }
        Login::Unknown { checked_with, why } => {
            format!("login unknown ({checked_with}: {})", escape(why))
        }
        Login::NotChecked => "login not checked (Claude Code has no headless check)".to_owned(),
    }
}

fn check_receipt(args: ReceiptArgs) -> anyhow::Result<ExitCode> {
    let report = receipt::check_file(&args.path)?;
    if let Some(home) = bridge_home() {
        DecisionLog::new(home.root()).record(decisions::receipt_check(&report));
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write_report(&mut out, &report)?;
    }
    Ok(match report.verdict {
        Verdict::Complete | Verdict::NoAnchors => ExitCode::SUCCESS,
        Verdict::Missing | Verdict::NoReceipt => ExitCode::FAILURE,
    })
}

fn write_report(out: &mut impl Write, report: &ReceiptReport) -> std::io::Result<()> {
    let file = report.file.display();
    match report.verdict {
        Verdict::NoAnchors => writeln!(
            out,
            "{file}: the contract names no paths, flags, numbers or quoted strings; nothing to check"
        ),
        Verdict::NoReceipt => writeln!(
            out,
            "{file}: no receipt written yet ({} anchors to mention)",
            report.anchors.len()
        ),
        Verdict::Complete => writeln!(
            out,
            "{file}: the receipt mentions all {} anchors of the contract",
            report.anchors.len()
        ),
        Verdict::Missing => {
            writeln!(
                out,
                "{file}: the receipt never mentions {} of the contract's {} anchors:",
                report.missing.len(),
                report.anchors.len()
            )?;
            for a in &report.missing {
                writeln!(out, "  {}", escape(&a.text))?;
            }
            Ok(())
        }
    }
}

enum Target {
    Destination(String),
    Folder(PathBuf),
}

/// How a destination was reached.
enum Delivered {
    Folder,
    Cli {
        launcher: Launcher,
        login: Login,
        opened: Option<Opened>,
    },
    App {
        opened: Opened,
    },
    Chat {
        // Boxed: a receipt is several times the size of the other variants.
        response: Box<SendResponse>,
    },
}

/// A handoff, and its decision line when it is refused before anything is written.
fn hand_off(id: &str, target: Target, json: bool) -> anyhow::Result<ExitCode> {
    let destination = match &target {
        Target::Destination(dest) => dest.clone(),
        Target::Folder(_) => "folder".to_owned(),
    };
    let result = hand_off_to(id, target, json);
    if let (Err(e), Some(home)) = (&result, bridge_home()) {
        DecisionLog::new(home.root()).record(decisions::handoff_refused(
            id,
            &destination,
            &format!("{e:#}"),
        ));
    }
    result
}

fn hand_off_to(id: &str, target: Target, json: bool) -> anyhow::Result<ExitCode> {
    let home = bridge_home();
    let session = read_session(id, home.as_ref())?;
    let found = lookup()?;
    let work_root = || -> anyhow::Result<PathBuf> {
        let cwd = session
            .cwd
            .as_deref()
            .ok_or_else(|| HandoffError::NoWorkingDirectory { id: id.to_owned() })?;
        // The work stays where it is: a directory that is not here (a derived one, or a session
        // from another machine) is not created.
        anyhow::ensure!(
            cwd.is_dir(),
            "session {id} worked in {}, which is not a directory here; hand it to a folder: \
             handoff {id} PATH",
            cwd.display()
        );
        Ok(deliver::workspace_root(cwd))
    };
    // Where the brief goes, and which destination (resolved before anything is written, so a
    // destination that does not exist writes nothing).
    let (root, dest_name, chat): (PathBuf, String, Option<Session>) = match &target {
        Target::Folder(path) => {
            let path = if path.is_absolute() {
                path.clone()
            } else {
                std::env::current_dir()?.join(path)
            };
            (path, "folder".to_owned(), None)
        }
        Target::Destination(dest) => match dest.split_once(':') {
            Some(("cli" | "app", _)) => (work_root()?, dest.clone(), None),
            Some(("chat", chat_id)) => {
                let chat = reachable_chats(home.as_ref(), id)
                    .into_iter()
                    .find(|s| s.session_id == chat_id)
                    .ok_or_else(|| HandoffError::BadDestination {
                        dest: dest.clone(),
                        why: "no active Claude, Codex or Grok session has that id".to_owned(),
                    })?;
                let cwd = chat
                    .cwd
                    .clone()
                    .ok_or_else(|| HandoffError::BadDestination {
                        dest: dest.clone(),
                        why: "that session records no working directory".to_owned(),
                    })?;
                (deliver::workspace_root(&cwd), dest.clone(), Some(chat))
            }
            _ => {
                return Err(HandoffError::BadDestination {
                    dest: dest.clone(),
                    why: "expected chat:ID, app:NAME or cli:NAME".to_owned(),
                }
                .into());
            }
        },
    };
    let program = match dest_name.split_once(':') {
        Some(("cli", name)) => Some(destinations::cli_program(
            name,
            &found.programs,
            &found.dirs,
        )?),
        Some(("app", name)) => Some(destinations::editor_program(
            name,
            &found.dirs,
            &found.home,
        )?),
        _ => None,
    };

    let settings = Settings::from_env(home.as_ref().map(|h| h.root()))?;
    let prepared = cross_agent_handoff::prepare(&session, Some(&settings));
    let written = deliver::write_brief(&root, &prepared.markdown)?;
    let prompt = deliver::receiver_prompt(&root);
    let path_var = destinations::path_value(&found.dirs);

    let delivered: Result<Delivered, anyhow::Error> = match (dest_name.split_once(':'), program) {
        (Some(("cli", name)), Some(program)) => {
            // Asked before the launch is reported, so a launch that will stall on a login
            // screen says so in the same answer.
            let login = destinations::login_state(name, &program, &path_var);
            let dir = launch_dir(home.as_ref(), &session.session_id)?;
            let launcher =
                deliver::write_launcher(&dir, &root, name, &program, &prompt, &path_var)?;
            let display = ["DISPLAY", "WAYLAND_DISPLAY"]
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
            let forced = std::env::var("CROSS_AGENT_TERMINAL")
                .ok()
                .filter(|t| !t.is_empty());
            match deliver::open_terminal(&launcher.script, &found.dirs, display, forced.as_deref())
            {
                Ok(opened) => Ok(Delivered::Cli {
                    launcher,
                    login,
                    opened: Some(opened),
                }),
                Err(e) => Err(e.into()),
            }
        }
        (Some(("app", _)), Some(program)) => deliver::open_editor(&program, &root, &path_var)
            .map(|opened| Delivered::App { opened })
            .map_err(Into::into),
        (Some(("chat", _)), _) => match chat {
            Some(chat) => send_to_chat(&chat, &root, &prompt),
            None => Err(anyhow::anyhow!("no chat session")),
        },
        _ => Ok(Delivered::Folder),
    };

    let failure = delivered.as_ref().err().map(|e| format!("{e:#}"));
    if let Some(home) = &home {
        DecisionLog::new(home.root()).record(decisions::handoff(
            &session.session_id,
            session.family.as_str(),
            &dest_name,
            &written.file.display().to_string(),
            &prepared.compact,
            failure.as_deref(),
        ));
    }
    report(
        &session, &prepared, &written, &dest_name, &prompt, &delivered, json,
    )?;
    match delivered {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("cross-agent: {}", escape(&format!("{e:#}")));
            Ok(ExitCode::FAILURE)
        }
    }
}

/// A new folder of its own for each launch (a random name, owner-only, made here), under the
/// bridge's home, or in the temp folder without one — never a fixed name there, which anyone
/// could make first and fill with links or a script of their own.
fn launch_dir(home: Option<&Home>, session: &str) -> anyhow::Result<PathBuf> {
    let safe: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let prefix = format!("{safe}-{}-", UnixMillis::now().0);
    let made = match home {
        Some(h) => {
            let base = h.root().join("handoff");
            cross_agent_home::home::ensure_private_subdir(&base)?;
            tempfile::Builder::new().prefix(&prefix).tempdir_in(&base)
        }
        None => tempfile::Builder::new()
            .prefix(&format!("cross-agent-handoff-{prefix}"))
            .tempdir(),
    }
    .context("cannot make the launch folder")?;
    Ok(made.keep())
}

/// Hands the prompt to a chat through the daemon, as `cross-agent send` would, the message
/// alone (no bridge envelope: the receiver is asked to read the brief, not to answer).
fn send_to_chat(chat: &Session, root: &Path, prompt: &str) -> anyhow::Result<Delivered> {
    let params = SendParams {
        agent: chat.agent,
        message: prompt.to_owned(),
        session_id: Some(chat.session_id.clone()),
        new_session: false,
        scope: None,
        cwd: Some(root.to_string_lossy().into_owned()),
        timeout: None,
        conversation_id: None,
        raw: true,
        allow_same_agent: false,
        caller: bridge_client::caller(),
    };
    let (_home, client) = bridge_client::connect()?;
    let response = client
        .call(params)
        .map_err(|error| bridge_client::explain("send", error))?;
    match &response {
        SendResponse::Accepted(_) => Ok(Delivered::Chat {
            response: Box::new(response),
        }),
        SendResponse::Refused(refusal) => Err(anyhow::anyhow!(
            "the bridge refused the delivery to {}: {}",
            chat.session_id,
            refusal.message
        )),
    }
}

fn report(
    session: &SourceSession,
    prepared: &Prepared,
    written: &Written,
    dest: &str,
    prompt: &str,
    delivered: &Result<Delivered, anyhow::Error>,
    json: bool,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let mut value = json!({
            "session": session.session_id,
            "family": session.family,
            "destination": dest,
            "file": written.file,
            "created_folder": written.created_folder,
            "rotated_to": written.rotated_to,
            "ignored_in": written.ignored_in,
            "compact_by": prepared.compact.compact.as_ref().map(|c| &c.author),
            "compact_attempts": prepared.compact.attempts,
            "prompt": prompt,
            "delivered": delivered.is_ok(),
        });
        match delivered {
            Ok(Delivered::Cli {
                launcher,
                login,
                opened,
            }) => {
                value["launcher"] = json!(launcher);
                value["login"] = json!(login);
                value["terminal"] = json!(opened);
            }
            Ok(Delivered::App { opened }) => value["editor"] = json!(opened),
            Ok(Delivered::Chat { response }) => value["send"] = json!(response),
            Ok(Delivered::Folder) => {}
            Err(e) => value["error"] = json!(format!("{e:#}")),
        }
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
        return Ok(());
    }
    if let Some(folder) = &written.created_folder {
        writeln!(
            out,
            "created {} (it did not exist)",
            escape(&folder.display().to_string())
        )?;
    }
    writeln!(
        out,
        "brief written: {}",
        escape(&written.file.display().to_string())
    )?;
    if let Some(prev) = &written.rotated_to {
        writeln!(
            out,
            "earlier brief moved to {}",
            escape(&prev.display().to_string())
        )?;
    }
    match &prepared.compact.compact {
        Some(c) => writeln!(out, "compact by {}", c.author)?,
        None => writeln!(
            out,
            "no compact (the brief has the deterministic sections only)"
        )?,
    }
    for a in &prepared.compact.attempts {
        if let Some(why) = &a.why {
            writeln!(out, "  {}: {}", a.by, escape(why))?;
        }
    }
    match delivered {
        Ok(Delivered::Cli {
            launcher,
            login,
            opened,
        }) => {
            writeln!(out, "{dest}: {}", login_words(login))?;
            if let Some(o) = opened {
                writeln!(
                    out,
                    "launched {} in {} (pid {}); launcher {}",
                    dest,
                    o.terminal,
                    o.pid,
                    launcher.script.display()
                )?;
            }
        }
        Ok(Delivered::App { opened }) => {
            writeln!(
                out,
                "opened {} on the workspace; paste this into its chat:\n",
                opened.terminal
            )?;
            writeln!(out, "{prompt}")?;
        }
        Ok(Delivered::Chat { .. }) => {
            writeln!(out, "prompt delivered to {dest} through the bridge")?
        }
        Ok(Delivered::Folder) => {}
        Err(_) => {}
    }
    Ok(())
}
