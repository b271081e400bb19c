//! The committed verdict schema (`crates/review/schema/verdict.json`) is the one the type
//! generates: a renamed field or a new verdict fails here until the file is written again.
//!
//! To write it again: `CROSS_AGENT_WRITE_SCHEMAS=1 cargo test -p cross-agent-review --test all
//! schema`.

use std::path::PathBuf;

use cross_agent_review::verdict::{SCHEMA_FILE, schema};

#[test]
fn committed_verdict_schema_matches_the_type() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(SCHEMA_FILE);
    let mut expected = serde_json::to_string_pretty(&schema()).unwrap();
    expected.push('\n');
    if std::env::var_os("CROSS_AGENT_WRITE_SCHEMAS").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    let committed =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    pretty_assertions::assert_eq!(
        committed,
        expected,
        "the committed verdict schema differs from the type; if intended, write it again: \
         CROSS_AGENT_WRITE_SCHEMAS=1 cargo test -p cross-agent-review --test all schema"
    );
}
