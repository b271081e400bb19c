//! What a daemon under test wrote to its log: the files `logs/daemon.log*` under its home
//! (tracing-appender's rolling files), read back for a test to search.

use std::path::Path;

/// The daemon's log files under `home` (`logs/daemon.log*`), concatenated; empty when there
/// are none yet.
pub fn daemon_log(home: &Path) -> String {
    let mut all = String::new();
    let Ok(entries) = std::fs::read_dir(home.join("logs")) else {
        return all;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("daemon.log")
        {
            all.push_str(&String::from_utf8_lossy(
                &std::fs::read(entry.path()).unwrap_or_default(),
            ));
        }
    }
    all
}
