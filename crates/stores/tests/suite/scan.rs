//! Where the listing keeps its cache: `$CROSS_AGENT_HOME/cache/`, refused when that home is the
//! filesystem root, the user's home, or inside an agent's own store (spec 004 §7).

use std::path::Path;

use cross_agent_stores::scan::{ScanOptions, cache_file_in, list_sessions};
use cross_agent_stores::{StoreError, StoreRoots};
use tempfile::TempDir;

#[test]
fn the_cache_lives_under_cross_agent_home() {
    let tmp = TempDir::new().unwrap();
    let roots = StoreRoots::under_home(tmp.path());
    // A folder that merely contains the stores is fine.
    let path = cache_file_in(&tmp.path().join(".cross-agent"), &roots).unwrap();
    assert_eq!(
        path,
        tmp.path().join(".cross-agent/cache/sessions-index.bin")
    );
    let path = cache_file_in(tmp.path().join("state").as_path(), &roots).unwrap();
    assert!(path.ends_with("state/cache/sessions-index.bin"));
}

#[test]
fn an_unsafe_home_is_refused() {
    let tmp = TempDir::new().unwrap();
    let roots = StoreRoots::under_home(tmp.path());
    std::fs::create_dir_all(tmp.path().join(".claude")).unwrap();

    let refused = |home: &Path| match cache_file_in(home, &roots) {
        Err(StoreError::UnsafeHome { why, .. }) => why,
        other => panic!("{} should be refused, got {other:?}", home.display()),
    };
    assert!(refused(Path::new("/")).contains("root"));
    assert!(refused(&tmp.path().join(".claude")).contains("claude"));
    assert!(refused(&tmp.path().join(".codex/xa")).contains("codex"));
    if let Some(user_home) = std::env::var_os("HOME") {
        assert!(refused(Path::new(&user_home)).contains("home folder"));
    }

    // A symlink into a store is refused as firmly as the path itself.
    #[cfg(unix)]
    {
        let link = tmp.path().join("sneaky");
        std::os::unix::fs::symlink(tmp.path().join(".claude"), &link).unwrap();
        assert!(refused(&link).contains("claude"));
    }
}

#[test]
fn listing_without_a_cache_still_works() {
    let tmp = TempDir::new().unwrap();
    let listing = list_sessions(&StoreRoots::under_home(tmp.path()), &ScanOptions::default());
    assert!(listing.sessions.is_empty());
    assert!(listing.warnings.is_empty(), "{:?}", listing.warnings);
}
