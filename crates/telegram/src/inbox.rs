//! Files from the phone: saved owner-only (0600) under the session's workspace, in
//! `<cwd>/.cross-agent/inbox/`, a directory git-ignored by a `.gitignore` inside it.
//!
//! Never following a symlink: every step below the workspace is opened relative to its parent
//! with `O_NOFOLLOW` (a `.cross-agent` or `inbox` that is a link, or a file name that already
//! exists, is refused rather than written through), and the file is created exclusively.
//! [`MAX_FILE_BYTES`] caps what is taken.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::error::{Error, Result};

/// The largest file the inbox takes: 20 MB, which is also the most the public Bot API lets a
/// bot download (core.telegram.org/bots/api#getfile).
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// The inbox, relative to a workspace.
pub const INBOX: &str = ".cross-agent/inbox";

fn inbox_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::Inbox {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Opens (making it, owner-only, if missing) directory `name` inside `parent`, never through a
/// symlink.
fn subdir(parent: &OwnedFd, name: &str, shown: &Path) -> Result<OwnedFd> {
    match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(errno) => return Err(inbox_error(shown, format!("cannot create it: {errno}"))),
    }
    rustix::fs::openat(
        parent,
        name,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| {
        let reason = if errno == rustix::io::Errno::LOOP || errno == rustix::io::Errno::NOTDIR {
            "is a symlink or not a directory; refusing to write through it".to_owned()
        } else {
            format!("cannot open it: {errno}")
        };
        inbox_error(shown, reason)
    })
}

fn create_file(dir: &OwnedFd, name: &str, shown: &Path) -> Result<std::fs::File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|errno| inbox_error(shown, format!("cannot create it: {errno}")))?;
    // The mode given at creation is cut by the umask, never widened; set it outright.
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600))
        .map_err(|errno| inbox_error(shown, format!("cannot make it owner-only: {errno}")))?;
    Ok(std::fs::File::from(fd))
}

/// A name safe to put in the inbox: letters, digits, `.`, `-`, `_` (others become `_`), no
/// leading dot, at most 80 characters; empty becomes `file`.
pub fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed = cleaned.trim_start_matches('.');
    let cut: String = trimmed
        .chars()
        .rev()
        .take(80)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if cut.is_empty() {
        "file".to_owned()
    } else {
        cut
    }
}

/// Saves `bytes` as `name` (made safe, prefixed with `stamp` so two sends never meet) in the
/// inbox of workspace `cwd`; returns the saved file's path.
pub fn save(cwd: &Path, stamp: &str, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::TooLarge {
            limit: MAX_FILE_BYTES,
        });
    }
    if !cwd.is_absolute() {
        return Err(inbox_error(
            cwd,
            "the session's directory is not an absolute path",
        ));
    }
    let root = rustix::fs::open(
        cwd,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| inbox_error(cwd, format!("cannot open the session's directory: {errno}")))?;
    let state_dir = cwd.join(".cross-agent");
    let state = subdir(&root, ".cross-agent", &state_dir)?;
    let inbox_dir = cwd.join(INBOX);
    let inbox = subdir(&state, "inbox", &inbox_dir)?;
    let ignore = inbox_dir.join(".gitignore");
    match create_file(&inbox, ".gitignore", &ignore) {
        Ok(mut file) => file
            .write_all(b"# Files sent from the phone (cross-agent's Telegram bot); never commit them.\n*\n")
            .map_err(|e| Error::io(&ignore, e))?,
        // Already there (ours from an earlier file, or the user's own): left as it is.
        Err(_) if rustix::fs::statat(&inbox, ".gitignore", rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok() => {}
        Err(error) => return Err(error),
    }
    let file_name = format!("{stamp}-{}", safe_name(name));
    let path = inbox_dir.join(&file_name);
    let mut file = create_file(&inbox, &file_name, &path)?;
    file.write_all(bytes).map_err(|e| Error::io(&path, e))?;
    file.sync_all().map_err(|e| Error::io(&path, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_file_is_saved_owner_only_in_a_git_ignored_inbox() {
        let work = tempfile::tempdir().unwrap();
        let path = save(work.path(), "1", "notes v2.txt", b"hello").unwrap();
        assert_eq!(path, work.path().join(".cross-agent/inbox/1-notes_v2.txt"));
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let ignore =
            std::fs::read_to_string(work.path().join(".cross-agent/inbox/.gitignore")).unwrap();
        assert!(ignore.lines().any(|l| l == "*"));
        // A second file beside it.
        save(work.path(), "2", "notes v2.txt", b"again").unwrap();
    }

    #[test]
    fn a_symlinked_inbox_is_refused_and_nothing_is_written_through_it() {
        let work = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir(work.path().join(".cross-agent")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), work.path().join(".cross-agent/inbox"))
            .unwrap();
        let error = save(work.path(), "1", "x.txt", b"secret").unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn names_are_made_safe() {
        assert_eq!(safe_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_name(""), "file");
        assert_eq!(safe_name("...."), "file");
    }

    #[test]
    fn too_big_is_refused() {
        let work = tempfile::tempdir().unwrap();
        let big = vec![0_u8; (MAX_FILE_BYTES + 1) as usize];
        assert!(matches!(
            save(work.path(), "1", "big", &big),
            Err(Error::TooLarge { .. })
        ));
    }
}
