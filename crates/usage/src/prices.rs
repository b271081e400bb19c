//! The price table: dollars per million tokens for every model the agents use, by kind, with a
//! higher tier above a prompt size where the vendor has one. The table ships in the binary
//! (`prices.toml`, dated); each model records the page its price was read from and the day it
//! was checked. `$CROSS_AGENT_HOME/prices.toml` overrides it per model (in the same shape, or
//! the older one without `source` / `checked`). A model with no price — or a kind of token its price does not cover — makes the cost
//! unknown (`None`), never 0.
//!
//! Rates are whole micro-dollars per million tokens, read from decimal text without going
//! through floating point, so tokens × rate is an exact [`Money`].

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::money::Money;
use crate::tokens::Tokens;

/// The table shipped in the binary.
pub const SHIPPED: &str = include_str!("prices.toml");

/// The override file's name under `CROSS_AGENT_HOME`.
pub const OVERRIDE_FILE: &str = "prices.toml";

/// Micro-dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(pub u64);

impl Rate {
    /// Dollars per million tokens as the shortest exact decimal: `3.75`, `0.125`, `15`.
    pub fn dollars(self) -> String {
        let whole = self.0 / 1_000_000;
        let frac = self.0 % 1_000_000;
        if frac == 0 {
            return whole.to_string();
        }
        let digits = format!("{frac:06}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    }

    /// Reads `"3.75"` (or a TOML number) as dollars per million tokens.
    fn parse(amount: &Amount) -> std::result::Result<Rate, String> {
        match amount {
            Amount::Text(text) => parse_decimal(text),
            Amount::Integer(n) => u64::try_from(*n)
                .ok()
                .and_then(|n| n.checked_mul(1_000_000))
                .map(Rate)
                .ok_or_else(|| format!("{n} is not a price")),
            // A float is rounded to the micro-dollar: prices have at most six decimals.
            Amount::Float(f) if f.is_finite() && *f >= 0.0 => {
                Ok(Rate((f * 1_000_000.0).round() as u64))
            }
            Amount::Float(f) => Err(format!("{f} is not a price")),
        }
    }
}

impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.dollars())
    }
}

pub(crate) fn parse_decimal(text: &str) -> std::result::Result<Rate, String> {
    let bad = || format!("`{text}` is not a price in dollars (like \"3.75\")");
    let (whole, frac) = text.trim().split_once('.').unwrap_or((text.trim(), ""));
    if whole.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if frac.len() > 6
        || !whole
            .bytes()
            .chain(frac.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let frac: u64 = format!("{frac:0<6}").parse().map_err(|_| bad())?;
    whole
        .checked_mul(1_000_000)
        .and_then(|w| w.checked_add(frac))
        .map(Rate)
        .ok_or_else(bad)
}

/// The rates of one model (or of its higher tier), by kind; `None` where there is no price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Rates {
    pub input: Option<Rate>,
    pub output: Option<Rate>,
    pub cache_write_5m: Option<Rate>,
    pub cache_write_1h: Option<Rate>,
    pub cache_read: Option<Rate>,
}

impl Rates {
    /// The cost of `tokens` at these rates; `None` if a kind with tokens has no rate.
    pub fn cost(&self, tokens: &Tokens) -> Option<Money> {
        let kinds = [
            (tokens.input, self.input),
            (tokens.output, self.output),
            (tokens.cache_write_5m, self.cache_write_5m),
            (tokens.cache_write_1h, self.cache_write_1h),
            (tokens.cache_read, self.cache_read),
        ];
        let mut total = Money::ZERO;
        for (count, rate) in kinds {
            if count == 0 {
                continue;
            }
            // tokens × (µ$ / 10⁶ tokens) = 10⁻¹² $: exactly picodollars.
            total = total.saturating_add(Money(u128::from(count) * u128::from(rate?.0)));
        }
        Some(total)
    }
}

/// The higher prices of a request whose prompt is larger than `above` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tier {
    pub above: u64,
    #[serde(flatten)]
    pub rates: Rates,
}

/// One model's prices, and where they come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Price {
    #[serde(flatten)]
    pub rates: Rates,
    pub tier: Option<Tier>,
    /// The page the price was read from; for a model the override file gave without one, the
    /// override file's path.
    pub source: Option<String>,
    /// The day the price was checked against its source (`YYYY-MM-DD`).
    pub checked: Option<String>,
    /// What the source left open, or how it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Price {
    /// The cost of one request: the tier's rates when its prompt is over the threshold.
    pub fn cost(&self, tokens: &Tokens) -> Option<Money> {
        match &self.tier {
            Some(tier) if tokens.context() > tier.above => tier.rates.cost(tokens),
            _ => self.rates.cost(tokens),
        }
    }
}

/// Every model's prices, the shipped table merged with the user's override.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriceTable {
    /// When the shipped prices were last checked against the vendors' pages.
    pub date: String,
    /// Every model's source, once each, in order.
    pub sources: Vec<String>,
    pub models: BTreeMap<String, Price>,
    /// The override file that was merged in, if any.
    pub override_file: Option<PathBuf>,
    /// The models whose prices came from the override file.
    pub overridden: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Amount {
    Text(String),
    Integer(i64),
    Float(f64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRates {
    input: Option<Amount>,
    output: Option<Amount>,
    cache_write_5m: Option<Amount>,
    cache_write_1h: Option<Amount>,
    cache_read: Option<Amount>,
    #[serde(default)]
    above: Option<u64>,
    #[serde(default)]
    tier: Option<Box<RawRates>>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    checked: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    date: Option<String>,
    /// The older shape's table-wide list of sources; read and ignored, since each model now
    /// names its own.
    #[serde(default)]
    #[allow(dead_code)]
    sources: Vec<String>,
    #[serde(default)]
    models: BTreeMap<String, RawRates>,
}

fn rates(raw: &RawRates, model: &str) -> std::result::Result<Rates, String> {
    let one = |amount: &Option<Amount>, kind: &str| {
        amount
            .as_ref()
            .map(Rate::parse)
            .transpose()
            .map_err(|e| format!("models.\"{model}\".{kind}: {e}"))
    };
    Ok(Rates {
        input: one(&raw.input, "input")?,
        output: one(&raw.output, "output")?,
        cache_write_5m: one(&raw.cache_write_5m, "cache_write_5m")?,
        cache_write_1h: one(&raw.cache_write_1h, "cache_write_1h")?,
        cache_read: one(&raw.cache_read, "cache_read")?,
    })
}

fn parse_table(text: &str) -> std::result::Result<(RawTable, BTreeMap<String, Price>), String> {
    let raw: RawTable = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut models = BTreeMap::new();
    for (name, r) in &raw.models {
        if r.above.is_some() {
            return Err(format!(
                "models.\"{name}\": `above` belongs in its [tier] table"
            ));
        }
        let tier = match &r.tier {
            Some(t) => {
                let above = t.above.ok_or_else(|| {
                    format!("models.\"{name}\".tier: `above` (tokens) is missing")
                })?;
                if t.tier.is_some() {
                    return Err(format!("models.\"{name}\".tier: one tier only"));
                }
                if t.source.is_some() || t.checked.is_some() || t.note.is_some() {
                    return Err(format!(
                        "models.\"{name}\".tier: `source`, `checked` and `note` belong to the model"
                    ));
                }
                Some(Tier {
                    above,
                    rates: rates(t, name)?,
                })
            }
            None => None,
        };
        if let Some(checked) = r.checked.as_ref().filter(|c| !is_day(c)) {
            return Err(format!(
                "models.\"{name}\".checked: `{checked}` is not a day like \"2026-12-06\""
            ));
        }
        models.insert(
            name.clone(),
            Price {
                rates: rates(r, name)?,
                tier,
                source: r.source.clone(),
                checked: r.checked.clone(),
                note: r.note.clone(),
            },
        );
    }
    Ok((raw, models))
}

impl PriceTable {
    /// The table shipped in the binary.
    pub fn shipped() -> Result<PriceTable> {
        let (raw, models) = parse_table(SHIPPED).map_err(|message| Error::BadPrices {
            path: PathBuf::from("(shipped prices.toml)"),
            message,
        })?;
        let mut sources = Vec::new();
        for source in models.values().filter_map(|p| p.source.as_ref()) {
            if !sources.contains(source) {
                sources.push(source.clone());
            }
        }
        Ok(PriceTable {
            date: raw.date.unwrap_or_default(),
            sources,
            models,
            override_file: None,
            overridden: Vec::new(),
        })
    }

    /// The shipped table with `<state_dir>/prices.toml` merged in when it exists.
    pub fn load(state_dir: Option<&Path>) -> Result<PriceTable> {
        let mut table = Self::shipped()?;
        if let Some(dir) = state_dir {
            table.merge_file(&dir.join(OVERRIDE_FILE))?;
        }
        Ok(table)
    }

    /// Merges an override file: each model in it replaces the table's entry for that model.
    /// A missing file is no override; a link, or a file others can write, is refused.
    pub fn merge_file(&mut self, path: &Path) -> Result<()> {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(Error::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        if meta.file_type().is_symlink() {
            return Err(Error::PricesIsLink {
                path: path.to_path_buf(),
            });
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(Error::PricesWritableByOthers {
                path: path.to_path_buf(),
                mode,
            });
        }
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let (_, models) = parse_table(&text).map_err(|message| Error::BadPrices {
            path: path.to_path_buf(),
            message,
        })?;
        for (name, mut price) in models {
            if price.source.is_none() {
                price.source = Some(path.display().to_string());
            }
            if let Some(source) = price.source.as_ref().filter(|s| !self.sources.contains(s)) {
                self.sources.push(source.clone());
            }
            self.overridden.push(name.clone());
            self.models.insert(name, price);
        }
        self.override_file = Some(path.to_path_buf());
        Ok(())
    }

    /// The price of a model by its name as the agent wrote it: exactly, or without a trailing
    /// date (`-20250929`, `@20250929`).
    pub fn price(&self, model: &str) -> Option<&Price> {
        self.models
            .get(model)
            .or_else(|| self.models.get(without_date(model)?))
    }

    /// The cost of one request of `model`; `None` when the model or a kind it used has no price.
    pub fn cost(&self, model: Option<&str>, tokens: &Tokens) -> Option<Money> {
        self.price(model?)?.cost(tokens)
    }
}

/// `YYYY-MM-DD`, digits where digits belong (the day is a label, not computed with).
fn is_day(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn without_date(model: &str) -> Option<&str> {
    let cut = model.rfind(['-', '@'])?;
    let date = &model[cut + 1..];
    (date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit())).then(|| &model[..cut])
}
