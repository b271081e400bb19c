//! `cross-agent desktop`: runs `cross-agent-desktop` from beside the binary, and says how to
//! build it when it is not there. The binary is hard-linked into a temporary folder (on the
//! target's file system) so what is beside it is the test's to choose.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_cross-agent");

/// A folder holding a hard link of the real binary, and nothing else.
fn lone_binary() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bin = dir.path().join("cross-agent");
    std::fs::hard_link(BIN, &bin).unwrap();
    (dir, bin)
}

fn desktop(bin: &Path, home: &Path) -> std::process::Output {
    Command::new(bin)
        .arg("desktop")
        .env("HOME", home)
        .env("CROSS_AGENT_HOME", home.join("state"))
        .output()
        .unwrap()
}

#[test]
fn without_the_app_beside_it_desktop_says_how_to_build_it() {
    let (dir, bin) = lone_binary();
    let out = desktop(&bin, dir.path());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} is missing",
            dir.path().join("cross-agent-desktop").display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("cargo build -p cross-agent-desktop --release"),
        "{stderr}"
    );
}

#[test]
fn desktop_runs_the_app_beside_it() {
    let (dir, bin) = lone_binary();
    let ran = dir.path().join("ran");
    let app = dir.path().join("cross-agent-desktop");
    std::fs::write(
        &app,
        format!("#!/bin/sh\necho opened > '{}'\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = desktop(&bin, dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "opened\n");
}
