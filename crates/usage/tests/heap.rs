//! The live usage index's own heap per file, counted by the allocator (issue 30): its bytes and
//! how many blocks it keeps live once built and decided, on a generated store of still files
//! whose records are on disk, as the daemon keeps them. Every small long-lived block pins an
//! allocator page the daemon cannot give back, so the count is held down as well as the bytes.
//!
//! A binary of its own, apart from `tests/all.rs`: its global allocator counts every thread of
//! the process, so no other test may run beside it.

// A failed step ends the test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use cross_agent_stores::StoreRoots;
use cross_agent_testkit::synthetic_stores::{SyntheticSpec, ensure, now_millis};
use cross_agent_usage::UsageIndex;

#[path = "counted/mod.rs"]
mod counted;

#[global_allocator]
static ALLOCATOR: counted::Counted<std::alloc::System> = counted::Counted::new(std::alloc::System);

/// Every file under `dir` made still an hour ago: most of a store's files are long still, and an
/// idle file keeps no reader.
fn make_still(dir: &Path) {
    let then = SystemTime::now() - Duration::from_secs(3_600);
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            make_still(&path);
        } else {
            fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(then)
                .unwrap();
        }
    }
}

/// 1,100 sessions built and decided: per file at most 600 bytes and 3.0 blocks live (the
/// accounting kept, as the daemon keeps it; 579 and 2.92 when written). Before the ids were
/// held in their paths, the shares in one table, a call list's place on disk inline, the cwds
/// by a thin handle and the key table's places in 3 bytes, the same store took 765 bytes and
/// 5.32 blocks a file; before the entries went into one list, the ids and rate limits were
/// shared with the ledger and the ledger's map ordered by path went, 885 and 7.36.
#[test]
fn the_index_keeps_few_bytes_and_few_blocks_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let records = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let spec = SyntheticSpec {
        claude: 500,
        codex: 500,
        grok: 100,
        copilot: 0,
        size_scale: 0.05,
        ..SyntheticSpec::full(now_millis())
    };
    ensure(&home, &spec).unwrap();
    make_still(&home);
    let roots = StoreRoots::under_home(&home);

    let (bytes, blocks) = (ALLOCATOR.bytes(), ALLOCATOR.blocks());
    let mut index = UsageIndex::new().with_records_in(records.path());
    let mut warnings = Vec::new();
    let stats = index.refresh(&roots, &mut warnings);
    assert_eq!(warnings, Vec::<String>::new());
    let accounting = index.accounting();
    assert_eq!(index.records_failure(), None);
    assert!(accounting.charges().count() > 1_000);
    let files = stats.files_seen as f64;
    assert!(files >= 1_100.0, "{files} files");
    let per_file_bytes = (ALLOCATOR.bytes() - bytes) as f64 / files;
    let per_file_blocks = (ALLOCATOR.blocks() - blocks) as f64 / files;
    println!("{files} files: {per_file_bytes:.0} bytes and {per_file_blocks:.2} blocks a file");
    assert!(per_file_bytes <= 600.0, "{per_file_bytes:.0} bytes a file");
    assert!(per_file_blocks <= 3.0, "{per_file_blocks:.2} blocks a file");
    drop(accounting);
}
