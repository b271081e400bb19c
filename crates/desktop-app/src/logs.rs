//! The Logs panel: the tail of the daemon's log (`logs/daemon.log.<date>` in the home, the
//! newest file), filtered by level, read again every second while the panel is open. Only the
//! last 256 KiB are read, so a large log costs no more than a small one.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Settings;

/// How much of the log's end is read.
const TAIL_BYTES: u64 = 256 << 10;
/// How often the log is read again.
const EVERY: Duration = Duration::from_secs(1);
/// The most lines shown.
const MAX_LINES: usize = 500;

/// The levels tracing writes, most severe first.
pub const LEVELS: [&str; 5] = ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"];

pub struct LogsPanel {
    settings: Arc<Settings>,
    /// Index into [`LEVELS`]: lines at this level or more severe are shown.
    level: usize,
    lines: Vec<String>,
    file: Option<PathBuf>,
    read_at: Option<Instant>,
    error: Option<String>,
}

impl LogsPanel {
    pub fn new(settings: Arc<Settings>) -> LogsPanel {
        LogsPanel {
            settings,
            level: 2,
            lines: Vec::new(),
            file: None,
            read_at: None,
            error: None,
        }
    }

    pub fn ui(&mut self, ui: &mut egui::Ui) {
        if self.read_at.is_none_or(|at| at.elapsed() >= EVERY) {
            self.read();
        }
        ui.ctx().request_repaint_after(EVERY);
        ui.heading("Logs");
        ui.horizontal(|ui| {
            ui.label("Level");
            for (index, level) in LEVELS.iter().enumerate() {
                if ui.selectable_label(self.level == index, *level).clicked() {
                    self.level = index;
                    self.read();
                }
            }
        });
        match (&self.file, &self.error) {
            (_, Some(error)) => {
                ui.colored_label(ui.visuals().error_fg_color, error);
            }
            (Some(file), None) => {
                ui.label(format!("{} (newest last)", file.display()));
            }
            (None, None) => {
                ui.label("No daemon log yet: the daemon writes one when it runs.");
            }
        }
        egui::ScrollArea::vertical()
            .stick_to_bottom(true)
            .auto_shrink([false, false])
            .show(ui, |ui| {
                for line in &self.lines {
                    ui.label(egui::RichText::new(line).monospace());
                }
            });
    }

    fn read(&mut self) {
        self.read_at = Some(Instant::now());
        let dir = self.settings.home.join("logs");
        match newest_log(&dir) {
            Ok(Some(file)) => match tail(&file) {
                Ok(text) => {
                    self.lines = filter(&text, self.level);
                    self.error = None;
                    self.file = Some(file);
                }
                Err(error) => self.error = Some(format!("{}: {error}", file.display())),
            },
            Ok(None) => {
                self.file = None;
                self.lines.clear();
                self.error = None;
            }
            Err(error) => self.error = Some(format!("{}: {error}", dir.display())),
        }
    }
}

/// The newest `daemon.log.*` in `dir` (the date in the name orders them).
fn newest_log(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let mut logs: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.starts_with("daemon.log"))
                && entry.file_type().is_ok_and(|kind| kind.is_file())
        })
        .map(|entry| entry.path())
        .collect();
    logs.sort();
    Ok(logs.pop())
}

/// The end of `file`, from the first whole line in its last [`TAIL_BYTES`]. Opened without
/// following a link.
fn tail(file: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(cross_agent_home::home::no_follow_flag())
        .open(file)?;
    let length = opened.metadata()?.len();
    let start = length.saturating_sub(TAIL_BYTES);
    opened.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    opened.take(TAIL_BYTES).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(if start > 0 {
        text.split_once('\n')
            .map(|(_, rest)| rest.to_owned())
            .unwrap_or_default()
    } else {
        text
    })
}

/// The lines at `level` (an index into [`LEVELS`]) or more severe, the last [`MAX_LINES`]. A
/// line without a level of its own (a message's continuation) goes with the line before it.
pub fn filter(text: &str, level: usize) -> Vec<String> {
    let mut shown = Vec::new();
    let mut keep = false;
    for line in text.lines() {
        if let Some(found) = level_of(line) {
            keep = found <= level;
        }
        if keep {
            shown.push(line.to_owned());
        }
    }
    let skip = shown.len().saturating_sub(MAX_LINES);
    shown.split_off(skip)
}

/// The level of a tracing line (`<time>  INFO target: message`): its second word.
fn level_of(line: &str) -> Option<usize> {
    let word = line.split_whitespace().nth(1)?;
    LEVELS.iter().position(|level| *level == word)
}
