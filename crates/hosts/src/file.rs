//! `hosts.toml` in the home: which other machines the daemon links to, by a name of the
//! person's choosing and an ssh destination.
//!
//! ```toml
//! [hosts.buildbox]
//! destination = "me@buildbox.lan"
//! ```
//!
//! A file rather than a table in `hub.db`: it is configuration a person may read, edit or
//! copy to another machine, like `providers.toml`; the daemon notices a change by its stamp
//! without a query; and it needs no migration. It is read like every file in the home — a link
//! or another user's file refused, opened without following links — and written whole through
//! a temporary file and a rename, by `toml_edit` so the person's comments and order stay.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use cross_agent_home::Home;
use toml_edit::{DocumentMut, Item, Table, value};

use crate::error::{Error, Result};

/// The file's name in the home.
pub const FILE_NAME: &str = "hosts.toml";

/// The most of `hosts.toml` read; a real one is a few hundred bytes.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The longest host name.
const MAX_NAME: usize = 64;

/// The longest ssh destination.
const MAX_DESTINATION: usize = 255;

/// One other machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The name it is known by here (`hosts add NAME`), exact.
    pub name: String,
    /// What `ssh` is given to reach it: `user@box`, `box`, or an alias of `~/.ssh/config`.
    pub destination: String,
}

/// Where `hosts.toml` is in `home`.
pub fn path(home: &Path) -> PathBuf {
    home.join(FILE_NAME)
}

/// A file's inode, size and modification time in nanoseconds.
pub type Stamp = (u64, u64, i128);

/// What `hosts add` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// The host is new.
    New,
    /// The host was there already with the same destination.
    Unchanged,
}

/// Refuses a name that is not `[A-Za-z0-9][A-Za-z0-9._-]*`, at most 64 long: a name is shown in
/// listings, given on command lines and kept in records, so it stays one plain word.
pub fn check_name(name: &str) -> Result<()> {
    let bad = |problem| {
        Err(Error::BadName {
            name: name.to_owned(),
            problem,
        })
    };
    let Some(first) = name.chars().next() else {
        return bad("it is empty");
    };
    if name.len() > MAX_NAME {
        return bad("it is too long");
    }
    if !first.is_ascii_alphanumeric() {
        return bad("it must start with a letter or a digit");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return bad("it holds a character other than a letter, a digit, `.`, `_` or `-`");
    }
    Ok(())
}

/// Refuses a destination ssh would read as something else: one starting with `-` would be an
/// option (`-oProxyCommand=…` runs a program), and whitespace or control characters are no part
/// of a host or user name. What remains is ssh's to judge.
pub fn check_destination(destination: &str) -> Result<()> {
    let bad = |problem| {
        Err(Error::BadDestination {
            destination: destination.to_owned(),
            problem,
        })
    };
    if destination.is_empty() {
        return bad("it is empty");
    }
    if destination.len() > MAX_DESTINATION {
        return bad("it is too long");
    }
    if destination.starts_with('-') {
        return bad("it starts with `-`, which ssh would read as an option");
    }
    if destination
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return bad("it holds whitespace or a control character");
    }
    Ok(())
}

/// The hosts in `path`, in file order; none when there is no file.
pub fn read(path: &Path) -> Result<Vec<Host>> {
    match read_text(path)? {
        Some(text) => parse(path, &text),
        None => Ok(Vec::new()),
    }
}

/// The file's identity and stamp (inode, size, modification time in ns), for noticing a
/// change without reading it; `None` when there is none.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    Some((meta.ino(), meta.size(), mtime))
}

/// Adds `name` → `destination`. The same pair again changes nothing; the name with another
/// destination is [`Error::AlreadyThere`].
pub fn add(home: &Home, name: &str, destination: &str) -> Result<Added> {
    check_name(name)?;
    check_destination(destination)?;
    home.verify()?;
    home.ensure_root()?;
    let path = path(home.root());
    let text = read_text(&path)?.unwrap_or_default();
    let mut document = document(&path, &text)?;
    if let Some(existing) = parse(&path, &text)?.into_iter().find(|h| h.name == name) {
        if existing.destination == destination {
            return Ok(Added::Unchanged);
        }
        return Err(Error::AlreadyThere {
            name: name.to_owned(),
            existing: existing.destination,
        });
    }
    if text.trim().is_empty() {
        document.decor_mut().set_prefix(
            "# The other machines cross-agent links to over ssh (docs/remote.md).\n\
             # `cross-agent hosts add NAME [DESTINATION]` / `hosts remove NAME` edit this file.\n\n",
        );
    }
    let hosts = document
        .entry("hosts")
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_mut()
        .ok_or_else(|| malformed(&path, "`hosts` is not a table".to_owned()))?;
    let mut entry = Table::new();
    entry.insert("destination", value(destination));
    hosts.insert(name, Item::Table(entry));
    cross_agent_home::atomic::write_private(&path, document.to_string().as_bytes())?;
    Ok(Added::New)
}

/// Removes `name`; [`Error::NoSuchHost`] when it is not there.
pub fn remove(home: &Home, name: &str) -> Result<()> {
    home.verify()?;
    let path = path(home.root());
    let Some(text) = read_text(&path)? else {
        return Err(Error::NoSuchHost {
            name: name.to_owned(),
        });
    };
    parse(&path, &text)?;
    let mut document = document(&path, &text)?;
    let removed = document
        .get_mut("hosts")
        .and_then(Item::as_table_like_mut)
        .and_then(|hosts| hosts.remove(name));
    if removed.is_none() {
        return Err(Error::NoSuchHost {
            name: name.to_owned(),
        });
    }
    cross_agent_home::atomic::write_private(&path, document.to_string().as_bytes())?;
    Ok(())
}

fn malformed(path: &Path, problem: String) -> Error {
    Error::Malformed {
        path: path.to_owned(),
        problem,
    }
}

fn document(path: &Path, text: &str) -> Result<DocumentMut> {
    text.parse::<DocumentMut>()
        .map_err(|error| malformed(path, error.to_string().trim().to_owned()))
}

fn parse(path: &Path, text: &str) -> Result<Vec<Host>> {
    let document = document(path, text)?;
    let mut hosts = Vec::new();
    for (key, item) in document.iter() {
        if key != "hosts" {
            return Err(malformed(path, format!("unknown key `{key}`")));
        }
        let table = item
            .as_table_like()
            .ok_or_else(|| malformed(path, "`hosts` is not a table".to_owned()))?;
        for (name, entry) in table.iter() {
            check_name(name).map_err(|error| malformed(path, error.to_string()))?;
            let entry = entry
                .as_table_like()
                .ok_or_else(|| malformed(path, format!("host `{name}` is not a table")))?;
            for (field, _) in entry.iter() {
                if field != "destination" {
                    return Err(malformed(
                        path,
                        format!("host `{name}` has an unknown key `{field}`"),
                    ));
                }
            }
            let destination = match entry.get("destination") {
                None => name.to_owned(),
                Some(item) => item
                    .as_str()
                    .ok_or_else(|| {
                        malformed(
                            path,
                            format!("host `{name}`: `destination` is not a string"),
                        )
                    })?
                    .to_owned(),
            };
            check_destination(&destination).map_err(|error| malformed(path, error.to_string()))?;
            hosts.push(Host {
                name: name.to_owned(),
                destination,
            });
        }
    }
    Ok(hosts)
}

/// The file's text, or `None` when there is none. Read like every settings file the person
/// writes: a link, someone else's file, or one that group or others can write is refused — it
/// names the machines the daemon opens ssh links to and forwards sends over.
fn read_text(path: &Path) -> Result<Option<String>> {
    use cross_agent_home::safety::{SettingsFileRefusal as Refusal, read_settings_file};
    read_settings_file(path, MAX_FILE_BYTES).map_err(|refusal| match refusal {
        Refusal::Entry(e) => e.into(),
        Refusal::NotRegular => malformed(path, "it is not a regular file".to_owned()),
        Refusal::GroupWritable { mode } => malformed(
            path,
            format!(
                "it is writable by group or others (mode {mode:o}), and it names the machines \
                 cross-agent links to; check it, then `chmod go-w {}`",
                path.display()
            ),
        ),
        Refusal::Io(source) => Error::Io {
            action: "read",
            path: path.to_owned(),
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn home() -> (tempfile::TempDir, Home) {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::at(tmp.path().join("home")).unwrap();
        (tmp, home)
    }

    #[test]
    fn add_list_remove_keep_the_persons_comments() {
        let (_tmp, home) = home();
        assert_eq!(add(&home, "box", "me@box").unwrap(), Added::New);
        assert_eq!(add(&home, "box", "me@box").unwrap(), Added::Unchanged);
        let file = path(home.root());
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str("# mine, keep me\n");
        std::fs::write(&file, text).unwrap();
        assert_eq!(add(&home, "lab-2", "lab-2").unwrap(), Added::New);
        assert_eq!(
            read(&file).unwrap(),
            vec![
                Host {
                    name: "box".into(),
                    destination: "me@box".into()
                },
                Host {
                    name: "lab-2".into(),
                    destination: "lab-2".into()
                }
            ]
        );
        assert!(matches!(
            add(&home, "box", "other@box"),
            Err(Error::AlreadyThere { .. })
        ));
        remove(&home, "box").unwrap();
        assert!(matches!(
            remove(&home, "box"),
            Err(Error::NoSuchHost { .. })
        ));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("# mine, keep me"), "{text}");
        assert_eq!(read(&file).unwrap().len(), 1);
    }

    #[test]
    fn names_and_destinations_are_checked() {
        for name in ["", "-x", ".x", "a b", "a/b", "é", &"x".repeat(65)] {
            assert!(check_name(name).is_err(), "{name:?}");
        }
        for name in ["box", "Box.lan", "lab_2-x", "9"] {
            check_name(name).unwrap();
        }
        for destination in ["", "-oProxyCommand=sh", "a b", "me@box\n"] {
            assert!(check_destination(destination).is_err(), "{destination:?}");
        }
        check_destination("me@box.lan").unwrap();
    }

    #[test]
    fn a_link_in_place_of_the_file_is_refused() {
        let (tmp, home) = home();
        home.ensure_root().unwrap();
        let elsewhere = tmp.path().join("elsewhere.toml");
        std::fs::write(&elsewhere, "").unwrap();
        std::os::unix::fs::symlink(&elsewhere, path(home.root())).unwrap();
        let error = read(&path(home.root())).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(add(&home, "box", "box").is_err());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");
    }

    #[test]
    fn a_file_others_can_write_is_refused_and_left_as_it_is() {
        use std::os::unix::fs::PermissionsExt as _;
        let (_tmp, home) = home();
        home.ensure_root().unwrap();
        let text = "[hosts.box]\ndestination = \"box\"\n";
        std::fs::write(path(home.root()), text).unwrap();
        std::fs::set_permissions(path(home.root()), std::fs::Permissions::from_mode(0o666))
            .unwrap();
        let error = read(&path(home.root())).unwrap_err().to_string();
        assert!(
            error.contains("writable by group or others (mode 666)")
                && error.contains("chmod go-w"),
            "{error}"
        );
        assert!(add(&home, "other", "other").is_err());
        assert_eq!(std::fs::read_to_string(path(home.root())).unwrap(), text);
    }

    #[test]
    fn an_unknown_key_is_named() {
        let (_tmp, home) = home();
        home.ensure_root().unwrap();
        std::fs::write(
            path(home.root()),
            "[hosts.box]\ndestination = \"box\"\nport = 22\n",
        )
        .unwrap();
        let error = read(&path(home.root())).unwrap_err().to_string();
        assert!(
            error.contains("host `box` has an unknown key `port`"),
            "{error}"
        );
    }
}
