//! Warnings said once per file. A transcript with 17 damaged lines is one line of a listing's
//! report — `junk.jsonl: 17 lines are not JSON records (first at line 2), skipped` — not 17:
//! the reader warns per line (it knows no more), and [`per_file`] counts them by what was
//! wrong before anyone is told.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::lines::MAX_LINE_BYTES;
use crate::model::{LineProblem, StoreWarning};

/// One warning per file, in the order the files were first warned about. A file warned about
/// once keeps that warning as it was (with its line and the reader's own words); several become
/// one naming the file, counting the skipped lines per problem (with the first of each), then
/// any other trouble with the file, each said once.
pub fn per_file(warnings: Vec<StoreWarning>) -> Vec<StoreWarning> {
    let mut files: Vec<(PathBuf, Vec<StoreWarning>)> = Vec::new();
    let mut slot: HashMap<PathBuf, usize> = HashMap::new();
    for warning in warnings {
        let i = *slot.entry(warning.path.clone()).or_insert_with(|| {
            files.push((warning.path.clone(), Vec::new()));
            files.len() - 1
        });
        files[i].1.push(warning);
    }
    files
        .into_iter()
        .filter_map(|(path, mut of_file)| {
            if of_file.len() == 1 {
                return of_file.pop();
            }
            Some(summarised(&path, &of_file))
        })
        .collect()
}

/// Several warnings about `path` as one.
fn summarised(path: &Path, warnings: &[StoreWarning]) -> StoreWarning {
    // (problem, how many lines, the first of them), in the order first met.
    let mut lines: Vec<(LineProblem, u64, u64)> = Vec::new();
    let mut others: Vec<&str> = Vec::new();
    for warning in warnings {
        match (warning.problem, warning.line) {
            (Some(problem), Some(line)) => match lines.iter_mut().find(|(p, ..)| *p == problem) {
                Some((_, count, first)) => {
                    *count += 1;
                    *first = (*first).min(line);
                }
                None => lines.push((problem, 1, line)),
            },
            _ => {
                if !others.contains(&warning.message.as_str()) {
                    others.push(&warning.message);
                }
            }
        }
    }
    let mut parts: Vec<String> = Vec::new();
    if !lines.is_empty() {
        let counted: Vec<String> = lines
            .iter()
            .map(|&(problem, count, first)| counted(problem, count, first))
            .collect();
        parts.push(format!("{}, skipped", counted.join(", ")));
    }
    parts.extend(others.into_iter().map(str::to_owned));
    StoreWarning {
        path: path.to_path_buf(),
        line: None,
        message: parts.join("; "),
        problem: None,
    }
}

/// `17 lines are not JSON records (first at line 2)`, or `line 2 is not a JSON record`.
fn counted(problem: LineProblem, count: u64, first: u64) -> String {
    let (one, many) = match problem {
        LineProblem::NotJson => (
            "not a JSON record".to_owned(),
            "not JSON records".to_owned(),
        ),
        LineProblem::TooLong => {
            let limit = format!("longer than {MAX_LINE_BYTES} bytes");
            (limit.clone(), limit)
        }
        LineProblem::BadRecord => (
            "a record whose fields do not decode".to_owned(),
            "records whose fields do not decode".to_owned(),
        ),
    };
    if count == 1 {
        format!("line {first} is {one}")
    } else {
        format!("{count} lines are {many} (first at line {first})")
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::model::{LineContext, Warnings};

    fn line(warnings: &mut Warnings, path: &Path, line: u64, problem: LineProblem) {
        warnings.push_line(LineContext { path, line }, problem, "the reader's words");
    }

    #[test]
    fn damaged_lines_of_one_file_are_counted_in_one_warning() {
        let junk = Path::new("/s/junk.jsonl");
        let other = Path::new("/s/other.jsonl");
        let mut warnings = Warnings::default();
        for n in 2..=18 {
            line(&mut warnings, junk, n, LineProblem::NotJson);
        }
        line(&mut warnings, other, 7, LineProblem::NotJson);
        line(&mut warnings, junk, 30, LineProblem::TooLong);
        warnings.push(junk, None, "cannot store the fold state: x");
        warnings.push(junk, None, "cannot store the fold state: x");

        let told: Vec<String> = per_file(warnings.items)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            told,
            vec![
                format!(
                    "/s/junk.jsonl: 17 lines are not JSON records (first at line 2), line 30 is \
                     longer than {MAX_LINE_BYTES} bytes, skipped; cannot store the fold state: x"
                ),
                // Alone, a line keeps its number and the reader's words.
                "/s/other.jsonl:7: the reader's words".to_owned(),
            ]
        );
    }

    #[test]
    fn trouble_with_a_file_that_is_not_its_lines_is_said_once() {
        let mut warnings = Warnings::default();
        let dir = Path::new("/s/dir");
        warnings.push(dir, None, "cannot list folder: denied");
        warnings.push(dir, None, "cannot list folder: denied");
        warnings.push(dir, None, "cannot stat: gone");
        let told = per_file(warnings.items);
        assert_eq!(told.len(), 1);
        assert_eq!(
            told[0].to_string(),
            "/s/dir: cannot list folder: denied; cannot stat: gone"
        );
    }
}
