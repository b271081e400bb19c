//! What an agent's recent walks found changed, numbered, so another index of the same files
//! (the usage index) reads those files instead of walking the store again.

use std::sync::Arc;

use crate::index::ChangedFiles;

/// How many of an agent's walks that changed something are remembered.
const LOG_WALKS: usize = 64;
/// How many changed files the remembered walks may hold in all: a walk that found more (a cold
/// one) is not kept, and a reader from before it walks the store itself.
const LOG_FILES: usize = 4096;

/// The changed files of an agent's recent walks, numbered.
#[derive(Debug, Default)]
pub(super) struct ChangeLog {
    /// How many walks that changed something were counted: the last one's number.
    walks: u64,
    /// The walks remembered, oldest first, with their numbers.
    kept: std::collections::VecDeque<(u64, Arc<ChangedFiles>)>,
    /// Every walk after this number is in `kept`.
    complete_after: u64,
}

impl ChangeLog {
    pub(super) fn record(&mut self, changed: ChangedFiles) {
        if changed.is_empty() {
            return;
        }
        self.walks += 1;
        if changed.len() > LOG_FILES {
            self.kept.clear();
            self.complete_after = self.walks;
            return;
        }
        self.kept.push_back((self.walks, Arc::new(changed)));
        let mut files: usize = self.kept.iter().map(|(_, c)| c.len()).sum();
        while self.kept.len() > LOG_WALKS || files > LOG_FILES {
            let Some((walk, dropped)) = self.kept.pop_front() else {
                break;
            };
            files -= dropped.len();
            self.complete_after = walk;
        }
    }

    /// Where the walks stand now, in the index's `epoch`.
    pub(super) fn mark(&self, epoch: u64) -> LogMark {
        LogMark {
            epoch,
            walks: self.walks,
        }
    }

    /// What the walks since `mark` found changed, and the mark to ask from next time.
    pub(super) fn since(&self, epoch: u64, mark: LogMark) -> (ChangesSince, LogMark) {
        let now = self.mark(epoch);
        if mark.epoch != epoch || mark.walks < self.complete_after || mark.walks > self.walks {
            return (ChangesSince::Unknown, now);
        }
        let walks = self
            .kept
            .iter()
            .filter(|(walk, _)| *walk > mark.walks)
            .map(|(_, changed)| Arc::clone(changed))
            .collect();
        (ChangesSince::Walks(walks), now)
    }
}

/// Where a reader of [`LiveScanner::changes_since`] stands in an agent's walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogMark {
    epoch: u64,
    walks: u64,
}

/// What changed under an agent's store since a [`LogMark`].
#[derive(Debug, Clone)]
pub enum ChangesSince {
    /// Every walk since, in order (none when nothing changed).
    Walks(Vec<Arc<ChangedFiles>>),
    /// Not remembered (too many changes, or the listings were dropped): walk the store.
    Unknown,
}
