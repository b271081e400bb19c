//! The committed JSON Schemas (`crates/protocol/schema/`) are the ones the types generate: a
//! renamed tool parameter, field or method fails here until the fixture is written again, so an
//! interface change is a visible diff in review.
//!
//! To write them again: `CROSS_AGENT_WRITE_SCHEMAS=1 cargo test -p cross-agent-protocol --test
//! schema_fixtures`.

use std::path::PathBuf;

const WRITE_VAR: &str = "CROSS_AGENT_WRITE_SCHEMAS";

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema")
}

fn render(value: &serde_json::Value) -> String {
    // A `Value` always serialises; an empty text would only show as a difference.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

#[test]
fn committed_schemas_match_the_types() {
    let write = std::env::var_os(WRITE_VAR).is_some_and(|v| !v.is_empty() && v != "0");
    let mut stale = Vec::new();
    for (name, schema) in cross_agent_protocol::schema::fixtures() {
        let path = schema_dir().join(name);
        let expected = render(&schema);
        if write {
            std::fs::create_dir_all(schema_dir()).unwrap();
            std::fs::write(&path, &expected).unwrap();
            continue;
        }
        let Ok(committed) = std::fs::read_to_string(&path) else {
            stale.push(format!("{} (missing)", path.display()));
            continue;
        };
        if committed != expected {
            let first_difference = committed
                .lines()
                .zip(expected.lines())
                .position(|(a, b)| a != b)
                .map_or_else(
                    || "one file is a prefix of the other".to_owned(),
                    |line| {
                        format!(
                            "first difference at line {}:\n  committed: {}\n  generated: {}",
                            line + 1,
                            committed.lines().nth(line).unwrap_or(""),
                            expected.lines().nth(line).unwrap_or("")
                        )
                    },
                );
            stale.push(format!("{} ({first_difference})", path.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "the committed schemas differ from the types:\n{}\n\nIf the interface change is \
         intended, write them again and commit them:\n  {WRITE_VAR}=1 cargo test -p \
         cross-agent-protocol --test schema_fixtures",
        stale.join("\n")
    );
}
