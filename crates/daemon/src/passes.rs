//! The daemon's periodic background passes (the review robot, the budget watcher): one timer
//! loop that runs each pass as blocking work until the daemon stops, and a problem said once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// The pass interval: `variable` in whole seconds when set and above zero, else `default`.
pub fn interval_from_env(variable: &str, default: Duration) -> Duration {
    std::env::var(variable)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(default, Duration::from_secs)
}

/// Runs `pass` every `every` (a pass late behind a slow one is delayed, not bunched) until
/// `stop` turns true. A pass is blocking work (config, the stores, state files, children), so
/// it runs on the blocking pool; it gets `stop` to end a long pass early.
pub fn run_every<P>(every: Duration, mut stop: watch::Receiver<bool>, pass: P)
where
    P: Fn(&watch::Receiver<bool>) + Send + Sync + 'static,
{
    let pass = Arc::new(pass);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            let pass = Arc::clone(&pass);
            let stopped = stop.clone();
            let _ = tokio::task::spawn_blocking(move || {
                crate::memory::run_then_hand_back(|| pass(&stopped))
            })
            .await;
        }
    });
}

/// What keeps a pass from running, logged when it starts or changes, not on every pass.
pub struct LastingProblem {
    /// Who skips its passes, for the log line ("the review robot").
    who: &'static str,
    last: parking_lot::Mutex<Option<String>>,
}

impl LastingProblem {
    pub fn new(who: &'static str) -> LastingProblem {
        LastingProblem {
            who,
            last: parking_lot::Mutex::new(None),
        }
    }

    /// Records this pass's problem (`None`: it ran); says a new one.
    pub fn set(&self, problem: Option<String>) {
        let mut last = self.last.lock();
        if let Some(p) = &problem
            && last.as_ref() != Some(p)
        {
            tracing::warn!(problem = %p, "{} skips its passes", self.who);
        }
        *last = problem;
    }
}
