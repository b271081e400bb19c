//! `cross-agent shim links [DIR]`: the three names the binary answers to as a shim, as
//! symbolic links to it, because each editor setting takes one executable path and no
//! arguments. The default folder is the one the binary is in, so the links follow it wherever
//! it is installed (`~/.cargo/bin`, `/usr/local/bin`, …).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The link names and the editor setting each one goes into.
pub const LINKS: [(&str, &str); 3] = [
    ("cross-agent-claude-shim", "claudeCode.claudeProcessWrapper"),
    ("cross-agent-codex-shim", "chatgpt.cliExecutable"),
    ("cross-agent-grok-shim", "grok.cliPath"),
];

/// Creates (or points anew) the three links in `dir` (default: beside the binary) to the
/// running binary; returns the folder used. A file that is not a link is left alone and named.
pub fn create(dir: Option<&Path>) -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| Error::io("find", "the running binary", e))?;
    let dir = match dir {
        Some(dir) => dir.to_owned(),
        None => exe
            .parent()
            .map(Path::to_owned)
            .ok_or_else(|| Error::Usage(format!("{} has no folder", exe.display())))?,
    };
    let dir = std::path::absolute(&dir).map_err(|e| Error::io("find", &dir, e))?;
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    for (name, _) in LINKS {
        let link = dir.join(name);
        match std::fs::symlink_metadata(&link) {
            Ok(meta) if meta.file_type().is_symlink() => {
                std::fs::remove_file(&link).map_err(|e| Error::io("replace", &link, e))?;
            }
            Ok(_) => {
                return Err(Error::Usage(format!(
                    "{} exists and is not a link; remove it or choose another folder",
                    link.display()
                )));
            }
            Err(_) => {}
        }
        std::os::unix::fs::symlink(&exe, &link).map_err(|e| Error::io("create", &link, e))?;
    }
    Ok(dir)
}

/// The lines to add to VS Code's user `settings.json` for links in `dir`.
pub fn settings_text(dir: &Path) -> String {
    let lines: Vec<String> = LINKS
        .iter()
        .map(|(name, setting)| {
            let path = dir.join(name).display().to_string();
            format!(
                "  {}: {}",
                serde_json::Value::from(*setting),
                serde_json::Value::from(path)
            )
        })
        .collect();
    format!("{{\n{}\n}}", lines.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_point_at_the_binary_and_a_stranger_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let used = create(Some(dir.path())).unwrap();
        let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
        for (name, _) in LINKS {
            assert_eq!(std::fs::read_link(used.join(name)).unwrap(), exe);
        }
        // Again: replaced, not refused.
        create(Some(dir.path())).unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join(LINKS[1].0), "mine").unwrap();
        let refused = create(Some(other.path())).unwrap_err().to_string();
        assert!(refused.contains("not a link"), "{refused}");
        assert_eq!(
            std::fs::read_to_string(other.path().join(LINKS[1].0)).unwrap(),
            "mine"
        );
        let settings: serde_json::Value = serde_json::from_str(&settings_text(&used)).unwrap();
        assert_eq!(
            settings["grok.cliPath"],
            used.join("cross-agent-grok-shim").display().to_string()
        );
    }
}
