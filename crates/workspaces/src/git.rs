//! The git state of a workspace folder, with gitoxide: branch (or detached HEAD), HEAD's short
//! id, ahead/behind its upstream, and the dirty and untracked counts.
//!
//! Bounded in time: every walk runs under one deadline, and a count the deadline cut short
//! says so (`{"count": 1234, "complete": false}`), so a huge repository slows the listing by
//! the deadline at most, never hangs it. Read-only: the repository is opened isolated (its own
//! config only: no global or system config, no environment), submodules are not entered, and
//! the index refreshes a status computes are dropped, never written back (gix writes them only
//! when asked, `status::Outcome::write_changes`, which nothing here calls). A folder that is a
//! link is refused, and the directory walk does not follow links.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gix::bstr::BString;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::safe;

/// How long one folder's git state may take, unless set (`CROSS_AGENT_GIT_DEADLINE_MS`).
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(1500);

/// A count, and whether the deadline let it finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Count {
    pub count: u64,
    pub complete: bool,
}

impl Count {
    /// `12`, or `12+` when cut short.
    pub fn short(&self) -> String {
        if self.complete {
            self.count.to_string()
        } else {
            format!("{}+", self.count)
        }
    }
}

/// Where HEAD is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Head {
    /// On a branch with commits.
    Branch { name: String },
    /// On a branch with no commit yet.
    Unborn { name: String },
    /// At a commit, not on a branch.
    Detached,
}

/// The branch HEAD's upstream and how far apart they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Upstream {
    /// `origin/main`: the remote-tracking branch, shortened.
    pub name: String,
    /// Commits on HEAD not on the upstream.
    pub ahead: Count,
    /// Commits on the upstream not on HEAD.
    pub behind: Count,
}

/// One folder's git state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitState {
    /// The repository's working tree (the folder, or a folder above it).
    pub root: PathBuf,
    pub head: Head,
    /// HEAD's commit, abbreviated as git would (`None` on an unborn branch).
    pub commit: Option<String>,
    /// `None`: detached, unborn, or no upstream configured (or it is not fetched).
    pub upstream: Option<Upstream>,
    /// Tracked files changed in the index or the working tree (staged or not), each once.
    pub dirty: Count,
    /// Files git does not track and does not ignore.
    pub untracked: Count,
}

impl Head {
    /// The branch name, `(detached)` or the unborn branch's name.
    pub fn label(&self) -> String {
        match self {
            Head::Branch { name } | Head::Unborn { name } => name.clone(),
            Head::Detached => "(detached)".to_owned(),
        }
    }
}

impl GitState {
    /// The branch name, `(detached)` or the unborn branch's name.
    pub fn branch_label(&self) -> String {
        self.head.label()
    }
}

/// The git state of `folder`, found as git finds it (the folder or a parent holding `.git`),
/// within `deadline` from now. `Ok(None)`: not in a repository.
pub fn state_of(folder: &Path, deadline: Duration) -> Result<Option<GitState>> {
    let until = Instant::now() + deadline;
    let Some(repo) = open(folder)? else {
        return Ok(None);
    };
    let err = |e: &dyn std::fmt::Display| Error::Git {
        path: folder.to_path_buf(),
        message: e.to_string(),
    };
    let root = repo
        .workdir()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo.git_dir().to_path_buf());
    let head_name = repo.head_name().map_err(|e| err(&e))?;
    let head_id = repo.head_id().ok();
    let head = match (&head_name, &head_id) {
        (Some(name), Some(_)) => Head::Branch {
            name: name.shorten().to_string(),
        },
        (Some(name), None) => Head::Unborn {
            name: name.shorten().to_string(),
        },
        (None, _) => Head::Detached,
    };
    let commit = head_id.as_ref().map(|id| id.shorten_or_id().to_string());
    let upstream = match (&head_name, &head_id) {
        (Some(name), Some(id)) => upstream(&repo, name.as_ref(), id.detach(), until),
        _ => None,
    };
    let (dirty, untracked) = if repo.workdir().is_some() {
        (dirty(&repo, until)?, untracked(&repo, until)?)
    } else {
        let none = Count {
            count: 0,
            complete: true,
        };
        (none, none)
    };
    Ok(Some(GitState {
        root,
        head,
        commit,
        upstream,
        dirty,
        untracked,
    }))
}

/// Only HEAD (branch and commit), without the counts: what the session listing shows, in a
/// millisecond or two.
pub fn head_of(folder: &Path) -> Result<Option<(Head, Option<String>)>> {
    let Some(repo) = open(folder)? else {
        return Ok(None);
    };
    let head_name = repo.head_name().map_err(|e| Error::Git {
        path: folder.to_path_buf(),
        message: e.to_string(),
    })?;
    let head_id = repo.head_id().ok();
    let head = match (&head_name, &head_id) {
        (Some(name), Some(_)) => Head::Branch {
            name: name.shorten().to_string(),
        },
        (Some(name), None) => Head::Unborn {
            name: name.shorten().to_string(),
        },
        (None, _) => Head::Detached,
    };
    Ok(Some((
        head,
        head_id.map(|id| id.shorten_or_id().to_string()),
    )))
}

/// The repository `folder` is in, opened isolated; `None` when there is none. A folder that is
/// a link is refused: its repository would be wherever the link points.
fn open(folder: &Path) -> Result<Option<gix::Repository>> {
    if safe::is_link(folder) {
        return Err(Error::Link {
            path: folder.to_path_buf(),
        });
    }
    if !folder.is_dir() {
        return Ok(None);
    }
    match gix::discover_opts(
        folder,
        gix::discover::upwards::Options::default(),
        gix::open::Options::isolated(),
    ) {
        Ok(repo) => Ok(Some(repo)),
        // Not in a repository (discovery classifies it "not found") is no error; anything
        // else (a damaged one, one not trusted) is, in its own words.
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(Error::Git {
            path: folder.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// The upstream of branch `name` and the commits between it and `head`, walking until `until`.
fn upstream(
    repo: &gix::Repository,
    name: &gix::refs::FullNameRef,
    head: gix::ObjectId,
    until: Instant,
) -> Option<Upstream> {
    let tracking = repo
        .branch_remote_tracking_ref_name(name, gix::remote::Direction::Fetch)?
        .ok()?;
    let mut reference = repo.find_reference(tracking.as_ref()).ok()?;
    let theirs = reference.peel_to_id().ok()?.detach();
    Some(Upstream {
        name: tracking.as_ref().shorten().to_string(),
        ahead: commits_between(repo, head, theirs, until),
        behind: commits_between(repo, theirs, head, until),
    })
}

/// Commits reachable from `tip` and not from `hidden`, counted until `until`.
fn commits_between(
    repo: &gix::Repository,
    tip: gix::ObjectId,
    hidden: gix::ObjectId,
    until: Instant,
) -> Count {
    let walk = match repo.rev_walk([tip]).with_hidden([hidden]).all() {
        Ok(walk) => walk,
        Err(_) => {
            return Count {
                count: 0,
                complete: false,
            };
        }
    };
    let mut count = 0;
    for (i, commit) in walk.enumerate() {
        if commit.is_err() || (i % 256 == 0 && Instant::now() >= until) {
            return Count {
                count,
                complete: false,
            };
        }
        count += 1;
    }
    Count {
        count,
        complete: true,
    }
}

/// Tracked paths changed between HEAD and the index or the index and the working tree.
fn dirty(repo: &gix::Repository, until: Instant) -> Result<Count> {
    let alarm = Alarm::at(until);
    let git = |e: &dyn std::fmt::Display| Error::Git {
        path: repo.git_dir().to_path_buf(),
        message: e.to_string(),
    };
    let iter = repo
        .status(gix::progress::Discard)
        .map_err(|e| git(&e))?
        .untracked_files(gix::status::UntrackedFiles::None)
        .index_worktree_submodules(gix::status::Submodule::Given {
            ignore: gix::submodule::config::Ignore::All,
            check_dirty: false,
        })
        .index_worktree_rewrites(None)
        .tree_index_track_renames(gix::status::tree_index::TrackRenames::Disabled)
        .should_interrupt_owned(alarm.flag.clone())
        .into_iter(Vec::<BString>::new())
        .map_err(|e| git(&e))?;
    let mut paths: BTreeSet<BString> = BTreeSet::new();
    let mut complete = true;
    for item in iter {
        match item {
            Ok(item) => {
                paths.insert(item.location().to_owned());
            }
            Err(_) if alarm.rang() => {
                complete = false;
                break;
            }
            Err(e) => return Err(git(&e)),
        }
    }
    Ok(Count {
        count: paths.len() as u64,
        complete: complete && !alarm.rang(),
    })
}

/// Untracked, not ignored files (`git status --untracked-files=all`), not entering nested
/// repositories or following links.
fn untracked(repo: &gix::Repository, until: Instant) -> Result<Count> {
    let alarm = Alarm::at(until);
    let git = |e: &dyn std::fmt::Display| Error::Git {
        path: repo.git_dir().to_path_buf(),
        message: e.to_string(),
    };
    let index = repo.index_or_empty().map_err(|e| git(&e))?;
    let options = repo
        .dirwalk_options()
        .map_err(|e| git(&e))?
        .emit_untracked(gix::dir::walk::EmissionMode::Matching)
        .emit_tracked(false)
        .emit_ignored(None)
        .recurse_repositories(false)
        .symlinks_to_directories_are_ignored_like_directories(false);
    let iter = repo
        .dirwalk_iter(index, Vec::<BString>::new(), (&alarm.flag).into(), options)
        .map_err(|e| git(&e))?;
    let mut count = 0;
    let mut complete = true;
    for item in iter {
        match item {
            Ok(item) => {
                if item.entry.status == gix::dir::entry::Status::Untracked {
                    count += 1;
                }
            }
            Err(_) if alarm.rang() => {
                complete = false;
                break;
            }
            Err(e) => return Err(git(&e)),
        }
    }
    Ok(Count {
        count,
        complete: complete && !alarm.rang(),
    })
}

/// Raises an interrupt flag at a deadline (gix's walks poll it), unless dropped first.
struct Alarm {
    flag: Arc<AtomicBool>,
    /// Dropping it wakes the timer thread, which then ends without ringing.
    _cancel: mpsc::Sender<()>,
}

impl Alarm {
    fn at(until: Instant) -> Alarm {
        let flag = Arc::new(AtomicBool::new(false));
        let (cancel, cancelled) = mpsc::channel::<()>();
        let ring = flag.clone();
        let wait = until.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            flag.store(true, Ordering::Release);
        } else {
            // A thread of its own: the walks run on gix's threads and poll the flag.
            let spawned = std::thread::Builder::new()
                .name("git-deadline".into())
                .spawn(move || {
                    if let Err(mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(wait) {
                        ring.store(true, Ordering::Release);
                    }
                });
            if spawned.is_err() {
                // No thread, no deadline: better said as cut short than risk a hang.
                flag.store(true, Ordering::Release);
            }
        }
        Alarm {
            flag,
            _cancel: cancel,
        }
    }

    fn rang(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}
