//! The shim's log, `CROSS_AGENT_HOME/logs/shim.log`: one line per event (start, the agent's
//! exit, requests on the socket, errors of the shim's own), every shim appending to the same
//! file. Never stdout (the extension's wire) and not stderr (the extension shows it as the
//! agent's). Plain appends instead of a `tracing` subscriber: the shim starts on every panel
//! spawn and keeps its memory small.

use std::fmt::Display;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use parking_lot::Mutex;

/// Past this size the log is moved to `shim.log.1` (one generation kept) when a shim starts.
const ROTATE_AT: u64 = 8 * 1024 * 1024;

pub const FILE_NAME: &str = "shim.log";

#[derive(Debug)]
pub struct ShimLog {
    file: Mutex<Option<File>>,
    tag: String,
}

impl ShimLog {
    /// A log that writes nowhere (the home could not be used).
    pub fn none(tag: String) -> ShimLog {
        ShimLog {
            file: Mutex::new(None),
            tag,
        }
    }

    /// Opens `logs/shim.log` (owner-only, never through a link) in the checked home.
    pub fn open(logs_dir: &Path, tag: String) -> crate::Result<ShimLog> {
        let path = logs_dir.join(FILE_NAME);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() > ROTATE_AT) {
            let _ = std::fs::rename(&path, logs_dir.join(format!("{FILE_NAME}.1")));
        }
        let file =
            cross_agent_home::home::open_private_append(&path).map_err(crate::Error::Home)?;
        Ok(ShimLog {
            file: Mutex::new(Some(file)),
            tag,
        })
    }

    /// Appends one line; a failed write is dropped (the log must never stop the pipes).
    pub fn line(&self, message: impl Display) {
        let mut guard = self.file.lock();
        if let Some(file) = guard.as_mut() {
            let stamp = humantime::format_rfc3339_millis(SystemTime::now());
            let text = format!("{stamp} {} {message}\n", self.tag);
            let _ = file.write_all(text.as_bytes());
        }
    }
}
