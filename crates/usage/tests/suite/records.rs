//! Call records written to a directory (`UsageIndex::with_records_in`, `crate::spill`) when
//! that directory cannot take them: the records stay on the heap, the figures stay exact, and
//! the index says so once, naming the directory.

// The helpers below stand in for test bodies: a failed write ends the test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use cross_agent_stores::StoreRoots;
use cross_agent_usage::{GroupBy, PriceTable, Report, UsageIndex, account, scan};
use pretty_assertions::assert_eq;

use super::codex::store_lines;

/// A Codex store (a base, its forks and a sub-agent) under `home`.
fn codex_store(home: &Path) -> StoreRoots {
    let codex_home = home.join(".codex");
    let day = codex_home.join("sessions/2026/12/01");
    fs::create_dir_all(&day).unwrap();
    for (name, lines) in store_lines() {
        let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        fs::write(day.join(name), text).unwrap();
    }
    StoreRoots {
        codex_home: Some(codex_home),
        ..StoreRoots::default()
    }
}

/// Each grouping's report from the index and from a fresh whole scan.
fn reports(index: &mut UsageIndex, roots: &StoreRoots) -> (Vec<Report>, Vec<Report>) {
    let prices = PriceTable::shipped().unwrap();
    let fresh = account(&scan::scan(roots).files);
    let live = index.accounting();
    let groups = [GroupBy::Session, GroupBy::Model, GroupBy::Day];
    let report = |acc, by| Report::build(acc, &prices, by, None);
    (
        groups.iter().map(|&by| report(&live, by)).collect(),
        groups.iter().map(|&by| report(&fresh, by)).collect(),
    )
}

/// A records directory that is gone, or a file where the directory should be: every write
/// fails, so the records stay on the heap — the reports exact, one warning naming the
/// directory, not one per file or per refresh.
#[test]
fn a_records_directory_that_cannot_be_written_keeps_them_on_the_heap_and_says_so_once() {
    let home = tempfile::tempdir().unwrap();
    let roots = codex_store(home.path());
    let gone = home.path().join("records-gone");
    let not_a_dir = home.path().join("records-file");
    fs::write(&not_a_dir, "").unwrap();
    for dir in [gone, not_a_dir] {
        let mut index = UsageIndex::new().with_records_in(&dir);
        let mut warnings = Vec::new();
        index.refresh(&roots, &mut warnings);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains(&dir.display().to_string()),
            "{warnings:?}"
        );
        let (live, fresh) = reports(&mut index, &roots);
        assert_eq!(live, fresh);
        assert!(!fresh[0].rows.is_empty());

        // A file written anew is read again: its records stay on the heap, unsaid again.
        let (name, lines) = store_lines().swap_remove(0);
        let path = roots
            .codex_home
            .as_ref()
            .unwrap()
            .join("sessions/2026/12/01")
            .join(name);
        let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        fs::write(&path, format!("{text}{text}")).unwrap();
        let mut warnings = Vec::new();
        let stats = index.refresh(&roots, &mut warnings);
        assert_eq!(stats.files_appended + stats.files_reread, 1);
        assert_eq!(warnings, Vec::<String>::new());
        let (live, fresh) = reports(&mut index, &roots);
        assert_eq!(live, fresh);
        assert_eq!(index.records_failure(), None);
    }
}
