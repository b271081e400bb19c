//! Helpers the reader tests share: fixture stores copied into a temporary HOME, and folding a
//! discovered file the way the index does (resumable lines, whole `.zst`, sidecar).

use std::fs;
use std::path::{Path, PathBuf};

use cross_agent_stores::lines::{Position, read_complete_lines, read_zstd_lines};
use cross_agent_stores::{Session, SourceFile, StoreRoots, TranscriptFold, UnixMillis, Warnings};

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Copies a folder tree.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A temporary HOME holding copies of the fixture stores: `claude` under
/// `.claude/projects/-home-u-billing`, `codex` as `.codex`, `grok` as `.grok`.
pub struct FixtureHome {
    pub dir: tempfile::TempDir,
}

impl FixtureHome {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(
            &fixture("claude"),
            &dir.path().join(".claude/projects/-home-u-billing"),
        );
        copy_tree(&fixture("codex"), &dir.path().join(".codex"));
        copy_tree(&fixture("grok"), &dir.path().join(".grok"));
        FixtureHome { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn roots(&self) -> StoreRoots {
        StoreRoots::under_home(self.path())
    }
}

/// Folds one discovered file as the index would: its sidecar first, then its lines.
pub fn fold_source<F: TranscriptFold>(file: &SourceFile, warnings: &mut Warnings) -> F {
    let mut fold = F::default();
    if let Some(sidecar) = &file.sidecar {
        let bytes = fs::read(&sidecar.path).unwrap();
        fold.feed_sidecar(&bytes, &sidecar.path, warnings);
    }
    if file.stamp.size > 0 {
        let result = if file.compressed {
            read_zstd_lines(&file.path, &mut fold, warnings)
        } else {
            read_complete_lines(&file.path, Position::default(), &mut fold, warnings)
        };
        if let Err(e) = result {
            warnings.push(&file.path, None, e.to_string());
        }
    }
    fold
}

/// The sessions of discovered files, sorted by id.
pub fn sessions_of<F: TranscriptFold>(
    files: &[SourceFile],
    warnings: &mut Warnings,
) -> Vec<Session> {
    let mut out: Vec<Session> = files
        .iter()
        .filter_map(|f| fold_source::<F>(f, warnings).session(&f.path))
        .collect();
    out.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    out
}

/// Folds a whole plain file from the start.
pub fn fold_file<F: TranscriptFold>(path: &Path) -> (F, Position, Warnings) {
    let mut warnings = Warnings::default();
    let mut fold = F::default();
    let pos = read_complete_lines(path, Position::default(), &mut fold, &mut warnings).unwrap();
    (fold, pos, warnings)
}

/// Milliseconds of an RFC 3339 time, for expected values.
pub fn ms(rfc3339: &str) -> Option<UnixMillis> {
    Some(cross_agent_stores::UnixMillis::parse_rfc3339(rfc3339).unwrap())
}
