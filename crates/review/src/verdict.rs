//! The reviewer's answer: `{"verdict": "on_track|drifting|off_track|blocked", "task": "…",
//! "gaps": ["…"], "correction": "…"?}` (docs/review.md "The verdict").
//!
//! [`Verdict`] is the one source: its JSON Schema is generated from it and committed
//! (`crates/review/schema/verdict.json`, checked by the `schema` test), and [`parse_answer`]
//! checks an answer field by field so that an invalid one gets an error naming the field and
//! what is wrong — the review sends that error back to the reviewer once.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The file name the schema is committed under, in `crates/review/schema/`.
pub const SCHEMA_FILE: &str = "verdict.json";

/// At most this many gaps, and this many characters in each text field: a verdict is a card,
/// not an essay.
pub const MAX_GAPS: usize = 10;
pub const MAX_TASK_CHARS: usize = 500;
pub const MAX_GAP_CHARS: usize = 500;
pub const MAX_CORRECTION_CHARS: usize = 2_000;

/// Whether the session is still doing what it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Working on the task it was given, in a sensible way.
    OnTrack,
    /// Still on the task, but wandering: side work, gold-plating, a constraint slipping.
    Drifting,
    /// Working on something other than what it was asked, or against an explicit constraint.
    OffTrack,
    /// Cannot go on without something it does not have (an answer, access, a decision).
    Blocked,
}

impl VerdictKind {
    pub const ALL: [VerdictKind; 4] = [
        VerdictKind::OnTrack,
        VerdictKind::Drifting,
        VerdictKind::OffTrack,
        VerdictKind::Blocked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::OnTrack => "on_track",
            VerdictKind::Drifting => "drifting",
            VerdictKind::OffTrack => "off_track",
            VerdictKind::Blocked => "blocked",
        }
    }

    fn parse(text: &str) -> Option<VerdictKind> {
        VerdictKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// A cross review's verdict on one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Cross review verdict")]
pub struct Verdict {
    /// Whether the session is still on track with the goal it was given.
    pub verdict: VerdictKind,
    /// The task the session was given, in one sentence.
    #[schemars(length(min = 1, max = MAX_TASK_CHARS))]
    pub task: String,
    /// What is missing or wrong against that task, one item each (empty when on track).
    #[schemars(length(max = MAX_GAPS), inner(length(min = 1, max = MAX_GAP_CHARS)))]
    pub gaps: Vec<String>,
    /// What to tell the session to get it back on track, addressed to it; only when there is
    /// something to correct.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_CORRECTION_CHARS))]
    pub correction: Option<String>,
}

/// The JSON Schema of [`Verdict`], as committed.
pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Verdict)).unwrap_or(Value::Null)
}

/// Why an answer is not a verdict: the field (a JSON pointer-like path, `$` for the whole
/// answer) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerError {
    pub field: String,
    pub problem: String,
}

impl std::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl std::error::Error for AnswerError {}

fn wrong(field: impl Into<String>, problem: impl Into<String>) -> AnswerError {
    AnswerError {
        field: field.into(),
        problem: problem.into(),
    }
}

/// The JSON type of a value, as an error names it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads a reviewer's answer as a [`Verdict`]. The answer is the JSON object alone; a single
/// Markdown code fence around it is tolerated (models add one even when told not to), nothing
/// else is. The first thing wrong is reported.
pub fn parse_answer(answer: &str) -> Result<Verdict, AnswerError> {
    let text = unfence(answer.trim());
    if text.is_empty() {
        return Err(wrong("$", "the answer is empty; expected one JSON object"));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        wrong(
            "$",
            format!("the answer is not one JSON object ({e}); send the object alone, no prose"),
        )
    })?;
    validate(&value)?;
    // Every rule of the type was checked above; this only builds it.
    serde_json::from_value(value).map_err(|e| wrong("$", e.to_string()))
}

/// Checks a JSON value against the verdict schema's rules.
pub fn validate(value: &Value) -> Result<(), AnswerError> {
    let Value::Object(map) = value else {
        return Err(wrong(
            "$",
            format!("must be a JSON object, found {}", type_name(value)),
        ));
    };
    const FIELDS: [&str; 4] = ["verdict", "task", "gaps", "correction"];
    if let Some(extra) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(wrong(
            extra.clone(),
            format!(
                "is not a field of the verdict; the fields are {}",
                FIELDS.join(", ")
            ),
        ));
    }
    let kinds = VerdictKind::ALL.map(VerdictKind::as_str).join(", ");
    match required(map, "verdict")? {
        Value::String(s) if VerdictKind::parse(s).is_some() => {}
        Value::String(s) => {
            return Err(wrong(
                "verdict",
                format!("is {s:?}; must be one of {kinds}"),
            ));
        }
        other => {
            return Err(wrong(
                "verdict",
                format!(
                    "must be a string, one of {kinds}; found {}",
                    type_name(other)
                ),
            ));
        }
    }
    text_field("task", required(map, "task")?, MAX_TASK_CHARS)?;
    match required(map, "gaps")? {
        Value::Array(items) => {
            if items.len() > MAX_GAPS {
                return Err(wrong(
                    "gaps",
                    format!("has {} items; at most {MAX_GAPS}", items.len()),
                ));
            }
            for (i, item) in items.iter().enumerate() {
                text_field(&format!("gaps[{i}]"), item, MAX_GAP_CHARS)?;
            }
        }
        other => {
            return Err(wrong(
                "gaps",
                format!(
                    "must be an array of strings (empty when there are none); found {}",
                    type_name(other)
                ),
            ));
        }
    }
    match map.get("correction") {
        None | Some(Value::Null) => {}
        Some(v) => text_field("correction", v, MAX_CORRECTION_CHARS)?,
    }
    Ok(())
}

fn required<'a>(map: &'a Map<String, Value>, field: &str) -> Result<&'a Value, AnswerError> {
    map.get(field)
        .ok_or_else(|| wrong(field, "is missing; it is required"))
}

/// A non-empty string of at most `max` characters.
fn text_field(field: &str, value: &Value, max: usize) -> Result<(), AnswerError> {
    let Value::String(s) = value else {
        return Err(wrong(
            field,
            format!("must be a string, found {}", type_name(value)),
        ));
    };
    if s.trim().is_empty() {
        return Err(wrong(field, "is empty; write it out"));
    }
    let chars = s.chars().count();
    if chars > max {
        return Err(wrong(
            field,
            format!("is {chars} characters long; at most {max}"),
        ));
    }
    Ok(())
}

/// The object inside one ```` ``` ```` / ```` ```json ```` fence, or `text` as it is.
fn unfence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string (`json`) runs to the first newline.
    match body.split_once('\n') {
        Some((info, inner)) if !info.contains('{') => inner.trim(),
        _ => body.trim(),
    }
}
