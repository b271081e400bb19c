//! The listing's cache location and a listing with no cache at all.

use cross_agent_stores::StoreRoots;
use cross_agent_stores::scan::{ScanOptions, cache_file, list_sessions};
use tempfile::TempDir;

#[test]
fn the_cache_lives_under_the_state_directory() {
    let tmp = TempDir::new().unwrap();
    assert_eq!(
        cache_file(&tmp.path().join(".cross-agent")),
        tmp.path().join(".cross-agent/cache/sessions-index.bin")
    );
}

#[test]
fn listing_without_a_cache_still_works() {
    let tmp = TempDir::new().unwrap();
    let listing = list_sessions(&StoreRoots::under_home(tmp.path()), &ScanOptions::default());
    assert!(listing.sessions.is_empty());
    assert!(listing.warnings.is_empty(), "{:?}", listing.warnings);
}
