//! The state directory, `CROSS_AGENT_HOME` (default `~/.cross-agent`): where it is, what lives
//! in it, and the rules that keep it owner-only (docs/spec/cross-agent-mcp.md §7, "The bridge keeps its own state
//! owner-only").
//!
//! - It must be a directory of cross-agent's own: `/`, `$HOME` (or anything above it) and any
//!   agent's own directory (`~/.claude`, `~/.config/claude`, `~/.codex`, `~/.grok`, and wherever
//!   `CLAUDE_CONFIG_DIR` / `CODEX_HOME` / `GROK_HOME` point), or anything inside one, are refused.
//!   Symlinks are resolved first, so a link into `~/.claude` is refused like the path itself.
//! - Directories are `0700` and files `0600`. [`Home::ensure_root`] makes the directory and its
//!   `logs/`; [`Home::tighten_tree`] (run by the daemon at start) repairs an older install made
//!   with looser modes, stepping around (not into) an agent store that happens to sit inside.
//! - A filesystem that cannot keep those modes is an error naming the path, never a warning:
//!   the directory holds session ids, working directories and message summaries.
//! - Before anything is created, opened or changed, [`Home::verify`] checks the home is this
//!   user's alone ([`crate::safety`]): owned by the effective user with everything in it, not
//!   writable by others, under parents no one else can rearrange, and free of symbolic links.
//!   Files are opened `O_NOFOLLOW` and modes changed on the open descriptor, so nothing outside
//!   the home is ever chmod-ed or written.
//!
//! Thin clients use this too, because they create files here (an autostarted daemon's console
//! log) and must refuse an unsafe home before writing anything.

use std::ffi::OsString;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use cross_agent_protocol::settings as var;

use crate::error::{Error, Result};
use crate::safety;

/// The state directory's name under `$HOME` when `CROSS_AGENT_HOME` is not set.
pub const DEFAULT_DIR_NAME: &str = ".cross-agent";

/// Mode of every directory cross-agent creates or repairs.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file cross-agent creates.
pub const FILE_MODE: u32 = 0o600;

/// How many entries [`Home::tighten_tree`] visits at most. The home is small (a database, logs,
/// panel registrations); a huge tree means it was pointed at something else, and walking it all
/// would stall every start.
const TIGHTEN_WALK_LIMIT: usize = 100_000;

/// A validated state directory. Constructing one checks the refusal rules but creates nothing;
/// [`Home::ensure_root`] creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// Absolute, with symlinks resolved as far as the path exists.
    root: PathBuf,
    /// Absolute, as configured (`CROSS_AGENT_HOME`, else `$HOME/.cross-agent`), links not
    /// resolved: when it differs from `root`, the links on the way are judged too.
    configured: PathBuf,
    /// The agents' own directories (as given and as resolved), stepped around by the repair walk.
    agent_dirs: Vec<PathBuf>,
}

/// What [`Home::tighten_tree`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tightened {
    /// Paths whose mode was changed, with the mode they had.
    pub changed: Vec<(PathBuf, u32)>,
    /// Agent stores inside the home that were left alone.
    pub stepped_around: Vec<PathBuf>,
    /// True when the walk stopped at its entry limit.
    pub truncated: bool,
}

impl Home {
    /// The home this process would use, from its environment.
    pub fn from_env() -> Result<Home> {
        Home::from_vars(|name| std::env::var_os(name))
    }

    /// The home for a given variable lookup (`CROSS_AGENT_HOME`, `HOME`, `CLAUDE_CONFIG_DIR`,
    /// `CODEX_HOME`, `GROK_HOME`); [`Home::from_env`] with the process's own. Relative paths are
    /// taken from the current directory.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Result<Home> {
        let non_empty = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let user_home = non_empty("HOME");
        // Only a relative path needs the current directory, which may have been deleted.
        let cwd = std::env::current_dir();
        let absolute = |p: PathBuf| -> PathBuf {
            let p = expand_tilde(p, user_home.as_deref());
            match &cwd {
                Ok(cwd) if p.is_relative() => cwd.join(p),
                _ => p,
            }
        };

        let given = match non_empty(var::HOME) {
            Some(p) => {
                let p = absolute(p);
                if p.is_relative() {
                    return Err(Error::HomeRefused {
                        path: p,
                        reason: "it is relative and the current directory cannot be read"
                            .to_owned(),
                    });
                }
                p
            }
            None => user_home
                .as_ref()
                .map(|h| absolute(h.join(DEFAULT_DIR_NAME)))
                .ok_or(Error::NoHome)?,
        };

        let mut agents: Vec<(&str, PathBuf)> = Vec::new();
        if let Some(h) = &user_home {
            let h = absolute(h.clone());
            agents.push(("Claude Code's", h.join(".claude")));
            agents.push(("Claude Code's", h.join(".config").join("claude")));
            agents.push(("Codex's", h.join(".codex")));
            agents.push(("Grok's", h.join(".grok")));
        }
        for (name, who) in [
            ("CLAUDE_CONFIG_DIR", "Claude Code's"),
            ("CODEX_HOME", "Codex's"),
            ("GROK_HOME", "Grok's"),
        ] {
            if let Some(p) = non_empty(name) {
                agents.push((who, absolute(p)));
            }
        }

        let root = resolve(&given);
        let user_home_abs = user_home.clone().map(absolute);
        refuse_unsafe(&given, &root, user_home_abs.as_deref(), &agents)?;

        let mut agent_dirs = Vec::new();
        for (_, dir) in agents {
            let resolved = resolve(&dir);
            if resolved != dir {
                agent_dirs.push(resolved);
            }
            agent_dirs.push(dir);
        }
        Ok(Home {
            root,
            configured: given,
            agent_dirs,
        })
    }

    /// A home at an explicit directory, checked against the rules of this process's `HOME` and
    /// agent variables. Tests use it with a temporary directory.
    pub fn at(path: impl Into<PathBuf>) -> Result<Home> {
        let path = path.into();
        Home::from_vars(|name| {
            if name == var::HOME {
                Some(path.clone().into_os_string())
            } else {
                std::env::var_os(name)
            }
        })
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The daemon's socket, `daemon.sock`.
    pub fn socket(&self) -> PathBuf {
        self.root.join("daemon.sock")
    }

    /// The daemon's pidfile lock, `daemon.pid`.
    pub fn pidfile(&self) -> PathBuf {
        self.root.join("daemon.pid")
    }

    /// The lock clients take so that only one of them starts a daemon at a time.
    pub fn autostart_lock(&self) -> PathBuf {
        self.root.join("autostart.lock")
    }

    /// The daemon's SQLite store, `hub.db`.
    pub fn hub_db(&self) -> PathBuf {
        self.root.join("hub.db")
    }

    /// `logs/`.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// The file an autostarted daemon's stdout and stderr go to: what it says before its own log
    /// is open (a refused home, a lost race for the lock, a panic).
    pub fn console_log(&self) -> PathBuf {
        self.logs_dir().join("daemon-console.log")
    }

    /// Checks the home is safe to use ([`crate::safety`]) without creating or changing
    /// anything: the directories above it (as resolved, and along the path as configured when
    /// that passes through links), the home itself and everything in it (agent stores
    /// inside are stepped around). A home that does not exist yet passes when its parents do.
    /// Returns what it found, for [`Home::tighten_tree`].
    pub fn verify(&self) -> Result<safety::Walk> {
        safety::check_parents(&self.root)?;
        if normalize(&self.configured) != self.root {
            safety::check_configured(&self.configured, &self.root)?;
        }
        if !safety::check_root(&self.root)? {
            return Ok(safety::Walk::default());
        }
        safety::walk(&self.root, &self.agent_dirs, TIGHTEN_WALK_LIMIT)
    }

    /// Verifies the home ([`Home::verify`]), then creates the directory and `logs/` owner-only
    /// (or tightens them if they exist), and checks the filesystem kept the modes. Cheap:
    /// clients call it before writing anything here.
    pub fn ensure_root(&self) -> Result<()> {
        self.verify()?;
        self.create_root()?;
        // Again: a missing parent another user created while this one was making the path
        // would be theirs, and is caught now, before anything is written inside.
        self.verify().map(drop)
    }

    fn create_root(&self) -> Result<()> {
        ensure_private_dir(&self.root)?;
        ensure_private_dir(&self.logs_dir())
    }

    /// Makes everything under the home owner-only: directories lose group/other bits and gain
    /// owner `rwx`, files lose group/other bits. Symlinks are never followed or changed, and an
    /// agent store found inside is stepped around. The daemon runs it once at start, which is
    /// how an install made before modes were enforced is repaired.
    pub fn tighten_tree(&self) -> Result<Tightened> {
        // Everything is checked before the first change, so a refused home is left untouched.
        let walk = self.verify()?;
        self.create_root()?;
        let mut report = Tightened {
            stepped_around: walk.stepped_around,
            truncated: walk.truncated,
            ..Tightened::default()
        };
        for (path, meta) in walk.entries {
            // The walk refused links, so this chmod acts on the entry itself.
            let mode = meta.permissions().mode() & 0o7777;
            let wanted = if meta.is_dir() {
                (mode & !0o077) | DIR_MODE
            } else {
                mode & !0o077
            };
            if wanted != mode {
                set_mode_checked(&path, wanted)?;
                report.changed.push((path, mode));
            }
        }
        Ok(report)
    }
}

/// Sets this process's umask to `077`, so every file and socket it creates from now on is
/// owner-only even where a path forgets to pass a mode. The daemon calls it first thing; thin
/// clients don't, because they also write files that belong to the user (agent configs), and
/// pass explicit modes instead.
pub fn restrict_umask() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
}

/// Creates `path` (and missing parents) as `0700`, or tightens an existing directory to `0700`,
/// then checks the mode held. An existing one must be this user's and not a link (a link would
/// have the chmod act on its target, outside the home).
pub fn ensure_private_dir(path: &Path) -> Result<()> {
    ensure_private_dir_as(path, true)
}

/// [`ensure_private_dir`] for a directory *inside* an existing home (`telegram/`, `cache/`):
/// only the last level is created, so a writer running after the home was deleted fails
/// instead of re-creating it. Creating the home belongs to start-up ([`Home::ensure_root`]).
pub fn ensure_private_subdir(path: &Path) -> Result<()> {
    ensure_private_dir_as(path, false)
}

fn ensure_private_dir_as(path: &Path, with_parents: bool) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() || meta.file_type().is_symlink() => {
            safety::check_entry(path, &meta)?;
        }
        Ok(_) => return Err(not_a_directory(path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            DirBuilder::new()
                .recursive(with_parents)
                .mode(DIR_MODE)
                .create(path)
                .map_err(|e| Error::io("create", path, e))?;
        }
        Err(e) => return Err(Error::io("inspect", path, e)),
    }
    let mode = fs::symlink_metadata(path)
        .map_err(|e| Error::io("inspect", path, e))?
        .permissions()
        .mode()
        & 0o7777;
    if mode != DIR_MODE {
        set_mode_checked(path, DIR_MODE)?;
    }
    Ok(())
}

/// Opens `path` for appending, creating it `0600`, and checks an existing one is owner-only.
/// A link at `path` is refused, never followed.
pub fn open_private_append(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    open_private(path, &mut options)
}

/// Opens `path` for reading and writing without truncating it, creating it `0600`. A link at
/// `path` is refused, never followed.
pub fn open_private_rw(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).read(true).write(true);
    open_private(path, &mut options)
}

/// `O_NOFOLLOW` as `OpenOptionsExt::custom_flags` takes it.
pub fn no_follow_flag() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

fn open_private(path: &Path, options: &mut OpenOptions) -> Result<File> {
    let opened = options
        .mode(FILE_MODE)
        .custom_flags(no_follow_flag())
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) => {
            // ELOOP: the last component is a link. Say so, naming where it points.
            if let Ok(meta) = fs::symlink_metadata(path)
                && meta.file_type().is_symlink()
            {
                safety::check_entry(path, &meta)?;
            }
            return Err(Error::io("open", path, e));
        }
    };
    let meta = file.metadata().map_err(|e| Error::io("inspect", path, e))?;
    safety::check_entry(path, &meta)?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        // On the descriptor: the file opened is the one changed, whatever the path is now.
        file.set_permissions(fs::Permissions::from_mode(mode & !0o077))
            .map_err(|e| Error::NotPrivate {
                path: path.to_owned(),
                detail: format!("chmod {:o} failed: {e}", mode & !0o077),
            })?;
        let now = file
            .metadata()
            .map_err(|e| Error::io("inspect", path, e))?
            .permissions()
            .mode()
            & 0o7777;
        if now & 0o077 != 0 {
            return Err(Error::NotPrivate {
                path: path.to_owned(),
                detail: format!("chmod {:o} left it {now:o}", mode & !0o077),
            });
        }
    }
    Ok(file)
}

/// chmod, then read the mode back: some filesystems (FAT, some network mounts) accept the call
/// and keep their own idea of the mode.
fn set_mode_checked(path: &Path, mode: u32) -> Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| Error::NotPrivate {
        path: path.to_owned(),
        detail: format!("chmod {mode:o} failed: {e}"),
    })?;
    let now = fs::symlink_metadata(path)
        .map_err(|e| Error::io("inspect", path, e))?
        .permissions()
        .mode()
        & 0o7777;
    if now & 0o077 != 0 {
        return Err(Error::NotPrivate {
            path: path.to_owned(),
            detail: format!("chmod {mode:o} left it {now:o}"),
        });
    }
    Ok(())
}

fn not_a_directory(path: &Path) -> Error {
    Error::io(
        "use",
        path,
        std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "it exists and is not a directory",
        ),
    )
}

/// `~` and `~/x` as a shell would expand them: registrations pass variables verbatim, so a
/// `CROSS_AGENT_HOME=~/state` in an agent's JSON config arrives with the tilde.
fn expand_tilde(path: PathBuf, user_home: Option<&Path>) -> PathBuf {
    let Some(home) = user_home else { return path };
    match path.strip_prefix("~") {
        Ok(rest) => home.join(rest),
        Err(_) => path,
    }
}

/// Resolves symlinks in the longest existing prefix of `path` and normalises the rest
/// lexically, so a home that does not exist yet still resolves through a linked parent.
fn resolve(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<OsString> = Vec::new();
    loop {
        if let Ok(canonical) = fs::canonicalize(&existing) {
            let mut out = canonical;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => return normalize(path),
        }
    }
}

/// Removes `.` and resolves `..` lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The refusal rules. Checks both the path as given and as resolved, against the forbidden
/// directories both as given and as resolved, so neither a link to a store nor a store that is
/// itself a link slips through.
fn refuse_unsafe(
    given: &Path,
    resolved: &Path,
    user_home: Option<&Path>,
    agents: &[(&str, PathBuf)],
) -> Result<()> {
    let refuse = |reason: String| Error::HomeRefused {
        path: given.to_owned(),
        reason,
    };
    let candidates = [normalize(given), resolved.to_path_buf()];

    for candidate in &candidates {
        if candidate.parent().is_none() {
            return Err(refuse("it is the root directory /".to_owned()));
        }
    }

    if let Some(home) = user_home {
        for home_form in [normalize(home), resolve(home)] {
            for candidate in &candidates {
                if *candidate == home_form {
                    return Err(refuse(format!(
                        "it is your home directory {}",
                        home_form.display()
                    )));
                }
                if home_form.starts_with(candidate) {
                    return Err(refuse(format!(
                        "it contains your home directory {}",
                        home_form.display()
                    )));
                }
            }
        }
    }

    for (who, dir) in agents {
        for dir_form in [normalize(dir), resolve(dir)] {
            for candidate in &candidates {
                if candidate.starts_with(&dir_form) {
                    let place = if *candidate == dir_form {
                        "it is"
                    } else {
                        "it is inside"
                    };
                    return Err(refuse(format!(
                        "{place} {who} own directory {}",
                        dir_form.display()
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::os::unix::fs::symlink;

    use pretty_assertions::assert_eq;

    use super::*;

    fn home_with(vars: &[(&str, &Path)]) -> Result<Home> {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        Home::from_vars(|name| vars.get(name).cloned())
    }

    fn refused(result: Result<Home>) -> String {
        match result {
            Err(Error::HomeRefused { reason, .. }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn default_is_dot_cross_agent_under_home() {
        let tmp = tempfile::tempdir().unwrap();
        let home = home_with(&[("HOME", tmp.path())]).unwrap();
        assert_eq!(
            home.root(),
            fs::canonicalize(tmp.path()).unwrap().join(".cross-agent")
        );
        assert_eq!(home.socket(), home.root().join("daemon.sock"));
    }

    #[test]
    fn no_home_at_all_is_an_error() {
        assert!(matches!(home_with(&[]), Err(Error::NoHome)));
    }

    #[test]
    fn tilde_is_expanded() {
        let tmp = tempfile::tempdir().unwrap();
        let home = home_with(&[("HOME", tmp.path()), (var::HOME, Path::new("~/state"))]).unwrap();
        assert_eq!(
            home.root(),
            fs::canonicalize(tmp.path()).unwrap().join("state")
        );
    }

    #[test]
    fn root_home_and_ancestors_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        fs::create_dir(&user).unwrap();
        let r = refused(home_with(&[("HOME", &user), (var::HOME, Path::new("/"))]));
        assert!(r.contains("root directory"), "{r}");
        let r = refused(home_with(&[("HOME", &user), (var::HOME, &user)]));
        assert!(r.contains("your home directory"), "{r}");
        let r = refused(home_with(&[("HOME", &user), (var::HOME, tmp.path())]));
        assert!(r.contains("contains your home"), "{r}");
        // A trailing `/.` or `x/..` is the same directory.
        let r = refused(home_with(&[
            ("HOME", &user),
            (var::HOME, &user.join("x/..")),
        ]));
        assert!(r.contains("your home directory"), "{r}");
    }

    #[test]
    fn agent_directories_and_their_insides_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path();
        for dir in [".claude", ".config/claude", ".codex", ".grok"] {
            let r = refused(home_with(&[("HOME", user), (var::HOME, &user.join(dir))]));
            assert!(r.starts_with("it is "), "{r}");
            let r = refused(home_with(&[
                ("HOME", user),
                (var::HOME, &user.join(dir).join("bridge")),
            ]));
            assert!(r.starts_with("it is inside"), "{r}");
        }
        let custom = tmp.path().join("elsewhere/codex-home");
        let r = refused(home_with(&[
            ("HOME", user),
            ("CODEX_HOME", &custom),
            (var::HOME, &custom.join("x")),
        ]));
        assert!(r.contains("Codex's own directory"), "{r}");
    }

    #[test]
    fn a_symlink_into_an_agent_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        fs::create_dir_all(user.join(".claude")).unwrap();
        symlink(user.join(".claude"), tmp.path().join("innocent")).unwrap();
        let r = refused(home_with(&[
            ("HOME", &user),
            (var::HOME, &tmp.path().join("innocent")),
        ]));
        assert!(r.contains("Claude Code's own directory"), "{r}");
        // Through a linked parent, for a home that does not exist yet.
        let r = refused(home_with(&[
            ("HOME", &user),
            (var::HOME, &tmp.path().join("innocent/new")),
        ]));
        assert!(r.contains("inside Claude Code's"), "{r}");
        // A link to the home directory itself.
        symlink(&user, tmp.path().join("me")).unwrap();
        let r = refused(home_with(&[
            ("HOME", &user),
            (var::HOME, &tmp.path().join("me")),
        ]));
        assert!(r.contains("your home directory"), "{r}");
    }

    #[test]
    fn a_directory_beside_the_stores_is_fine() {
        let tmp = tempfile::tempdir().unwrap();
        let home = home_with(&[
            ("HOME", tmp.path()),
            (var::HOME, &tmp.path().join(".config/cross-agent")),
        ])
        .unwrap();
        assert!(home.root().ends_with(".config/cross-agent"));
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_subdirectory_is_never_made_in_a_home_that_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("state");
        assert!(ensure_private_subdir(&root.join("telegram")).is_err());
        assert!(!root.exists(), "the deleted home was re-created");
        fs::create_dir(&root).unwrap();
        ensure_private_subdir(&root.join("telegram")).unwrap();
        assert!(root.join("telegram").is_dir());
    }

    #[test]
    fn ensure_root_creates_owner_only_and_tightens() {
        let tmp = tempfile::tempdir().unwrap();
        let home = home_with(&[("HOME", tmp.path())]).unwrap();
        home.ensure_root().unwrap();
        assert_eq!(mode(home.root()), 0o700);
        assert_eq!(mode(&home.logs_dir()), 0o700);
        fs::set_permissions(home.root(), fs::Permissions::from_mode(0o755)).unwrap();
        home.ensure_root().unwrap();
        assert_eq!(mode(home.root()), 0o700);
    }

    #[test]
    fn tighten_tree_repairs_an_old_install_and_steps_around_stores() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        let root = tmp.path().join("state");
        let store = root.join("codex-store");
        fs::create_dir_all(root.join("panels")).unwrap();
        fs::create_dir_all(&store).unwrap();
        fs::write(root.join("hub.db"), b"x").unwrap();
        fs::write(root.join("panels/p.json"), b"{}").unwrap();
        fs::write(store.join("rollout.jsonl"), b"{}").unwrap();
        for p in [&root, &root.join("panels"), &store] {
            fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
        }
        for p in [
            root.join("hub.db"),
            root.join("panels/p.json"),
            store.join("rollout.jsonl"),
        ] {
            fs::set_permissions(p, fs::Permissions::from_mode(0o644)).unwrap();
        }

        let home =
            home_with(&[("HOME", &user), ("CODEX_HOME", &store), (var::HOME, &root)]).unwrap();
        let report = home.tighten_tree().unwrap();

        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("panels")), 0o700);
        assert_eq!(mode(&root.join("hub.db")), 0o600);
        assert_eq!(mode(&root.join("panels/p.json")), 0o600);
        // The agent store inside is not ours to change.
        assert_eq!(mode(&store), 0o755);
        assert_eq!(mode(&store.join("rollout.jsonl")), 0o644);
        assert_eq!(report.stepped_around.len(), 1);
        assert!(!report.truncated);
    }

    #[test]
    fn a_link_in_the_home_is_refused_and_its_target_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        let root = tmp.path().join("state");
        let outside = tmp.path().join("outside");
        let outside_dir = tmp.path().join("outside-dir");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside_dir).unwrap();
        fs::write(&outside, b"theirs\n").unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(&outside_dir, fs::Permissions::from_mode(0o755)).unwrap();
        symlink(&outside, root.join("decisions.jsonl")).unwrap();
        symlink(&outside_dir, root.join("logs")).unwrap();
        let home = home_with(&[("HOME", &user), (var::HOME, &root)]).unwrap();

        for result in [
            home.tighten_tree().map(|_| ()),
            home.ensure_root(),
            ensure_private_dir(&home.logs_dir()),
            open_private_append(&root.join("decisions.jsonl")).map(|_| ()),
            open_private_rw(&root.join("decisions.jsonl")).map(|_| ()),
        ] {
            match result {
                Err(error @ Error::HomeUnsafe { .. }) => {
                    let message = error.to_string();
                    assert!(message.contains("symbolic link"), "{message}");
                    assert!(message.contains("remove the link"), "{message}");
                }
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
        assert_eq!(mode(&outside), 0o644);
        assert_eq!(mode(&outside_dir), 0o755);
        assert_eq!(fs::read(&outside).unwrap(), b"theirs\n");
    }

    #[test]
    fn private_files_are_0600() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f.log");
        drop(open_private_append(&path).unwrap());
        assert_eq!(mode(&path), 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        drop(open_private_rw(&path).unwrap());
        assert_eq!(mode(&path), 0o600);
    }
}
