//! One forum topic per session, in a paired forum supergroup: which topic of which chat is
//! which session, kept in `CROSS_AGENT_HOME/telegram/topics.json` (owner-only, replaced whole)
//! so a restarted daemon posts into the same topics instead of opening new ones.
//!
//! A topic is created on a session's first activity in that chat (its card, a prompt, an
//! answer) and named "agent · title"; the mapping is never guessed from a topic's name.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::sessions::SessionRef;
use crate::store;

/// The longest topic name the Bot API takes (createForumTopic: 1-128 characters).
pub const MAX_TOPIC_NAME_CHARS: usize = 128;

/// One session's topic in one chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topic {
    pub chat_id: i64,
    pub thread_id: i64,
    pub session: SessionRef,
    pub name: String,
    pub created_at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topics {
    #[serde(default)]
    pub topics: Vec<Topic>,
}

impl Topics {
    /// The topic of `session` in `chat_id`.
    pub fn of_session(&self, chat_id: i64, agent: &str, session_id: &str) -> Option<&Topic> {
        self.topics.iter().find(|t| {
            t.chat_id == chat_id && t.session.agent == agent && t.session.session_id == session_id
        })
    }

    /// The session whose topic `thread_id` of `chat_id` is.
    pub fn of_thread(&self, chat_id: i64, thread_id: i64) -> Option<&Topic> {
        self.topics
            .iter()
            .find(|t| t.chat_id == chat_id && t.thread_id == thread_id)
    }
}

pub fn path(home: &Path) -> PathBuf {
    store::dir(home).join("topics.json")
}

/// The stored topics; none when the file does not exist yet.
pub fn read(home: &Path) -> Result<Topics> {
    store::read_state(&path(home))
}

pub fn write(home: &Path, topics: &Topics) -> Result<()> {
    let path = path(home);
    let bytes = serde_json::to_vec_pretty(topics).map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    store::write_private(&path, &bytes)
}

/// "agent · title" ("… on HOST" for another machine's), cut to what the Bot API takes.
pub fn name_of(session: &SessionRef) -> String {
    let name = crate::cards::header(session);
    name.chars().take(MAX_TOPIC_NAME_CHARS).collect()
}
