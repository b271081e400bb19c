//! What the daemon benches that run a real daemon process share: starting it as a child of
//! the bench binary, waiting for it to answer, and printing a figure's spread.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_home::Home;
use cross_agent_ipc::ConnectOptions;
use cross_agent_ipc::blocking::BlockingClient;

/// Where a bench runs: a temporary user home with a project in it, and the state directory.
pub struct Place {
    /// Removed when the bench ends.
    pub tmp: tempfile::TempDir,
    /// `HOME` for the daemon and the stand-in peers.
    pub user: PathBuf,
    pub home: Home,
    /// The project the sessions work in.
    pub cwd: String,
}

impl Place {
    pub fn new() -> Place {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        let project = user.join("work/proj");
        std::fs::create_dir_all(&project).unwrap();
        let state = tmp.path().join("state");
        let home = Home::from_vars(|name| match name {
            "CROSS_AGENT_HOME" => Some(state.clone().into_os_string()),
            "HOME" => Some(user.clone().into_os_string()),
            _ => None,
        })
        .unwrap();
        let cwd = project.to_string_lossy().into_owned();
        Place {
            tmp,
            user,
            home,
            cwd,
        }
    }
}

/// A `claude -p` stand-in in `dir` that waits `pause_secs`, then prints a successful result.
pub fn stand_in(dir: &Path, pause_secs: u32) -> PathBuf {
    let path = dir.join("claude-stand-in");
    // No `sleep 0`: a process more per turn would weigh on the figures.
    let pause = if pause_secs > 0 {
        format!("sleep {pause_secs}\n")
    } else {
        String::new()
    };
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n{pause}echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"stand-in answer\",\"session_id\":\"x\",\"permission_denials\":[]}}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Set in the child: the bench binary runs the daemon instead of the bench.
pub const CHILD_VAR: &str = "CROSS_AGENT_BENCH_DAEMON";

/// The bench binary again, as a daemon on `home`, with `env` added.
pub fn spawn(home: &Home, env: &[(&str, &str)]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env(CHILD_VAR, "1")
        .env("CROSS_AGENT_HOME", home.root())
        .envs(env.iter().copied())
        .env_remove("CROSS_AGENT_DEBUG")
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

pub fn wait_for_daemon(home: &Home, options: &ConnectOptions) -> BlockingClient {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(client) = BlockingClient::connect(home, options) {
            return client;
        }
        assert!(Instant::now() < deadline, "the daemon did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A figure's median.
pub fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[(sorted.len() - 1) / 2]
}

pub fn report(label: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    println!(
        "{label}: median {:.2?}, p90 {:.2?}, max {:.2?} ({} samples)",
        median(samples),
        at(0.9),
        sorted[sorted.len() - 1],
        sorted.len()
    );
}
