//! Money as an exact integer: picodollars (10⁻¹² $). A price is whole micro-dollars per million
//! tokens, so tokens × price is exactly picodollars and sums never drift the way f64 sums do;
//! rounding happens once, when a total is shown.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An amount of US dollars in picodollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Money(pub u128);

impl Money {
    pub const ZERO: Money = Money(0);
    const PER_DOLLAR: u128 = 1_000_000_000_000;
    const PER_MICRO: u128 = 1_000_000;

    pub fn saturating_add(self, other: Money) -> Money {
        Money(self.0.saturating_add(other.0))
    }

    /// Whole micro-dollars, rounded half up.
    pub fn micro_dollars(self) -> u128 {
        (self.0 + Self::PER_MICRO / 2) / Self::PER_MICRO
    }

    /// Dollars with six decimals (micro-dollars), rounded half up: `12.345678`.
    pub fn dollars_exact(self) -> String {
        let micro = self.micro_dollars();
        format!("{}.{:06}", micro / 1_000_000, micro % 1_000_000)
    }

    /// Dollars to the cent, rounded half up: `$12.35`.
    pub fn dollars_cents(self) -> String {
        let cents = (self.0 + Self::PER_DOLLAR / 200) / (Self::PER_DOLLAR / 100);
        format!("${}.{:02}", cents / 100, cents % 100)
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.dollars_cents())
    }
}
