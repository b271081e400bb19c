//! The recorded fixtures (`crates/testkit/fixtures/`, written by `record-fixtures`) are what
//! their README says: every line is JSON, each transcript belongs to one session working in its
//! scenario's folder, and each shows its scenario in the form the CLI writes it — the tool call
//! and its result, the exit code 3 of the failing command, two prompts in the resumed session,
//! the explicit id.

// The helpers below unwrap like the tests do: a fixture that cannot be read fails the test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};

use cross_agent_testkit::agents::{CLAUDE_VERSION, CODEX_VERSION};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::real_support::{contains_text, read_jsonl};

/// The id `record-fixtures` gives the explicit-id Claude session.
const EXPLICIT_SESSION_ID: &str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

const CLAUDE_SCENARIOS: [&str; 5] = ["plain", "tool-ok", "tool-fail", "resumed", "explicit-id"];
const CODEX_SCENARIOS: [&str; 4] = ["plain", "tool-ok", "tool-fail", "resumed"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The folder scenario `name` ran in: the `cwd` its transcripts record.
fn workdir(name: &str) -> String {
    format!("/tmp/cross-agent-fixtures/work/{name}")
}

/// Every file under `dir`, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The one Claude transcript of a scenario: `claude/projects/<slug of its cwd>/<id>.jsonl`.
fn claude_fixture(name: &str) -> PathBuf {
    let slug: String = workdir(name)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let files = files_under(&fixtures().join("claude/projects").join(slug));
    assert_eq!(
        files.len(),
        1,
        "one transcript for claude {name}: {files:?}"
    );
    files[0].clone()
}

/// The one Codex rollout of a scenario, found by the `cwd` of its `session_meta`.
fn codex_fixture(name: &str) -> PathBuf {
    let found: Vec<PathBuf> = files_under(&fixtures().join("codex/sessions"))
        .into_iter()
        .filter(|path| {
            let records = read_jsonl(path).unwrap();
            records[0]["payload"]["cwd"] == json!(workdir(name))
        })
        .collect();
    assert_eq!(found.len(), 1, "one rollout for codex {name}: {found:?}");
    found[0].clone()
}

fn of_type<'a>(records: &'a [Value], kind: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["type"] == kind).collect()
}

/// The prompts a person typed in a Claude transcript: user records whose content is text, not
/// tool results (and not Claude's meta records).
fn claude_prompts(records: &[Value]) -> Vec<String> {
    of_type(records, "user")
        .into_iter()
        .filter(|r| r["isMeta"] != json!(true))
        .filter_map(|r| r["message"]["content"].as_str().map(str::to_owned))
        .collect()
}

/// Every content block of the Claude records of one type, with the record it came from.
fn claude_blocks<'a>(records: &'a [Value], kind: &str) -> Vec<(&'a Value, &'a Value)> {
    of_type(records, kind)
        .into_iter()
        .flat_map(|r| {
            r["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |block| (r, block))
        })
        .collect()
}

fn claude_texts(records: &[Value]) -> Vec<String> {
    claude_blocks(records, "assistant")
        .into_iter()
        .filter(|(_, b)| b["type"] == "text")
        .map(|(_, b)| b["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The `payload`s of a rollout's records of one type whose payload has `payload_type`.
fn codex_payloads<'a>(records: &'a [Value], kind: &str, payload_type: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["type"] == kind && r["payload"]["type"] == payload_type)
        .map(|r| &r["payload"])
        .collect()
}

/// What a person typed in a rollout: user `message` items, without the context Codex injects.
fn codex_prompts(records: &[Value]) -> Vec<String> {
    codex_payloads(records, "response_item", "message")
        .into_iter()
        .filter(|p| p["role"] == "user")
        .filter_map(|p| p["content"][0]["text"].as_str())
        .filter(|text| !text.starts_with('<'))
        .map(str::to_owned)
        .collect()
}

fn codex_answers(records: &[Value]) -> Vec<String> {
    codex_payloads(records, "response_item", "message")
        .into_iter()
        .filter(|p| p["role"] == "assistant")
        .map(|p| p["content"][0]["text"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_fixture_set_is_exactly_the_recorded_transcripts_and_stays_small() {
    let mut files = files_under(&fixtures().join("claude"));
    files.extend(files_under(&fixtures().join("codex")));
    assert_eq!(
        files.len(),
        CLAUDE_SCENARIOS.len() + CODEX_SCENARIOS.len(),
        "{files:#?}"
    );
    let readme = fs::read_to_string(fixtures().join("README.md")).unwrap();
    let mut total = 0;
    for file in &files {
        let relative = file.strip_prefix(fixtures()).unwrap();
        assert!(
            readme.contains(&format!("`{}`", relative.display())),
            "the README lists {}",
            relative.display()
        );
        total += fs::metadata(file).unwrap().len();
    }
    assert!(total < 1_100_000, "the fixtures grew to {total} bytes");
    assert!(readme.contains("cargo run -p cross-agent-testkit --bin record-fixtures"));
    assert!(readme.contains(&format!("{CLAUDE_VERSION} (Claude Code)")));
    assert!(readme.contains(&format!("codex-cli {CODEX_VERSION}")));
}

#[test]
fn every_claude_fixture_is_one_session_of_the_pinned_cli_in_its_folder() {
    for name in CLAUDE_SCENARIOS {
        let path = claude_fixture(name);
        let records = read_jsonl(&path).unwrap();
        let id = path.file_stem().unwrap().to_str().unwrap();
        for record in &records {
            if let Some(session) = record.get("sessionId") {
                assert_eq!(session, &json!(id), "{name}: {record}");
            }
            if let Some(cwd) = record.get("cwd") {
                assert_eq!(cwd, &json!(workdir(name)), "{name}");
            }
            if let Some(version) = record.get("version") {
                assert_eq!(version, &json!(CLAUDE_VERSION), "{name}");
            }
            assert_ne!(record["isSidechain"], json!(true), "{name}: no sidechain");
        }
        // Every reply ended its turn: nothing is left running.
        let last = of_type(&records, "assistant").pop().unwrap();
        assert_eq!(last["message"]["stop_reason"], json!("end_turn"), "{name}");
    }
}

#[test]
fn every_codex_fixture_is_one_user_thread_of_the_pinned_cli_in_its_folder() {
    for name in CODEX_SCENARIOS {
        let path = codex_fixture(name);
        let records = read_jsonl(&path).unwrap();
        assert_eq!(records[0]["type"], json!("session_meta"), "{name}");
        let meta = &records[0]["payload"];
        let id = meta["id"].as_str().unwrap();
        let file_name = path.file_name().unwrap().to_str().unwrap();
        assert!(file_name.ends_with(&format!("-{id}.jsonl")), "{file_name}");
        assert_eq!(meta["cli_version"], json!(CODEX_VERSION), "{name}");
        assert_eq!(meta["source"], json!("exec"), "{name}");
        assert_eq!(meta["thread_source"], json!("user"), "{name}");
        assert_eq!(meta["model_provider"], json!("scripted"), "{name}");
        assert_eq!(
            of_type(&records, "session_meta").len(),
            1,
            "{name}: one thread"
        );
        let contexts = of_type(&records, "turn_context");
        assert!(!contexts.is_empty(), "{name}");
        for context in contexts {
            assert_eq!(context["payload"]["cwd"], json!(workdir(name)), "{name}");
        }
        let started = codex_payloads(&records, "event_msg", "task_started").len();
        let completed = codex_payloads(&records, "event_msg", "task_complete").len();
        assert_eq!(started, completed, "{name}: every turn completed");
    }
}

#[test]
fn the_plain_exchanges_hold_one_prompt_and_its_answer() {
    let claude = read_jsonl(&claude_fixture("plain")).unwrap();
    assert_eq!(
        claude_prompts(&claude),
        vec!["Say hello to the fixture recorder."]
    );
    assert_eq!(
        claude_texts(&claude),
        vec!["Hello from the scripted model."]
    );
    assert!(
        claude_blocks(&claude, "assistant")
            .iter()
            .all(|(_, b)| b["type"] == "text")
    );

    let codex = read_jsonl(&codex_fixture("plain")).unwrap();
    assert_eq!(
        codex_prompts(&codex),
        vec!["Say hello to the fixture recorder."]
    );
    assert_eq!(
        codex_answers(&codex),
        vec!["Hello from the scripted model."]
    );
    assert!(codex_payloads(&codex, "response_item", "function_call").is_empty());
}

#[test]
fn claude_records_a_bash_call_and_its_result_with_and_without_an_error() {
    for (name, command, is_error, output, tool_use_result) in [
        (
            "tool-ok",
            "echo listing-ok && ls",
            false,
            "listing-ok\nnotes.txt",
            // A command that succeeded: the shell's output, no exit code anywhere.
            json!({"stdout": "listing-ok\nnotes.txt", "stderr": "", "interrupted": false,
                   "isImage": false, "noOutputExpected": false}),
        ),
        (
            "tool-fail",
            "echo failing-check; exit 3",
            true,
            // A command that failed: `Exit code N` opens the output.
            "Exit code 3\nfailing-check",
            json!("Error: Exit code 3\nfailing-check"),
        ),
    ] {
        let records = read_jsonl(&claude_fixture(name)).unwrap();
        let calls: Vec<_> = claude_blocks(&records, "assistant")
            .into_iter()
            .filter(|(_, b)| b["type"] == "tool_use")
            .collect();
        assert_eq!(calls.len(), 1, "{name}");
        let (call_record, call) = calls[0];
        assert_eq!(call["name"], json!("Bash"));
        assert_eq!(call["input"]["command"], json!(command));
        assert_eq!(call_record["message"]["stop_reason"], json!("tool_use"));

        let results: Vec<_> = claude_blocks(&records, "user")
            .into_iter()
            .filter(|(_, b)| b["type"] == "tool_result")
            .collect();
        assert_eq!(results.len(), 1, "{name}");
        let (result_record, result) = results[0];
        assert_eq!(result["tool_use_id"], call["id"]);
        assert_eq!(result["is_error"], json!(is_error), "{name}");
        assert_eq!(result["content"], json!(output), "{name}");
        assert_eq!(result_record["toolUseResult"], tool_use_result, "{name}");
    }
    let ok = read_jsonl(&claude_fixture("tool-ok")).unwrap();
    assert_eq!(claude_texts(&ok), vec!["The listing check passed."]);
    let failed = read_jsonl(&claude_fixture("tool-fail")).unwrap();
    assert_eq!(
        claude_texts(&failed),
        vec!["The failing check exited with code 3."]
    );
}

#[test]
fn codex_records_an_exec_command_and_its_exit_code() {
    for (name, command, exit_code, status, output) in [
        (
            "tool-ok",
            "echo listing-ok && ls",
            0,
            "completed",
            "listing-ok\nnotes.txt\n",
        ),
        (
            "tool-fail",
            "echo failing-check; exit 3",
            3,
            "failed",
            "failing-check\n",
        ),
    ] {
        let records = read_jsonl(&codex_fixture(name)).unwrap();
        let calls = codex_payloads(&records, "response_item", "function_call");
        assert_eq!(calls.len(), 1, "{name}");
        assert_eq!(calls[0]["name"], json!("exec_command"));
        let arguments: Value =
            serde_json::from_str(calls[0]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments, json!({ "cmd": command }));

        // The model sees plain text with a `Process exited with code N` line…
        let outputs = codex_payloads(&records, "response_item", "function_call_output");
        assert_eq!(outputs.len(), 1, "{name}");
        assert_eq!(outputs[0]["call_id"], calls[0]["call_id"]);
        let text = outputs[0]["output"].as_str().unwrap();
        assert!(
            text.lines()
                .any(|l| l == format!("Process exited with code {exit_code}")),
            "{name}: {text}"
        );
        assert!(
            text.ends_with(&format!("Output:\n{output}")),
            "{name}: {text}"
        );

        // …and the thread's own item carries the exit code as a number.
        let items: Vec<_> = codex_payloads(&records, "event_msg", "item_completed")
            .into_iter()
            .map(|p| &p["item"])
            .filter(|item| item["type"] == "CommandExecution")
            .collect();
        assert_eq!(items.len(), 1, "{name}");
        assert_eq!(items[0]["id"], calls[0]["call_id"]);
        assert_eq!(items[0]["exit_code"], json!(exit_code), "{name}");
        assert_eq!(items[0]["status"], json!(status), "{name}");
        assert_eq!(items[0]["aggregated_output"], json!(output), "{name}");
    }
    let ok = read_jsonl(&codex_fixture("tool-ok")).unwrap();
    assert_eq!(codex_answers(&ok), vec!["The listing check passed."]);
    let failed = read_jsonl(&codex_fixture("tool-fail")).unwrap();
    assert_eq!(
        codex_answers(&failed),
        vec!["The failing check exited with code 3."]
    );
}

#[test]
fn the_resumed_sessions_hold_two_prompts_in_one_session() {
    let prompts = vec![
        "Remember the word pineapple.".to_owned(),
        "Which word did I ask you to remember?".to_owned(),
    ];
    let answers = vec![
        "Noted: pineapple.".to_owned(),
        "You asked me to remember pineapple.".to_owned(),
    ];

    // Claude appends the resumed turn to the same file (the one-session checks are above).
    let claude = read_jsonl(&claude_fixture("resumed")).unwrap();
    assert_eq!(claude_prompts(&claude), prompts);
    assert_eq!(claude_texts(&claude), answers);

    // Codex too: one rollout, one session_meta, two turns.
    let codex = read_jsonl(&codex_fixture("resumed")).unwrap();
    assert_eq!(codex_prompts(&codex), prompts);
    assert_eq!(codex_answers(&codex), answers);
    let completed = codex_payloads(&codex, "event_msg", "task_complete");
    assert_eq!(completed.len(), 2);
    assert_eq!(completed[1]["last_agent_message"], json!(answers[1]));
}

#[test]
fn the_explicit_id_session_carries_the_given_id() {
    let path = claude_fixture("explicit-id");
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        format!("{EXPLICIT_SESSION_ID}.jsonl")
    );
    let records = read_jsonl(&path).unwrap();
    let user = of_type(&records, "user")[0];
    assert_eq!(user["sessionId"], json!(EXPLICIT_SESSION_ID));
    assert!(contains_text(
        &user["message"],
        "Start the session with the given id."
    ));
    assert_eq!(claude_texts(&records), vec!["Started with the given id."]);
}
