//! Helpers: real repositories made with the `git` CLI, editor user-data folders written the
//! way VS Code writes them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, ensure};

/// Runs `git` in `dir` with a fixed identity and no user or system config.
pub fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .with_context(|| format!("running git {args:?}"))?;
    ensure!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A new repository on branch `main` with one commit of `file.txt`.
pub fn repo(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    git(dir, &["init", "-q", "-b", "main"])?;
    std::fs::write(dir.join("file.txt"), "one\n")?;
    git(dir, &["add", "file.txt"])?;
    git(dir, &["commit", "-q", "-m", "first"])?;
    Ok(())
}

/// `count` commits, each changing `name`.
pub fn commits(dir: &Path, name: &str, count: usize) -> anyhow::Result<()> {
    for i in 0..count {
        std::fs::write(dir.join(name), format!("{name} {i}\n"))?;
        git(dir, &["add", name])?;
        git(dir, &["commit", "-q", "-m", &format!("{name} {i}")])?;
    }
    Ok(())
}

/// A user-data folder's `User/globalStorage/storage.json`, written as given.
pub fn storage_json(user_data: &Path, text: &str) -> anyhow::Result<PathBuf> {
    let dir = user_data.join("User/globalStorage");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("storage.json");
    std::fs::write(&path, text)?;
    Ok(path)
}

/// `User/workspaceStorage/<id>/workspace.json`, written as given.
pub fn workspace_json(user_data: &Path, id: &str, text: &str) -> anyhow::Result<PathBuf> {
    let dir = user_data.join("User/workspaceStorage").join(id);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("workspace.json");
    std::fs::write(&path, text)?;
    Ok(path)
}

/// A path as VS Code's `URI.file(path).toString()` writes it.
pub fn file_uri(path: &Path) -> String {
    url::Url::from_file_path(path)
        .map(|u| u.to_string())
        .unwrap_or_default()
}
