//! The receipt check: which of the contract's anchors — the paths, flags, numbers and quoted
//! strings it names — the receiving agent's receipt never mentions. Anchors are matched as
//! substrings (case-insensitive), so punctuation around them never raises a false alarm; a
//! contract that names no anchors reports nothing rather than a vacuous pass.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{HandoffError, Result};
use crate::render::CONTRACT_HEADING;

/// The markers the receipt is written between.
pub const RECEIPT_BEGIN: &str = "<!-- cross-agent receipt: begin -->";
pub const RECEIPT_END: &str = "<!-- cross-agent receipt: end -->";

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The receipt mentions every anchor.
    Complete,
    /// The receipt leaves some anchors out (listed in `missing`).
    Missing,
    /// Nothing has been written between the markers yet.
    NoReceipt,
    /// The contract names no anchors, so there is nothing to check.
    NoAnchors,
}

/// One anchor of the contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    pub kind: AnchorKind,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorKind {
    Path,
    Flag,
    Number,
    Quoted,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptReport {
    pub file: PathBuf,
    pub verdict: Verdict,
    pub anchors: Vec<Anchor>,
    pub missing: Vec<Anchor>,
}

/// Checks the receipt in `path` (a `HANDOFF.md`, or the folder holding it).
pub fn check_file(path: &Path) -> Result<ReceiptReport> {
    let file = if path.is_dir() {
        path.join(crate::deliver::HANDOFF_FILE)
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|e| HandoffError::io("read", &file, e))?;
    check(&file, &text)
}

/// Checks the receipt in the text of a brief.
pub fn check(file: &Path, text: &str) -> Result<ReceiptReport> {
    let no_block = || HandoffError::NoReceiptBlock {
        path: file.to_path_buf(),
        begin: RECEIPT_BEGIN,
        end: RECEIPT_END,
    };
    let begin = text.rfind(RECEIPT_BEGIN).ok_or_else(no_block)?;
    let after = begin + RECEIPT_BEGIN.len();
    let end = text[after..].find(RECEIPT_END).ok_or_else(no_block)? + after;
    let receipt = text[after..end].to_lowercase();
    let anchors = anchors(&contract_text(text));
    let missing: Vec<Anchor> = anchors
        .iter()
        .filter(|a| !receipt.contains(&a.text.to_lowercase()))
        .cloned()
        .collect();
    let verdict = if anchors.is_empty() {
        Verdict::NoAnchors
    } else if receipt.trim().is_empty() {
        Verdict::NoReceipt
    } else if missing.is_empty() {
        Verdict::Complete
    } else {
        Verdict::Missing
    };
    Ok(ReceiptReport {
        file: file.to_path_buf(),
        verdict,
        anchors,
        missing: if verdict == Verdict::NoAnchors {
            Vec::new()
        } else {
            missing
        },
    })
}

/// The human's words in the contract section: its quoted (`> `) lines.
fn contract_text(text: &str) -> String {
    let Some(start) = text.find(CONTRACT_HEADING) else {
        return String::new();
    };
    let body = &text[start + CONTRACT_HEADING.len()..];
    let end = body.find("\n## ").unwrap_or(body.len());
    body[..end]
        .lines()
        .filter_map(|l| l.strip_prefix('>'))
        .map(|l| l.trim_start().trim_start_matches("- "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The anchors of a contract, each once, in the order they appear.
pub fn anchors(contract: &str) -> Vec<Anchor> {
    let mut out: Vec<Anchor> = Vec::new();
    let mut add = |kind, text: &str| {
        if !text.is_empty() && !out.iter().any(|a| a.text == text) {
            out.push(Anchor {
                kind,
                text: text.to_owned(),
            });
        }
    };
    for quoted in quoted_strings(contract) {
        add(AnchorKind::Quoted, &quoted);
    }
    for token in contract.split_whitespace() {
        let t = token.trim_matches(|c: char| {
            matches!(
                c,
                '.' | ','
                    | ';'
                    | ':'
                    | '!'
                    | '?'
                    | '('
                    | ')'
                    | '['
                    | ']'
                    | '{'
                    | '}'
                    | '"'
                    | '\''
                    | '`'
            )
        });
        if t.is_empty() {
            continue;
        }
        if is_flag(t) {
            add(AnchorKind::Flag, t);
        } else if is_path(t) {
            add(AnchorKind::Path, t);
        } else if is_number(t) {
            add(AnchorKind::Number, t);
        }
    }
    out
}

/// Text between double quotes or backticks, and between single quotes that open after a space
/// (so an apostrophe in "don't" opens nothing).
fn quoted_strings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        let opens = match c {
            '"' | '`' | '“' => true,
            '\'' => i == 0 || chars[i - 1].1.is_whitespace() || chars[i - 1].1 == '(',
            _ => false,
        };
        if opens {
            let close = match c {
                '“' => '”',
                other => other,
            };
            if let Some(j) = (i + 1..chars.len()).find(|&j| chars[j].1 == close) {
                let inner = text[at + c.len_utf8()..chars[j].0].trim();
                if !inner.is_empty() && !inner.contains('\n') {
                    out.push(inner.to_owned());
                }
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn is_flag(t: &str) -> bool {
    let body = t
        .strip_prefix("--")
        .or_else(|| t.strip_prefix('-'))
        .unwrap_or("");
    body.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | '.'))
}

fn is_path(t: &str) -> bool {
    if t.contains("://") {
        return false;
    }
    if t.contains('/') && t.chars().any(|c| c.is_alphanumeric()) {
        return true;
    }
    // `Cargo.toml`, `main.rs`: a name with a short extension.
    match t.rsplit_once('.') {
        Some((name, ext)) => {
            !name.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
                && name.chars().any(|c| c.is_alphabetic())
        }
        None => false,
    }
}

fn is_number(t: &str) -> bool {
    let digits_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(digits_end);
    number.chars().next().is_some_and(|c| c.is_ascii_digit())
        && unit.len() <= 3
        && unit.chars().all(|c| c.is_alphabetic() || c == '%')
}
