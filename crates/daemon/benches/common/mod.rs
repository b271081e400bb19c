//! What the daemon benches that run a real daemon process share: starting it as a child of
//! the bench binary, waiting for it to answer, and printing a figure's spread.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cross_agent_ipc::blocking::BlockingClient;
use cross_agent_ipc::{ConnectOptions, Home};

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

pub fn report(label: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    println!(
        "{label}: median {:.2?}, p90 {:.2?}, max {:.2?} ({} samples)",
        at(0.5),
        at(0.9),
        sorted[sorted.len() - 1],
        sorted.len()
    );
}
