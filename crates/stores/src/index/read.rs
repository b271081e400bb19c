//! Reading the files that changed: each a task of its own on the I/O threads, resumed from the
//! stored position when the file only grew and its head is unchanged, else read from the start;
//! compressed files are read whole.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use rayon::prelude::*;

use super::discover::io_threads;
use super::hashing::hash64;
use super::packed::Packer;
use super::{
    Entry, FoldKind, FoldState, HEAD_CHECK_BYTES, Head, NamesFold, ReadKind, SessionIndex,
    SidecarSeen,
};
use crate::claude::ClaudeFold;
use crate::codex::CodexFold;
use crate::grok::GrokFold;
use crate::lines::{Position, read_complete_lines, read_zstd_lines};
use crate::model::{LineContext, LineProblem, StoreWarning, TranscriptFold, Warnings};
use crate::roots::SourceFile;
use crate::tap::{ReadTap, TapSink};

/// One changed file to read, with what the index knew of it.
pub(super) struct Job {
    pub(super) kind: FoldKind,
    pub(super) source: SourceFile,
    /// The entry to resume from, if any (boxed: a cold listing makes a job for every file, none
    /// with an entry).
    pub(super) old: Option<Box<Entry>>,
    /// Whether the index knew the path at all (a re-read rather than a new file).
    pub(super) known: bool,
}

pub(super) struct JobResult {
    /// `None` when the file could not be read at all.
    pub(super) entry: Option<Entry>,
    pub(super) read: ReadKind,
    pub(super) bytes_read: u64,
    pub(super) warnings: Vec<StoreWarning>,
}

/// Reads the changed files on `threads` threads — or, when there are many (a cold listing), on
/// at least [`IO_READERS`](crate::index::IO_READERS). Each file is a task of its own, so one 50 MB transcript does not
/// leave the other threads idle. Without `keep_folds` the entries hold no fold state
/// ([`FoldState::Missing`]): for an index read once and dropped.
pub(super) fn run_jobs(
    jobs: Vec<Job>,
    threads: usize,
    blob: &[u8],
    keep_folds: bool,
    tap: Option<&dyn ReadTap>,
) -> Vec<JobResult> {
    let threads = io_threads(threads, jobs.len());
    let results = crate::parallel::on_threads(threads, || {
        jobs.into_par_iter()
            .with_max_len(1)
            .map(|job| read_file_guarded(job, blob, keep_folds, tap))
            .collect()
    });
    crate::lines::free_spare_long_line_buffers();
    results
}

/// What a read once and dropped keeps of one file ([`run_jobs_packed`]).
pub(super) struct PackedResult {
    pub(super) read: ReadKind,
    pub(super) bytes_read: u64,
    pub(super) warnings: Vec<StoreWarning>,
    pub(super) kept: Kept,
}

/// Where a file's entry went.
pub(super) enum Kept {
    Packed,
    /// Held as it is (boxed: nearly every file is packed, and a result is made for each).
    Held(Box<Entry>),
    /// The file could not be read at all.
    Unread,
}

/// [`run_jobs`] for an index read once and dropped (no fold states kept): each file's entry is
/// packed into `packer` as soon as it is read, on the reader's thread ([`super::packed`]).
pub(super) fn run_jobs_packed(
    jobs: Vec<Job>,
    threads: usize,
    blob: &[u8],
    packer: &Packer,
    tap: Option<&dyn ReadTap>,
) -> Vec<PackedResult> {
    let threads = io_threads(threads, jobs.len());
    let results = crate::parallel::on_threads(threads, || {
        jobs.into_par_iter()
            .enumerate()
            .with_max_len(1)
            .map(|(place, job)| {
                let result = read_file_guarded(job, blob, /*keep_folds*/ false, tap);
                PackedResult {
                    read: result.read,
                    bytes_read: result.bytes_read,
                    warnings: result.warnings,
                    kept: match result.entry {
                        Some(entry) => match packer.pack(place, entry) {
                            Ok(()) => Kept::Packed,
                            Err(entry) => Kept::Held(entry),
                        },
                        None => Kept::Unread,
                    },
                }
            })
            .collect()
    });
    crate::lines::free_spare_long_line_buffers();
    results
}

/// [`read_file`], but a reader that panics on some input costs only that file: it becomes a
/// warning naming the file, is left out of the index (so it is tried again next time), and the
/// listing goes on.
pub(super) fn read_file_guarded(
    job: Job,
    blob: &[u8],
    keep_folds: bool,
    tap: Option<&dyn ReadTap>,
) -> JobResult {
    let path = job.source.path.clone();
    let read = if job.known {
        ReadKind::Reread
    } else {
        ReadKind::New
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        read_file(job, blob, keep_folds, tap)
    })) {
        Ok(result) => result,
        Err(_) => {
            let mut warnings = Warnings::default();
            warnings.push(
                &path,
                None,
                "the reader failed on this file (a bug); skipped",
            );
            JobResult {
                entry: None,
                read,
                bytes_read: 0,
                warnings: warnings.items,
            }
        }
    }
}

/// Reads one changed file with its agent's fold; a transcript (not the Codex names file) read
/// from its start is offered to `tap` too.
pub(super) fn read_file(
    job: Job,
    blob: &[u8],
    keep_folds: bool,
    tap: Option<&dyn ReadTap>,
) -> JobResult {
    match job.kind {
        FoldKind::Claude => read_with::<ClaudeFold>(job, blob, keep_folds, tap),
        FoldKind::Codex => read_with::<CodexFold>(job, blob, keep_folds, tap),
        FoldKind::Grok => read_with::<GrokFold>(job, blob, keep_folds, tap),
        // The names' fold is what the listing reads the names from: always kept.
        FoldKind::CodexNames => read_with::<NamesFold>(job, blob, true, None),
    }
}

pub(super) fn read_with<F: TranscriptFold>(
    job: Job,
    blob: &[u8],
    keep_fold: bool,
    tap: Option<&dyn ReadTap>,
) -> JobResult {
    let Job {
        kind,
        source,
        old,
        known,
    } = job;
    let mut warnings = Warnings::default();
    let mut bytes_read = 0u64;

    // Resume only a plain file that grew, whose mtime did not go back and whose head is the one
    // seen before; anything else is a different file under the same name.
    let resumable = old.map(|entry| *entry).filter(|entry| {
        !source.compressed
            && !entry.compressed
            && source.stamp.size >= entry.size
            && source.stamp.size >= entry.position.offset
            && match (source.stamp.mtime_ns, entry.mtime_ns) {
                (Some(now), Some(before)) => now >= before,
                _ => true,
            }
    });
    let mut resumed: Option<(F, Entry)> = None;
    if let Some(entry) = resumable {
        // Only the side file changed (Grok rewrote `summary.json`): the transcript is as it was.
        let (same_head, read) = if entry.stamp() == source.stamp {
            (true, 0)
        } else {
            head_matches(&source.path, entry.head)
        };
        bytes_read += read;
        let stored = SessionIndex::fold_text(blob, &entry.fold)
            .and_then(|text| serde_json::from_slice::<F>(text).ok());
        if same_head && let Some(fold) = stored {
            resumed = Some((fold, entry));
        }
    }

    let (mut fold, from, mut head, mut sidecar_seen, read_kind) = match resumed {
        Some((fold, entry)) => (
            fold,
            entry.position,
            entry.head,
            entry.sidecar,
            ReadKind::Appended,
        ),
        None => (
            F::default(),
            Position::default(),
            Head::default(),
            None,
            if known {
                ReadKind::Reread
            } else {
                ReadKind::New
            },
        ),
    };

    // The side file is small and rewritten in place, so it is read whole whenever it changed.
    if let Some(sidecar) = &source.sidecar {
        let unchanged = sidecar_seen
            .as_ref()
            .is_some_and(|seen| seen.matches(sidecar));
        if !unchanged {
            match std::fs::read(&sidecar.path) {
                Ok(bytes) => {
                    bytes_read += bytes.len() as u64;
                    fold.feed_sidecar(&bytes, &sidecar.path, &mut warnings);
                }
                Err(e) => warnings.push(&sidecar.path, None, format!("cannot read: {e}")),
            }
            sidecar_seen = Some(SidecarSeen {
                path: sidecar.path.clone(),
                size: sidecar.stamp.size,
                mtime_ns: sidecar.stamp.mtime_ns,
            });
        }
    } else {
        sidecar_seen = None;
    }

    let mut position = from;
    // A transcript that does not exist yet (a Grok session with no updates) has an all-zero stamp.
    let has_bytes = source.stamp.size > 0;
    if source.compressed || (has_bytes && source.stamp.size != from.offset) {
        let mut extra = tap
            .filter(|_| from.offset == 0)
            .and_then(|tap| tap.begin(&source));
        let before = warnings.items.len();
        let mut sink = HeadTap {
            fold: &mut fold,
            head: (from.offset == 0 && !source.compressed).then_some(&mut head),
            extra: extra.as_mut(),
        };
        let read = if source.compressed {
            read_zstd_lines(&source.path, &mut sink, &mut warnings)
        } else {
            read_complete_lines(&source.path, from, &mut sink, &mut warnings)
        };
        // A line skipped as too long was not handed over: the tap's reader reads it itself.
        let whole = !warnings.items[before..]
            .iter()
            .any(|w| w.problem == Some(LineProblem::TooLong));
        match read {
            Ok(end) => {
                // The reader reads to the end of the file; a half-written last line is read
                // but not consumed, and will be read again once it is finished.
                bytes_read += source.stamp.size.saturating_sub(from.offset);
                position = end;
                if let Some(extra) = extra {
                    extra.end(whole.then_some(end.offset));
                }
            }
            Err(e) => {
                warnings.push(&source.path, None, e.to_string());
                if let Some(extra) = extra {
                    extra.end(None);
                }
            }
        }
    }

    let session = fold.session(&source.path);
    let fold_state = if keep_fold {
        match serde_json::to_string(&fold) {
            Ok(json) => FoldState::Fresh(json),
            Err(e) => {
                // Without a stored state the next change re-reads the file from the start.
                warnings.push(
                    &source.path,
                    None,
                    format!("cannot store the fold state: {e}"),
                );
                position = Position::default();
                FoldState::Missing
            }
        }
    } else {
        // Nothing resumes from it: left out rather than written and thrown away.
        FoldState::Missing
    };
    JobResult {
        entry: Some(Entry {
            kind,
            path: source.path,
            size: source.stamp.size,
            mtime_ns: source.stamp.mtime_ns,
            compressed: source.compressed,
            head,
            position,
            sidecar: sidecar_seen,
            fold: fold_state,
            session,
            saved: false,
        }),
        read: read_kind,
        bytes_read,
        warnings: warnings.items,
    }
}

/// Passes lines on to the fold (and the tap's sink, if any) and, on a read from the start,
/// records the head of the first one.
pub(super) struct HeadTap<'a, F> {
    pub(super) fold: &'a mut F,
    pub(super) head: Option<&'a mut Head>,
    pub(super) extra: Option<&'a mut Box<dyn TapSink>>,
}

impl<F: TranscriptFold> crate::lines::LineSink for HeadTap<'_, F> {
    fn feed_line(&mut self, line: &[u8], at: LineContext<'_>, warnings: &mut Warnings) {
        if let Some(head) = self.head.take() {
            let len = line.len().min(HEAD_CHECK_BYTES);
            *head = Head {
                len: u32::try_from(len).unwrap_or(0),
                hash: hash64(&line[..len]),
            };
        }
        if let Some(extra) = self.extra.as_mut() {
            extra.line(line);
        }
        self.fold.feed_line(line, at, warnings);
    }
}

/// Whether the file still starts with the head seen before, and how many bytes that took.
pub(super) fn head_matches(path: &Path, head: Head) -> (bool, u64) {
    let len = head.len as usize;
    if len == 0 {
        // Nothing was consumed before (an empty or still half-written file): nothing to compare.
        return (true, 0);
    }
    let mut buf = vec![0u8; len];
    let read = File::open(path).and_then(|mut file| file.read_exact(&mut buf));
    match read {
        Ok(()) => (hash64(&buf) == head.hash, len as u64),
        Err(_) => (false, 0),
    }
}
