//! The changes `install` / `uninstall` would make, worked out before anything is written, then
//! shown as unified diffs (`--dry-run`) or applied: a backup of each existing file once, atomic
//! writes, links refused. Applying twice changes nothing the second time.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::files;
use super::journal::Journal;
use super::preflight;
use super::user_edits::Dropped;
use super::{FileKind, Registration, Wanted};

/// One file's change.
#[derive(Debug, Clone)]
pub struct Change {
    pub path: PathBuf,
    /// Which agent or editor it is for ("Claude Code", "VS Code Insiders", …).
    pub label: String,
    pub before: Option<String>,
    /// `None`: the file is removed.
    pub after: Option<String>,
    /// Install: what the file's backup holds, written before its first change when there is
    /// none yet: the file as it is, or nothing (an empty backup) for a file install creates or
    /// one holding nothing but cross-agent's own entries. The empty backup is what tells a
    /// later install that such a file was never the person's: without it, an install after
    /// the person added their own entries would back up cross-agent's with theirs, and
    /// `uninstall` would put cross-agent's back from it.
    pub backup: Option<String>,
    /// What the person added or changed inside cross-agent's entries, which this change
    /// takes out with them (uninstall).
    pub dropped: Vec<Dropped>,
}

impl Change {
    pub fn changes_anything(&self) -> bool {
        self.before != self.after
    }

    fn dropped_json(&self) -> Vec<Value> {
        self.dropped.iter().map(Dropped::to_json).collect()
    }

    fn action(&self) -> &'static str {
        match (&self.before, &self.after) {
            _ if !self.changes_anything() => "unchanged",
            (None, Some(_)) => "create",
            (Some(_), None) => "remove",
            _ => "modify",
        }
    }
}

/// A shim link to create or remove: `<dir>/<name>` → this binary.
#[derive(Debug, Clone)]
pub struct Link {
    pub path: PathBuf,
    pub target: PathBuf,
    /// Create it (install) or remove it (uninstall).
    pub create: bool,
    /// Already as wanted.
    pub in_place: bool,
}

impl Link {
    fn action(&self) -> &'static str {
        match (self.in_place, self.create) {
            (true, _) => "unchanged",
            (false, true) => "link",
            (false, false) => "remove",
        }
    }
}

/// Everything one run would do.
#[derive(Debug, Default)]
pub struct Plan {
    /// The person's HOME: links are refused in the folders between it and each target.
    pub home: PathBuf,
    /// An uninstall's plan (backups are restored, not taken).
    pub uninstall: bool,
    pub changes: Vec<Change>,
    pub links: Vec<Link>,
}

impl Plan {
    /// Adds the change `install` makes to `path`.
    pub fn install_file(
        &mut self,
        home: &Path,
        path: &Path,
        kind: FileKind,
        label: &str,
        registration: &Registration,
        wanted: &Wanted,
    ) -> Result<()> {
        let before = files::read(path, home)?;
        let name = path.display().to_string();
        let after = super::install_text(kind, &name, before.as_deref(), registration, wanted)?;
        let backup = match &before {
            Some(text)
                if super::uninstall_text(kind, &name, text, None)?
                    .text
                    .is_some() =>
            {
                text.clone()
            }
            _ => String::new(),
        };
        self.changes.push(Change {
            path: path.to_owned(),
            label: label.to_owned(),
            before,
            after: Some(after),
            backup: Some(backup),
            dropped: Vec::new(),
        });
        Ok(())
    }

    /// Adds the change `uninstall` makes to `path` (nothing when it does not exist).
    pub fn uninstall_file(
        &mut self,
        home: &Path,
        path: &Path,
        kind: FileKind,
        label: &str,
    ) -> Result<()> {
        let Some(current) = files::read(path, home)? else {
            return Ok(());
        };
        // An empty backup stands for a file that was not there: nothing in it is the person's.
        let backup = files::read(&files::backup_path(path), home)?
            .filter(|text| !files::is_empty_backup(text));
        let name = path.display().to_string();
        let uninstalled = super::uninstall_text(kind, &name, &current, backup.as_deref())?;
        self.changes.push(Change {
            path: path.to_owned(),
            label: label.to_owned(),
            before: Some(current),
            after: uninstalled.text,
            backup: None,
            dropped: uninstalled.dropped,
        });
        Ok(())
    }

    /// The unified diff of every change (and a line per link).
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for change in self.changes.iter().filter(|c| c.changes_anything()) {
            out.push_str(&files::unified_diff(
                &change.path,
                change.before.as_deref(),
                change.after.as_deref(),
            ));
        }
        for link in self.links.iter().filter(|l| !l.in_place) {
            if link.create {
                out.push_str(&format!(
                    "link {} -> {}\n",
                    link.path.display(),
                    link.target.display()
                ));
            } else {
                out.push_str(&format!("remove link {}\n", link.path.display()));
            }
        }
        out
    }

    /// Writes every change, or none: every target is checked first ([`preflight::check`]),
    /// and a failure on the way (a full disk, a file size limit, another program in the way)
    /// takes back what was already written before the error is returned. Install backs up
    /// every file it plans for once (also one it leaves as it is: the backup is how uninstall
    /// knows what was the person's; empty for one that was not, see [`Change::backup`]), then
    /// writes the new text atomically. Uninstall removes a backup once the file is back to it,
    /// and an empty one always.
    pub fn apply(&self) -> Result<Vec<Value>> {
        preflight::check(self)?;
        let mut journal = Journal::default();
        match self.apply_recording(&mut journal) {
            Ok(done) => Ok(done),
            Err(error) => {
                let steps = journal.steps();
                let failed = journal.roll_back();
                if failed.is_empty() {
                    Err(error.context(format!(
                        "nothing was changed (the {steps} step(s) done before this failure \
                         were taken back)"
                    )))
                } else {
                    Err(error.context(format!(
                        "taking back the steps done before this failure did not fully work; \
                         the backups (*{}) hold each file as it was before cross-agent first \
                         changed it. Not put back:\n  {}",
                        files::BACKUP_SUFFIX,
                        failed.join("\n  ")
                    )))
                }
            }
        }
    }

    fn apply_recording(&self, journal: &mut Journal) -> Result<Vec<Value>> {
        let mut done = Vec::new();
        for change in &self.changes {
            let mut backup = None;
            if !self.uninstall
                && let Some(original) = &change.backup
            {
                // The folder of a file install creates may be missing: made here, it is
                // recorded, so a rollback takes it away again.
                if let Some(parent) = change.path.parent() {
                    journal.create_dirs(parent)?;
                }
                backup = files::back_up_once(&change.path, original)?;
                if let Some(path) = &backup {
                    journal.created(path);
                }
            }
            if change.changes_anything() {
                let mode = files::mode_of(&change.path);
                match &change.after {
                    Some(text) => {
                        if let Some(parent) = change.path.parent() {
                            journal.create_dirs(parent)?;
                        }
                        files::write_atomically(&change.path, text)?;
                    }
                    None => std::fs::remove_file(&change.path)
                        .with_context(|| format!("removing {}", change.path.display()))?,
                }
                match &change.before {
                    Some(before) => journal.changed(&change.path, before, mode),
                    None => journal.created(&change.path),
                }
            }
            if self.uninstall {
                let backup_path = files::backup_path(&change.path);
                // Read as every file here is: a link where the backup should be is refused.
                if let Some(original) = files::read(&backup_path, &self.home)?
                    && files::backup_is_done(&original, change.after.as_deref())
                {
                    let mode = files::mode_of(&backup_path);
                    std::fs::remove_file(&backup_path)
                        .with_context(|| format!("removing {}", backup_path.display()))?;
                    journal.changed(&backup_path, &original, mode);
                }
            }
            done.push(json!({
                "path": change.path,
                "for": change.label,
                "action": change.action(),
                // An empty backup records that nothing was the person's: not one to point at.
                "backup": if change.changes_anything() && change.backup.as_deref().is_some_and(|b| !files::is_empty_backup(b)) { backup } else { None },
                "dropped": change.dropped_json(),
            }));
        }
        for link in &self.links {
            if !link.in_place {
                if link.create {
                    if std::fs::symlink_metadata(&link.path).is_ok() {
                        let old = std::fs::read_link(&link.path)
                            .with_context(|| format!("reading {}", link.path.display()))?;
                        std::fs::remove_file(&link.path)
                            .with_context(|| format!("replacing {}", link.path.display()))?;
                        journal.unlinked(&link.path, &old);
                    }
                    if let Some(parent) = link.path.parent() {
                        journal.create_dirs(parent)?;
                    }
                    std::os::unix::fs::symlink(&link.target, &link.path)
                        .with_context(|| format!("linking {}", link.path.display()))?;
                    journal.created(&link.path);
                } else {
                    std::fs::remove_file(&link.path)
                        .with_context(|| format!("removing {}", link.path.display()))?;
                    journal.unlinked(&link.path, &link.target);
                }
            }
            done.push(
                json!({"path": link.path, "for": "panel shim link", "action": link.action()}),
            );
        }
        Ok(done)
    }

    /// What a dry run would do, as JSON lines like [`Plan::apply`]'s.
    pub fn preview(&self) -> Vec<Value> {
        let mut out: Vec<Value> = self
            .changes
            .iter()
            .map(|c| {
                json!({"path": c.path, "for": c.label, "action": c.action(), "dropped": c.dropped_json()})
            })
            .collect();
        out.extend(
            self.links
                .iter()
                .map(|l| json!({"path": l.path, "for": "panel shim link", "action": l.action()})),
        );
        out
    }
}

/// Where the shim link `name` in `dir` stands: to create (`in_place` when it already points
/// at `target`), refusing a file there that is not a link.
pub fn shim_link(dir: &Path, name: &str, target: &Path) -> Result<Link> {
    let path = dir.join(name);
    let in_place = match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::read_link(&path).ok().as_deref() == Some(target)
        }
        Ok(_) => anyhow::bail!(
            "{} exists and is not a link; move it away, or choose another --shim-dir",
            path.display()
        ),
        Err(_) => false,
    };
    Ok(Link {
        path,
        target: target.to_owned(),
        create: true,
        in_place,
    })
}

/// The shim link `name` in `dir` to remove, when it is a link to a `cross-agent` binary.
pub fn shim_link_to_remove(dir: &Path, name: &str) -> Option<Link> {
    let path = dir.join(name);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    let target = std::fs::read_link(&path).ok()?;
    (target.file_name()? == "cross-agent").then_some(Link {
        path,
        target,
        create: false,
        in_place: false,
    })
}
