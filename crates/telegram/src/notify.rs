//! Notifications to the paired chats, and what the Claude Code hooks tell of each session.
//!
//! Which events notify (and no others, so the chat is not flooded):
//!
//! | event | message |
//! | --- | --- |
//! | `Stop` hook (a Claude turn ended) | `✅ Claude · proj (3856bb3e) finished` and its last answer |
//! | a panel turn ended (Codex, Grok panels: their state goes back to idle) | `✅ Codex · title finished` |
//! | `Notification` hook (Claude waits: a permission prompt, idle input) | `🔔 …` its message, at most once a minute per session and text; a permission prompt of a session held by a Claude panel is not sent (the panel's approval card asks it) |
//! | `PreToolUse` of `AskUserQuestion` | `❓ …` the questions and their options |
//! | an approval waiting | the approval card itself ([`crate::approval_card`]) |
//! | a delivery failed (the hub's typed event) | `⚠️ Delivery … to codex failed: reason` |
//!
//! `SessionStart`, `UserPromptSubmit` and `PostToolUse` notify nothing: they keep the session's
//! state ([`HookSession`]: working / idle / waiting, the last prompt's and answer's heads, the
//! tool calls of the running turn), saved to `telegram/hook_sessions.json` for `/sessions`.
//!
//! An answer up to three messages long is sent as text in 4,096-character pieces; a longer one
//! as its head and the whole as `answer.md`. Everything goes through the outbound queue (HTML
//! escaped, plain-text retry, 429s waited out, secrets scrubbed).

use std::path::Path;

use cross_agent_decisions::events::first_line;
use cross_agent_protocol::events::EngineEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::MAX_TEXT_CHARS;
use crate::queue::Outgoing;
use crate::text::escape_html;
use crate::{Bot, store};

/// An answer longer than this goes as a file (with its head as text).
const MAX_INLINE_ANSWER_CHARS: usize = 3 * MAX_TEXT_CHARS;
/// The head of a long answer, shown as the caption of its file.
const HEAD_CHARS: usize = 600;
/// A `Notification` repeated within this many ms is not sent again.
const REPEAT_MS: u64 = 60_000;

/// What the hooks told of one Claude session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookSession {
    pub session_id: String,
    #[serde(default)]
    pub cwd: String,
    /// `idle`, `working`, `waiting` (a `Notification`: a permission prompt or idle input).
    pub state: String,
    /// How the session started (`startup`, `resume`, `clear`, `compact`).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub last_prompt_head: Option<String>,
    #[serde(default)]
    pub last_answer_head: Option<String>,
    /// Tool calls that ran in the current (or last) turn.
    #[serde(default)]
    pub tools_this_turn: u32,
    #[serde(default)]
    pub last_tool: Option<String>,
    /// The last `Notification` sent, and when (ms), so a repeat is not sent again.
    #[serde(default)]
    pub last_notice: Option<String>,
    #[serde(default)]
    pub last_notice_ms: u64,
    /// A permission prompt (or an approval card of ours) waits for an answer.
    #[serde(default)]
    pub awaiting_approval: bool,
    pub updated_ms: u64,
}

/// Whether a `Notification` is Claude asking for a permission (`notification_type`
/// `permission_prompt`; older versions send only the message).
fn is_permission_notice(payload: &Value) -> bool {
    payload["notification_type"] == "permission_prompt"
        || payload["message"]
            .as_str()
            .is_some_and(|m| m.contains("needs your permission"))
}

/// Whether session `id` is held by a live Claude panel (a shim that posts its approvals as
/// cards of their own).
fn held_by_claude_panel(home: &Path, id: &str) -> bool {
    use cross_agent_transports::panel::registry;
    registry::scan(home).live.iter().any(|panel| {
        panel.registration.agent.to_string() == "claude"
            && panel
                .registration
                .sessions
                .iter()
                .any(|s| s.session_id.as_deref() == Some(id))
    })
}

/// Where the hook sessions are saved.
pub fn hook_sessions_path(home: &Path) -> std::path::PathBuf {
    store::dir(home).join("hook_sessions.json")
}

/// The sessions the hooks told of, as last saved.
pub fn read_hook_sessions(home: &Path) -> Vec<HookSession> {
    store::read_state(&hook_sessions_path(home)).unwrap_or_else(|error| {
        tracing::warn!(%error, "could not read the hook sessions");
        Vec::new()
    })
}

/// The hook sessions as `telegram status` shows them: how many, and which wait for an approval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookSummary {
    pub count: usize,
    pub awaiting_approval: Vec<String>,
}

pub fn hook_summary(home: &Path) -> HookSummary {
    let sessions = read_hook_sessions(home);
    HookSummary {
        count: sessions.len(),
        awaiting_approval: sessions
            .iter()
            .filter(|s| s.awaiting_approval)
            .map(|s| s.session_id.clone())
            .collect(),
    }
}

fn head(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// `proj (3856bb3e)`: the working folder's name and the session id's head.
fn where_label(cwd: &str, session: &str) -> String {
    let folder = Path::new(cwd)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| cwd.to_owned());
    let short: String = session.chars().take(8).collect();
    if folder.is_empty() {
        format!("({short})")
    } else {
        format!("{folder} ({short})")
    }
}

impl Bot {
    /// Keeps what a hook event tells of its session, and sends the notifications the table in
    /// this module's header lists.
    pub(crate) fn observe_hook(&self, event: &str, payload: &Value) {
        let field = |name: &str| payload.get(name).and_then(Value::as_str).unwrap_or("");
        let session_id = field("session_id").to_owned();
        if session_id.is_empty() {
            return;
        }
        let now = u64::try_from(crate::poller::now_ms()).unwrap_or(0);
        // One prompt, one message: a Claude panel's approval card already asks this one.
        let card_asks = event == "Notification"
            && is_permission_notice(payload)
            && held_by_claude_panel(self.home(), &session_id);
        let mut notice: Option<String> = None;
        let mut skipped = false;
        let mut answer: Option<String> = None;
        let save;
        let snapshot = {
            let mut sessions = self.hook_sessions().lock();
            let entry = sessions
                .entry(session_id.clone())
                .or_insert_with(|| HookSession {
                    session_id: session_id.clone(),
                    state: "idle".into(),
                    ..HookSession::default()
                });
            if !field("cwd").is_empty() {
                entry.cwd = field("cwd").to_owned();
            }
            entry.updated_ms = now;
            save = match event {
                "SessionStart" => {
                    entry.state = "idle".into();
                    entry.source = Some(field("source").to_owned()).filter(|s| !s.is_empty());
                    true
                }
                "UserPromptSubmit" => {
                    entry.state = "working".into();
                    entry.awaiting_approval = false;
                    entry.tools_this_turn = 0;
                    entry.last_prompt_head = Some(self.scrub(&head(field("prompt"), 200)));
                    true
                }
                "PreToolUse" => {
                    if field("tool_name") == "AskUserQuestion" {
                        entry.state = "waiting".into();
                        notice = Some(question_text(&payload["tool_input"]));
                    }
                    false
                }
                "PostToolUse" => {
                    entry.state = "working".into();
                    entry.tools_this_turn += 1;
                    entry.last_tool = Some(field("tool_name").to_owned());
                    // Saved when it ends a wait, so `telegram status` does not show it waiting.
                    std::mem::take(&mut entry.awaiting_approval)
                }
                "Notification" => {
                    let message = field("message").to_owned();
                    let repeat = entry.last_notice.as_deref() == Some(message.as_str())
                        && now.saturating_sub(entry.last_notice_ms) < REPEAT_MS;
                    entry.state = "waiting".into();
                    if is_permission_notice(payload) {
                        entry.awaiting_approval = true;
                    }
                    if card_asks {
                        skipped = true;
                    } else if !repeat && !message.is_empty() {
                        entry.last_notice = Some(message.clone());
                        entry.last_notice_ms = now;
                        notice = Some(format!("🔔 {message}"));
                    }
                    true
                }
                "Stop" | "SubagentStop" => {
                    if event == "Stop" {
                        entry.state = "idle".into();
                        entry.awaiting_approval = false;
                        let text = field("last_assistant_message");
                        entry.last_answer_head = Some(self.scrub(&head(text, 200)));
                        if !payload["stop_hook_active"].as_bool().unwrap_or(false) {
                            answer = Some(text.to_owned());
                        }
                    }
                    event == "Stop"
                }
                _ => false,
            };
            let label = where_label(&entry.cwd, &session_id);
            notice = notice.map(|text| format!("Claude · {label}\n{text}"));
            let finished = answer.map(|text| (format!("✅ Claude · {label} finished"), text));
            let all: Vec<HookSession> = if save {
                sessions.values().cloned().collect()
            } else {
                Vec::new()
            };
            (finished, all)
        };
        let (finished, all) = snapshot;
        if save {
            self.save_hook_sessions(all);
        }
        if skipped {
            self.record(
                cross_agent_decisions::Decision::new(
                    cross_agent_decisions::DecisionKind::new("telegram_notification"),
                    cross_agent_decisions::Outcome::new("skipped"),
                )
                .session(session_id.clone())
                .agent("claude")
                .reason("a Claude panel holds the session; its approval card asks this prompt"),
            );
        }
        if let Some(text) = notice {
            let what = if event == "Notification" {
                "notification"
            } else {
                "question"
            };
            self.notify_text(&text, what);
        }
        if let Some((title, text)) = finished {
            self.notify_answer(&title, &text, "turn_ended");
        }
    }

    fn save_hook_sessions(&self, mut all: Vec<HookSession>) {
        all.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
        match serde_json::to_vec_pretty(&all) {
            Ok(bytes) => {
                if let Err(error) = store::write_private(&hook_sessions_path(self.home()), &bytes) {
                    tracing::warn!(%error, "could not save the hook sessions");
                }
            }
            Err(error) => tracing::warn!(%error, "could not encode the hook sessions"),
        }
    }

    /// Marks hook session `id` as waiting for an approval of ours (or no longer), and saves.
    pub(crate) fn set_awaiting_approval(&self, id: &str, awaiting: bool) {
        let all = {
            let mut sessions = self.hook_sessions().lock();
            let Some(entry) = sessions.get_mut(id) else {
                return;
            };
            if entry.awaiting_approval == awaiting {
                return;
            }
            entry.awaiting_approval = awaiting;
            sessions.values().cloned().collect()
        };
        self.save_hook_sessions(all);
    }

    /// Sends `text` (plain) to every paired chat; nothing when no poller runs. The daemon's own
    /// notices (a budget reached) ask [`Bot::can_notify`] first.
    pub fn notify_text(&self, text: &str, what: &'static str) {
        let Some(queue) = self.queue() else {
            return;
        };
        for chat in self.paired_chats() {
            queue.text(chat, text, what);
        }
    }

    /// Whether a notice queued now reaches a chat: a poller runs and a chat is paired.
    pub fn can_notify(&self) -> bool {
        self.queue().is_some() && !self.paired_chats().is_empty()
    }

    /// `title` and `answer` to every paired chat: as text when it fits in three messages, else
    /// its head and the whole as `answer.md`.
    pub(crate) fn notify_answer(&self, title: &str, answer: &str, what: &'static str) {
        let Some(queue) = self.queue() else {
            return;
        };
        let chats = self.paired_chats();
        let answer = answer.trim();
        if answer.chars().count() <= MAX_INLINE_ANSWER_CHARS {
            let text = if answer.is_empty() {
                title.to_owned()
            } else {
                format!("{title}\n\n{answer}")
            };
            for chat in chats {
                queue.text(chat, &text, what);
            }
            return;
        }
        let caption = format!(
            "<b>{}</b>\n{}",
            escape_html(title),
            escape_html(&head(answer, HEAD_CHARS))
        );
        for chat in chats {
            queue.push_item(
                chat,
                Outgoing::Document {
                    file_name: "answer.md".into(),
                    bytes: answer.as_bytes().to_vec(),
                    caption: caption.clone(),
                    markup: None,
                },
                what,
            );
        }
    }

    /// A delivery of the hub ended failed: `⚠️` with who it was for and why.
    pub fn notify_delivery_failed(&self, delivery_id: &str, target: &str, reason: &str) {
        let short: String = delivery_id.chars().take(12).collect();
        self.notify_text(
            &format!("⚠️ Delivery {short} to {target} failed: {reason}"),
            "delivery_failed",
        );
    }

    /// Whether the hooks told of session `id` (then its `Stop` notifies its turns' ends).
    pub(crate) fn has_hook_session(&self, id: &str) -> bool {
        self.hook_sessions().lock().contains_key(id)
    }
}

/// `AskUserQuestion`'s questions and options as a person reads them.
fn question_text(input: &Value) -> String {
    let mut out = String::from("❓ Claude asks (answer in the editor):");
    for question in input["questions"].as_array().into_iter().flatten() {
        let text = question["question"].as_str().unwrap_or("");
        out.push_str(&format!("\n\n{text}"));
        for option in question["options"].as_array().into_iter().flatten() {
            let label = option["label"].as_str().unwrap_or("");
            match option["description"].as_str().filter(|d| !d.is_empty()) {
                Some(description) => out.push_str(&format!("\n• {label} — {description}")),
                None => out.push_str(&format!("\n• {label}")),
            }
        }
    }
    if input["questions"].as_array().is_none_or(|q| q.is_empty()) {
        out.push_str(&format!(
            "\n{}",
            serde_json::to_string_pretty(input).unwrap_or_default()
        ));
    }
    out
}

/// A failure that happened while no poller ran is still news this long after it: the moments
/// of a handover (the successor takes the token only once the replaced daemon lets go), not a
/// backlog of hours without a bot.
const BACKLOG_NEWS: std::time::Duration = std::time::Duration::from_secs(120);

/// Notifies every delivery that ends failed, until `stop`: the hub's typed events, through the
/// session host — this daemon's own and those a replaced daemon still draining forwards to it
/// (`forward_event`). `events` was subscribed when the bot's supervisor started, so what came
/// while it waited for the token is there first: a failure of the last [`BACKLOG_NEWS`] is
/// notified, an older one is not news. A subscriber that falls behind is told how many events
/// it missed; it says so in the log and the decisions, and goes on with the next.
pub(crate) async fn watch_failed_deliveries(
    bot: Bot,
    events: Option<tokio::sync::broadcast::Receiver<EngineEvent>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    use tokio::sync::broadcast::error::{RecvError, TryRecvError};

    let Some(mut events) = events else {
        tracing::debug!("no session host: failed deliveries are not notified");
        return;
    };
    let oldest_news = cross_agent_protocol::timestamp::UnixMillis::now().0
        - i64::try_from(BACKLOG_NEWS.as_millis()).unwrap_or(i64::MAX);
    loop {
        match events.try_recv() {
            Ok(EngineEvent::DeliveryFailed(record)) => {
                let finished = record
                    .finished_at
                    .as_deref()
                    .and_then(cross_agent_protocol::timestamp::UnixMillis::parse_rfc3339);
                if finished.is_some_and(|at| at.0 >= oldest_news) {
                    bot.notify_failure(&record);
                }
            }
            // Missed while nobody polled: older than any news.
            Ok(_) | Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Empty) => break,
            Err(TryRecvError::Closed) => return,
        }
    }
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = stop.changed() => return,
        };
        match event {
            Ok(EngineEvent::DeliveryFailed(record)) => bot.notify_failure(&record),
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "the bot fell behind the hub's events; some failed deliveries were not notified"
                );
                bot.record(
                    cross_agent_decisions::Decision::new(
                        cross_agent_decisions::DecisionKind::new("telegram_notification"),
                        cross_agent_decisions::Outcome::new("missed"),
                    )
                    .reason("the bot fell behind the hub's events")
                    .detail("what", "delivery_failed")
                    .detail("events_missed", missed),
                );
            }
            Err(RecvError::Closed) => return,
        }
    }
}

impl Bot {
    /// `⚠️ Delivery … to codex failed: reason` for a failed delivery's record.
    fn notify_failure(&self, record: &cross_agent_protocol::bridge::DeliveryRecord) {
        let reason = record
            .error
            .as_deref()
            .map_or_else(|| "no reason given".to_owned(), first_line);
        self.notify_delivery_failed(&record.delivery_id, record.target_agent.as_str(), &reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_question_shows_its_options() {
        let text = question_text(
            &json!({"questions": [{"question": "Which db?", "header": "DB",
            "multiSelect": false, "options": [{"label": "sqlite", "description": "local"},
            {"label": "pg", "description": ""}]}]}),
        );
        assert_eq!(
            text,
            "❓ Claude asks (answer in the editor):\n\nWhich db?\n• sqlite — local\n• pg"
        );
    }

    #[test]
    fn the_label_is_the_folder_and_the_session_head() {
        assert_eq!(
            where_label("/work/proj", "3856bb3e-0000"),
            "proj (3856bb3e)"
        );
    }
}
