//! `usage_report`: what the CLI's `cross-agent usage` asks the daemon, whose live index keeps
//! every usage file's parse current from appended bytes, and the grouped report it gets back
//! (docs/usage.md). The report is the one `cross-agent-usage` builds; money travels as exact
//! picodollars so the CLI prints what it would have computed itself.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Agent;
use crate::bridge::CallerContext;

/// What the rows of a usage report are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UsageGroupBy {
    Session,
    Agent,
    Model,
    // The UTC day of the call. A plain comment: a documented variant would turn the schema's
    // `enum` into a `oneOf`.
    Day,
    Cwd,
}

/// `usage_report`: tokens and cost grouped one way, over the calls since a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageReportParams {
    pub by: UsageGroupBy,
    /// Only calls at or after this: milliseconds since the Unix epoch.
    #[serde(default)]
    pub since: Option<i64>,
    /// Whose stores: the caller's environment names them, as for the session listing.
    pub caller: CallerContext,
}

/// Tokens by kind; the kinds are disjoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageTokens {
    pub input: u64,
    pub output: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
}

/// One group's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageRow {
    pub key: String,
    /// The agent, when every call of the group is one agent's.
    pub agent: Option<Agent>,
    pub calls: u64,
    pub tokens: UsageTokens,
    /// The cost of the calls that have a price, in picodollars (10⁻¹² $), as a decimal string:
    /// exact, and wider than a JSON number holds.
    pub priced_cost_picodollars: String,
    /// Calls whose cost is unknown: the row's cost is then unknown, never 0.
    pub unpriced_calls: u64,
    /// The models of those calls (`(none)` when the file names none).
    pub unpriced_models: Vec<String>,
}

/// A session whose files record no usage at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageSessionRef {
    pub agent: Agent,
    pub session_id: String,
}

/// The report `cross-agent usage` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageReportResponse {
    pub by: UsageGroupBy,
    /// The start of the window asked for (milliseconds since the Unix epoch).
    #[serde(default)]
    pub since: Option<i64>,
    /// Largest cost first, then most tokens.
    pub rows: Vec<UsageRow>,
    pub total: UsageRow,
    #[serde(default)]
    pub no_usage_recorded: Vec<UsageSessionRef>,
    /// Codex's latest rate-limit windows, as `usage --json` shows them (`null` when none).
    #[serde(default)]
    pub rate_limits: Option<Value>,
    /// The date of the price table used.
    pub prices_date: String,
    /// Files that could not be read, one line each naming the file.
    #[serde(default)]
    pub warnings: Vec<String>,
}
