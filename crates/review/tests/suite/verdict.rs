//! The validator: a valid answer becomes a `Verdict`; each kind of invalid answer gets an error
//! naming the field and what is wrong (the text the review sends back to the reviewer once).

use cross_agent_review::verdict::{AnswerError, Verdict, VerdictKind, parse_answer};
use pretty_assertions::assert_eq;

fn error(answer: &str) -> AnswerError {
    match parse_answer(answer) {
        Ok(v) => panic!("accepted {answer}: {v:?}"),
        Err(e) => e,
    }
}

fn err(field: &str, problem: &str) -> AnswerError {
    AnswerError {
        field: field.to_owned(),
        problem: problem.to_owned(),
    }
}

#[test]
fn every_verdict_is_accepted_with_and_without_a_correction() {
    for kind in VerdictKind::ALL {
        let answer = format!(
            r#"{{"verdict":"{}","task":"Fix the importer","gaps":["no test"],"correction":"Add the test."}}"#,
            kind.as_str()
        );
        assert_eq!(
            parse_answer(&answer),
            Ok(Verdict {
                verdict: kind,
                task: "Fix the importer".to_owned(),
                gaps: vec!["no test".to_owned()],
                correction: Some("Add the test.".to_owned()),
            })
        );
    }
    let bare = parse_answer(r#"{"verdict":"on_track","task":"t","gaps":[]}"#).unwrap();
    assert_eq!(bare.correction, None);
    let null = parse_answer(r#"{"verdict":"on_track","task":"t","gaps":[],"correction":null}"#);
    assert_eq!(null.unwrap().correction, None);
    // One code fence around the object is tolerated.
    let fenced = "```json\n{\"verdict\":\"blocked\",\"task\":\"t\",\"gaps\":[]}\n```";
    assert_eq!(parse_answer(fenced).unwrap().verdict, VerdictKind::Blocked);
}

#[test]
fn invalid_answers_name_the_field_and_the_problem() {
    assert_eq!(
        error(""),
        err("$", "the answer is empty; expected one JSON object")
    );
    let prose = error("Looks good to me! {\"verdict\":\"on_track\"}");
    assert_eq!(prose.field, "$");
    assert!(
        prose
            .problem
            .starts_with("the answer is not one JSON object ("),
        "{prose}"
    );
    assert_eq!(
        error("[1]"),
        err("$", "must be a JSON object, found an array")
    );
    assert_eq!(
        error(r#"{"task":"t","gaps":[]}"#),
        err("verdict", "is missing; it is required")
    );
    assert_eq!(
        error(r#"{"verdict":"great","task":"t","gaps":[]}"#),
        err(
            "verdict",
            "is \"great\"; must be one of on_track, drifting, off_track, blocked"
        )
    );
    assert_eq!(
        error(r#"{"verdict":3,"task":"t","gaps":[]}"#),
        err(
            "verdict",
            "must be a string, one of on_track, drifting, off_track, blocked; found a number"
        )
    );
    assert_eq!(
        error(r#"{"verdict":"on_track","task":" ","gaps":[]}"#),
        err("task", "is empty; write it out")
    );
    assert_eq!(
        error(r#"{"verdict":"on_track","task":"t"}"#),
        err("gaps", "is missing; it is required")
    );
    assert_eq!(
        error(r#"{"verdict":"on_track","task":"t","gaps":"none"}"#),
        err(
            "gaps",
            "must be an array of strings (empty when there are none); found a string"
        )
    );
    assert_eq!(
        error(r#"{"verdict":"drifting","task":"t","gaps":["a", 2]}"#),
        err("gaps[1]", "must be a string, found a number")
    );
    let many = format!(
        r#"{{"verdict":"drifting","task":"t","gaps":[{}]}}"#,
        ["\"g\""; 11].join(",")
    );
    assert_eq!(error(&many), err("gaps", "has 11 items; at most 10"));
    let long = format!(
        r#"{{"verdict":"drifting","task":"{}","gaps":[]}}"#,
        "x".repeat(501)
    );
    assert_eq!(
        error(&long),
        err("task", "is 501 characters long; at most 500")
    );
    assert_eq!(
        error(r#"{"verdict":"drifting","task":"t","gaps":[],"correction":""}"#),
        err("correction", "is empty; write it out")
    );
    assert_eq!(
        error(r#"{"verdict":"drifting","task":"t","gaps":[],"confidence":0.9}"#),
        err(
            "confidence",
            "is not a field of the verdict; the fields are verdict, task, gaps, correction"
        )
    );
    // The error reads as one line to send back.
    assert_eq!(
        err("gaps[1]", "must be a string, found a number").to_string(),
        "gaps[1]: must be a string, found a number"
    );
}
