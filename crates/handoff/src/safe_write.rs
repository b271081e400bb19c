//! Writing into folders cross-agent did not make — a workspace, its `.git` — without ever
//! following a link there. A cloned repository can ship a symbolic link at any name we might
//! write (`HANDOFF.md`, a temporary file beside it, `.git/info/exclude`), pointing anywhere the
//! user can write; a write through it would land there.
//!
//! - A file is replaced whole by a temporary file of a random name made beside it
//!   (`O_CREAT|O_EXCL`, which never opens an existing name, link or not) and renamed over it
//!   (a rename replaces a link at the name, never what it points to).
//! - Before that, [`check_file`] / [`check_dir`] refuse a link (or something else) at a name
//!   we are about to write, naming it and the fix, so nothing is written at all.
//! - A new file of our own is opened `O_CREAT|O_EXCL|O_NOFOLLOW` ([`create_new`]).

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::error::{HandoffError, Result};

/// What is at a path we are about to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Nothing,
    /// A regular file, with its permission bits.
    File {
        mode: u32,
    },
    Dir,
}

/// `O_NOFOLLOW`, as `OpenOptionsExt::custom_flags` takes it.
fn no_follow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

fn inspect(path: &Path) -> Result<Option<fs::Metadata>> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HandoffError::io("inspect", path, e)),
    }
}

fn refused(path: &Path, meta: &fs::Metadata, wanted: &'static str, fix: &str) -> HandoffError {
    let what = if meta.file_type().is_symlink() {
        match fs::read_link(path) {
            Ok(target) => format!("a symbolic link (to {})", target.display()),
            Err(_) => "a symbolic link".to_owned(),
        }
    } else {
        format!("not {wanted}")
    };
    HandoffError::Unsafe {
        path: path.to_owned(),
        what,
        fix: fix.to_owned(),
    }
}

/// What is at `path`, which is about to be written as a regular file: nothing, or a regular
/// file. A link (or a folder, a socket, …) is refused with `fix`.
pub fn check_file(path: &Path, fix: &str) -> Result<Found> {
    match inspect(path)? {
        None => Ok(Found::Nothing),
        Some(meta) if meta.file_type().is_file() => Ok(Found::File {
            mode: meta.permissions().mode() & 0o7777,
        }),
        Some(meta) => Err(refused(path, &meta, "a regular file", fix)),
    }
}

/// What is at `path`, a folder about to be written in: nothing, or a real folder. A link is
/// refused with `fix`.
pub fn check_dir(path: &Path, fix: &str) -> Result<Found> {
    match inspect(path)? {
        None => Ok(Found::Nothing),
        Some(meta) if meta.file_type().is_dir() => Ok(Found::Dir),
        Some(meta) => Err(refused(path, &meta, "a folder", fix)),
    }
}

/// The fix for a link at `path`: remove it, then try again.
pub fn remove_link_fix(path: &Path) -> String {
    format!(
        "cross-agent never writes through a link it did not make; remove it (rm {}) and hand off \
         again",
        cross_agent_process::shell_word(&path.to_string_lossy())
    )
}

/// The permission bits of a file [`replace`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// These bits exactly: the mode of the file being replaced, kept.
    Exactly(u32),
    /// These bits less the process's umask, as any new file gets: for a file that is new.
    New(u32),
}

/// Replaces `dir/name` whole with `bytes`: written to a new file of a random name in `dir`,
/// then renamed over `dir/name`. Neither step follows a link.
pub fn replace(dir: &Path, name: &str, bytes: &[u8], mode: Mode) -> Result<PathBuf> {
    let target = dir.join(name);
    let created = match mode {
        Mode::Exactly(_) => 0o600,
        Mode::New(bits) => bits,
    };
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(created))
        .tempfile_in(dir)
        .map_err(|e| HandoffError::io("create a temporary file in", dir, e))?;
    let written = temp.write_all(bytes).and_then(|()| match mode {
        Mode::Exactly(bits) => temp.as_file().set_permissions(Permissions::from_mode(bits)),
        Mode::New(_) => Ok(()),
    });
    let written = written.and_then(|()| temp.as_file().sync_all());
    if let Err(e) = written {
        return Err(HandoffError::io("write", temp.path(), e));
    }
    temp.persist(&target)
        .map_err(|e| HandoffError::io("write", &target, e.error))?;
    Ok(target)
}

/// Creates `path` with `bytes`, `mode`: it must not exist, and a link there is never followed.
pub fn create_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(no_follow())
        .open(path)
        .map_err(|e| HandoffError::io("create", path, e))?;
    file.write_all(bytes)
        .map_err(|e| HandoffError::io("write", path, e))
}

/// The text of `path`, opened without following a link (empty when it does not exist).
pub fn read_no_follow(path: &Path) -> Result<String> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(no_follow())
        .open(path);
    let mut file: File = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(HandoffError::io("read", path, e)),
    };
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| HandoffError::io("read", path, e))?;
    Ok(text)
}
