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

/// A file outside the workspace a planted link points to, and a check it was left alone.
struct Victim(std::path::PathBuf);

impl Victim {
    const TEXT: &'static str = "the user's own file\n";

    fn in_dir(dir: &Path) -> Victim {
        let path = dir.join("victim");
        std::fs::write(&path, Self::TEXT).unwrap();
        Victim(path)
    }

    fn assert_untouched(&self) {
        assert_eq!(std::fs::read_to_string(&self.0).unwrap(), Self::TEXT);
    }
}

fn refusal(error: cross_agent_handoff::HandoffError) -> String {
    assert!(
        matches!(error, cross_agent_handoff::HandoffError::Unsafe { .. }),
        "{error:?}"
    );
    error.to_string()
}

#[test]
fn a_planted_temporary_link_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::in_dir(dir.path());
    let repo = dir.path().join("repo");
    git(dir.path(), &["init", "-q", "repo"]);
    std::os::unix::fs::symlink(&victim.0, repo.join(".HANDOFF.md.tmp")).unwrap();
    deliver::write_brief(&repo, "brief").unwrap();
    deliver::write_brief(&repo, "second").unwrap();
    victim.assert_untouched();
    assert_eq!(
        std::fs::read_to_string(repo.join(HANDOFF_FILE)).unwrap(),
        "second"
    );
}

#[test]
fn a_link_at_the_brief_or_its_rotated_copy_is_refused_naming_it() {
    for name in [HANDOFF_FILE, PREVIOUS_FILE] {
        let dir = tempfile::tempdir().unwrap();
        let victim = Victim::in_dir(dir.path());
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        if name == PREVIOUS_FILE {
            std::fs::write(repo.join(HANDOFF_FILE), "earlier").unwrap();
        }
        let link = repo.join(name);
        std::os::unix::fs::symlink(&victim.0, &link).unwrap();
        let said = refusal(deliver::write_brief(&repo, "brief").unwrap_err());
        assert!(
            said.starts_with(&format!(
                "{} is a symbolic link (to {})",
                link.display(),
                victim.0.display()
            )),
            "{said}"
        );
        // The path as one `sh` word (a temporary folder's name needs no quotes).
        let word = cross_agent_process::shell_word(&link.to_string_lossy());
        assert!(said.contains(&format!("rm {word}")), "{said}");
        victim.assert_untouched();
        if name == PREVIOUS_FILE {
            assert_eq!(
                std::fs::read_to_string(repo.join(HANDOFF_FILE)).unwrap(),
                "earlier",
                "refused before the earlier brief was rotated"
            );
        }
    }
}

#[test]
fn a_link_anywhere_on_the_way_to_the_git_exclude_file_is_refused_before_anything_is_written() {
    // `.git/info/exclude` a link to a file, `.git/info` and `.git` links to folders.
    for (linked, target_is_dir) in [
        (".git/info/exclude", false),
        (".git/info", true),
        (".git", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let victim = Victim::in_dir(dir.path());
        let elsewhere = dir.path().join("elsewhere");
        git(dir.path(), &["init", "-q", "elsewhere"]);
        let exclude_elsewhere = elsewhere.join(".git/info/exclude");
        let before = std::fs::read_to_string(&exclude_elsewhere).unwrap();
        let repo = dir.path().join("repo");
        git(dir.path(), &["init", "-q", "repo"]);
        let link = repo.join(linked);
        if target_is_dir {
            std::fs::remove_dir_all(&link).unwrap();
            let target = if linked == ".git" {
                elsewhere.join(".git")
            } else {
                elsewhere.join(".git/info")
            };
            std::os::unix::fs::symlink(target, &link).unwrap();
        } else {
            std::fs::remove_file(&link).unwrap();
            std::os::unix::fs::symlink(&victim.0, &link).unwrap();
        }
        let said = refusal(deliver::write_brief(&repo, "brief").unwrap_err());
        assert!(
            said.starts_with(&format!("{} is a symbolic link", link.display())),
            "{linked}: {said}"
        );
        assert!(said.contains("a real"), "{said}");
        victim.assert_untouched();
        assert_eq!(
            std::fs::read_to_string(&exclude_elsewhere).unwrap(),
            before,
            "{linked}: the other repository's exclude is untouched"
        );
        assert!(
            !repo.join(HANDOFF_FILE).exists(),
            "{linked}: nothing written"
        );
    }
}

#[test]
fn the_exclude_file_keeps_its_mode_and_a_missing_folder_is_made_and_said() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    git(dir.path(), &["init", "-q", "repo"]);
    let exclude = repo.join(".git/info/exclude");
    std::fs::set_permissions(&exclude, std::fs::Permissions::from_mode(0o640)).unwrap();
    let written = deliver::write_brief(&repo, "brief").unwrap();
    assert_eq!(written.created_folder, None);
    assert_eq!(
        std::fs::metadata(&exclude).unwrap().permissions().mode() & 0o777,
        0o640
    );
    assert!(
        std::fs::read_to_string(&exclude)
            .unwrap()
            .contains("/HANDOFF.md\n")
    );

    let missing = dir.path().join("new/folder");
    let written = deliver::write_brief(&missing, "brief").unwrap();
    assert_eq!(written.created_folder, Some(missing.clone()));
    assert_eq!(
        std::fs::read_to_string(missing.join(HANDOFF_FILE)).unwrap(),
        "brief"
    );
}

#[test]
fn the_launcher_is_never_written_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::in_dir(dir.path());
    let write = |launch: &Path| {
        deliver::write_launcher(
            launch,
            dir.path(),
            "agent",
            Path::new("/bin/true"),
            "the prompt",
            std::ffi::OsStr::new("/usr/bin:/bin"),
        )
    };
    // A launch folder that is a link is refused.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let linked = dir.path().join("linked");
    std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
    refusal(write(&linked).unwrap_err());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // A file planted in it is never opened.
    let planted = dir.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::os::unix::fs::symlink(&victim.0, planted.join("prompt.txt")).unwrap();
    let error = write(&planted).unwrap_err().to_string();
    assert!(error.contains("prompt.txt"), "{error}");
    victim.assert_untouched();
}
