//! The one escaping function for human output. Session titles, paths, peers' answers and error
//! messages quoting them can hold anything a transcript holds, including `ESC ] 0 ; … BEL`
//! (retitle the terminal) or `ESC [ 2 J` (clear it). Printed raw, they act on the user's
//! terminal; escaped, they show as what they are: `\x1b]0;PWNED\x07\x1b[2J`.
//!
//! Escaped: every control character (C0, DEL, C1 — `char::is_control`) and the bidirectional
//! overrides that reorder what a line appears to say. Newline and tab are kept where the layout
//! allows them ([`escape`]) and escaped inside a table cell or a one-line field
//! ([`escape_cell`]). A backslash is left as it is: titles and paths hold them, and `--json` is
//! the exact form.

use std::borrow::Cow;
use std::fmt::Write as _;

/// What may stay as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Free text on its own lines: newline and tab stay.
    Lines,
    /// One cell or one line: nothing that moves the cursor stays.
    Cell,
}

/// `text` safe to print, keeping its newlines and tabs.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_as(text, Layout::Lines)
}

/// `text` safe to print in a table cell or on one line: newlines and tabs escaped too.
pub fn escape_cell(text: &str) -> Cow<'_, str> {
    escape_as(text, Layout::Cell)
}

fn escape_as(text: &str, layout: Layout) -> Cow<'_, str> {
    // Most text is printable ASCII: a byte scan answers for it without decoding characters.
    let printable_ascii = text.bytes().all(|b| (0x20..0x7f).contains(&b));
    if printable_ascii || !text.chars().any(|c| must_escape(c, layout)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if must_escape(c, layout) {
            push_visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn must_escape(c: char, layout: Layout) -> bool {
    match c {
        '\n' | '\t' => layout == Layout::Cell,
        // Left-to-right/right-to-left marks, embeddings, overrides and isolates.
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        c => c.is_control(),
    }
}

/// The character as an escape a person can read: `\n`, `\x1b`, `\u{9b}`.
fn push_visible(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if c.is_ascii() => {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{escape, escape_cell};

    #[test]
    fn terminal_sequences_show_as_text() {
        let hostile = "\u{1b}]0;PWNED\u{7}\u{1b}[2J";
        assert_eq!(escape(hostile), "\\x1b]0;PWNED\\x07\\x1b[2J");
        assert_eq!(escape("a\u{9b}2Jb\u{7f}"), "a\\u{9b}2Jb\\x7f");
        assert_eq!(escape("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
    }

    #[test]
    fn layout_decides_newlines_and_tabs() {
        assert_eq!(escape("one\n\ttwo\r"), "one\n\ttwo\\r");
        assert_eq!(escape_cell("one\n\ttwo"), "one\\n\\ttwo");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "[name] 請求書 billing-api C:\\work";
        assert!(matches!(escape_cell(text), std::borrow::Cow::Borrowed(t) if t == text));
    }
}
