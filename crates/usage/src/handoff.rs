//! The usage index's reads taken from the session index's: the daemon's session index reads
//! every transcript from its start on a cold walk (and any new or replaced file later), and
//! hands each line it reads to a [`HandoffTap`] too ([`cross_agent_stores::tap`]). Each file so
//! read becomes a kept reader here — parsed, with the byte offset it was read to and the inode
//! it was read from — which the usage index's next refresh takes in place of reading the file
//! again: a cold daemon reads each byte once.
//!
//! A handed-over reader is one more earlier read of the file, so the usage index treats it as
//! its own last read: unchanged since (same stamp) it is kept as is, grown it is fed the bytes
//! after its offset, anything else is read again from the start. A read the tap could not
//! follow whole (a line too long, an error) hands nothing over.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use cross_agent_protocol::Agent;
use cross_agent_stores::tap::{ReadTap, Tap, TapSink};
use cross_agent_stores::{FileStamp, SourceFile};

use crate::entry::{Entry, Kept};

/// The readers handed over since the usage index last took them, by path.
#[derive(Debug, Default)]
pub struct Handoffs {
    taken: Mutex<HashMap<PathBuf, Box<Entry>>>,
}

impl Handoffs {
    pub fn new() -> Arc<Handoffs> {
        Arc::new(Handoffs::default())
    }

    /// The tap to give the session index's scanner.
    pub fn tap(self: &Arc<Self>) -> Tap {
        Tap(Arc::new(HandoffTap(self.clone())))
    }

    /// Everything handed over so far, leaving none.
    pub(crate) fn take(&self) -> HashMap<PathBuf, Box<Entry>> {
        std::mem::take(&mut *self.taken.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many files wait to be taken.
    pub fn len(&self) -> usize {
        self.taken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn put(&self, path: PathBuf, entry: Entry) {
        self.taken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path, Box::new(entry));
    }
}

/// Offered the session index's reads from the start: takes the usage files'.
#[derive(Debug)]
pub struct HandoffTap(Arc<Handoffs>);

impl ReadTap for HandoffTap {
    fn begin(&self, source: &SourceFile) -> Option<Box<dyn TapSink>> {
        if source.compressed && source.agent != Agent::Codex {
            return None;
        }
        let reader = Kept::new(source.agent, &source.path)?;
        // The inode the bytes come from, looked at before the read: a file replaced meanwhile
        // has another one, and is read again from the start by the usage index.
        let ino = if source.compressed {
            None
        } else {
            let meta = fs::symlink_metadata(&source.path).ok()?;
            if !meta.is_file() {
                // A link is the usage index's to refuse, by name.
                return None;
            }
            Some((meta.dev(), meta.ino()))
        };
        Some(Box::new(Sink {
            to: self.0.clone(),
            path: source.path.clone(),
            stamp: source.stamp,
            compressed: source.compressed,
            ino,
            reader,
        }))
    }
}

/// One file's reader while the session index reads it.
struct Sink {
    to: Arc<Handoffs>,
    path: PathBuf,
    /// The stamp the walk saw before the read.
    stamp: FileStamp,
    compressed: bool,
    ino: Option<(u64, u64)>,
    reader: Kept,
}

impl TapSink for Sink {
    fn line(&mut self, line: &[u8]) {
        self.reader.feed_line(line);
    }

    fn end(self: Box<Self>, consumed: Option<u64>) {
        let Some(consumed) = consumed else {
            return;
        };
        let Sink {
            to,
            path,
            stamp,
            compressed,
            ino,
            reader,
        } = *self;
        let entry = if compressed {
            // Read whole, as the usage index reads a compressed rollout.
            Entry::new(stamp, None, reader.into_whole())
        } else {
            // What was read, not what the walk saw before: a write in between shows next time
            // (as the usage index's own reads keep it).
            let stamp = if consumed == stamp.size {
                stamp
            } else {
                FileStamp {
                    size: consumed,
                    mtime_ns: None,
                }
            };
            Entry::new(stamp, ino, reader)
        };
        to.put(path, entry);
    }
}
