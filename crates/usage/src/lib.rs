//! What each session costs: tokens by kind and money, per message, read exactly from the agents'
//! own files (docs/usage.md; issue 29 §1). In `docs/architecture.md` it sits beside `stores`,
//! which it reads through: it never writes an agent's store.
//!
//! The work is split so the daemon's live index can reuse it later:
//! - [`calls`] and [`keys`] are what is kept per call: a fixed 36-byte record, its identity a
//!   128-bit hash and its model an interned id;
//! - readers ([`claude`], [`codex`], [`grok`]) turn one file's bytes — whole, or only the bytes
//!   appended since the last look ([`lines::LineBuffer`]) — into a parsed [`FileUsage`];
//! - [`account`] is pure: from every file's [`FileUsage`] it decides what counts once and for
//!   which session (duplicates, replays, copies, sub-agents) and returns each file's [`Share`]
//!   of the calls ([`Shares`]: one table, in blocks), read as [`Charge`]s;
//! - [`prices`] prices a charge (`None` when the model has no price, never 0);
//! - [`report`] groups charges by session, agent, model, day or cwd; [`totals`] keeps each
//!   session's totals by file for the daemon's listing;
//! - [`limits`] shows Codex's latest rate-limit windows;
//! - [`budget`] decides when a daily budget reaches 80 % and 100 % (pure); [`budget_config`]
//!   reads the budgets from `config.toml` and keeps what was announced;
//! - [`scan`] finds the files in the stores and reads them whole (the CLI's path without a
//!   daemon);
//! - [`live`] keeps every file's parse, and the reader of each file written lately to feed it
//!   only appended bytes (the daemon's index; `entry` is what it keeps per file), and
//!   [`ledger`] keeps [`account`]'s decision current one changed file at a time;
//! - [`wire`] carries a report over the daemon's protocol and back, unchanged.

pub mod account;
pub mod budget;
pub mod budget_config;
pub mod calls;
pub mod claude;
pub mod codex;
mod entry;
pub mod error;
pub mod grok;
pub mod handoff;
mod key_table;
pub mod keys;
pub mod ledger;
pub mod limits;
pub mod lines;
pub mod live;
pub mod money;
mod names;
mod path_slots;
pub mod prices;
pub mod report;
pub mod scan;
mod shares;
pub mod spill;
mod states;
pub mod tokens;
pub mod totals;
pub mod wire;

pub use account::{
    Accounting, Charge, Counted, RateLimitWindow, RateLimits, Share, ShareCalls, account,
    account_refs,
};
pub use calls::{Call, Calls};
pub use entry::IDLE_AFTER;
pub use error::{Error, Result};
pub use ledger::LedgerStats;
pub use live::{RefreshStats, UsageIndex};
pub use money::Money;
pub use names::Name;
pub use prices::{Price, PriceTable, Rate, Tier};
pub use report::{GroupBy, Report, Row, Since};
pub use shares::Shares;
pub use tokens::Tokens;
pub use totals::{SessionSpent, SessionTotals, TotalsStats};

use std::path::Path;
use std::sync::Arc;

use claude::ClaudeFile;
use codex::CodexFile;
use grok::GrokFile;

/// One file's usage as its reader parsed it: nothing decided across files yet.
#[derive(Debug, Clone, PartialEq)]
pub enum FileUsage {
    Claude(ClaudeFile),
    Codex(CodexFile),
    Grok(GrokFile),
}

/// One file's usage, borrowed: what the live index lends the accounting (its readers keep
/// their own files, no copy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FileRef<'a> {
    Claude(&'a ClaudeFile),
    Codex(&'a CodexFile),
    Grok(&'a GrokFile),
}

impl<'a> FileRef<'a> {
    /// The file this was read from.
    pub fn path(&self) -> &'a Arc<Path> {
        match self {
            FileRef::Claude(f) => &f.path,
            FileRef::Codex(f) => &f.path,
            FileRef::Grok(f) => &f.path,
        }
    }
}

impl FileUsage {
    pub fn borrowed(&self) -> FileRef<'_> {
        match self {
            FileUsage::Claude(f) => FileRef::Claude(f),
            FileUsage::Codex(f) => FileRef::Codex(f),
            FileUsage::Grok(f) => FileRef::Grok(f),
        }
    }

    /// See [`lines::LineRecords::renew`].
    pub(crate) fn renew(&mut self) {
        match self {
            FileUsage::Claude(f) => <claude::ClaudeLines as lines::LineRecords>::renew(f),
            FileUsage::Codex(f) => <codex::CodexLines as lines::LineRecords>::renew(f),
            FileUsage::Grok(f) => <grok::GrokLines as lines::LineRecords>::renew(f),
        }
    }

    /// The file this was read from.
    pub fn path(&self) -> &Arc<Path> {
        match self {
            FileUsage::Claude(f) => &f.path,
            FileUsage::Codex(f) => &f.path,
            FileUsage::Grok(f) => &f.path,
        }
    }
}
