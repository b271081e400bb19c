//! The price table: tiers, dated names, every shipped model's source and check date, the
//! override file (both shapes) and its refusals.

use std::os::unix::fs::PermissionsExt;

use cross_agent_usage::{Error, PriceTable, Tokens};
use pretty_assertions::assert_eq;

/// Sonnet 4.5 above 200k prompt tokens is priced at its higher tier.
#[test]
fn a_prompt_over_the_tier_threshold_takes_the_tier_prices() {
    let table = PriceTable::shipped().unwrap();
    let small = Tokens {
        input: 200_000,
        output: 1000,
        ..Tokens::default()
    };
    let large = Tokens {
        input: 200_001,
        output: 1000,
        ..Tokens::default()
    };
    let cost = |t: &Tokens| {
        table
            .cost(Some("claude-sonnet-4-5"), t)
            .unwrap()
            .micro_dollars()
    };
    // 200000×3 + 1000×15 = 615000 µ$; 200001×6 + 1000×22.5 = 1222506 µ$.
    assert_eq!((cost(&small), cost(&large)), (615_000, 1_222_506));
    assert!(table.price("claude-sonnet-4-5-20250929").is_some());
    assert!(table.price("claude-sonnet-4-5@20250929").is_some());
    assert!(table.price("gpt-7").is_none());
}

/// The override replaces a model's entry and adds new ones; the rest stay shipped.
#[test]
fn the_override_file_is_merged_per_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.toml");
    std::fs::write(&path, "[models.\"test-model\"]\ninput = \"2\"\noutput = \"8\"\n[models.\"gpt-5\"]\ninput = 1\noutput = \"1.5\"\ncache_read = \"0.000001\"\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let table = PriceTable::load(Some(dir.path())).unwrap();
    let t = Tokens {
        input: 1_000_000,
        output: 1_000_000,
        cache_read: 1_000_000,
        ..Tokens::default()
    };
    assert_eq!(
        table.cost(Some("gpt-5"), &t).unwrap().micro_dollars(),
        2_500_001
    );
    let no_cache = Tokens { cache_read: 0, ..t };
    assert_eq!(
        table
            .cost(Some("test-model"), &no_cache)
            .unwrap()
            .micro_dollars(),
        10_000_000
    );
    // A kind its price leaves out: unknown, not 0.
    assert_eq!(table.cost(Some("test-model"), &t), None);
    assert!(table.price("claude-haiku-4-5").is_some());
    assert_eq!(
        table.overridden,
        vec!["gpt-5".to_owned(), "test-model".to_owned()]
    );
}

#[test]
fn an_override_that_is_a_link_or_writable_by_others_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.toml");
    std::fs::write(&real, "").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let path = dir.path().join("prices.toml");
    std::os::unix::fs::symlink(&real, &path).unwrap();
    let err = PriceTable::load(Some(dir.path())).unwrap_err();
    assert!(matches!(err, Error::PricesIsLink { .. }), "{err}");
    assert!(err.to_string().contains(&path.display().to_string()));

    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, "").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let err = PriceTable::load(Some(dir.path())).unwrap_err();
    assert!(err.to_string().contains("chmod go-w"), "{err}");

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&path, "[models.x]\ninput = \"abc\"\n").unwrap();
    let err = PriceTable::load(Some(dir.path())).unwrap_err();
    assert!(err.to_string().contains("models.\"x\".input"), "{err}");
}

/// Every shipped model names the page its price was read from and the day it was checked, and
/// the prices that were wrong in the table written from memory are the vendors' now.
#[test]
fn every_shipped_price_names_its_source_and_check_day() {
    let table = PriceTable::shipped().unwrap();
    for (name, price) in &table.models {
        let source = price.source.as_deref().unwrap_or_default();
        assert!(source.starts_with("https://"), "{name}: source {source:?}");
        assert!(price.checked.is_some(), "{name}: no check day");
    }
    assert!(
        table
            .sources
            .iter()
            .any(|s| s.contains("platform.claude.com"))
    );
    assert!(
        table
            .sources
            .iter()
            .any(|s| s.contains("developers.openai.com"))
    );
    assert!(table.sources.iter().any(|s| s.contains("docs.x.ai")));
    // Models the agents use today (Claude Code 2.1.332 defaults to claude-opus-5-5).
    let cost =
        |model: &str, tokens: Tokens| table.cost(Some(model), &tokens).unwrap().micro_dollars();
    let million = |f: fn(&mut Tokens)| {
        let mut t = Tokens::default();
        f(&mut t);
        t
    };
    let input = million(|t| t.input = 1_000_000);
    let read = million(|t| t.cache_read = 1_000_000);
    let write_1h = million(|t| t.cache_write_1h = 1_000_000);
    assert_eq!(cost("claude-opus-5-5", input), 4_000_000);
    assert_eq!(cost("claude-opus-5-5", read), 200_000);
    assert_eq!(cost("claude-opus-5-5", write_1h), 8_000_000);
    assert_eq!(cost("claude-sonnet-5-5", read), 100_000);
    // Under the 272K tier: 100000 × $5 = $0.50.
    let short = Tokens {
        input: 100_000,
        ..Tokens::default()
    };
    assert_eq!(cost("gpt-5.5", short), 500_000);
    // Over the 272K tier: 300000 × $10 = $3.
    let long = Tokens {
        input: 300_000,
        ..Tokens::default()
    };
    assert_eq!(cost("gpt-5.5", long), 3_000_000);
    // Haiku 5.5 is priced by prompt size: 100K at the base, two more at the tier
    // (100002 × $0.50 = 50001 µ$).
    let at = |n| Tokens {
        input: n,
        ..Tokens::default()
    };
    assert_eq!(cost("claude-haiku-5-5", at(100_000)), 10_000);
    assert_eq!(cost("claude-haiku-5-5", at(100_002)), 50_001);
    // A price found without a cached-input rate: cached input makes the cost unknown.
    assert_eq!(table.cost(Some("gpt-5-nano"), &read), None);
    // No price found for these: unknown, never a guess.
    assert!(table.price("grok-code-fast-1").is_none());
    assert!(table.price("codex-mini-latest").is_none());
}

/// An override file in the older shape (table-wide `date` and `sources`, no per-model
/// `source`) still reads; its models name the file as their source. A new-shape model keeps
/// the source it gives.
#[test]
fn an_override_in_the_older_shape_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.toml");
    std::fs::write(
        &path,
        "date = \"2025-11-24\"\nsources = [\"https://example.com/old\"]\n\
         [models.\"old-model\"]\ninput = \"1\"\noutput = \"2\"\n\
         [models.\"new-model\"]\nsource = \"https://example.com/new\"\nchecked = \"2026-12-01\"\n\
         input = \"3\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let table = PriceTable::load(Some(dir.path())).unwrap();
    let old = table.price("old-model").unwrap();
    assert_eq!(old.source.as_deref(), Some(path.to_str().unwrap()));
    assert_eq!(old.checked, None);
    let new = table.price("new-model").unwrap();
    assert_eq!(new.source.as_deref(), Some("https://example.com/new"));
    assert_eq!(new.checked.as_deref(), Some("2026-12-01"));
    assert!(
        table
            .sources
            .contains(&"https://example.com/new".to_owned())
    );

    std::fs::write(
        &path,
        "[models.x]\ninput = \"1\"\nchecked = \"yesterday\"\n",
    )
    .unwrap();
    let err = PriceTable::load(Some(dir.path())).unwrap_err();
    assert!(err.to_string().contains("models.\"x\".checked"), "{err}");
}
