//! What an approval would do, as the phone shows it (never approve blind): the full command of
//! a shell tool, or the unified diff a file tool would make — Claude `Write` / `Edit` /
//! `MultiEdit` (diffed against the file as it is now, read-only), Codex file changes (the
//! diffs its `fileChange` item carries). Diffs come from the `similar` crate.

use std::path::{Path, PathBuf};

use serde_json::Value;
use similar::TextDiff;

/// The longest file read to diff against; a larger one is diffed as if new (and says so).
const MAX_BASE_BYTES: u64 = 4 * 1024 * 1024;

/// What a call would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhatItDoes {
    /// The command, the diff, or the input as JSON.
    pub text: String,
    /// Whether `text` is a unified diff (sent as a `.diff` file when long).
    pub is_diff: bool,
}

/// What `tool` with `input` would do, run in `cwd` (for relative paths). `None` when there is
/// nothing to show beyond the tool's name.
pub fn what_it_does(tool: &str, input: &Value, cwd: Option<&Path>) -> Option<WhatItDoes> {
    let field = |name: &str| input.get(name).and_then(Value::as_str);
    let diff = |text: String| {
        Some(WhatItDoes {
            text,
            is_diff: true,
        })
    };
    if let Some(changes) = input.get("changes") {
        return diff(codex_changes(changes));
    }
    match tool {
        "Write" => {
            let path = field("file_path")?;
            let (before, note) = read_base(path, cwd);
            let mut out = note;
            out.push_str(&unified(path, &before, field("content").unwrap_or("")));
            diff(out)
        }
        "Edit" | "MultiEdit" => {
            let path = field("file_path")?;
            let edits: Vec<(String, String, bool)> = if tool == "Edit" {
                vec![(
                    field("old_string").unwrap_or("").to_owned(),
                    field("new_string").unwrap_or("").to_owned(),
                    input["replace_all"].as_bool().unwrap_or(false),
                )]
            } else {
                input["edits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|edit| {
                        (
                            edit["old_string"].as_str().unwrap_or("").to_owned(),
                            edit["new_string"].as_str().unwrap_or("").to_owned(),
                            edit["replace_all"].as_bool().unwrap_or(false),
                        )
                    })
                    .collect()
            };
            let (before, note) = read_base(path, cwd);
            let mut after = before.clone();
            let mut applied = true;
            for (old, new, all) in &edits {
                if old.is_empty() || !after.contains(old.as_str()) {
                    applied = false;
                    break;
                }
                after = if *all {
                    after.replace(old.as_str(), new)
                } else {
                    after.replacen(old.as_str(), new, 1)
                };
            }
            let mut out = note;
            if applied {
                out.push_str(&unified(path, &before, &after));
            } else {
                // The file does not hold the old text (yet): show the replacement itself.
                out.push_str(&format!("--- {path}\n+++ {path}\n"));
                for (old, new, _) in &edits {
                    out.push_str(&format!("@@ (as asked) @@\n{}", unified_body(old, new)));
                }
            }
            diff(out)
        }
        _ => {
            if let Some(command) = field("command") {
                return Some(WhatItDoes {
                    text: command.to_owned(),
                    is_diff: false,
                });
            }
            if input.is_null() || input.as_object().is_some_and(|o| o.is_empty()) {
                return None;
            }
            Some(WhatItDoes {
                text: serde_json::to_string_pretty(input).unwrap_or_default(),
                is_diff: false,
            })
        }
    }
}

/// The file at `path` as it is now (empty when it does not exist), and a note when it could
/// not be read whole.
fn read_base(path: &str, cwd: Option<&Path>) -> (String, String) {
    let full: PathBuf = match cwd {
        Some(cwd) if Path::new(path).is_relative() => cwd.join(path),
        _ => PathBuf::from(path),
    };
    match std::fs::metadata(&full) {
        Ok(meta) if meta.len() > MAX_BASE_BYTES => (
            String::new(),
            format!("# {path} is over 4 MB; shown as if new\n"),
        ),
        Ok(_) => match std::fs::read(&full) {
            Ok(bytes) => (String::from_utf8_lossy(&bytes).into_owned(), String::new()),
            Err(error) => (
                String::new(),
                format!("# {path} could not be read ({error}); shown as if new\n"),
            ),
        },
        Err(_) => (String::new(), String::new()),
    }
}

fn unified(path: &str, before: &str, after: &str) -> String {
    let old_header = if before.is_empty() { "/dev/null" } else { path };
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(old_header, path)
        .to_string()
}

fn unified_body(before: &str, after: &str) -> String {
    let mut out = String::new();
    for change in TextDiff::from_lines(before, after).iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
            similar::ChangeTag::Equal => ' ',
        };
        out.push(sign);
        out.push_str(change.value());
        if change.missing_newline() {
            out.push('\n');
        }
    }
    out
}

/// Codex's `fileChange` item `changes`: `[{path, kind: {type: add|delete|update, move_path},
/// diff}]`; an `add` carries the new content, the others a unified diff.
fn codex_changes(changes: &Value) -> String {
    let mut out = String::new();
    for change in changes.as_array().into_iter().flatten() {
        let path = change["path"].as_str().unwrap_or("?");
        let kind = change["kind"]["type"]
            .as_str()
            .or_else(|| change["kind"].as_str())
            .unwrap_or("update");
        let body = change["diff"].as_str().unwrap_or("");
        match kind {
            "add" if !body.starts_with("---") && !body.starts_with("@@") => {
                out.push_str(&unified(path, "", body));
            }
            "delete" if !body.starts_with("---") && !body.starts_with("@@") => {
                out.push_str(&format!("--- {path}\n+++ /dev/null\n"));
                out.push_str(&unified_body(body, ""));
            }
            _ => {
                if !body.starts_with("---") {
                    let to = change["kind"]["move_path"].as_str().unwrap_or(path);
                    out.push_str(&format!("--- {path}\n+++ {to}\n"));
                }
                out.push_str(body);
                if !body.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_write_over_an_existing_file_is_a_diff_against_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let shown = what_it_does(
            "Write",
            &json!({"file_path": "a.txt", "content": "one\n2\nthree\n"}),
            Some(dir.path()),
        )
        .unwrap();
        assert!(shown.is_diff);
        assert!(
            shown.text.contains("--- a.txt\n+++ a.txt\n"),
            "{}",
            shown.text
        );
        assert!(shown.text.contains("-two\n+2\n"), "{}", shown.text);
    }

    #[test]
    fn an_edit_is_applied_to_the_file_to_show_its_context() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("b.rs");
        std::fs::write(&file, "fn a() {}\nfn b() {}\nfn c() {}\n").unwrap();
        let shown = what_it_does(
            "Edit",
            &json!({"file_path": file, "old_string": "fn b() {}", "new_string": "fn bee() {}"}),
            None,
        )
        .unwrap();
        assert!(
            shown
                .text
                .contains(" fn a() {}\n-fn b() {}\n+fn bee() {}\n fn c() {}")
        );
        // The file is only read.
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "fn a() {}\nfn b() {}\nfn c() {}\n"
        );
    }

    #[test]
    fn an_edit_whose_old_text_is_not_in_the_file_shows_what_was_asked() {
        let shown = what_it_does(
            "MultiEdit",
            &json!({"file_path": "/nonexistent/x", "edits": [
                {"old_string": "a", "new_string": "b"}]}),
            None,
        )
        .unwrap();
        assert!(shown.text.contains("-a\n+b\n"), "{}", shown.text);
    }

    #[test]
    fn codex_file_changes_show_their_diffs_and_new_files_in_full() {
        let shown = what_it_does(
            "file change",
            &json!({"changes": [
                {"path": "new.txt", "kind": {"type": "add"}, "diff": "hello\n"},
                {"path": "old.txt", "kind": {"type": "update", "move_path": null},
                 "diff": "@@ -1 +1 @@\n-a\n+b\n"}]}),
            None,
        )
        .unwrap();
        assert!(
            shown.text.contains("+++ new.txt\n@@ -0,0 +1 @@\n+hello\n"),
            "{}",
            shown.text
        );
        assert!(
            shown
                .text
                .contains("--- old.txt\n+++ old.txt\n@@ -1 +1 @@\n-a\n+b\n")
        );
    }

    #[test]
    fn a_command_is_shown_whole() {
        let command = "x".repeat(10_000);
        let shown = what_it_does("Bash", &json!({"command": command}), None).unwrap();
        assert_eq!(shown.text.len(), 10_000);
        assert!(!shown.is_diff);
    }
}
