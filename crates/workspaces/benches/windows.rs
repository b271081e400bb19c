//! What `cross-agent windows --json` costs with 20 open workspaces, each a small git repository
//! with a modified and an untracked file: the editors' state read, the git state of each, the
//! JSON written. Goal: ≤ 100 ms. Run with `cargo bench -p cross-agent-workspaces --bench
//! windows` (release); prints the median and the slowest of the runs beside the goal.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cross_agent_workspaces::listing::{self, ListingOptions};
use cross_agent_workspaces::state::Editor;
use cross_agent_workspaces::x11::LiveWindows;

const WORKSPACES: usize = 20;
const RUNS: usize = 15;
const GOAL: Duration = Duration::from_millis(100);

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.invalid")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.invalid")
        .status()?;
    anyhow::ensure!(status.success(), "git {args:?} failed");
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let mut windows = Vec::new();
    for i in 0..WORKSPACES {
        let dir = tmp.path().join(format!("ws{i:02}"));
        std::fs::create_dir_all(dir.join("src"))?;
        git(&dir, &["init", "-q", "-b", "main"])?;
        for f in 0..50 {
            std::fs::write(dir.join(format!("src/f{f}.rs")), format!("// {f}\n"))?;
        }
        git(&dir, &["add", "."])?;
        git(&dir, &["commit", "-q", "-m", "one"])?;
        std::fs::write(dir.join("src/f0.rs"), "// changed\n")?;
        std::fs::write(dir.join("new.txt"), "new\n")?;
        let uri = url::Url::from_file_path(&dir)
            .map_err(|()| anyhow::anyhow!("no URI for {}", dir.display()))?;
        windows.push(format!(r#"{{"folder": "{uri}", "uiState": {{}}}}"#));
    }
    let user_data = tmp.path().join("Code");
    std::fs::create_dir_all(user_data.join("User/globalStorage"))?;
    std::fs::write(
        user_data.join("User/globalStorage/storage.json"),
        format!(
            r#"{{"windowsState": {{"openedWindows": [{}]}}}}"#,
            windows.join(",")
        ),
    )?;
    let options = ListingOptions {
        editors: vec![Editor {
            name: "VS Code",
            user_data,
        }],
        all: false,
        git: true,
        git_deadline: Duration::from_millis(1500),
        windows: LiveWindows::NoDisplay,
    };
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let listed = listing::list(&options);
        let json = serde_json::to_vec(&listed)?;
        times.push(started.elapsed());
        anyhow::ensure!(listed.rows.len() == WORKSPACES && !json.is_empty());
    }
    times.sort();
    let median = times[RUNS / 2];
    let slowest = times[RUNS - 1];
    println!(
        "windows --json, {WORKSPACES} workspaces: median {median:.1?}, slowest {slowest:.1?} (goal ≤ {GOAL:?}) {}",
        if median <= GOAL { "ok" } else { "OVER" }
    );
    Ok(())
}
