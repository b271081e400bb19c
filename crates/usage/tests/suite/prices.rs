//! The price table: tiers, dated names, the override file and its refusals.

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
