//! The approval card: a headline (agent, tool, where, the danger pattern that fired) and what
//! the call would do ([`crate::diff`]), with Allow / Deny buttons. Short, it is one message with
//! the command or diff inline in an HTML `<pre>`; long, the whole of it goes first as a file
//! (`approval.diff`, or `command.txt`) and the card under it says so. A card whose full content
//! the bot does not have (a shim that could keep only a trimmed detail) offers Deny only: the
//! phone never approves blind.

use serde_json::{Value, json};

use crate::api::MAX_TEXT_CHARS;
use crate::diff::WhatItDoes;
use crate::text::escape_html;

/// What an approval card shows.
#[derive(Debug, Clone)]
pub struct ApprovalCard {
    /// One line, plain text: `Claude · Bash in /work/proj (session 3856bb3e) — danger: rm -rf`.
    pub headline: String,
    /// What it would do, when there is more to show than the headline.
    pub what: Option<WhatItDoes>,
    /// Whether `what` is only part of it (so Allow is not offered).
    pub partial: bool,
}

/// How the card goes out.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    /// One message.
    Inline { html: String },
    /// A file first, then the card.
    WithFile {
        file_name: String,
        bytes: Vec<u8>,
        caption: String,
        html: String,
    },
}

impl ApprovalCard {
    /// The card's messages, the text given to `scrub` before it is escaped.
    pub fn render(&self, scrub: impl Fn(&str) -> String) -> Rendered {
        let head = format!("<b>Approve?</b> {}", escape_html(&scrub(&self.headline)));
        let partial_note = if self.partial {
            "\n<i>Only part of it reached cross-agent, so it can only be denied here; answer in the editor to allow.</i>"
        } else {
            ""
        };
        let Some(what) = &self.what else {
            return Rendered::Inline {
                html: format!("{head}{partial_note}"),
            };
        };
        let text = scrub(&what.text);
        let inline = format!("{head}\n<pre>{}</pre>{partial_note}", escape_html(&text));
        if inline.chars().count() <= MAX_TEXT_CHARS {
            return Rendered::Inline { html: inline };
        }
        let lines = text.lines().count();
        let (file_name, kind) = if what.is_diff {
            ("approval.diff", "diff")
        } else {
            ("command.txt", "command")
        };
        Rendered::WithFile {
            file_name: file_name.to_owned(),
            bytes: text.into_bytes(),
            caption: format!("The whole {kind} ({lines} lines) of the approval below."),
            html: format!(
                "{head}\nThe whole {kind} ({lines} lines) is in <code>{file_name}</code> above.{partial_note}"
            ),
        }
    }

    /// The buttons for the approval keyed `key` (`callback_data` stays far under 64 bytes).
    pub fn buttons(&self, key: &str) -> Value {
        let deny = json!({"text": "❌ Deny", "callback_data": format!("d:{key}")});
        if self.partial {
            json!({"inline_keyboard": [[deny]]})
        } else {
            json!({"inline_keyboard": [[
                {"text": "✅ Allow", "callback_data": format!("a:{key}")}, deny]]})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(text: String, is_diff: bool) -> ApprovalCard {
        ApprovalCard {
            headline: "Claude · Write in /p <x>".into(),
            what: Some(WhatItDoes { text, is_diff }),
            partial: false,
        }
    }

    #[test]
    fn a_short_diff_is_inline_and_escaped() {
        let rendered = card("+a <b> & c\n".into(), true).render(str::to_owned);
        assert_eq!(
            rendered,
            Rendered::Inline {
                html: "<b>Approve?</b> Claude · Write in /p &lt;x&gt;\n<pre>+a &lt;b&gt; &amp; c\n</pre>"
                    .into()
            }
        );
    }

    #[test]
    fn a_long_diff_goes_whole_as_a_file_before_the_card() {
        let diff: String = (0..2000).map(|i| format!("+line {i}\n")).collect();
        match card(diff.clone(), true).render(str::to_owned) {
            Rendered::WithFile {
                file_name,
                bytes,
                html,
                ..
            } => {
                assert_eq!(file_name, "approval.diff");
                assert_eq!(bytes, diff.into_bytes());
                assert!(html.contains("2000 lines"), "{html}");
                assert!(html.chars().count() <= MAX_TEXT_CHARS);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_partial_card_offers_deny_only() {
        let mut partial = card("rm -rf /tm…".into(), false);
        partial.partial = true;
        let buttons = partial.buttons("k1");
        assert_eq!(buttons["inline_keyboard"][0].as_array().unwrap().len(), 1);
        assert_eq!(buttons["inline_keyboard"][0][0]["callback_data"], "d:k1");
    }
}
