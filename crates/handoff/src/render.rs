//! `HANDOFF.md`: the brief as Markdown — contract first, the compact after it marked as context,
//! then the deterministic record, and the receipt block the receiving agent fills in.

use std::fmt::Write as _;

use crate::brief::{Brief, Outcome};
use crate::compact::Compact;
use crate::receipt::{RECEIPT_BEGIN, RECEIPT_END};

/// The heading the receipt check reads the contract under.
pub const CONTRACT_HEADING: &str = "## Contract";

/// What the compact section says.
#[derive(Debug, Clone, Copy)]
pub enum CompactSection<'a> {
    /// `handoff brief`: the deterministic part alone; no one was asked.
    NotAsked,
    /// Asked, and no one answered.
    Unanswered,
    Written(&'a Compact),
}

/// The brief as the Markdown file.
pub fn markdown(brief: &Brief, compact: CompactSection<'_>) -> String {
    let mut out = String::new();
    let src = &brief.source;
    let _ = writeln!(out, "# Handoff brief\n");
    let _ = write!(
        out,
        "Handed over from {} session `{}`",
        src.family.product_name(),
        src.session_id
    );
    if let Some(title) = &src.title {
        let _ = write!(out, " ({})", crate::brief::one_line(title, 120));
    }
    let _ = writeln!(out, ", read from `{}`.", src.path.display());
    match (&src.cwd, src.cwd_derived) {
        (Some(cwd), false) => {
            let _ = writeln!(out, "Working directory: `{}`.", cwd.display());
        }
        (Some(cwd), true) => {
            let _ = writeln!(
                out,
                "Working directory: `{}` (derived from the paths the session worked on; the \
                 session did not state it).",
                cwd.display()
            );
        }
        (None, _) => {
            let _ = writeln!(out, "Working directory: not recorded.");
        }
    }
    let _ = writeln!(
        out,
        "Everything below except the narrative compact was read from the transcript without a \
         model.\n"
    );

    let _ = writeln!(out, "{CONTRACT_HEADING}\n");
    let _ = writeln!(
        out,
        "The requirement you are taking over, in the human's own words. Where anything else in \
         this file disagrees with it, the contract wins.\n"
    );
    let contract = &brief.contract;
    let _ = writeln!(out, "### Opening goal\n");
    quote(&mut out, contract.opening_goal.as_deref());
    if let Some(latest) = &contract.latest_instruction {
        let _ = writeln!(out, "### Latest instruction\n");
        quote(&mut out, Some(latest));
    }
    let _ = writeln!(out, "### Constraints (quoted verbatim)\n");
    if contract.constraints.is_empty() {
        let _ = writeln!(out, "None stated.\n");
    } else {
        for c in &contract.constraints {
            let _ = writeln!(out, "> - {c}");
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Narrative compact (context, not requirement)\n");
    match compact {
        CompactSection::Written(c) => {
            let _ = writeln!(
                out,
                "Written by {} from the session's own record. It is context: where it disagrees with the \
                 contract, the contract wins.\n",
                c.author
            );
            let _ = writeln!(out, "{}\n", c.text.trim());
        }
        CompactSection::Unanswered => {
            let _ = writeln!(
                out,
                "No compact: neither the session's own CLI nor a configured provider answered. \
                 The sections below are the whole brief.\n"
            );
        }
        CompactSection::NotAsked => {
            let _ = writeln!(
                out,
                "Not asked for: a handoff asks the session's own CLI for it; this brief shows the \
                 part read without a model.\n"
            );
        }
    }

    let _ = writeln!(out, "## Files touched\n");
    if brief.files.is_empty() {
        let _ = writeln!(out, "None recorded.\n");
    } else {
        omitted(&mut out, brief.files_total, brief.files.len(), "files");
        for f in &brief.files {
            let how = if f.edited { "edited" } else { "read" };
            let _ = writeln!(out, "- `{}` — {how} ({})", f.path, f.tools.join(", "));
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Commands run\n");
    if brief.commands.is_empty() {
        let _ = writeln!(out, "None recorded.\n");
    } else {
        omitted(
            &mut out,
            brief.commands_total,
            brief.commands.len(),
            "commands",
        );
        for c in &brief.commands {
            let _ = writeln!(
                out,
                "- {} `{}` — {}",
                mark(c.outcome),
                crate::brief::one_line(&c.command, 300),
                outcome_words(c.outcome, c.exit_code, c.signal)
            );
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Failures\n");
    if brief.failures.is_empty() {
        let _ = writeln!(out, "None recorded.\n");
    } else {
        omitted(
            &mut out,
            brief.failures_total,
            brief.failures.len(),
            "failures",
        );
        for f in &brief.failures {
            let _ = writeln!(
                out,
                "- `{}` — {}: {}",
                crate::brief::one_line(&f.what, 300),
                outcome_words(Outcome::Failed, f.exit_code, f.signal),
                f.evidence
            );
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Where it stands\n");
    let st = &brief.standing;
    let _ = writeln!(
        out,
        "{} turn(s); the last one {}.",
        st.turns,
        if st.last_turn_running {
            "was still running when this was read"
        } else {
            "had finished"
        }
    );
    if let Some(c) = &st.last_command {
        let _ = writeln!(
            out,
            "Last command: `{}` — {}.",
            crate::brief::one_line(&c.command, 300),
            outcome_words(c.outcome, c.exit_code, c.signal)
        );
    }
    if let Some(m) = &st.last_assistant_message {
        let _ = writeln!(out, "\nThe session's last message:\n");
        for line in m.lines() {
            let _ = writeln!(out, "> {line}");
        }
    }
    out.push('\n');

    let _ = writeln!(out, "## Receipt\n");
    let _ = writeln!(
        out,
        "Before you change any code, write between the two markers below: the contract in your \
         own words, what you found already true in this repository, and the first step you will \
         take. Keep the markers.\n"
    );
    let _ = writeln!(out, "{RECEIPT_BEGIN}\n\n{RECEIPT_END}");
    out
}

fn quote(out: &mut String, text: Option<&str>) {
    match text {
        Some(t) => {
            for line in t.lines() {
                let _ = writeln!(out, "> {line}");
            }
            out.push('\n');
        }
        None => {
            let _ = writeln!(out, "Not recorded.\n");
        }
    }
}

fn omitted(out: &mut String, total: usize, shown: usize, what: &str) {
    if total > shown {
        let _ = writeln!(out, "The last {shown} of {total} {what}:\n");
    }
}

fn mark(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Succeeded => "ok",
        Outcome::Failed => "FAILED",
        Outcome::Unknown => "?",
    }
}

fn outcome_words(outcome: Outcome, exit_code: Option<i32>, signal: crate::brief::Signal) -> String {
    let what = match (outcome, exit_code) {
        (_, Some(code)) => format!("exit {code}"),
        (Outcome::Succeeded, None) => "succeeded".to_owned(),
        (Outcome::Failed, None) => "failed".to_owned(),
        (Outcome::Unknown, None) => "outcome unknown".to_owned(),
    };
    format!("{what} ({})", signal.describe())
}
