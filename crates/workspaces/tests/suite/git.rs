//! Git state on real repositories made with the `git` CLI: branch, upstream ahead and behind,
//! dirty and untracked counts, detached and unborn HEADs; the repository left unwritten; a
//! linked folder refused; a 100k-file tree within its deadline.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use cross_agent_workspaces::git::{self, Count, GitState, Head, Upstream};
use pretty_assertions::assert_eq;

use super::support::{commits, git, repo};

const ROOMY: Duration = Duration::from_secs(30);

fn all(count: u64) -> Count {
    Count {
        count,
        complete: true,
    }
}

/// A clone three commits ahead of its upstream and two behind, with a modified, a staged new
/// and a deleted tracked file, three untracked files and an ignored one.
#[test]
fn branch_upstream_dirty_and_untracked() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let origin = tmp.path().join("origin");
    repo(&origin)?;
    commits(&origin, "shared.txt", 1)?;
    let work = tmp.path().join("work");
    git(
        tmp.path(),
        &["clone", "-q", origin.to_str().unwrap_or_default(), "work"],
    )?;
    commits(&origin, "theirs.txt", 2)?;
    git(&work, &["fetch", "-q"])?;
    commits(&work, "mine.txt", 3)?;

    std::fs::write(work.join("file.txt"), "changed\n")?;
    std::fs::write(work.join("staged.txt"), "new\n")?;
    git(&work, &["add", "staged.txt"])?;
    std::fs::remove_file(work.join("shared.txt"))?;
    std::fs::write(work.join(".gitignore"), "*.log\n")?;
    std::fs::create_dir_all(work.join("notes/deeper"))?;
    std::fs::write(work.join("notes/a.md"), "a")?;
    std::fs::write(work.join("notes/deeper/b.md"), "b")?;
    std::fs::write(work.join("build.log"), "ignored")?;

    let state = git::state_of(&work, ROOMY)?;
    let head = git(&work, &["rev-parse", "--short", "HEAD"])?;
    assert_eq!(
        state,
        Some(GitState {
            root: work.clone(),
            head: Head::Branch {
                name: "main".into()
            },
            commit: Some(head),
            upstream: Some(Upstream {
                name: "origin/main".into(),
                ahead: all(3),
                behind: all(2),
            }),
            // file.txt modified, staged.txt added, shared.txt deleted.
            dirty: all(3),
            // .gitignore, notes/a.md, notes/deeper/b.md (build.log is ignored).
            untracked: all(3),
        })
    );

    // From a folder inside the repository, the same repository.
    let inner = git::state_of(&work.join("notes"), ROOMY)?;
    assert_eq!(inner.map(|s| s.root), Some(work));
    Ok(())
}

#[test]
fn detached_unborn_and_no_repository() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let detached = tmp.path().join("detached");
    repo(&detached)?;
    commits(&detached, "more.txt", 1)?;
    git(&detached, &["checkout", "-q", "--detach", "HEAD~1"])?;
    let state = git::state_of(&detached, ROOMY)?.ok_or_else(|| anyhow::anyhow!("no state"))?;
    assert_eq!(state.head, Head::Detached);
    assert_eq!(state.branch_label(), "(detached)");
    assert_eq!(
        state.commit,
        Some(git(&detached, &["rev-parse", "--short", "HEAD"])?)
    );
    assert_eq!(state.upstream, None);

    let unborn = tmp.path().join("unborn");
    std::fs::create_dir_all(&unborn)?;
    git(&unborn, &["init", "-q", "-b", "trunk"])?;
    std::fs::write(unborn.join("x"), "x")?;
    let state = git::state_of(&unborn, ROOMY)?.ok_or_else(|| anyhow::anyhow!("no state"))?;
    assert_eq!(
        (state.head, state.commit, state.untracked),
        (
            Head::Unborn {
                name: "trunk".into()
            },
            None,
            all(1)
        )
    );

    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain)?;
    // The temporary folder is in no repository (unless the machine's /tmp is: then skip).
    if git(&plain, &["rev-parse", "--git-dir"]).is_err() {
        assert_eq!(git::state_of(&plain, ROOMY)?, None);
    }
    assert_eq!(git::state_of(&tmp.path().join("missing"), ROOMY)?, None);
    Ok(())
}

/// Every file under `.git`, with its bytes and modification time.
fn snapshot(git_dir: &Path) -> anyhow::Result<BTreeMap<String, (Vec<u8>, std::time::SystemTime)>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![git_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                out.insert(
                    entry.path().display().to_string(),
                    (std::fs::read(entry.path())?, meta.modified()?),
                );
            }
        }
    }
    Ok(out)
}

/// A tracked file touched (same bytes, new time) makes a status want to refresh the index:
/// nothing under `.git` changes, not the index, not a lock.
#[test]
fn the_repository_is_never_written() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let work = tmp.path().join("w");
    repo(&work)?;
    commits(&work, "b.txt", 2)?;
    std::thread::sleep(Duration::from_millis(20));
    // Same content, a newer time: a stat change only.
    let file = std::fs::File::options()
        .write(true)
        .open(work.join("b.txt"))?;
    file.set_modified(std::time::SystemTime::now() + Duration::from_secs(5))?;
    drop(file);
    std::fs::write(work.join("file.txt"), "changed\n")?;
    let before = snapshot(&work.join(".git"))?;
    let state = git::state_of(&work, ROOMY)?.ok_or_else(|| anyhow::anyhow!("no state"))?;
    assert_eq!(state.dirty, all(1));
    assert_eq!(snapshot(&work.join(".git"))?, before);
    Ok(())
}

/// A workspace folder that is a link is refused by name: its repository is elsewhere.
#[test]
fn a_linked_folder_is_refused() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let real = tmp.path().join("real");
    repo(&real)?;
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link)?;
    let err = git::state_of(&link, ROOMY).err().map(|e| e.to_string());
    assert_eq!(
        err,
        Some(format!(
            "{} is a symbolic link, and links are never followed here; open the real file or folder instead of the link",
            link.display()
        ))
    );
    Ok(())
}

/// 100,000 untracked files: a short deadline cuts the count short and says so, in about the
/// deadline (the margin is for a loaded machine). That a roomy deadline counts every file is
/// `branch_upstream_dirty_and_untracked`'s; walking 100,000 twice would make this test long.
#[test]
fn a_hundred_thousand_files_within_the_deadline() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let work = tmp.path().join("big");
    repo(&work)?;
    for d in 0..100 {
        let dir = work.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..1000 {
            std::fs::File::create(dir.join(format!("f{f:04}")))?;
        }
    }
    let started = Instant::now();
    let cut = git::state_of(&work, Duration::from_millis(30))?
        .ok_or_else(|| anyhow::anyhow!("no state"))?;
    let took = started.elapsed();
    assert!(!cut.untracked.complete, "{:?}", cut.untracked);
    assert!(cut.untracked.count < 100_000, "{:?}", cut.untracked);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    // The parts the deadline did not reach are still told: HEAD and its commit.
    assert_eq!(
        cut.head,
        Head::Branch {
            name: "main".into()
        }
    );
    Ok(())
}
