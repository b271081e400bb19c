//! `cross-agent handoff` into a workspace it did not make, driven through the built binary: a
//! link a cloned repository can ship at a name the handoff writes (its temporary file,
//! `HANDOFF.md`, `.git/info/exclude`) is never written through — the victim it points to is
//! left as it was — and a handoff into a folder that does not exist says it made it.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use super::handoff::{
    User, assert_success, git_init, json_of_success, small_cursor_session, stderr_of_exit_1,
};

const GOAL: &str = "Tidy the importer in src/import.rs.";
const VICTIM_TEXT: &str = "the user's own file, not a brief\n";

/// A file outside the workspace a planted link points to.
fn victim(user: &User) -> PathBuf {
    let victim = user.home.path().join("victim");
    std::fs::write(&victim, VICTIM_TEXT).unwrap();
    victim
}

fn assert_untouched(victim: &Path) {
    assert_eq!(
        std::fs::read_to_string(victim).unwrap(),
        VICTIM_TEXT,
        "the file the link points to was written"
    );
}

fn hand_off_to_folder(user: &User, id: &str, folder: &Path, json: bool) -> std::process::Output {
    let mut args = vec!["handoff", id, folder.to_str().unwrap()];
    if json {
        args.push("--json");
    }
    user.command(&args).output().unwrap()
}

#[test]
fn a_link_planted_at_the_old_temporary_name_is_left_alone_and_the_brief_is_written() {
    let user = User::new();
    let project = user.home.project("clone").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    let victim = victim(&user);
    symlink(&victim, project.join(".HANDOFF.md.tmp")).unwrap();

    let out = hand_off_to_folder(&user, &id, &project, false);
    assert_success(&out);
    assert_untouched(&victim);
    let brief = std::fs::read_to_string(project.join("HANDOFF.md")).unwrap();
    assert!(brief.contains("Tidy the importer"), "{brief}");
    assert!(
        std::fs::symlink_metadata(project.join("HANDOFF.md"))
            .unwrap()
            .file_type()
            .is_file()
    );
    // Nothing else is left behind: the link as it was, the brief, no temporary file.
    let mut names: Vec<String> = std::fs::read_dir(&project)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".HANDOFF.md.tmp", "HANDOFF.md"]);
}

#[test]
fn a_link_at_handoff_md_is_refused_naming_it_and_nothing_is_written() {
    let user = User::new();
    let project = user.home.project("clone").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);
    let victim = victim(&user);
    let link = project.join("HANDOFF.md");
    symlink(&victim, &link).unwrap();

    let err = stderr_of_exit_1(&hand_off_to_folder(&user, &id, &project, false));
    assert!(
        err.contains(&format!("{} is a symbolic link", link.display())),
        "{err}"
    );
    // The path as one `sh` word (a temporary folder's name needs no quotes).
    let word = cross_agent_process::shell_word(&link.to_string_lossy());
    assert!(err.contains(&format!("rm {word}")), "{err}");
    assert_untouched(&victim);
    assert!(
        !project.join("HANDOFF.prev.md").exists(),
        "the link was not rotated either"
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let refused = user
        .decisions()
        .into_iter()
        .find(|d| d["kind"] == "handoff" && d["outcome"] == "refused")
        .expect("a refused handoff decision");
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("is a symbolic link"),
        "{refused}"
    );
}

#[test]
fn a_link_at_the_git_exclude_file_is_refused_naming_it_before_anything_is_written() {
    let user = User::new();
    let project = user.home.project("clone").unwrap();
    git_init(&project);
    let id = small_cursor_session(&user, &project, GOAL);
    let victim = victim(&user);
    let exclude = project.join(".git/info/exclude");
    std::fs::remove_file(&exclude).unwrap();
    symlink(&victim, &exclude).unwrap();

    let err = stderr_of_exit_1(&hand_off_to_folder(&user, &id, &project, false));
    assert!(
        err.contains(&format!("{} is a symbolic link", exclude.display())),
        "{err}"
    );
    assert!(err.contains("make") && err.contains("a real file"), "{err}");
    assert_untouched(&victim);
    assert!(
        !project.join("HANDOFF.md").exists(),
        "refused before the brief was written"
    );
}

#[test]
fn a_handoff_into_a_folder_that_does_not_exist_says_it_made_it() {
    let user = User::new();
    let project = user.home.project("p").unwrap();
    let id = small_cursor_session(&user, &project, GOAL);

    let missing = user.home.path().join("new/deeper");
    let out = hand_off_to_folder(&user, &id, &missing, false);
    assert_success(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("created {} (it did not exist)", missing.display())),
        "{said}"
    );
    assert!(missing.join("HANDOFF.md").is_file());

    let missing = user.home.path().join("another");
    let json = json_of_success(&hand_off_to_folder(&user, &id, &missing, true));
    assert_eq!(json["created_folder"], missing.to_str().unwrap());

    // A folder that was there: nothing said, `null` in the JSON.
    let out = hand_off_to_folder(&user, &id, &missing, false);
    assert_success(&out);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("created "));
    let json = json_of_success(&hand_off_to_folder(&user, &id, &missing, true));
    assert!(json["created_folder"].is_null(), "{json}");
}
