//! Reading and writing the agents' configuration files the way `install` and `uninstall` must:
//! never through a symbolic link (a link could point anywhere, and a config kept in a dotfiles
//! repository is the person's to edit), a backup taken once before the first change, every
//! write atomic (a temporary file beside it, then a rename) with the file's mode kept, and a
//! unified diff of every change for `--dry-run`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The suffix of the one backup taken of a file before cross-agent first changes it.
pub const BACKUP_SUFFIX: &str = ".cross-agent.bak";

/// `<file>.cross-agent.bak`.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(BACKUP_SUFFIX);
    PathBuf::from(name)
}

/// Refuses `path` when it, or a directory between it and `home`, is a symbolic link: writing
/// through it would change a file somewhere else. Names the link.
pub fn refuse_links(path: &Path, home: &Path) -> Result<()> {
    if let Some((link, target)) = first_link(path, home) {
        bail!(
            "{} is a symbolic link (to {}); cross-agent does not write through links: \
             edit the file it points at yourself, or replace the link with the file",
            link.display(),
            target.display()
        );
    }
    Ok(())
}

/// The first of `path` and the directories between it and `home` (not `home` itself) that is
/// a symbolic link, with where it points.
pub fn first_link(path: &Path, home: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut at = path;
    loop {
        if let Ok(meta) = std::fs::symlink_metadata(at)
            && meta.file_type().is_symlink()
        {
            let target = std::fs::read_link(at).unwrap_or_else(|_| PathBuf::from("?"));
            return Some((at.to_owned(), target));
        }
        match at.parent() {
            Some(parent) if parent != home && parent.starts_with(home) => at = parent,
            _ => return None,
        }
    }
}

/// The file's text, or `None` when it does not exist. Links are refused (see [`refuse_links`]).
pub fn read(path: &Path, home: &Path) -> Result<Option<String>> {
    refuse_links(path, home)?;
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("reading {}", path.display())),
    }
}

/// Replaces `path`'s content with `text` atomically, keeping its mode (a new file gets 0600:
/// these files hold environment variables). The parent directory is created when missing.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    write_atomically_with_mode(path, text, None)
}

/// The mode bits of `path` (permissions, setuid/setgid/sticky), when it exists.
pub fn mode_of(path: &Path) -> Option<u32> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|meta| meta.permissions().mode() & 0o7777)
}

/// [`write_atomically`] with the mode given (`None`: keep the file's, or 0600 for a new one):
/// how a rollback puts back a file it had removed.
pub fn write_atomically_with_mode(path: &Path, text: &str, mode: Option<u32>) -> Result<()> {
    let parent = path
        .parent()
        .with_context(|| format!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let mode = mode.or_else(|| mode_of(path)).unwrap_or(0o600);
    let mut temporary = tempfile::Builder::new()
        .prefix(".cross-agent-")
        .tempfile_in(parent)
        .with_context(|| format!("creating a temporary file in {}", parent.display()))?;
    temporary
        .write_all(text.as_bytes())
        .and_then(|()| temporary.as_file().sync_all())
        .with_context(|| format!("writing the new {}", path.display()))?;
    std::fs::set_permissions(temporary.path(), std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of the new {}", path.display()))?;
    temporary
        .persist(path)
        .map_err(|error| error.error)
        .with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}

/// Copies `path` to its backup unless a backup is already there (the first one is the state
/// before cross-agent ever touched it). Returns the backup's path when one was written now.
pub fn back_up_once(path: &Path, original: &str) -> Result<Option<PathBuf>> {
    let backup = backup_path(path);
    if std::fs::symlink_metadata(&backup).is_ok() {
        return Ok(None);
    }
    write_atomically(&backup, original)?;
    Ok(Some(backup))
}

/// Whether a backup's text is the empty one install writes for a file that held nothing of
/// the person's (it created the file, or only cross-agent's entries were in it).
pub fn is_empty_backup(text: &str) -> bool {
    text.trim().is_empty()
}

/// Whether `uninstall` removes a backup holding `original` once the file holds `after`
/// (`None`: removed): when the file is back to it, and always when it is empty, since then
/// everything left in the file is the person's.
pub fn backup_is_done(original: &str, after: Option<&str>) -> bool {
    is_empty_backup(original) || after == Some(original)
}

/// A unified diff from `before` (absent: an empty file) to `after` (absent: deleted).
pub fn unified_diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let name = path.display().to_string();
    let old_header = if before.is_some() {
        format!("a{name}")
    } else {
        "/dev/null".to_owned()
    };
    let new_header = if after.is_some() {
        format!("b{name}")
    } else {
        "/dev/null".to_owned()
    };
    similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old_header, &new_header)
        .missing_newline_hint(true)
        .to_string()
}
