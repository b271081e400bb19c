//! Every review recorded (docs/review.md "What is recorded"): one decision line in the
//! decisions log — `review_verdict` or `review_failed`, with ids, families, counts and times,
//! never the transcript, the task, the gaps or the correction — and the whole report kept in the
//! home (`reviews/<id>.json`), since `review show` must show what the reviewer said.
//!
//! Kept files are owner-only, written whole through a temporary file and a rename
//! (`cross_agent_home::atomic`), read without following a link, and at most [`KEEP`] of them:
//! the oldest go when a new one is kept. A review id is `rv_` and a UUIDv7, so the file names
//! sort in time order.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_home::{atomic, home, safety};

use crate::error::{Result, ReviewError};
use crate::run::{ReviewOutcome, ReviewReport, failure_name};

/// The folder in the home the reports are kept in.
pub const DIR_NAME: &str = "reviews";

/// How many reports are kept: the newest this many (a full report is at most about 10 KB, so
/// the folder stays under about 5 MB).
pub const KEEP: usize = 500;

/// A kept report longer than this is not read (a report is far smaller; something else put it
/// there).
const MAX_REPORT_BYTES: u64 = 1 << 20;

/// `home/reviews`.
pub fn dir(home: &Path) -> PathBuf {
    home.join(DIR_NAME)
}

/// Records `report`: its decision line in `log`, then the report kept in `home` (which must
/// exist). The decision line is written even when keeping the file fails; the error says why.
pub fn record(report: &ReviewReport, home: &Path, log: &DecisionLog) -> Result<PathBuf> {
    log.record(decision(report));
    keep(home, report)
}

/// The decision line of a review: kind, outcome, session, reviewer, verdict, gap count,
/// duration, tokens — and nothing anyone wrote (no task, gaps, correction, transcript text or
/// provider error text; the failure is named by its kind).
pub fn decision(report: &ReviewReport) -> Decision {
    let (kind, outcome) = match report.outcome {
        ReviewOutcome::Verdict => (DecisionKind::REVIEW_VERDICT, Outcome::VERDICT),
        ReviewOutcome::Unparseable => (DecisionKind::REVIEW_FAILED, Outcome::UNPARSEABLE),
        ReviewOutcome::ReviewerFailed => (DecisionKind::REVIEW_FAILED, Outcome::REVIEWER_FAILED),
        ReviewOutcome::NoReviewer => (DecisionKind::REVIEW_FAILED, Outcome::NO_REVIEWER),
    };
    let mut d = Decision::new(kind, outcome)
        .session(report.session.id.clone())
        .agent(report.session.agent.as_str())
        .detail("review_id", report.id.clone())
        .detail("session_family", report.session.family.as_str())
        .detail("duration_ms", report.duration_ms)
        .detail("requests", report.requests)
        .detail("reviewed_to_offset", report.reviewed_to.offset);
    if let Some(model) = &report.session.model {
        d = d.detail("session_model", model.clone());
    }
    if let Some(reviewer) = &report.reviewer {
        d = d
            .detail("reviewer_provider", reviewer.provider.clone())
            .detail("reviewer_model", reviewer.model.clone())
            .detail("reviewer_family", reviewer.family.clone());
    }
    if let Some(input) = report.tokens.input {
        d = d.detail("input_tokens", input);
    }
    if let Some(output) = report.tokens.output {
        d = d.detail("output_tokens", output);
    }
    match report.outcome {
        ReviewOutcome::Verdict => {
            if let Some(verdict) = report.verdict {
                d = d.detail("verdict", verdict.as_str());
            }
            d = d
                .detail(
                    "gap_count",
                    report.gaps.as_ref().map_or(0, |gaps| gaps.len()),
                )
                .detail("has_correction", report.correction.is_some());
        }
        ReviewOutcome::Unparseable => {
            d = d
                .guard("invalid_answer")
                .reason("the reviewer's answer was not a valid verdict, after one repair");
        }
        ReviewOutcome::ReviewerFailed => {
            let kind = report.failure.map_or("unknown", failure_name);
            d = d
                .guard(kind)
                .reason(format!("the reviewer did not answer: {kind}"));
        }
        ReviewOutcome::NoReviewer => {
            d = d.guard("no_reviewer").reason(format!(
                "no provider of a family other than {} is configured",
                report.session.family
            ));
        }
    }
    d
}

/// Keeps `report` as `home/reviews/<id>.json`, then removes the oldest beyond [`KEEP`].
pub fn keep(home: &Path, report: &ReviewReport) -> Result<PathBuf> {
    check_id(&report.id)?;
    let dir = dir(home);
    home::ensure_private_subdir(&dir)?;
    let path = dir.join(format!("{}.json", report.id));
    let bytes = serde_json::to_vec_pretty(report).map_err(|e| ReviewError::BadReport {
        path: path.clone(),
        why: e.to_string(),
    })?;
    atomic::write_private(&path, &bytes)?;
    prune(&dir, KEEP)?;
    Ok(path)
}

/// The kept reports, oldest first, and one line for each file that could not be read.
pub fn list(home: &Path) -> Result<(Vec<ReviewReport>, Vec<String>)> {
    let mut reports = Vec::new();
    let mut problems = Vec::new();
    for id in ids(&dir(home))? {
        match load(home, &id) {
            Ok(report) => reports.push(report),
            Err(e) => problems.push(e.to_string()),
        }
    }
    Ok((reports, problems))
}

/// The kept report `id`.
pub fn load(home: &Path, id: &str) -> Result<ReviewReport> {
    check_id(id)?;
    let dir = dir(home);
    check_dir(&dir)?;
    let path = dir.join(format!("{id}.json"));
    let mut file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(home::no_follow_flag())
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReviewError::ReviewNotFound {
                id: id.to_owned(),
                dir,
            });
        }
        Err(e) => {
            // O_NOFOLLOW on a link fails with ELOOP: name it as the link it is.
            if let Ok(meta) = fs::symlink_metadata(&path) {
                safety::check_entry(&path, &meta)?;
            }
            return Err(ReviewError::io(&path, e));
        }
    };
    let meta = file.metadata().map_err(|e| ReviewError::io(&path, e))?;
    if !meta.is_file() || meta.len() > MAX_REPORT_BYTES {
        return Err(ReviewError::BadReport {
            path,
            why: "not a regular file of at most 1 MB".to_owned(),
        });
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| ReviewError::io(&path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| ReviewError::BadReport {
        path,
        why: e.to_string(),
    })
}

/// The ids of the kept reports, oldest first. No folder is no reports.
fn ids(dir: &Path) -> Result<Vec<String>> {
    if !check_dir(dir)? {
        return Ok(Vec::new());
    }
    let mut ids: Vec<String> = fs::read_dir(dir)
        .map_err(|e| ReviewError::io(dir, e))?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let id = name.strip_suffix(".json")?;
            is_id(id).then(|| id.to_owned())
        })
        .collect();
    ids.sort();
    Ok(ids)
}

/// The folder is this user's and not a link; `false` when there is none.
fn check_dir(dir: &Path) -> Result<bool> {
    match fs::symlink_metadata(dir) {
        Ok(meta) => {
            safety::check_entry(dir, &meta)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ReviewError::io(dir, e)),
    }
}

/// Removes the oldest reports beyond `keep`.
fn prune(dir: &Path, keep: usize) -> Result<()> {
    let ids = ids(dir)?;
    let extra = ids.len().saturating_sub(keep);
    for id in &ids[..extra] {
        let path = dir.join(format!("{id}.json"));
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ReviewError::io(&path, e)),
        }
    }
    Ok(())
}

fn is_id(id: &str) -> bool {
    id.strip_prefix("rv_").is_some_and(|rest| {
        !rest.is_empty()
            && rest.len() <= 64
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

fn check_id(id: &str) -> Result<()> {
    if is_id(id) {
        Ok(())
    } else {
        Err(ReviewError::BadId { id: id.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked_so_a_path_cannot_escape_the_folder() {
        assert!(is_id("rv_0199a0b1c2d3e4f5a6b7c8d9e0f1a2b3"));
        for bad in [
            "",
            "rv_",
            "../x",
            "rv_../../etc",
            "rv_a/b",
            "x_123",
            "rv_a.json",
        ] {
            assert!(!is_id(bad), "{bad}");
        }
    }
}
