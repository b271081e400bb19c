//! Whether a state directory is safe to use before anything in it is created, opened or
//! changed (docs/spec/cross-agent-mcp.md §7, a state directory of the bridge's own): it and everything in it belong to this process's effective user, no
//! one else can write to it or to a directory above it (a sticky `/tmp`-like parent owned by
//! root or the user is fine, as OpenSSH's `StrictModes` judges), and it holds no symbolic links,
//! since a link planted there would make cross-agent write or chmod wherever it points. A home
//! configured through a link (`CROSS_AGENT_HOME=/x/link` or a linked `$HOME`) is judged along
//! the path as configured too: a link in a directory others can write to can be swapped for one
//! leading to their directory ([`check_configured`]).
//!
//! A refusal is [`Error::HomeUnsafe`] (or [`Error::SocketUnsafe`] for the daemon's socket),
//! naming the path, what was found (its owner, its mode, where a link points) and the fix.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Write permission for group or others.
const WRITABLE_BY_OTHERS: u32 = 0o022;
/// The sticky bit: in such a directory only an entry's owner may rename or remove it.
const STICKY: u32 = 0o1000;

/// This process's effective uid: the user whose state this is.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn unsafe_path(path: &Path, problem: String, fix: String) -> Error {
    Error::HomeUnsafe {
        path: path.to_owned(),
        problem,
        fix,
    }
}

fn owner_problem(owner: u32) -> String {
    format!(
        "is owned by uid {owner}, not by you (uid {})",
        effective_uid()
    )
}

/// Refuses `path` when its owner is not this user (or, with `root_ok`, root).
fn check_owner(
    path: &Path,
    meta: &Metadata,
    root_ok: bool,
    fix: impl FnOnce() -> String,
) -> Result<()> {
    let owner = meta.uid();
    if owner == effective_uid() || (root_ok && owner == 0) {
        return Ok(());
    }
    Err(unsafe_path(path, owner_problem(owner), fix()))
}

/// The directories above `root` (which is absolute and resolved): each that exists must be
/// owned by root or this user and not writable by anyone else, unless it is sticky. Missing
/// ones will be created by this user.
pub fn check_parents(root: &Path) -> Result<()> {
    let mut dir = root.parent();
    while let Some(parent) = dir {
        dir = parent.parent();
        let meta = match fs::symlink_metadata(parent) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("inspect", parent, e)),
        };
        check_parent(
            parent,
            &meta,
            || format!("replace {} with a directory of theirs", root.display()),
            || "put CROSS_AGENT_HOME under directories only you (or root) can change".to_owned(),
        )?;
    }
    Ok(())
}

/// How many symbolic links a lookup may pass through: the kernel's own limit (`MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// The home as configured (`configured`, absolute), when it is reached through symbolic links
/// and resolves to `resolved`: [`check_parents`] judges the resolved path's parents, but whoever
/// may replace a link on the way decides where the home is. So the path is looked up as the
/// kernel does, component by component, and every directory the lookup reads an entry of (the
/// link's own directory chain, then its target's) is judged as [`check_parents`] judges, and
/// every link met must be owned by root or this user. A missing component ends it: the rest
/// will be created by this user.
pub fn check_configured(configured: &Path, resolved: &Path) -> Result<()> {
    let what = || {
        format!(
            "swap a link CROSS_AGENT_HOME={} passes through for one leading to a directory of \
             theirs",
            configured.display()
        )
    };
    let instead = || {
        format!(
            "set CROSS_AGENT_HOME to where it leads, {}",
            resolved.display()
        )
    };
    let mut pending: VecDeque<OsString> = configured
        .components()
        .filter(|c| !matches!(c, Component::RootDir))
        .map(|c| c.as_os_str().to_owned())
        .collect();
    let mut current = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            current.pop();
            continue;
        }
        if name == "." {
            continue;
        }
        let meta = fs::symlink_metadata(&current).map_err(|e| Error::io("inspect", &current, e))?;
        check_parent(&current, &meta, what, instead)?;
        let next = current.join(&name);
        let meta = match fs::symlink_metadata(&next) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("inspect", &next, e)),
        };
        if !meta.file_type().is_symlink() {
            current = next;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Error::io(
                "resolve",
                configured,
                std::io::Error::other("too many levels of symbolic links"),
            ));
        }
        check_owner(&next, &meta, true, || {
            format!(
                "That user may replace the link and choose where your state goes: {}, or \
                 replace the link with one of your own",
                instead()
            )
        })?;
        let target = fs::read_link(&next).map_err(|e| Error::io("read the link", &next, e))?;
        if target.is_absolute() {
            current = PathBuf::from("/");
        }
        for component in target.components().rev() {
            if !matches!(component, Component::RootDir) {
                pending.push_front(component.as_os_str().to_owned());
            }
        }
    }
    Ok(())
}

/// One directory above the home, found at `dir` with `meta`: owned by root or this user, and
/// not writable by anyone else unless it is sticky. `what` says what someone able to rearrange
/// it could do (`replace /home/u/.cross-agent …`) and `instead` the other way out (`put
/// CROSS_AGENT_HOME under …`), for the fix.
fn check_parent(
    dir: &Path,
    meta: &Metadata,
    what: impl Fn() -> String,
    instead: impl Fn() -> String,
) -> Result<()> {
    check_owner(dir, meta, true, || {
        format!("That user could {} from there: {}", what(), instead())
    })?;
    let mode = meta.mode() & 0o7777;
    if mode & WRITABLE_BY_OTHERS != 0 && mode & STICKY == 0 {
        return Err(unsafe_path(
            dir,
            format!("is writable by group or others (mode {mode:o}) and not sticky"),
            format!(
                "Anyone who can write there could {}: `chmod go-w {}` (or `chmod +t` it), or {}",
                what(),
                dir.display(),
                instead()
            ),
        ));
    }
    Ok(())
}

/// The home directory itself: `Ok(false)` when it does not exist yet; refused when it is a
/// link, someone else's, or writable by group or others (checked before it is tightened, so a
/// home others could write to is refused rather than quietly taken over).
pub fn check_root(root: &Path) -> Result<bool> {
    let meta = match fs::symlink_metadata(root) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io("inspect", root, e)),
    };
    if !meta.file_type().is_symlink() {
        check_owner(root, &meta, false, || {
            "Point CROSS_AGENT_HOME at a directory that is yours alone (such as ~/.cross-agent); \
             whoever owns this one can read what cross-agent keeps there and redirect what it \
             writes"
                .to_owned()
        })?;
    }
    check_entry(root, &meta)?;
    if !meta.is_dir() {
        return Err(Error::io(
            "use",
            root,
            std::io::Error::new(ErrorKind::NotADirectory, "it exists and is not a directory"),
        ));
    }
    // Only the home itself: a loose directory inside it is reachable only through the home,
    // and is tightened at the daemon's start like any older install.
    let mode = meta.mode() & 0o7777;
    if mode & WRITABLE_BY_OTHERS != 0 {
        return Err(unsafe_path(
            root,
            format!("is writable by group or others (mode {mode:o})"),
            format!(
                "Others could have put or swapped files there: check that nothing in it is \
                 someone else's, then `chmod go-w {}`",
                root.display()
            ),
        ));
    }
    Ok(true)
}

/// One thing in the home (or the home itself): not a link, and this user's.
pub fn check_entry(path: &Path, meta: &Metadata) -> Result<()> {
    if meta.file_type().is_symlink() {
        let target = fs::read_link(path)
            .map(|t| format!(" to {}", t.display()))
            .unwrap_or_default();
        return Err(unsafe_path(
            path,
            format!(
                "is a symbolic link{target} (the link is owned by uid {})",
                meta.uid()
            ),
            "cross-agent opens nothing in its home through a link, since it would write or \
             chmod wherever the link points: remove the link"
                .to_owned(),
        ));
    }
    check_owner(path, meta, false, || {
        "Someone else may have planted it there: point CROSS_AGENT_HOME at a directory that is \
         yours alone (such as ~/.cross-agent), or remove it if you know where it came from"
            .to_owned()
    })?;
    Ok(())
}

/// Why a settings file the person writes (`config.toml`, `providers.toml`) was not read.
#[derive(Debug)]
pub enum SettingsFileRefusal {
    /// A link, or someone else's: [`check_entry`]'s words.
    Entry(Error),
    /// Not a regular file (a folder, a FIFO, a device).
    NotRegular,
    /// Writable by group or others: whoever can write it decides what it says.
    GroupWritable { mode: u32 },
    /// It could not be read.
    Io(std::io::Error),
}

/// A settings file's text (at most `max_bytes`), or `None` when there is none. Refused when it
/// is a link, someone else's, not a regular file, or writable by group or others; opened with
/// `O_NOFOLLOW`, so a link swapped in after the check is refused by the kernel. One reader for
/// every settings file, so the checks and their order are the same for each; the callers word
/// the refusal for their own file.
pub fn read_settings_file(
    path: &Path,
    max_bytes: u64,
) -> std::result::Result<Option<String>, SettingsFileRefusal> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;

    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(SettingsFileRefusal::Io(e)),
    };
    check_entry(path, &meta).map_err(SettingsFileRefusal::Entry)?;
    if !meta.is_file() {
        return Err(SettingsFileRefusal::NotRegular);
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(SettingsFileRefusal::GroupWritable { mode });
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::home::no_follow_flag())
        .open(path)
        .map_err(SettingsFileRefusal::Io)?;
    let mut text = String::new();
    file.take(max_bytes)
        .read_to_string(&mut text)
        .map_err(SettingsFileRefusal::Io)?;
    Ok(Some(text))
}

/// A socket cross-agent is about to connect to: a socket (not a link, not anything else) owned
/// by this user. `Ok(false)` when there is none.
pub fn check_socket(socket: &Path) -> Result<bool> {
    let meta = match fs::symlink_metadata(socket) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io("inspect", socket, e)),
    };
    let file_type = meta.file_type();
    if file_type.is_symlink() || !file_type.is_socket() {
        let what = if file_type.is_symlink() {
            "a symbolic link"
        } else {
            "not a socket"
        };
        return Err(Error::SocketUnsafe {
            socket: socket.to_owned(),
            problem: format!("it is {what} (owned by uid {})", meta.uid()),
            fix: "remove it; a daemon you start will bind a socket of its own there".to_owned(),
        });
    }
    if meta.uid() != effective_uid() {
        return Err(Error::SocketUnsafe {
            socket: socket.to_owned(),
            problem: format!(
                "it is owned by uid {}, not by you (uid {}), so whoever listens there is not \
                 your daemon",
                meta.uid(),
                effective_uid()
            ),
            fix: "point CROSS_AGENT_HOME at a directory that is yours alone (such as \
                  ~/.cross-agent), or remove the socket"
                .to_owned(),
        });
    }
    Ok(true)
}

/// Refuses a connected peer running as another user: the socket file was checked, but this
/// also holds if it was swapped between that check and the connect.
pub fn check_peer(socket: &Path, peer_uid: u32) -> Result<()> {
    if peer_uid == effective_uid() {
        return Ok(());
    }
    Err(Error::SocketUnsafe {
        socket: socket.to_owned(),
        problem: format!(
            "the process listening there runs as uid {peer_uid}, not as you (uid {})",
            effective_uid()
        ),
        fix: "point CROSS_AGENT_HOME at a directory that is yours alone (such as \
              ~/.cross-agent)"
            .to_owned(),
    })
}

/// Everything found under a home by [`walk`].
#[derive(Debug, Default)]
pub struct Walk {
    /// Every entry checked, with its metadata (not followed).
    pub entries: Vec<(PathBuf, Metadata)>,
    /// Agent stores inside the home, left alone.
    pub stepped_around: Vec<PathBuf>,
    /// True when the walk stopped at its limit.
    pub truncated: bool,
}

/// Checks everything under `root` with [`check_entry`], stepping around `skip` (agent stores
/// that happen to sit inside), visiting at most `limit` entries.
pub fn walk(root: &Path, skip: &[PathBuf], limit: usize) -> Result<Walk> {
    let mut found = Walk::default();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| Error::io("read", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("read", &dir, e))?;
            if found.entries.len() + found.stepped_around.len() >= limit {
                found.truncated = true;
                return Ok(found);
            }
            let path = entry.path();
            if skip.iter().any(|s| s == &path) {
                found.stepped_around.push(path);
                continue;
            }
            let meta = match fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                // Gone since the listing (a SQLite journal, a file replaced whole): nothing
                // left to check.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("inspect", &path, e)),
            };
            check_entry(&path, &meta)?;
            if meta.is_dir() {
                stack.push(path.clone());
            }
            found.entries.push((path, meta));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use cross_agent_protocol::settings as var;

    use super::*;
    use crate::Home;

    /// A uid no one here has: root (the tests' user) can give a file to it, which is all
    /// "another user's file" takes.
    const STRANGER: u32 = 4242;

    #[test]
    fn a_settings_file_is_read_only_when_it_is_a_plain_file_of_ours_not_writable_by_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        assert!(
            read_settings_file(&path, 64).unwrap().is_none(),
            "none there"
        );

        fs::write(&path, "[review]\nsteer = true\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            read_settings_file(&path, 8).unwrap().as_deref(),
            Some("[review]"),
            "read up to the cap"
        );

        fs::set_permissions(&path, fs::Permissions::from_mode(0o664)).unwrap();
        assert!(matches!(
            read_settings_file(&path, 64),
            Err(SettingsFileRefusal::GroupWritable { mode: 0o664 })
        ));

        let link = dir.path().join("linked.toml");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(matches!(
            read_settings_file(&link, 64),
            Err(SettingsFileRefusal::Entry(_))
        ));

        let folder = dir.path().join("folder.toml");
        fs::create_dir(&folder).unwrap();
        fs::set_permissions(&folder, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(matches!(
            read_settings_file(&folder, 64),
            Err(SettingsFileRefusal::NotRegular)
        ));
    }

    fn give_away(path: &Path) {
        std::os::unix::fs::lchown(path, Some(STRANGER), Some(STRANGER)).unwrap_or_else(|e| {
            panic!("these tests give files to another uid, which takes root: {e}")
        });
    }

    fn home_at(root: &Path) -> Home {
        let root = root.to_owned();
        Home::from_vars(move |name| match name {
            var::HOME => Some(root.clone().into_os_string()),
            "HOME" => Some("/nonexistent-user-home".into()),
            _ => None,
        })
        .unwrap()
    }

    fn refusal(result: Result<impl std::fmt::Debug>) -> String {
        match result {
            Err(error @ (Error::HomeUnsafe { .. } | Error::SocketUnsafe { .. })) => {
                error.to_string()
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_home_of_another_user_is_refused_before_anything_is_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("theirs");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        give_away(&root);
        let home = home_at(&root);
        let message = refusal(home.ensure_root());
        assert!(message.contains(&root.display().to_string()), "{message}");
        assert!(message.contains("owned by uid 4242"), "{message}");
        assert!(message.contains(var::HOME), "{message}");
        assert!(!root.join("logs").exists());
        let mode = fs::metadata(&root).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "not tightened");
    }

    #[test]
    fn a_file_of_another_user_inside_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("state");
        fs::create_dir_all(root.join("logs")).unwrap();
        fs::write(root.join("logs/daemon.log.2026-01-01"), "x").unwrap();
        give_away(&root.join("logs/daemon.log.2026-01-01"));
        let message = refusal(home_at(&root).tighten_tree());
        assert!(message.contains("daemon.log.2026-01-01"), "{message}");
        assert!(message.contains("owned by uid 4242"), "{message}");
    }

    #[test]
    fn a_home_others_can_write_to_is_refused_not_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("state");
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o770)).unwrap();
        let message = refusal(home_at(&root).ensure_root());
        assert!(
            message.contains("writable by group or others (mode 770)"),
            "{message}"
        );
        assert!(message.contains("chmod go-w"), "{message}");
        let mode = fs::metadata(&root).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o770);
    }

    #[test]
    fn parents_are_judged_like_openssh_strict_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let message = refusal(home_at(&open.join("state")).ensure_root());
        assert!(message.contains(&open.display().to_string()), "{message}");
        assert!(message.contains("not sticky"), "{message}");
        assert!(!open.join("state").exists());

        // Sticky and root's (or ours): others cannot rename what is ours in it.
        fs::set_permissions(&open, fs::Permissions::from_mode(0o1777)).unwrap();
        home_at(&open.join("state")).ensure_root().unwrap();

        // Sticky but someone else's: that user may still rename our home.
        let theirs = tmp.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        fs::set_permissions(&theirs, fs::Permissions::from_mode(0o1777)).unwrap();
        give_away(&theirs);
        let message = refusal(home_at(&theirs.join("state")).ensure_root());
        assert!(message.contains("owned by uid 4242"), "{message}");
    }

    /// A home configured through a link is judged where the link sits, not only where it leads:
    /// whoever can swap the link chooses the home.
    #[test]
    fn a_link_to_the_home_in_a_directory_others_can_write_to_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        fs::create_dir_all(real.join("state")).unwrap();
        fs::set_permissions(real.join("state"), fs::Permissions::from_mode(0o700)).unwrap();
        let open = tmp.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let link = open.join("home");
        std::os::unix::fs::symlink(real.join("state"), &link).unwrap();
        let message = refusal(home_at(&link).ensure_root());
        assert!(message.contains(&open.display().to_string()), "{message}");
        assert!(message.contains("not sticky"), "{message}");
        assert!(
            message.contains(&format!("CROSS_AGENT_HOME={}", link.display())),
            "{message}"
        );
        assert!(
            message.contains(&real.join("state").display().to_string()),
            "names where it leads: {message}"
        );
        assert!(!real.join("state/logs").exists(), "nothing created");

        // A link further up the path (here a linked parent) is judged the same way.
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&real, open.join("parent")).unwrap();
        let message = refusal(home_at(&open.join("parent/state")).verify());
        assert!(message.contains("not sticky"), "{message}");

        // In a sticky directory a link of ours stands; one of another user's it may swap.
        fs::set_permissions(&open, fs::Permissions::from_mode(0o1777)).unwrap();
        std::os::unix::fs::symlink(real.join("state"), &link).unwrap();
        home_at(&link).ensure_root().unwrap();
        assert!(real.join("state/logs").is_dir());
        give_away(&link);
        let message = refusal(home_at(&link).verify());
        assert!(message.contains(&link.display().to_string()), "{message}");
        assert!(message.contains("owned by uid 4242"), "{message}");

        // Where only this user can write, the link is fine.
        let mine = tmp.path().join("mine");
        fs::create_dir(&mine).unwrap();
        fs::set_permissions(&mine, fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(real.join("state"), mine.join("home")).unwrap();
        home_at(&mine.join("home")).verify().unwrap();
    }

    #[test]
    fn a_socket_of_another_user_or_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let socket = tmp.path().join("daemon.sock");
        assert!(!check_socket(&socket).unwrap(), "none there");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert!(check_socket(&socket).unwrap());
        give_away(&socket);
        let message = refusal(check_socket(&socket));
        assert!(message.contains("owned by uid 4242"), "{message}");
        assert!(message.contains("nothing was sent"), "{message}");
        let link = tmp.path().join("link.sock");
        std::os::unix::fs::symlink(&socket, &link).unwrap();
        let message = refusal(check_socket(&link));
        assert!(message.contains("symbolic link"), "{message}");
        let message = refusal(check_peer(&socket, STRANGER));
        assert!(message.contains("runs as uid 4242"), "{message}");
    }
}
