//! `cross-agent check`'s database section: `hub.db`'s health as the daemon's start found it
//! (its integrity check and how long that took, and every damaged store moved aside), read
//! from `bridge_status`; when no daemon answers, what the home shows without opening the store
//! (the check itself runs only in the daemon, which owns the file).

use std::io::Write;

use cross_agent_home::Home;
use cross_agent_hub::integrity;
use serde_json::{Value, json};

/// The section as JSON: the daemon's `server_process.database`, else what is on disk.
pub fn report(daemon: &Value) -> Value {
    if let Some(database) = daemon.pointer("/server_process/database")
        && database.is_object()
    {
        return database.clone();
    }
    on_disk()
}

/// What can be told without a daemon: the store's size and the damaged stores beside it.
fn on_disk() -> Value {
    let home = match Home::from_env() {
        Ok(home) => home,
        Err(error) => return json!({"error": error.to_string()}),
    };
    let store = home.hub_db();
    let mut damaged = integrity::damaged_files_beside(&store);
    damaged.sort_unstable_by(|a, b| b.cmp(a));
    json!({
        "path": store.to_string_lossy(),
        "size_bytes": std::fs::metadata(&store).ok().map(|m| m.len()),
        "check": Value::Null,
        "quarantined": damaged.iter().map(|file| json!({"file": file})).collect::<Vec<_>>(),
        "note": "no daemon answered: the integrity check runs when the daemon starts",
    })
}

/// The section for a person: the store, what its check found, each damaged store moved aside.
pub fn write(out: &mut impl Write, database: &Value) -> std::io::Result<()> {
    writeln!(out, "database:")?;
    if let Some(error) = database.get("error").and_then(Value::as_str) {
        return writeln!(out, "  cannot tell: {error}");
    }
    let text = |key: &str| database.get(key).and_then(Value::as_str).unwrap_or("-");
    let size = database
        .get("size_bytes")
        .and_then(Value::as_u64)
        .map_or_else(
            || "not there yet".to_owned(),
            |bytes| format!("{bytes} bytes"),
        );
    writeln!(out, "  store: {} ({size})", text("path"))?;
    let took = database
        .get("check_ms")
        .and_then(Value::as_u64)
        .map(|ms| format!(", took {ms} ms"))
        .unwrap_or_default();
    let health = match database.get("check").and_then(Value::as_str) {
        Some("ok") => format!("ok: passed its integrity check at the daemon's start{took}"),
        Some("new") => "ok: created at the daemon's start".to_owned(),
        Some("quarantined") => format!(
            "ok, fresh: the store found at the daemon's start was damaged and moved aside{took}"
        ),
        Some(other) => other.to_owned(),
        None => text("note").to_owned(),
    };
    writeln!(out, "  health: {health}")?;
    let quarantined = database
        .get("quarantined")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if quarantined.is_empty() {
        return writeln!(out, "  moved aside: (none)");
    }
    writeln!(
        out,
        "  moved aside (damaged; deliveries recorded there are unknown, never re-sent):"
    )?;
    for store in quarantined {
        let field = |key: &str| store.get(key).and_then(Value::as_str);
        let mut line = format!("    {}", field("file").unwrap_or("-"));
        if let Some(at) = field("at") {
            line.push_str(&format!(" at {at}"));
        }
        if let Some(count) = store.get("deliveries").and_then(Value::as_u64) {
            line.push_str(&format!(", {count} delivery id(s) read back"));
        }
        if let Some(reason) = field("reason") {
            line.push_str(&format!(": {reason}"));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}
