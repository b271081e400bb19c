//! What the session desk ([`crate::sessions`]) keeps across a daemon restart, in
//! `CROSS_AGENT_HOME/telegram/desk.json` (owner-only, replaced whole: written beside, then
//! renamed, so a crash leaves the old file or the new one, never half of one):
//!
//! - the keys behind the session buttons, so a card posted before the restart still answers a
//!   tap;
//! - which card (chat, message) is which session, so a reply to an old card still prompts it;
//! - a chat's pending Prompt (its next message) and its Focus;
//! - the prompts sent from the phone whose answer the chat is waiting for ([`Relay`]): where
//!   to post it, and whether it has been posted. The daemon that polls the bot next re-arms
//!   the ones not yet relayed; one that is marked relayed is never posted again.
//!
//! Every list is bounded (the oldest forgotten first), so a bot that runs for months keeps a
//! file of a few megabytes at most.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cards::{Action, MAX_KEYS};
use crate::error::{Error, Result};
use crate::sessions::SessionRef;
use crate::store;

/// How many prompts awaiting (or lately given) their relay are remembered.
pub const MAX_RELAYS: usize = 256;

/// A card the bot posted: replies to it go to its session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardRef {
    pub chat_id: i64,
    pub message_id: i64,
    pub session: SessionRef,
}

/// A chat's pending Prompt or its Focus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatTarget {
    pub chat_id: i64,
    pub session: SessionRef,
}

/// A prompt from the phone whose answer goes back to the chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relay {
    pub delivery_id: String,
    pub chat_id: i64,
    /// The forum topic it was asked in (and the answer goes to).
    #[serde(default)]
    pub thread_id: Option<i64>,
    pub session: SessionRef,
    /// When the hub accepted it (Unix milliseconds): the answer is waited for from then.
    pub sent_at_ms: i64,
    /// When its answer (or failure, or the give-up notice) was posted; set before the post, so
    /// a daemon that dies in between never posts it twice.
    #[serde(default)]
    pub relayed_at_ms: Option<i64>,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeskFile {
    /// Button keys and their actions, oldest first.
    #[serde(default)]
    pub keys: Vec<(String, Action)>,
    /// Oldest first.
    #[serde(default)]
    pub cards: Vec<CardRef>,
    #[serde(default)]
    pub awaiting: Vec<ChatTarget>,
    #[serde(default)]
    pub focus: Vec<ChatTarget>,
    /// Oldest first.
    #[serde(default)]
    pub relays: Vec<Relay>,
}

pub fn path(home: &Path) -> PathBuf {
    store::dir(home).join("desk.json")
}

/// The stored desk; an empty one when the file does not exist yet.
pub fn read(home: &Path) -> Result<DeskFile> {
    store::read_state(&path(home))
}

/// Stores `desk`, its lists cut to their bounds first.
pub fn write(home: &Path, desk: &mut DeskFile) -> Result<()> {
    bound(desk);
    let path = path(home);
    let bytes = serde_json::to_vec(desk).map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    store::write_private(&path, &bytes)
}

/// Cuts every list to its bound, oldest first; among relays, those already posted go first.
pub fn bound(desk: &mut DeskFile) {
    let cut = |len: usize, most: usize| len.saturating_sub(most);
    desk.keys.drain(..cut(desk.keys.len(), MAX_KEYS));
    desk.cards
        .drain(..cut(desk.cards.len(), crate::sessions::MAX_CARDS));
    bound_relays(&mut desk.relays);
}

/// Cuts `relays` to [`MAX_RELAYS`]: the oldest already posted go first, then the oldest.
pub fn bound_relays(relays: &mut Vec<Relay>) {
    let mut over = relays.len().saturating_sub(MAX_RELAYS);
    if over == 0 {
        return;
    }
    relays.retain(|relay| {
        if over > 0 && relay.relayed_at_ms.is_some() {
            over -= 1;
            false
        } else {
            true
        }
    });
    let still = relays.len().saturating_sub(MAX_RELAYS);
    relays.drain(..still);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> SessionRef {
        SessionRef {
            agent: "claude".into(),
            session_id: id.into(),
            title: None,
            cwd: None,

            host: None,
        }
    }

    fn relay(n: usize, relayed: bool) -> Relay {
        Relay {
            delivery_id: format!("dlv_{n}"),
            chat_id: 1,
            thread_id: None,
            session: session("s"),
            sent_at_ms: n as i64,
            relayed_at_ms: relayed.then_some(n as i64 + 1),
        }
    }

    #[test]
    fn relays_past_the_bound_lose_the_posted_ones_first_then_the_oldest() {
        let mut desk = DeskFile {
            relays: (0..MAX_RELAYS + 3).map(|n| relay(n, n % 2 == 1)).collect(),
            ..DeskFile::default()
        };
        bound(&mut desk);
        assert_eq!(desk.relays.len(), MAX_RELAYS);
        // The three oldest posted ones (1, 3, 5) went; every unposted one stayed.
        assert_eq!(desk.relays[0].delivery_id, "dlv_0");
        assert_eq!(desk.relays[1].delivery_id, "dlv_2");
        assert_eq!(desk.relays[3].delivery_id, "dlv_6");

        let mut unposted = DeskFile {
            relays: (0..MAX_RELAYS + 2).map(|n| relay(n, false)).collect(),
            ..DeskFile::default()
        };
        bound(&mut unposted);
        assert_eq!(unposted.relays.len(), MAX_RELAYS);
        assert_eq!(unposted.relays[0].delivery_id, "dlv_2");
    }

    #[test]
    fn the_file_is_owner_only_and_reads_back_whole() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        assert_eq!(read(home.path()).unwrap(), DeskFile::default());
        let mut desk = DeskFile {
            keys: vec![("abc".into(), Action::Focus(session("s1")))],
            cards: vec![CardRef {
                chat_id: 7,
                message_id: 9,
                session: session("s1"),
            }],
            awaiting: vec![ChatTarget {
                chat_id: 7,
                session: session("s2"),
            }],
            focus: Vec::new(),
            relays: vec![relay(1, false)],
        };
        write(home.path(), &mut desk).unwrap();
        assert_eq!(read(home.path()).unwrap(), desk);
        let mode = std::fs::metadata(path(home.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        // A damaged desk starts afresh, its bytes kept aside for the next write not to lose.
        std::fs::write(path(home.path()), b"{ not json").unwrap();
        assert_eq!(read(home.path()).unwrap(), DeskFile::default());
        let kept: Vec<_> = std::fs::read_dir(store::dir(home.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("desk.json.damaged-"))
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
    }
}
