//! The budget watcher: with a budget in `[usage.budget]` of `CROSS_AGENT_HOME/config.toml`, the
//! daemon looks at today's spend every pass ([`PASS`], or `CROSS_AGENT_USAGE_BUDGET_PASS_SECONDS`)
//! and announces each budget once when it reaches 80 % and once at 100 % (docs/usage.md,
//! "Budgets"): a Telegram notice to every paired chat and a `usage_budget` decision line.
//!
//! The deciding is `cross_agent_usage::budget::step` (pure); this file reads, sends and keeps.
//! What was announced is kept in `usage-budget-state.json` before anything is said, so neither a
//! restart nor a handover says it twice. A notice decided while no bot polls (none set up,
//! or a successor taking over) stays in that file and goes out on a later pass of the same day.
//!
//! Today's spend comes through [`UsageSource`]: the daemon's own, [`EngineSource`], asks the
//! engine's live usage index (only appended bytes are read between passes); [`ScanSource`] reads
//! every file of the stores each time, as `cross-agent usage` does without a daemon.
//!
//! The watcher stops with the Telegram poller's stop signal, like the review robot: a daemon
//! being replaced lets its successor do the passes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_protocol::settings as var;
use cross_agent_protocol::timestamp::UnixMillis;
use cross_agent_stores::StoreRoots;
use cross_agent_usage::budget::{self, Crossing, Day, DaySpend};
use cross_agent_usage::{PriceTable, RateLimits, account, budget_config, scan};
use tokio::sync::watch;

/// How often the watcher looks at today's spend: the scan reads every file of the stores.
pub const PASS: Duration = Duration::from_secs(120);

/// Where the daemon's usage numbers come from.
pub trait UsageSource: Send + Sync + 'static {
    /// What each agent spent on `day` (UTC), priced with the price table in effect. Blocking.
    fn spend_on(&self, day: Day) -> Result<DaySpend, String>;
    /// Codex's latest rate-limit windows, `None` when no rollout recorded any. Blocking.
    fn rate_limits(&self) -> Result<Option<RateLimits>, String>;
}

/// The engine's live usage index for today's spend; Codex's windows from the stores.
pub struct EngineSource {
    engine: cross_agent_hub::Engine,
    scan: ScanSource,
}

impl EngineSource {
    pub fn new(engine: cross_agent_hub::Engine, home: PathBuf) -> EngineSource {
        EngineSource {
            engine,
            scan: ScanSource::from_env(home),
        }
    }
}

impl UsageSource for EngineSource {
    fn spend_on(&self, day: Day) -> Result<DaySpend, String> {
        let wire = self
            .engine
            .usage_report(cross_agent_protocol::usage::UsageReportParams {
                by: cross_agent_protocol::usage::UsageGroupBy::Agent,
                since: Some(day.start().0),
                caller: crate::own_caller::daemon_caller("budget-watch"),
            })
            .map_err(|e| e.to_string())?;
        let report = cross_agent_usage::Report::from_wire(&wire)
            .ok_or_else(|| "the usage index answered a report it could not read back".to_owned())?;
        Ok(DaySpend::of_report(&report, day))
    }

    fn rate_limits(&self) -> Result<Option<RateLimits>, String> {
        self.scan.rate_limits()
    }
}

/// Reads every file of the stores on each question (the path `cross-agent usage` takes).
pub struct ScanSource {
    home: PathBuf,
    roots: StoreRoots,
}

impl ScanSource {
    /// The stores of this daemon's environment; prices from `home`'s `prices.toml` override.
    pub fn from_env(home: PathBuf) -> ScanSource {
        ScanSource {
            home,
            roots: StoreRoots::from_env(),
        }
    }
}

impl UsageSource for ScanSource {
    fn spend_on(&self, day: Day) -> Result<DaySpend, String> {
        let prices = PriceTable::load(Some(&self.home)).map_err(|e| e.to_string())?;
        // Files that cannot be read are named by `cross-agent usage`; each pass would repeat them.
        let found = scan::scan(&self.roots);
        Ok(DaySpend::of(&account(&found.files), &prices, day))
    }

    fn rate_limits(&self) -> Result<Option<RateLimits>, String> {
        Ok(account(&scan::scan(&self.roots).files).rate_limits)
    }
}

/// Where a notice goes: the bot's paired chats.
pub trait Notices: Send + Sync + 'static {
    /// Whether a notice queued now would reach a chat (a poller runs, a chat is paired).
    fn ready(&self) -> bool;
    /// Queues `text` for every paired chat.
    fn notify(&self, text: &str);
}

impl Notices for cross_agent_telegram::Bot {
    fn ready(&self) -> bool {
        self.can_notify()
    }

    fn notify(&self, text: &str) {
        self.notify_text(text, "usage_budget");
    }
}

/// Starts the watcher's passes; they end when `stop` turns true.
pub fn start(
    home: PathBuf,
    source: Arc<dyn UsageSource>,
    notices: Arc<dyn Notices>,
    decisions: DecisionLog,
    mut stop: watch::Receiver<bool>,
) {
    let pass = std::env::var(var::USAGE_BUDGET_PASS_SECONDS)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .map_or(PASS, Duration::from_secs);
    let watcher = Arc::new(Watcher {
        home,
        source,
        notices,
        decisions,
        last_problem: parking_lot::Mutex::new(None),
    });
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(pass);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            let watcher = Arc::clone(&watcher);
            // A pass is blocking work (config, the stores, the state file).
            let _ = tokio::task::spawn_blocking(move || watcher.pass(UnixMillis::now())).await;
        }
    });
}

struct Watcher {
    home: PathBuf,
    source: Arc<dyn UsageSource>,
    notices: Arc<dyn Notices>,
    decisions: DecisionLog,
    /// The last problem logged, so a lasting one is said once.
    last_problem: parking_lot::Mutex<Option<String>>,
}

impl Watcher {
    fn problem(&self, problem: Option<String>) {
        let mut last = self.last_problem.lock();
        if let Some(p) = &problem
            && last.as_ref() != Some(p)
        {
            tracing::warn!(problem = %p, "the budget watcher skips its passes");
        }
        *last = problem;
    }

    fn pass(&self, now: UnixMillis) {
        let budgets = match budget_config::load(&self.home) {
            Ok(budgets) => budgets,
            Err(e) => return self.problem(Some(e.to_string())),
        };
        if budgets.is_empty() {
            return self.problem(None);
        }
        let loaded = match budget_config::load_state(&self.home) {
            Ok(loaded) => loaded,
            Err(e) => return self.problem(Some(e.to_string())),
        };
        if let Some(aside) = &loaded.quarantined {
            tracing::warn!(
                moved_to = %aside.display(),
                "the budget state file was damaged and moved aside; starting it afresh"
            );
        }
        let spend = match self.source.spend_on(Day::of(now)) {
            Ok(spend) => spend,
            Err(e) => return self.problem(Some(format!("today's spend: {e}"))),
        };
        self.problem(None);
        let mut announced = loaded.announced;
        let before = announced.clone();
        let crossings = budget::step(&budgets, &spend, &mut announced);
        if announced != before
            && let Err(e) = budget_config::save_state(&self.home, &announced)
        {
            // Unsaved, a crossing would be announced again on every pass: say nothing.
            return self.problem(Some(e.to_string()));
        }
        for crossing in &crossings {
            self.decisions.record(decision(crossing));
        }
        if announced.unsent().next().is_none() || !self.notices.ready() {
            return;
        }
        let notices: Vec<String> = announced
            .unsent()
            .map(|notice| {
                notice.notified = true;
                notice.notice.clone()
            })
            .collect();
        // Recorded as sent before it is queued: the queue lives in memory and is sent at once,
        // so a daemon killed between the two would otherwise send it again after its restart.
        // A kill in that instant loses the notice instead (its decision line is kept).
        if let Err(e) = budget_config::save_state(&self.home, &announced) {
            return self.problem(Some(e.to_string()));
        }
        for notice in &notices {
            self.notices.notify(notice);
        }
    }
}

/// The `usage_budget` decision line of a crossing: which budget, spend, limit, day.
fn decision(crossing: &Crossing) -> Decision {
    let mut line = Decision::new(
        DecisionKind::new("usage_budget"),
        Outcome::new(match crossing.threshold {
            budget::Threshold::Most => "reached_80",
            budget::Threshold::Spent => "reached_100",
        }),
    )
    .detail("budget", crossing.scope.key())
    .detail("day", crossing.day.text())
    .detail("spent_usd", crossing.spend.priced.dollars_exact())
    .detail("limit_usd", crossing.limit.dollars_exact())
    .detail("unpriced_calls", crossing.spend.unpriced_calls);
    if let budget::Scope::Agent(agent) = crossing.scope {
        line = line.agent(agent.as_str());
    }
    line
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt as _;

    use cross_agent_protocol::Agent;
    use cross_agent_usage::Money;
    use cross_agent_usage::budget::Spend;
    use pretty_assertions::assert_eq;

    use super::*;

    /// A day's spend the test sets.
    struct Fixed(parking_lot::Mutex<u128>);

    impl UsageSource for Fixed {
        fn spend_on(&self, day: Day) -> Result<DaySpend, String> {
            let mut agents = BTreeMap::new();
            agents.insert(
                Agent::Codex,
                Spend {
                    priced: Money(*self.0.lock() * 10_000_000_000),
                    unpriced_calls: 0,
                },
            );
            Ok(DaySpend {
                day: Some(day),
                agents,
            })
        }
        fn rate_limits(&self) -> Result<Option<RateLimits>, String> {
            Ok(None)
        }
    }

    /// A bot that polls (or not) as the test says, and what it was given.
    struct Phone {
        home: std::path::PathBuf,
        polling: parking_lot::Mutex<bool>,
        sent: parking_lot::Mutex<Vec<String>>,
        /// The state file as it was on disk when each notice was queued.
        state_when_queued: parking_lot::Mutex<Vec<String>>,
    }

    impl Notices for Phone {
        fn ready(&self) -> bool {
            *self.polling.lock()
        }

        fn notify(&self, text: &str) {
            assert!(*self.polling.lock(), "queued while no bot polls: {text}");
            let state = std::fs::read_to_string(self.home.join("usage-budget-state.json"))
                .unwrap_or_default();
            self.state_when_queued.lock().push(state);
            self.sent.lock().push(text.to_owned());
        }
    }

    fn watching(home: &std::path::Path, cents: u128) -> (Watcher, Arc<Fixed>, Arc<Phone>) {
        let source = Arc::new(Fixed(parking_lot::Mutex::new(cents)));
        let phone = Arc::new(Phone {
            home: home.to_owned(),
            polling: parking_lot::Mutex::new(false),
            sent: parking_lot::Mutex::new(Vec::new()),
            state_when_queued: parking_lot::Mutex::new(Vec::new()),
        });
        let watcher = Watcher {
            home: home.to_owned(),
            source: Arc::clone(&source) as Arc<dyn UsageSource>,
            notices: Arc::clone(&phone) as Arc<dyn Notices>,
            decisions: DecisionLog::new(home),
            last_problem: parking_lot::Mutex::new(None),
        };
        (watcher, source, phone)
    }

    fn decisions(home: &std::path::Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(home.join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_notice_decided_while_no_bot_polls_goes_out_once_it_does() {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config.toml");
        std::fs::write(&config, "[usage.budget]\ncodex = \"10\"\n").unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
        let (watcher, _, phone) = watching(home.path(), 8_50);
        let now = UnixMillis::parse_rfc3339("2026-12-06T10:00:00Z").unwrap();
        watcher.pass(now);
        // Decided and recorded, not sent: no bot.
        assert_eq!(decisions(home.path()).len(), 1);
        assert_eq!(phone.sent.lock().len(), 0);
        *phone.polling.lock() = true;
        watcher.pass(now);
        watcher.pass(now);
        assert_eq!(
            *phone.sent.lock(),
            [
                "⚠️ 80% of Codex's daily budget is spent: $8.50 of $10.00 on 2026-12-06 (UTC, \
              85%; only priced calls count)."
            ]
        );
        // On disk as sent before it was queued: a kill right after cannot send it twice.
        let on_disk: serde_json::Value =
            serde_json::from_str(&phone.state_when_queued.lock()[0]).unwrap();
        assert!(
            on_disk.to_string().contains("\"notified\":true"),
            "{on_disk}"
        );
        assert_eq!(decisions(home.path()).len(), 1);
        let line = &decisions(home.path())[0];
        assert_eq!(
            (&line["kind"], &line["outcome"], &line["agent"]),
            (
                &serde_json::json!("usage_budget"),
                &serde_json::json!("reached_80"),
                &serde_json::json!("codex")
            )
        );

        // A watcher started afresh (a restart) on the same home says nothing more; the next
        // day the same spend is announced again.
        let (again, _, phone_again) = watching(home.path(), 8_50);
        *phone_again.polling.lock() = true;
        again.pass(now);
        assert_eq!(phone_again.sent.lock().len(), 0);
        let tomorrow = UnixMillis::parse_rfc3339("2026-12-07T10:00:00Z").unwrap();
        again.pass(tomorrow);
        assert_eq!(phone_again.sent.lock().len(), 1);
    }
}
