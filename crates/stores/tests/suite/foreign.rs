//! The Cursor and Antigravity readers, on stores written from their public descriptions (see
//! `cross_agent_testkit::foreign_stores` for which description each follows).

use std::path::{Path, PathBuf};

use cross_agent_stores::Warnings;
use cross_agent_stores::foreign::{antigravity, cursor};
use cross_agent_stores::turns::{Message, Role, ToolCall, ToolResult, Turn, TurnItem};
use cross_agent_testkit::foreign_stores::{antigravity_session, cursor_session};
use pretty_assertions::assert_eq;
use serde_json::json;

fn user(text: &str) -> TurnItem {
    TurnItem::Message(Message {
        role: Role::User,
        text: text.to_owned(),
        timestamp: None,
    })
}

fn assistant(text: &str) -> TurnItem {
    TurnItem::Message(Message {
        role: Role::Assistant,
        text: text.to_owned(),
        timestamp: None,
    })
}

fn strip_times(turns: &[Turn]) -> Vec<Vec<TurnItem>> {
    turns
        .iter()
        .map(|t| {
            t.items
                .iter()
                .cloned()
                .map(|mut i| {
                    match &mut i {
                        TurnItem::Message(m) => m.timestamp = None,
                        TurnItem::ToolCall(c) => c.timestamp = None,
                        TurnItem::ToolResult(r) => r.timestamp = None,
                    }
                    i
                })
                .collect()
        })
        .collect()
}

/// Messages in the shapes the "Cursor Agent Database Format Guide" shows.
fn cursor_messages() -> Vec<serde_json::Value> {
    vec![
        json!({"role": "system", "content": "You are an AI coding assistant"}),
        json!({"role": "user", "content": "<user_info>OS linux</user_info>\n\n<user_query>\nFix the flaky test in src/lib.rs; never touch Cargo.lock\n</user_query>"}),
        json!({"id": "1", "role": "assistant", "content": [
            {"type": "reasoning", "text": "thinking", "signature": "c2ln"},
            {"type": "text", "text": "Running the tests first."},
            {"type": "tool-call", "toolCallId": "toolu_1", "toolName": "run_terminal_cmd",
             "args": {"command": "cargo test"}, "unknownField": [1, 2]}
        ]}),
        json!({"role": "tool", "id": "toolu_1", "content": [
            {"type": "tool-result", "toolName": "run_terminal_cmd", "toolCallId": "toolu_1",
             "result": [{"type": "text", "text": "test lib::flaky ... FAILED"}, {"type": "text", "text": "Exit code: 101"}],
             "isError": false}
        ]}),
        json!({"id": "1", "role": "assistant", "content": [{"type": "text", "text": "The test fails; looking at src/lib.rs."}]}),
    ]
}

#[test]
fn cursor_store_is_read_in_tree_order_with_exit_codes_and_the_recorded_cwd() {
    let home = tempfile::tempdir().unwrap();
    let store = cursor_session(
        home.path(),
        "e4e90b7bcae743c9a1a1a045a49e1b1d",
        "ac437fdf-3e7e-4a54-98a4-7bb04fd3efc6",
        Path::new("/home/u/shop"),
        &cursor_messages(),
    )
    .unwrap();
    let found = cursor::find_session(
        &cursor::chats_root(home.path()),
        "ac437fdf-3e7e-4a54-98a4-7bb04fd3efc6",
    );
    assert_eq!(found.as_deref(), Some(store.as_path()));

    let mut warnings = Warnings::default();
    let session = cursor::read_session(&store, &mut warnings).unwrap();
    assert!(warnings.items.is_empty(), "{:?}", warnings.items);
    assert_eq!(session.session_id, "ac437fdf-3e7e-4a54-98a4-7bb04fd3efc6");
    assert_eq!(session.cwd, Some(PathBuf::from("/home/u/shop")));
    assert!(!session.cwd_derived);
    assert_eq!(
        strip_times(&session.turns),
        vec![vec![
            user("Fix the flaky test in src/lib.rs; never touch Cargo.lock"),
            assistant("Running the tests first."),
            TurnItem::ToolCall(ToolCall {
                id: "toolu_1".into(),
                name: "run_terminal_cmd".into(),
                input: r#"{"command":"cargo test"}"#.into(),
                timestamp: None,
            }),
            TurnItem::ToolResult(ToolResult {
                call_id: "toolu_1".into(),
                output: "test lib::flaky ... FAILED\nExit code: 101".into(),
                is_error: Some(false),
                exit_code: Some(101),
                timestamp: None,
            }),
            assistant("The test fails; looking at src/lib.rs."),
        ]]
    );
    assert!(session.turns[0].finished);
}

#[test]
fn cursor_store_is_read_through_a_live_writers_wal_without_changing_it() {
    let home = tempfile::tempdir().unwrap();
    let store = cursor_session(
        home.path(),
        "ws",
        "s1",
        Path::new("/home/u/shop"),
        &cursor_messages(),
    )
    .unwrap();
    // A live Cursor: a writer holding the database open, its last write still in the WAL.
    let writer = rusqlite::Connection::open(&store).unwrap();
    writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    writer
        .execute(
            "INSERT INTO blobs (id, data) VALUES ('ff', ?1)",
            [serde_json::to_vec(
                &json!({"role": "user", "content": "<user_query>now also the docs</user_query>"}),
            )
            .unwrap()],
        )
        .unwrap();
    let root: String = {
        let hexed: String = writer
            .query_row("SELECT value FROM meta WHERE key = '0'", [], |r| r.get(0))
            .unwrap();
        let bytes: Vec<u8> = (0..hexed.len() / 2)
            .map(|i| u8::from_str_radix(&hexed[i * 2..i * 2 + 2], 16).unwrap())
            .collect();
        let meta: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        meta["latestRootBlobId"].as_str().unwrap().to_owned()
    };
    // The root gains a link to the new message, under a 32-byte id like every other.
    let mut new_id = [0u8; 32];
    new_id[31] = 0xee;
    let new_hex: String = new_id.iter().map(|b| format!("{b:02x}")).collect();
    writer
        .execute("UPDATE blobs SET id = ?1 WHERE id = 'ff'", [&new_hex])
        .unwrap();
    let old_root: Vec<u8> = writer
        .query_row("SELECT data FROM blobs WHERE id = ?1", [&root], |r| {
            r.get(0)
        })
        .unwrap();
    let mut new_root = old_root.clone();
    new_root.extend_from_slice(&[0x0A, 0x20]);
    new_root.extend_from_slice(&new_id);
    writer
        .execute(
            "UPDATE blobs SET data = ?1 WHERE id = ?2",
            rusqlite::params![new_root, root],
        )
        .unwrap();
    let wal = store.with_file_name("store.db-wal");
    assert!(
        std::fs::metadata(&wal).unwrap().len() > 0,
        "the write sits in the WAL"
    );
    let db_before = std::fs::read(&store).unwrap();

    let session = cursor::read_session(&store, &mut Warnings::default()).unwrap();
    assert_eq!(session.turns.len(), 2);
    assert_eq!(
        strip_times(&session.turns)[1],
        vec![user("now also the docs")]
    );
    assert!(!session.turns[1].finished);
    assert_eq!(
        std::fs::read(&store).unwrap(),
        db_before,
        "the store is never written"
    );
    drop(writer);
}

#[test]
fn cursor_store_that_is_not_a_session_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");
    std::fs::write(&store, b"not sqlite at all, just text").unwrap();
    let err = cursor::read_session(&store, &mut Warnings::default()).unwrap_err();
    assert!(
        err.to_string().contains(&store.display().to_string()),
        "{err}"
    );
}

/// Steps in the layout third-party reports show for Antigravity (no public document fixes it):
/// unknown fields, a field of an unexpected type, and a half-written last line.
#[test]
fn antigravity_steps_become_turns_with_step_exit_codes_and_a_derived_cwd() {
    let home = tempfile::tempdir().unwrap();
    let steps = [
        json!({"step_index": 0, "source": "USER_EXPLICIT", "type": "USER_INPUT", "status": "DONE",
               "created_at": "2026-05-01T10:00:00Z", "content": "Add a --dry-run flag to the importer", "surprise": {"a": 1}}),
        json!({"step_index": 1, "source": "MODEL", "type": "PLANNER_RESPONSE", "status": "DONE",
               "created_at": "2026-05-01T10:00:05Z", "content": "Reading the importer.",
               "tool_calls": [{"name": "view_file", "args": {"AbsolutePath": "/home/u/importer/src/main.rs"}}]}),
        json!({"step_index": 2, "source": "MODEL", "type": "VIEW_FILE", "status": "DONE",
               "created_at": "2026-05-01T10:00:06Z", "content": "fn main() {}"}),
        json!({"step_index": "3", "source": "MODEL", "type": "RUN_COMMAND", "status": "DONE",
               "created_at": 1_777_629_610, "content": "error: no such flag\nExit code: 2", "exit_code": 2,
               "CommandLine": "cargo run -- --dry-run", "Cwd": "/home/u/importer"}),
        json!({"step_index": 4, "source": "MODEL", "type": "PLANNER_RESPONSE", "content": 42}),
        json!({"step_index": 5, "source": "MODEL", "type": "SOMETHING_NEW", "content": null, "status": ["odd"]}),
    ];
    let path = antigravity_session(
        home.path(),
        "9f1c0d2e-sess",
        &steps,
        r#"{"step_index": 6, "source": "MODEL", "type": "PLANNER_RE"#,
    )
    .unwrap();
    assert_eq!(
        antigravity::find_session(&antigravity::brain_roots(home.path()), "9f1c0d2e-sess"),
        Some(path.clone())
    );
    let mut warnings = Warnings::default();
    let session = antigravity::read_session(&path, &mut warnings).unwrap();
    assert_eq!(
        warnings.items.len(),
        1,
        "the half-written last line: {:?}",
        warnings.items
    );
    assert_eq!(session.session_id, "9f1c0d2e-sess");
    assert_eq!(session.cwd, Some(PathBuf::from("/home/u/importer")));
    assert!(session.cwd_derived);
    let items = &strip_times(&session.turns)[0];
    assert_eq!(items[0], user("Add a --dry-run flag to the importer"));
    assert_eq!(items[1], assistant("Reading the importer."));
    assert_eq!(
        items[3],
        TurnItem::ToolResult(ToolResult {
            call_id: "step-1.0".into(),
            output: "fn main() {}".into(),
            is_error: Some(false),
            exit_code: None,
            timestamp: None,
        })
    );
    let TurnItem::ToolCall(run) = &items[4] else {
        panic!("a command step with no announced call gets a call of its own: {items:?}");
    };
    assert_eq!(run.name, "RUN_COMMAND");
    assert!(
        run.input.contains("cargo run -- --dry-run"),
        "{}",
        run.input
    );
    let TurnItem::ToolResult(result) = &items[5] else {
        panic!("{items:?}");
    };
    assert_eq!(result.exit_code, Some(2));
    assert_eq!(items[6], assistant("42"));
}
