//! Token counts by kind. The kinds are disjoint — no kind includes another — so a sum is a sum
//! and each kind has its own price.

use serde::{Deserialize, Serialize};

/// Tokens of one request (or a sum of requests), by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input read at the full input price (for Codex: `input_tokens − cached_input_tokens`).
    pub input: u64,
    /// Output, reasoning included.
    pub output: u64,
    /// Input written to the prompt cache for 5 minutes.
    pub cache_write_5m: u64,
    /// Input written to the prompt cache for 1 hour.
    pub cache_write_1h: u64,
    /// Input read from the prompt cache.
    pub cache_read: u64,
}

impl Tokens {
    /// Every kind added up.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_write_5m)
            .saturating_add(self.cache_write_1h)
            .saturating_add(self.cache_read)
    }

    /// The prompt's size: what a tiered price compares with its threshold.
    pub fn context(&self) -> u64 {
        self.input
            .saturating_add(self.cache_write_5m)
            .saturating_add(self.cache_write_1h)
            .saturating_add(self.cache_read)
    }

    pub fn add(&mut self, other: &Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_write_5m = self.cache_write_5m.saturating_add(other.cache_write_5m);
        self.cache_write_1h = self.cache_write_1h.saturating_add(other.cache_write_1h);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
    }
}
