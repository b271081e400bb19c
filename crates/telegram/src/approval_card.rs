//! The approval card: a headline (agent, tool, where, the danger pattern that fired) and what
//! the call would do ([`crate::diff`]), with Allow / Deny buttons — or the source's own
//! choices when it offers some (Copilot's host: "Allow once", "Always allow", …), at most
//! [`MAX_CHOICES`], their labels made safe for a button ([`Choice::button_text`]). Short, it is one message with
//! the command or diff inline in an HTML `<pre>`; long, the whole of it goes first as a file
//! (`approval.diff`, or `command.txt`) and the card under it says so. A card whose full content
//! the bot does not have (a shim that could keep only a trimmed detail) offers Deny only: the
//! phone never approves blind.

use serde_json::{Value, json};

use crate::api::MAX_TEXT_CHARS;
use crate::diff::WhatItDoes;
use crate::text::escape_html;

/// The most of a source's own choices a card offers: a phone shows a few buttons well, and the
/// rest are answered in the editor.
pub const MAX_CHOICES: usize = 4;
/// The longest label on a button, in characters (longer ones end with `…`).
const MAX_LABEL_CHARS: usize = 40;

/// One of the source's own answers, offered as a button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The source's id for it, handed back with the tap (never put in `callback_data`).
    pub id: String,
    /// The source's words for it.
    pub label: String,
    /// Whether it approves the call.
    pub allow: bool,
}

impl Choice {
    /// The label as a button shows it: control characters and runs of white space become one
    /// space, at most [`MAX_LABEL_CHARS`] characters, after ✅ or ❌ by what it does; an empty
    /// label is "Allow" or "Deny". `scrub` takes secrets out first.
    pub fn button_text(&self, scrub: impl Fn(&str) -> String) -> String {
        format!(
            "{} {}",
            if self.allow { "✅" } else { "❌" },
            self.shown_label(scrub)
        )
    }

    /// [`Choice::button_text`] without its ✅ or ❌.
    pub fn shown_label(&self, scrub: impl Fn(&str) -> String) -> String {
        let cleaned = scrub(&self.label)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>();
        let words: Vec<&str> = cleaned.split_whitespace().collect();
        let mut label = words.join(" ");
        if label.chars().count() > MAX_LABEL_CHARS {
            label = label.chars().take(MAX_LABEL_CHARS - 1).collect::<String>();
            label.push('…');
        }
        if label.is_empty() {
            label = if self.allow { "Allow" } else { "Deny" }.to_owned();
        }
        label
    }
}

/// Of a source's choices, the ones a card offers: in the source's order, at most
/// [`MAX_CHOICES`], keeping one that denies when the source offers one (so the phone can always
/// say no).
pub fn pick_choices(all: Vec<Choice>) -> Vec<Choice> {
    if all.len() <= MAX_CHOICES {
        return all;
    }
    let mut picked: Vec<Choice> = all.iter().take(MAX_CHOICES - 1).cloned().collect();
    let last = if picked.iter().any(|c| !c.allow) {
        all.get(MAX_CHOICES - 1).cloned()
    } else {
        all.iter()
            .skip(MAX_CHOICES - 1)
            .find(|c| !c.allow)
            .or_else(|| all.get(MAX_CHOICES - 1))
            .cloned()
    };
    picked.extend(last);
    picked
}

/// What an approval card shows.
#[derive(Debug, Clone)]
pub struct ApprovalCard {
    /// One line, plain text: `Claude · Bash in /work/proj (session 3856bb3e) — danger: rm -rf`.
    pub headline: String,
    /// What it would do, when there is more to show than the headline.
    pub what: Option<WhatItDoes>,
    /// Whether `what` is only part of it (so Allow is not offered).
    pub partial: bool,
    /// The source's own choices ([`pick_choices`] of them); empty means Allow / Deny.
    pub choices: Vec<Choice>,
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

    /// The buttons for the approval keyed `key` (`callback_data` stays far under 64 bytes:
    /// `o:<12-character key>:<index>` for a source's choice, one per row). A partial card
    /// offers only what denies.
    pub fn buttons(&self, key: &str, scrub: impl Fn(&str) -> String) -> Value {
        let offered: Vec<Value> = self
            .choices
            .iter()
            .enumerate()
            .filter(|(_, choice)| !self.partial || !choice.allow)
            .map(|(i, choice)| {
                json!([{"text": choice.button_text(&scrub), "callback_data": format!("o:{key}:{i}")}])
            })
            .collect();
        if !offered.is_empty() {
            return json!({ "inline_keyboard": offered });
        }
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
            choices: Vec::new(),
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
        let buttons = partial.buttons("k1", str::to_owned);
        assert_eq!(buttons["inline_keyboard"][0].as_array().unwrap().len(), 1);
        assert_eq!(buttons["inline_keyboard"][0][0]["callback_data"], "d:k1");
    }

    fn choice(id: &str, label: &str, allow: bool) -> Choice {
        Choice {
            id: id.into(),
            label: label.into(),
            allow,
        }
    }

    #[test]
    fn a_sources_choices_are_its_buttons_with_short_callback_data() {
        let mut shown = card("ls".into(), false);
        shown.choices = vec![
            choice("allow-once", "Allow once", true),
            choice("allow-session", "Always allow\nin this session\u{7}", true),
            choice("deny", "", false),
        ];
        let buttons = shown.buttons("0123456789ab", |t| t.replace("secret", "<hidden>"));
        let rows = buttons["inline_keyboard"].as_array().unwrap();
        let texts: Vec<&str> = rows
            .iter()
            .map(|r| r[0]["text"].as_str().unwrap())
            .collect();
        assert_eq!(
            texts,
            [
                "✅ Allow once",
                "✅ Always allow in this session",
                "❌ Deny"
            ]
        );
        for (i, row) in rows.iter().enumerate() {
            let data = row[0]["callback_data"].as_str().unwrap();
            assert_eq!(data, format!("o:0123456789ab:{i}"));
            assert!(data.len() <= 64);
        }
        let long = choice("x", &format!("secret {}", "y".repeat(100)), true);
        let text = long.button_text(|t| t.replace("secret", "<hidden>"));
        assert!(text.starts_with("✅ <hidden> yyy"), "{text}");
        assert_eq!(text.chars().count(), 2 + MAX_LABEL_CHARS, "{text}");
        assert!(text.ends_with('…'));
        // A partial card offers only the choices that deny.
        shown.partial = true;
        let buttons = shown.buttons("k", str::to_owned);
        assert_eq!(buttons["inline_keyboard"].as_array().unwrap().len(), 1);
        assert_eq!(buttons["inline_keyboard"][0][0]["callback_data"], "o:k:2");
    }

    #[test]
    fn at_most_four_choices_are_offered_and_one_that_denies_is_kept() {
        let many: Vec<Choice> = (0..6)
            .map(|i| choice(&format!("a{i}"), &format!("Allow {i}"), true))
            .chain([choice("deny", "Deny", false)])
            .collect();
        let ids: Vec<String> = pick_choices(many).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["a0", "a1", "a2", "deny"]);
        let few = vec![choice("a", "A", true), choice("d", "D", false)];
        assert_eq!(pick_choices(few.clone()), few);
    }
}
