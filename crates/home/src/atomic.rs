//! Replacing a file in the home whole: the bytes go to an owner-only temporary file beside it,
//! are flushed to disk, and the temporary file is renamed over the target. A reader sees the
//! old content or the new, never half of it, and a crash mid-write leaves the old file intact.
//!
//! The temporary file is created exclusively (`O_EXCL`, mode `0600`), so it is never opened
//! through a link someone planted; the rename replaces whatever sits at the target (a link
//! included) rather than writing through it.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::home::FILE_MODE;

/// Writes `bytes` to `path` atomically, owner-only (`0600`), synced before the rename. The
/// directory must exist; a temporary file left by a failed write is removed.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(FILE_MODE))
        .tempfile_in(dir)
        .map_err(|e| Error::io("create a temporary file in", dir, e))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| Error::io("write", temp.path(), e))?;
    temp.persist(path)
        .map_err(|e| Error::io("replace", path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use pretty_assertions::assert_eq;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    #[test]
    fn writes_owner_only_and_replaces_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("status.json");
        write_private(&path, b"first, and longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first, and longer");
        assert_eq!(mode(&path), 0o600);
        write_private(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("status.json")]);
    }

    #[test]
    fn a_link_at_the_target_is_replaced_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"theirs").unwrap();
        let path = tmp.path().join("state.json");
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        write_private(&path, b"ours").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"theirs");
        assert!(
            !std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"ours");
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("gone");
        let message = write_private(&dir.join("f"), b"x").unwrap_err().to_string();
        assert!(message.contains(&dir.display().to_string()), "{message}");
        assert!(!dir.exists());
    }
}
