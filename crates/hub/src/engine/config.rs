//! The engine's daemon-wide knobs: how long finished records are kept, and how often the
//! peers' transcripts are looked at. The daemon reads them from its own environment once, at
//! start; the engine never reads the environment itself.

use std::time::Duration;

use cross_agent_protocol::settings as var;
use cross_agent_stores::live::LiveOptions;

/// `CROSS_AGENT_DELIVERY_TTL`'s default: 7 days.
const DEFAULT_DELIVERY_TTL: Duration = Duration::from_secs(604_800);
/// How often a late-answer watch reads the peer's transcript (docs/spec/cross-agent-mcp.md §6: every 20 s).
const LATE_ANSWER_POLL: Duration = Duration::from_secs(20);
/// While the transport waits, the peer's transcript is read this often for a finished turn
/// that echoed the request id (docs/spec/cross-agent-mcp.md §9: the wait is broken into 30-second chunks).
const TRANSCRIPT_CHECK: Duration = Duration::from_secs(30);
/// How long a reply waits before it looks again for a sender's panel that closed.
const RETURN_RETRY: Duration = Duration::from_secs(10);

/// What [`crate::Engine::open`] is told instead of reading the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// How long finished records are kept. Pruning is store-wide rather than per call, so this
    /// one setting is the daemon's, not a registration's.
    pub delivery_ttl: Duration,
    /// How often late-answer watches read the watched transcripts.
    pub late_answer_poll: Duration,
    /// How often a running turn's transcript is read for a finished answer.
    pub transcript_check: Duration,
    /// `CROSS_AGENT_LATE_ANSWER_WATCH` where no registration is at hand (an orphan's answer
    /// read back at start).
    pub late_answer_watch_secs: u64,
    /// Between the attempts of return traffic to find the sender's panel again.
    pub return_retry: Duration,
    /// How the session index keeps current (`CROSS_AGENT_INDEX_REWALK_MS`,
    /// `CROSS_AGENT_INDEX_NOTIFY`).
    pub index: LiveOptions,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            delivery_ttl: DEFAULT_DELIVERY_TTL,
            late_answer_poll: LATE_ANSWER_POLL,
            transcript_check: TRANSCRIPT_CHECK,
            late_answer_watch_secs: crate::settings::DEFAULT_LATE_ANSWER_WATCH_SECS,
            return_retry: RETURN_RETRY,
            index: LiveOptions::default(),
        }
    }
}

impl EngineConfig {
    /// The config from variables looked up by `var` (the daemon passes its own environment).
    /// A value that is missing, unreadable or not positive keeps the default.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> EngineConfig {
        let number = |name: &str| {
            var(name)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|v| *v > 0)
        };
        let defaults = EngineConfig::default();
        EngineConfig {
            delivery_ttl: number(var::DELIVERY_TTL)
                .map_or(defaults.delivery_ttl, Duration::from_secs),
            late_answer_poll: number(var::LATE_ANSWER_POLL_MS)
                .map_or(defaults.late_answer_poll, Duration::from_millis),
            transcript_check: number(var::TRANSCRIPT_CHECK_MS)
                .map_or(defaults.transcript_check, Duration::from_millis),
            // Zero is meaningful here: no watch.
            late_answer_watch_secs: var(var::LATE_ANSWER_WATCH)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(defaults.late_answer_watch_secs),
            return_retry: defaults.return_retry,
            index: LiveOptions {
                rewalk: number(var::INDEX_REWALK_MS)
                    .map_or(defaults.index.rewalk, Duration::from_millis),
                notifications: var(var::INDEX_NOTIFY)
                    .is_none_or(|v| !matches!(v.trim(), "off" | "0" | "false")),
                serial_walks: var(var::INDEX_SERIAL_WALKS).is_some_and(|v| v.trim() == "1"),
            },
        }
    }

    /// [`EngineConfig::delivery_ttl`] in milliseconds.
    pub(crate) fn delivery_ttl_ms(&self) -> i64 {
        i64::try_from(self.delivery_ttl.as_millis()).unwrap_or(i64::MAX)
    }
}
