//! `install` and `uninstall` change every file they plan for, or none: a target they may not
//! write (a file whose owner made it read-only, a directory nobody may write in, a shim folder
//! that is a link) is refused
//! before the first write, naming it and the fix, also when run as root, whom the kernel lets
//! write anyway; and a failure the check cannot foresee — here a real file size limit
//! (`ulimit -f`, what a full quota does), hit by the last file — takes back the files already
//! written, the backups and directories made, and the ones removed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;

use super::install_home::{BIN, EVERYTHING, Person};

/// Sets a path's mode, and puts 0755 / 0644 back when dropped, so that the temporary HOME can
/// be removed even when the tests do not run as root.
struct Mode(PathBuf);

impl Mode {
    fn set(path: PathBuf, mode: u32) -> Mode {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        Mode(path)
    }
}

impl Drop for Mode {
    fn drop(&mut self) {
        let mode = if self.0.is_dir() { 0o755 } else { 0o644 };
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(mode));
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn failed(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "it should have failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_read_only_config_is_refused_naming_it_and_nothing_is_written() {
    let person = Person::with_configs();
    let codex = person.path(".codex/config.toml");
    let _read_only = Mode::set(codex.clone(), 0o444);
    let before = person.tree();

    let dry = person.ok(&["install", "--dry-run", "--agents", "claude,codex,grok"]);
    assert!(
        dry.contains(&format!(
            "`cross-agent install` would change nothing, because cross-agent cannot write \
             everything it would change:\n  {} is read-only (mode 0444)",
            codex.display()
        )),
        "{dry}"
    );

    let stderr = failed(&person.run(&["install", "--agents", "claude,codex,grok"]));
    assert!(
        stderr.contains(&format!(
            "{} is read-only (mode 0444): cross-agent does not change a file its owner may not \
             write — make it writable (`chmod u+w {}`), or leave Codex out with --agents",
            codex.display(),
            codex.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("install: nothing was changed"), "{stderr}");
    assert_eq!(
        person.tree(),
        before,
        "no file changed and no backup taken, not even of the other agents' files"
    );
    assert_eq!(mode(&codex), 0o444);

    // Left out as the message says, the others are set up and Codex's file is not touched.
    person.ok(&["install", "--agents", "claude,grok"]);
    assert_eq!(
        person.read(".codex/config.toml"),
        before[".codex/config.toml"]
    );
    assert!(!person.path(".codex/config.toml.cross-agent.bak").exists());
}

#[test]
fn uninstall_refuses_a_config_made_read_only_since_and_changes_nothing() {
    let person = Person::with_configs();
    person.ok(EVERYTHING);
    let grok = person.path(".grok/config.toml");
    let _read_only = Mode::set(grok.clone(), 0o400);
    let installed = person.tree();

    let stderr = failed(&person.run(&["uninstall"]));
    assert!(
        stderr.contains(&format!(
            "{} is read-only (mode 0400): cross-agent does not change a file its owner may not \
             write — make it writable (`chmod u+w {}`), then run `cross-agent uninstall` again",
            grok.display(),
            grok.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        person.tree(),
        installed,
        "every file, backup and link as it was"
    );
}

#[test]
fn a_directory_nobody_may_write_in_is_refused_before_any_other_file_changes() {
    let person = Person::with_configs();
    let codex_dir = person.path(".codex");
    // No write bit for anyone: as root the kernel would still let the backup and the temporary
    // file be made there, so install decides by the mode bits too.
    let _locked = Mode::set(codex_dir.clone(), 0o555);
    let before = person.tree();

    let stderr = failed(&person.run(&["install", "--agents", "claude,codex"]));
    assert!(
        stderr.contains(&format!(
            "{} is read-only (mode 0555): no file can be written in it — make it writable \
             (`chmod u+w {}`), or leave Codex out with --agents",
            codex_dir.display(),
            codex_dir.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        person.tree(),
        before,
        "~/.claude.json and settings.json unchanged, no backup beside them"
    );
}

#[test]
fn a_shim_folder_that_is_a_link_is_refused_before_any_file_changes() {
    let person = Person::with_configs();
    std::fs::create_dir_all(person.path("dotfiles/bin")).unwrap();
    std::fs::create_dir_all(person.path(".local")).unwrap();
    std::os::unix::fs::symlink(person.path("dotfiles/bin"), person.path(".local/bin")).unwrap();
    let before = person.tree();

    let stderr = failed(&person.run(&["install", "--agents", "claude,codex", "--panels"]));
    assert!(
        stderr.contains(&format!(
            "{} is a symbolic link (to {}); cross-agent does not write through links — replace \
             the link with the folder it points at, or choose another --shim-dir",
            person.path(".local/bin").display(),
            person.path("dotfiles/bin").display()
        )),
        "{stderr}"
    );
    assert_eq!(
        person.tree(),
        before,
        "no shim link made through it, no file changed"
    );
}

/// `cross-agent <args>` for `person` under a file size limit of 64 blocks (32 or 64 KiB, as
/// the shell counts them) with SIGXFSZ ignored: a write past it fails with EFBIG ("File too
/// large"), as one on a full quota fails, instead of killing the process.
fn run_with_file_size_limit(person: &Person, args: &[&str]) -> Output {
    Command::new("/bin/sh")
        .arg("-c")
        .arg("ulimit -f 64 && trap '' XFSZ && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .env_clear()
        .env("HOME", person.home())
        .env("PATH", "/usr/bin:/bin")
        .env("CROSS_AGENT_LOG", "error")
        .output()
        .unwrap()
}

/// A person whose VS Code settings (the last file install writes) are 256 KiB, and who has
/// never run Grok (install creates `~/.grok/config.toml` and its folder).
fn person_with_a_large_last_file() -> Person {
    let person = Person::with_configs();
    std::fs::remove_dir_all(person.path(".grok")).unwrap();
    let padding = format!("\t// {}\n", "x".repeat(256 * 1024));
    person.write(
        ".config/Code/User/settings.json",
        &format!("{{\n{padding}\t\"editor.fontSize\": 14\n}}\n"),
    );
    std::fs::set_permissions(
        person.path(".claude.json"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    person
}

#[test]
fn a_failure_on_the_way_takes_back_every_file_already_written() {
    let person = person_with_a_large_last_file();
    let before = person.tree();

    let stderr = failed(&run_with_file_size_limit(&person, EVERYTHING));
    assert!(stderr.contains("nothing was changed (the "), "{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    assert_eq!(
        person.tree(),
        before,
        "Claude Code's, Codex's and Grok's files as they were, their backups gone"
    );
    assert!(
        !person.path(".grok").exists(),
        "the folder made for Grok's new file is gone again"
    );
    assert_eq!(mode(&person.path(".claude.json")), 0o640, "its mode kept");
}

#[test]
fn a_failed_uninstall_puts_back_what_it_had_taken_out() {
    let person = person_with_a_large_last_file();
    let before = person.tree();
    person.ok(EVERYTHING);
    let installed = person.tree();
    assert!(installed.contains_key(".claude.json.cross-agent.bak"));
    assert!(installed.contains_key(".grok/config.toml"));

    let stderr = failed(&run_with_file_size_limit(&person, &["uninstall"]));
    assert!(stderr.contains("nothing was changed (the "), "{stderr}");
    assert_eq!(
        person.tree(),
        installed,
        "the files restored and removed on the way (Claude Code's with their backups, Grok's \
         created one) are back as install left them"
    );
    assert_eq!(mode(&person.path(".claude.json")), 0o640);

    // Without the limit it goes through.
    person.ok(&["uninstall"]);
    assert_eq!(person.tree(), before);
}
