//! Finding the usage files in the agents' stores and reading them whole, a piece at a time: the
//! path `cross-agent usage` takes when no daemon can answer, and the truth the daemon's live
//! index ([`crate::live`]) is held to.
//!
//! Discovery is the stores crate's (the same files the session listing sees), plus the Claude
//! sub-agent transcripts it does not list: `projects/<slug>/<session>/subagents/*.jsonl`. Every
//! file is read — not only those changed inside the window — because a copy in a new file is
//! only known to be a copy by comparing it with the old one. Links are never followed.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use cross_agent_protocol::Agent;
use cross_agent_stores::lines::LineSink;
use cross_agent_stores::{LineContext, SourceFile, StoreRoots, Warnings};

use crate::FileUsage;
use crate::codex::CodexReader;
use crate::lines::{LineRecords, Reader};

/// The parsed files and what could not be read.
#[derive(Debug, Default)]
pub struct Scan {
    pub files: Vec<FileUsage>,
    /// One line per file or folder that could not be read, naming it.
    pub warnings: Vec<String>,
}

/// Reads every Claude, Codex and Grok file under `roots`.
pub fn scan(roots: &StoreRoots) -> Scan {
    let mut warnings = Warnings::default();
    let sources = sources(roots, &mut warnings);
    let mut out = Scan::default();
    let mut subagent_files = Vec::new();
    if let Some(config) = &roots.claude_config {
        subagent_files = claude_subagent_files(
            &cross_agent_stores::claude::projects_dir(config),
            &mut out.warnings,
        );
    }
    for source in &sources {
        match read_one(source.agent, &source.path, source.compressed) {
            Ok(Some(file)) => out.files.push(file),
            Ok(None) => {}
            Err(message) => out.warnings.push(message),
        }
    }
    for path in subagent_files {
        match read_one(Agent::Claude, &path, false) {
            Ok(Some(file)) => out.files.push(file),
            Ok(None) => {}
            Err(message) => out.warnings.push(message),
        }
    }
    out.warnings.extend(
        warnings
            .items
            .into_iter()
            .map(|w| format!("{}: {}", w.path.display(), w.message)),
    );
    // One order whatever the walk's, so ties are decided alike here and in the live index.
    out.files.sort_by(|a, b| a.path().cmp(b.path()));
    out
}

/// The transcripts the stores list for Claude, Codex and Grok (sub-agent files are not listed).
pub fn sources(roots: &StoreRoots, warnings: &mut Warnings) -> Vec<SourceFile> {
    let mut sources: Vec<SourceFile> = Vec::new();
    sources.extend(cross_agent_stores::claude::discover(roots, warnings));
    sources.extend(cross_agent_stores::codex::discover(roots, warnings));
    sources.extend(cross_agent_stores::grok::discover(roots, warnings));
    sources
}

/// Why `path` could not be opened: a link is refused by name, anything else is named.
pub(crate) fn open_error(path: &Path, e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        format!(
            "{} is a symbolic link; it is not followed (usage reads the agents' own files only)",
            path.display()
        )
    } else {
        format!("cannot read {}: {e}", path.display())
    }
}

/// Reads one file whole into its agent's parse; `None` for an agent without usage readers.
pub fn read_one(agent: Agent, path: &Path, compressed: bool) -> Result<Option<FileUsage>, String> {
    if compressed {
        if agent != Agent::Codex {
            return Ok(None);
        }
        let mut sink = ZstdSink(CodexReader::new(path));
        let mut warnings = Warnings::default();
        cross_agent_stores::lines::read_zstd_lines(path, &mut sink, &mut warnings)
            .map_err(|e| e.to_string())?;
        return Ok(Some(FileUsage::Codex(sink.0.finish())));
    }
    let file = match open_no_follow(path) {
        Ok(file) => Some(file),
        // Grok's `updates.jsonl` may not exist yet: a session with nothing recorded.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && agent == Agent::Grok => None,
        Err(e) => return Err(open_error(path, &e)),
    };
    let read_error = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    Ok(match agent {
        Agent::Claude => Some(FileUsage::Claude(
            stream::<crate::claude::ClaudeLines>(path, file).map_err(read_error)?,
        )),
        Agent::Codex => Some(FileUsage::Codex(
            stream::<crate::codex::CodexLines>(path, file).map_err(read_error)?,
        )),
        Agent::Grok => Some(FileUsage::Grok(
            stream::<crate::grok::GrokLines>(path, file).map_err(read_error)?,
        )),
        Agent::Copilot => None,
    })
}

/// How much of a file is held at once: a 100 MB transcript is read in pieces, never whole.
pub(crate) const CHUNK: usize = 1 << 20;

/// Feeds the file's bytes to its reader a piece at a time (nothing when there is no file).
fn stream<R: LineRecords>(path: &Path, file: Option<fs::File>) -> std::io::Result<R::File> {
    let mut reader = Reader::<R>::new(path);
    if let Some(mut file) = file {
        let mut chunk = vec![0u8; CHUNK];
        loop {
            match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => reader.feed(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(reader.finish())
}

/// Opens `path` read-only, refusing a symbolic link (`O_NOFOLLOW`: ELOOP).
pub(crate) fn open_no_follow(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// Feeds a compressed rollout's lines to a Codex reader.
struct ZstdSink(CodexReader);

impl LineSink for ZstdSink {
    fn feed_line(&mut self, line: &[u8], _at: LineContext<'_>, _warnings: &mut Warnings) {
        self.0.feed(line);
        self.0.feed(b"\n");
    }
}

/// `projects/<slug>/<session>/subagents/*.jsonl`, without following links.
pub fn claude_subagent_files(projects: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for project in dirs(projects, warnings) {
        for session in dirs(&project, warnings) {
            let subagents = session.join("subagents");
            let Ok(meta) = fs::symlink_metadata(&subagents) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let Ok(entries) = fs::read_dir(&subagents) else {
                warnings.push(format!("cannot list {}", subagents.display()));
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let is_file = entry.file_type().is_ok_and(|t| t.is_file());
                if is_file && path.extension().is_some_and(|e| e == "jsonl") {
                    found.push(path);
                }
            }
        }
    }
    found.sort();
    found
}

/// The real (not linked) sub-folders of `dir`.
fn dirs(dir: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(format!("cannot list {}: {e}", dir.display()));
            return Vec::new();
        }
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}
