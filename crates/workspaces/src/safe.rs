//! Reading an editor's file the way every store is read here: opened `O_NOFOLLOW` (a link is
//! refused by name, never followed), read up to a cap, never written.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{Error, Result};

/// The whole file at `path`, or `None` when there is none. A link, a file over `limit` bytes or
/// one that cannot be read is an error naming it.
pub fn read_capped(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if meta.file_type().is_symlink() {
        return Err(Error::Link {
            path: path.to_path_buf(),
        });
    }
    if !meta.is_file() {
        return Ok(None);
    }
    // Opened without following a link swapped in since the look above.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => Error::Link {
                path: path.to_path_buf(),
            },
            _ => Error::Io {
                path: path.to_path_buf(),
                source,
            },
        })?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(Some(bytes))
}

/// Whether `path` itself is a symbolic link (a missing path is not).
pub fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}
