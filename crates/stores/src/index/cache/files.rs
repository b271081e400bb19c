//! Writing the cache's files privately and atomically: a temp file in the same folder and a
//! rename, the folder `0700` and the file `0600`, and a link standing in place of the folder
//! refused; and opening them to read, never through a link.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

/// Writes `parts` one after another (a big file need not be gathered into one buffer first) to
/// `path` through a temp file in the same folder and a rename, creating the folder `0700` and
/// the file `0600`.
pub(crate) fn write_atomically_parts(path: &Path, parts: &[&[u8]]) -> Result<()> {
    let dir = path.parent().ok_or_else(|| StoreError::Cache {
        path: path.to_path_buf(),
        message: "has no parent folder".to_owned(),
    })?;
    private_dir(dir)?;
    let tmp = temp_path(path);
    let written = write_private(&tmp, parts).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io(path, e));
    }
    Ok(())
}

fn temp_path(path: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp-{}-{nanos}", std::process::id()));
    path.with_file_name(name)
}

/// Creates `dir` owner-only (its parent must exist), and tightens it if it already exists. A link
/// standing there is refused: the chmod would act on its target, outside the state directory.
pub fn private_dir(dir: &Path) -> Result<()> {
    if fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(StoreError::Cache {
            path: dir.to_path_buf(),
            message: "is a symbolic link; cross-agent writes nothing through one (remove it)"
                .to_owned(),
        });
    }
    // Only the cache folder itself: the state directory it lives in is created at start-up,
    // and a daemon whose state directory was deleted must fail here rather than re-create it.
    let mut builder = fs::DirBuilder::new();
    builder.recursive(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    match builder.create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {}
        Err(e) => return Err(StoreError::io(dir, e)),
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| StoreError::io(dir, e))?;
    }
    Ok(())
}

fn write_private(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    // Buffered: the parts may be many small ones (a cache's fold states).
    let mut file = std::io::BufWriter::with_capacity(256 << 10, options.open(path)?);
    for part in parts {
        file.write_all(part)?;
    }
    file.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

/// Opens one of the cache's files to read, never through a link: a link planted at its name
/// fails the open (the cache is then rebuilt, and written by renaming over the link). A daemon
/// keeps the session cache open and reads it for as long as it runs.
pub(crate) fn open_to_read(path: &Path) -> std::io::Result<fs::File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    options.open(path)
}

/// Reads `buf.len()` bytes at `at` in `file`, leaving its cursor to other readers.
pub(crate) fn read_at(file: &fs::File, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = file;
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state directory of the bridge's own (docs/spec/cross-agent-mcp.md §7): a link standing where the cache folder goes is refused, and the folder it
    /// points to (outside the state directory) keeps its mode.
    #[cfg(unix)]
    #[test]
    fn a_link_in_place_of_the_cache_folder_is_refused_not_chmod_ed() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o755)).unwrap();
        let cache = tmp.path().join("cache");
        std::os::unix::fs::symlink(&outside, &cache).unwrap();
        assert!(private_dir(&cache).is_err());
        assert!(write_atomically_parts(&cache.join("sessions.bin"), &[b"x"]).is_err());
        let mode = fs::metadata(&outside).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    }
}
