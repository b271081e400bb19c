//! Anchors: what the receipt check looks for in a contract.

use cross_agent_handoff::receipt::{AnchorKind, anchors};
use pretty_assertions::assert_eq;

#[test]
fn anchors_are_paths_flags_numbers_and_quoted_strings() {
    let found: Vec<(AnchorKind, String)> = anchors(
        "Don't touch crates/hub/src/lib.rs or Cargo.lock; add --dry-run (and -v) to `import`, \
         keep it under 200 ms and 8 MiB, print \"done: ok\". See https://example.com. It's fine.",
    )
    .into_iter()
    .map(|a| (a.kind, a.text))
    .collect();
    assert_eq!(
        found,
        vec![
            (AnchorKind::Quoted, "import".into()),
            (AnchorKind::Quoted, "done: ok".into()),
            (AnchorKind::Path, "crates/hub/src/lib.rs".into()),
            (AnchorKind::Path, "Cargo.lock".into()),
            (AnchorKind::Flag, "--dry-run".into()),
            (AnchorKind::Flag, "-v".into()),
            (AnchorKind::Number, "200".into()),
            (AnchorKind::Number, "8".into()),
        ]
    );
}

#[test]
fn plain_prose_has_no_anchors() {
    assert_eq!(anchors("Tidy things up, please; it's overdue."), vec![]);
}

#[test]
fn a_contract_without_anchors_reports_nothing_even_with_an_empty_receipt() {
    use cross_agent_handoff::receipt::{RECEIPT_BEGIN, RECEIPT_END, Verdict, check};
    let text = format!(
        "## Contract\n\n> Tidy things up, please.\n\n## Receipt\n\n{RECEIPT_BEGIN}\n\n{RECEIPT_END}\n"
    );
    let report = check(std::path::Path::new("HANDOFF.md"), &text).unwrap();
    assert_eq!(report.verdict, Verdict::NoAnchors);
    assert!(report.missing.is_empty());
}

#[test]
fn anchors_are_matched_as_substrings_whatever_the_case_and_punctuation() {
    use cross_agent_handoff::receipt::{RECEIPT_BEGIN, RECEIPT_END, Verdict, check};
    let text = format!(
        "## Contract\n\n> Add --dry-run to src/import.rs.\n\n## Receipt\n\n{RECEIPT_BEGIN}\n\
         I'll add (--DRY-RUN) in `SRC/IMPORT.RS`, first.\n{RECEIPT_END}\n"
    );
    let report = check(std::path::Path::new("HANDOFF.md"), &text).unwrap();
    assert_eq!(report.verdict, Verdict::Complete, "{report:?}");
}
