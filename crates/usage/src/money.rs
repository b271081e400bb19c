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

    /// An amount [`Money::dollars_exact`] wrote (`12.345678`): what a listing carries back
    /// to a table. `None` when it is not dollars with at most six decimals.
    pub fn parse_dollars_exact(text: &str) -> Option<Money> {
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || frac.len() > 6 || !all_digits(whole) || !all_digits(frac) {
            return None;
        }
        let whole: u128 = whole.parse().ok()?;
        let micro: u128 = format!("{frac:0<6}").parse().ok()?;
        let micro = whole.checked_mul(1_000_000)?.checked_add(micro)?;
        Some(Money(micro.checked_mul(Self::PER_MICRO)?))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_dollars_read_back_and_round_to_the_cent() {
        let m = Money(12_345_678_900_000);
        assert_eq!(m.dollars_exact(), "12.345679");
        let back = Money::parse_dollars_exact(&m.dollars_exact());
        assert_eq!(back.map(Money::dollars_cents).as_deref(), Some("$12.35"));
        assert_eq!(
            Money::parse_dollars_exact("0.005")
                .map(Money::dollars_cents)
                .as_deref(),
            Some("$0.01")
        );
        for bad in ["", "1.2345678", "-1.0", "1e3", ".5"] {
            assert_eq!(Money::parse_dollars_exact(bad), None, "{bad}");
        }
    }
}
