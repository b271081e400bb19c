//! Writing the brief where the work is: rotation, the local git-ignore (also from a linked
//! worktree), and the launcher script that reads the prompt from its file.

use std::path::Path;
use std::process::Command;

use cross_agent_handoff::deliver::{self, HANDOFF_FILE, PREVIOUS_FILE};
use pretty_assertions::assert_eq;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[test]
fn a_second_brief_rotates_the_first_and_both_are_ignored_once() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("src/deep")).unwrap();
    git(&repo, &["init", "-q"]);
    assert_eq!(deliver::workspace_root(&repo.join("src/deep")), repo);

    let first = deliver::write_brief(&repo, "first").unwrap();
    assert_eq!(first.rotated_to, None);
    let second = deliver::write_brief(&repo, "second").unwrap();
    assert_eq!(second.rotated_to, Some(repo.join(PREVIOUS_FILE)));
    assert_eq!(
        std::fs::read_to_string(repo.join(HANDOFF_FILE)).unwrap(),
        "second"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join(PREVIOUS_FILE)).unwrap(),
        "first"
    );
    let exclude = repo.join(".git/info/exclude");
    assert_eq!(second.ignored_in, Some(exclude.clone()));
    let text = std::fs::read_to_string(&exclude).unwrap();
    assert_eq!(text.matches("/HANDOFF.md\n").count(), 1, "{text}");
    assert_eq!(text.matches("/HANDOFF.prev.md\n").count(), 1, "{text}");
    let status = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "",
        "git sees neither file"
    );
}

#[test]
fn a_linked_worktree_is_ignored_through_the_main_repository() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a"), "a").unwrap();
    git(&repo, &["add", "a"]);
    git(&repo, &["commit", "-qm", "a"]);
    let linked = dir.path().join("linked");
    git(&repo, &["worktree", "add", "-q", linked.to_str().unwrap()]);
    deliver::write_brief(&linked, "brief").unwrap();
    let status = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(&linked)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "",
        "git sees no HANDOFF.md"
    );
}

#[test]
fn the_launcher_passes_the_prompt_file_unquoted_as_one_argument() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let record = dir.path().join("args");
    let agent = dir.path().join("agent");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\nprintf '%s\\n---\\n' \"$#\" \"$1\" > {}\n",
            record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let prompt = "line one 'quoted' \"double\" $HOME `date` \\\n\nline three; exit 9";
    let launcher = deliver::write_launcher(
        &dir.path().join("launch"),
        &work,
        "agent",
        &agent,
        prompt,
        std::ffi::OsStr::new("/usr/bin:/bin"),
    )
    .unwrap();
    let run = Command::new("sh").arg(&launcher.script).output().unwrap();
    assert!(run.status.success());
    // The window's title names this launch, so macOS can close this window and no other.
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "\u{1b}]0;cross-agent handoff launch\u{7}"
    );
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        format!("1\n---\n{prompt}\n---\n")
    );
}
