//! The window and branch of each session, for `sessions` (`docs/desktop.md`): a `desktop` field
//! added to the `--json` entries of sessions in an open editor workspace or active or working,
//! and the short text of the table's PLACE column.
//!
//! The listing's JSON comes from the daemon already rendered; the field is spliced into each
//! entry that gets one, before its closing brace, and every other byte is kept as it came (the
//! entries are read as borrowed raw values only to find where they are and their cwd).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use cross_agent_stores::render::{ListingSink, WriteSink};
use cross_agent_workspaces::place::{Place, Places};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The fields of an entry this reads.
#[derive(Deserialize)]
struct Entry {
    cwd: Option<String>,
    #[serde(default)]
    is_active: bool,
    #[serde(default)]
    is_working: bool,
}

/// `listing` (the `--json` bytes) with a `desktop` field in each entry that has a place. Bytes
/// that are not the listing's shape are returned as they are.
pub(super) fn with_places(listing: Vec<u8>, places: &mut Places) -> Vec<u8> {
    // Nothing can get a place when no workspace is open and no session is active or working:
    // the listing goes out untouched, without reading it (22,000 entries are megabytes).
    if !places.has_workspaces()
        && !contains(&listing, b"\"is_active\": true")
        && !contains(&listing, b"\"is_working\": true")
    {
        return listing;
    }
    let Ok(by_agent) = serde_json::from_slice::<HashMap<String, Vec<&RawValue>>>(&listing) else {
        return listing;
    };
    let base = listing.as_ptr() as usize;
    // (where to insert, what), in the listing's order.
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for raw in by_agent.values().flatten() {
        let Ok(entry) = serde_json::from_str::<Entry>(raw.get()) else {
            continue;
        };
        let Some(cwd) = entry.cwd.as_deref() else {
            continue;
        };
        let Some(place) = places.of(Path::new(cwd), entry.is_active || entry.is_working) else {
            continue;
        };
        let text = raw.get();
        let Some(close) = text.rfind('}') else {
            continue;
        };
        let at = raw.get().as_ptr() as usize - base + text[..close].trim_end().len();
        inserts.push((at, field(&place)));
    }
    if inserts.is_empty() {
        return listing;
    }
    inserts.sort_by_key(|(at, _)| *at);
    let mut out = Vec::with_capacity(listing.len() + inserts.len() * 160);
    let mut from = 0;
    for (at, text) in inserts {
        out.extend_from_slice(&listing[from..at]);
        out.extend_from_slice(text.as_bytes());
        from = at;
    }
    out.extend_from_slice(&listing[from..]);
    out
}

/// Where a listing made here goes (the CLI's own, not the daemon's bytes): written on as it is
/// made, each entry with the `desktop` field [`with_places`] would splice into it.
pub(super) struct PlacesSink<'p, W: Write> {
    inner: WriteSink<W>,
    places: &'p mut Places,
}

impl<'p, W: Write> PlacesSink<'p, W> {
    pub(super) fn new(inner: W, places: &'p mut Places) -> Self {
        PlacesSink {
            inner: WriteSink::new(inner),
            places,
        }
    }

    /// The writer, or the first error writing to it.
    pub(super) fn finish(self) -> std::io::Result<W> {
        self.inner.finish()
    }
}

impl<W: Write> ListingSink for PlacesSink<'_, W> {
    /// The renderer puts a listing made afresh one entry at a time (with the separator before
    /// it): an entry is what ends as an entry does.
    fn put(&mut self, bytes: &[u8]) {
        if bytes.ends_with(ENTRY_END)
            && let Some((at, field)) = entry_field(bytes, self.places)
        {
            self.inner.put(&bytes[..at]);
            self.inner.put(field.as_bytes());
            self.inner.put(&bytes[at..]);
        } else {
            self.inner.put(bytes);
        }
    }

    fn fail(&mut self, error: std::io::Error) {
        self.inner.fail(error);
    }
}

/// The end of an entry in the listing's layout.
const ENTRY_END: &[u8] = b"\n    }";

/// Where in `bytes` (an entry, perhaps after the separator) its `desktop` field goes, and the
/// field; none when it has no place.
fn entry_field(bytes: &[u8], places: &mut Places) -> Option<(usize, String)> {
    // As in `with_places`: nothing can get a place when no workspace is open and the entry is
    // neither active nor working — not read then.
    if !places.has_workspaces()
        && !contains(bytes, b"\"is_active\": true")
        && !contains(bytes, b"\"is_working\": true")
    {
        return None;
    }
    let open = bytes.iter().position(|&b| b == b'{')?;
    let entry: Entry = serde_json::from_slice(&bytes[open..]).ok()?;
    let place = places.of(
        Path::new(entry.cwd.as_deref()?),
        entry.is_active || entry.is_working,
    )?;
    let close = bytes.iter().rposition(|&b| b == b'}')?;
    let at = bytes[..close].trim_ascii_end().len();
    Some((at, field(&place)))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// `,\n      "desktop": {…}` in the entries' indentation.
fn field(place: &Place) -> String {
    let pretty = serde_json::to_string_pretty(place).unwrap_or_else(|_| "null".to_owned());
    format!(",\n      \"desktop\": {}", pretty.replace('\n', "\n      "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use cross_agent_workspaces::state::Editor;
    use cross_agent_workspaces::x11::LiveWindows;
    use serde_json::json;

    use super::*;

    /// An entry in a git repository gets its branch; the others keep their bytes.
    #[test]
    fn a_field_is_spliced_and_the_rest_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("r");
        std::fs::create_dir_all(&repo).unwrap();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(&repo)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap()
        };
        git(&["init", "-q", "-b", "topic"]);
        let listing = format!(
            "{{\n  \"claude\": [\n    {{\n      \"session_id\": \"a\",\n      \"cwd\": \"{}\",\n      \"is_active\": true\n    }},\n    {{\n      \"session_id\": \"b\",\n      \"cwd\": \"/nowhere\",\n      \"is_active\": false\n    }}\n  ]\n}}\n",
            repo.display()
        );
        let (mut places, _) = Places::read(Vec::<Editor>::new(), LiveWindows::NoDisplay);
        let out =
            String::from_utf8(with_places(listing.clone().into_bytes(), &mut places)).unwrap();
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            value["claude"][0]["desktop"],
            json!({"editor": null, "folder": null, "window": null, "branch": "topic"})
        );
        assert!(value["claude"][1].get("desktop").is_none());
        // Everything but the insertion is the bytes that came.
        let inserted = out.len() - listing.len();
        let at = out.find(",\n      \"desktop\"").unwrap();
        assert_eq!(format!("{}{}", &out[..at], &out[at + inserted..]), listing);
    }

    /// A listing made here and written through [`PlacesSink`] is what [`with_places`] makes of
    /// the same listing made whole: the field in the entry that has a place, the rest kept.
    #[test]
    fn the_streamed_listing_gets_the_same_places() {
        use cross_agent_stores::render::{self, Chosen, Spent};
        use cross_agent_stores::resolve::ActiveWindow;
        use cross_agent_stores::{Agent, Session, UnixMillis};

        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("r");
        std::fs::create_dir_all(&repo).unwrap();
        let status = std::process::Command::new("git")
            .args(["init", "-q", "-b", "topic"])
            .current_dir(&repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(status.success());
        let now = UnixMillis(1_796_000_060_000);
        let session = |n: i64, cwd: &Path, at: i64| Session {
            agent: Agent::Claude,
            session_id: format!("s-{n}"),
            cwd: Some(cwd.to_path_buf()),
            title: Some("t".into()),
            title_is_assigned: false,
            first_activity: None,
            last_activity: Some(UnixMillis(at)),
            is_working: false,
            path: format!("/h/s-{n}.jsonl").into(),
            copilot: None,
        };
        // The first is active in a repository (a place), the others are not or have none.
        let sessions = [
            session(1, &repo, now.0 - 1_000),
            session(2, &repo, now.0 - 86_400_000),
            session(3, Path::new("/nowhere"), now.0 - 2_000),
        ];
        let chosen = [(Agent::Claude, Chosen::Sessions(sessions.iter().collect()))];
        let window = ActiveWindow::from_minutes(60);
        let spent_of = |_: cross_agent_stores::held::SessionRef<'_>| Spent {
            cost_usd: Some("1.000000".into()),
            tokens: Some(3),
        };
        let (mut places, _) = Places::read(Vec::<Editor>::new(), LiveWindows::NoDisplay);
        let mut whole = Vec::new();
        render::write_listing_spent(&mut whole, &chosen, window, now, None, Some(&spent_of));
        let want = with_places(whole.clone(), &mut places);
        assert_ne!(
            want, whole,
            "the active session in a repository has a place"
        );
        let mut sink = PlacesSink::new(Vec::new(), &mut places);
        render::write_listing_spent(&mut sink, &chosen, window, now, None, Some(&spent_of));
        let got = sink.finish().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        );
    }
}
