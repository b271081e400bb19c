//! Whether a serving daemon's home is still its own: the directory is there, `daemon.sock` is
//! the socket it bound (same device and inode), and `daemon.pid` is the file it locked and
//! names it. When one of them is not, no client of the home can reach this daemon any more —
//! typically a test's temporary home was deleted under it — so it stops as on `daemon stop`
//! instead of running on as an orphan.
//!
//! A look that fails for another reason than "not there" (`EIO`, `ENOMEM`, a permission
//! denied…) says nothing about the home: the daemon logs it once and serves on. Nothing here
//! opens a file (the pidfile is read through the descriptor the lock already holds), so a
//! daemon out of descriptors still tells its home apart from a deleted one.

use std::io::ErrorKind;
use std::path::Path;

use super::Shared;

/// What one look found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Everything is still this daemon's.
    Ours,
    /// Gone or taken: why, for the log.
    Lost(&'static str),
    /// A look failed without saying either: what failed.
    Unsure(String),
}

/// One look at the home (three `stat`-sized calls).
pub(super) fn look(shared: &Shared, socket_identity: Option<(u64, u64)>) -> Verdict {
    match std::fs::metadata(&shared.info.home) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return Verdict::Lost("the home is no longer a directory"),
        Err(error) if not_there(&error) => return Verdict::Lost("the home directory is gone"),
        Err(error) => return unsure("the home directory", &shared.info.home, &error),
    }
    if let Some(bound) = socket_identity {
        match std::fs::symlink_metadata(&shared.info.socket) {
            Ok(metadata) => {
                use std::os::unix::fs::MetadataExt;
                if (metadata.dev(), metadata.ino()) != bound {
                    return Verdict::Lost("daemon.sock is no longer the socket this daemon bound");
                }
            }
            Err(error) if not_there(&error) => return Verdict::Lost("daemon.sock is gone"),
            Err(error) => return unsure("daemon.sock", &shared.info.socket, &error),
        }
    }
    if let Some(lock) = shared.lock.lock().as_ref() {
        match lock.names_this_process() {
            Ok(true) => {}
            Ok(false) => {
                return Verdict::Lost("daemon.pid is gone, replaced or names another process");
            }
            Err(error) => return unsure("daemon.pid", lock.path(), &error),
        }
    }
    Verdict::Ours
}

/// `ENOENT`, or `ENOTDIR` (a directory on the way is now a file): the thing is not there.
fn not_there(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
}

fn unsure(what: &str, path: &Path, error: &std::io::Error) -> Verdict {
    Verdict::Unsure(format!(
        "could not look at {what} ({}): {error}",
        path.display()
    ))
}

/// The watch across looks: says when to stop, and logs an unsure stretch once.
#[derive(Debug, Default)]
pub(super) struct HomeWatch {
    /// Looks in a row that could not tell.
    unsure: u64,
}

impl HomeWatch {
    /// Takes one look's verdict; `Some(why)` when the daemon must stop.
    pub(super) fn judge(&mut self, verdict: Verdict, home: &Path) -> Option<&'static str> {
        match verdict {
            Verdict::Ours => {
                if self.unsure > 0 {
                    tracing::info!(
                        looks = self.unsure,
                        "the home can be looked at again; it is still this daemon's"
                    );
                    self.unsure = 0;
                }
                // A heartbeat for whoever needs to know a look was made (the tests that starve
                // the daemon of descriptors); silent at every usual log level.
                tracing::trace!("the home is still this daemon's");
                None
            }
            Verdict::Lost(why) => {
                tracing::warn!(why, home = %home.display(), "this daemon's home is no longer its own");
                Some(why)
            }
            Verdict::Unsure(what) => {
                if self.unsure == 0 {
                    tracing::warn!(
                        %what,
                        home = %home.display(),
                        "could not tell whether the home is still this daemon's; serving on"
                    );
                }
                self.unsure += 1;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_not_there_counts_as_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = std::fs::metadata(tmp.path().join("nope")).unwrap_err();
        assert!(not_there(&missing));
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let through_a_file = std::fs::metadata(file.join("below")).unwrap_err();
        assert!(not_there(&through_a_file));
        // ENAMETOOLONG: the look failed, which says nothing about the home.
        let too_long = std::fs::metadata(tmp.path().join("d".repeat(5000))).unwrap_err();
        assert!(!not_there(&too_long), "{too_long:?}");
    }

    #[test]
    fn an_unsure_look_keeps_the_daemon_and_a_lost_home_stops_it() {
        let home = Path::new("/nowhere");
        let mut watch = HomeWatch::default();
        assert_eq!(watch.judge(Verdict::Unsure("EIO".into()), home), None);
        assert_eq!(watch.judge(Verdict::Unsure("EIO".into()), home), None);
        assert_eq!(watch.unsure, 2);
        assert_eq!(watch.judge(Verdict::Ours, home), None);
        assert_eq!(watch.unsure, 0);
        assert_eq!(
            watch.judge(Verdict::Lost("the home directory is gone"), home),
            Some("the home directory is gone")
        );
    }
}
