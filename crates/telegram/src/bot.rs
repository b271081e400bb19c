//! [`Bot`]: what the daemon holds of its Telegram bot. It runs the poller ([`Bot::supervise`])
//! and answers hook calls ([`Bot::hook`]): a `PreToolUse` goes through the [`gate`](crate::gate);
//! an escalation is posted to every paired chat with Allow / Deny buttons showing what the call
//! would do (the full command, or the diff for a file tool) and waits for a tap, at most the
//! approval wait; the first tap wins and the messages are edited so they cannot be answered
//! again. No tap in time: `"ask"` (the editor's own prompt). Every verdict is a decision line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cross_agent_decisions::{Decision, DecisionKind, DecisionLog, Outcome};
use cross_agent_protocol::hook::{HookParams, HookResponse};
use cross_agent_protocol::settings as var;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::api::{HttpApi, MAX_TEXT_CHARS, ParseMode, TelegramApi};
use crate::deliver::send_text;
use crate::gate::{self, Gate, Verdict};
use crate::limit::{EditLimiter, edit_text};
use crate::text::escape_html;
use crate::{poller, store};

/// How long an escalated call waits for a tap by default.
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(120);

/// How often the daemon looks for a newly set-up token, or for a lock another poller let go.
const SUPERVISE_PAUSE: Duration = Duration::from_secs(1);

/// A tap: allowed or not, and by whom.
#[derive(Debug, Clone, Copy)]
pub struct Tap {
    pub allow: bool,
    pub user_id: i64,
}

struct Pending {
    answer: Option<oneshot::Sender<Tap>>,
    posted: Vec<(i64, i64)>,
    summary: String,
    /// The session that waits, for its card's "awaiting approval".
    session: String,
}

struct Inner {
    home: PathBuf,
    decisions: DecisionLog,
    approval_wait: Duration,
    /// The client, while this daemon's poller runs (without it nothing reaches the phone).
    api: Mutex<Option<HttpApi>>,
    pending: Mutex<HashMap<String, Pending>>,
    edits: EditLimiter,
    /// Session cards, prompts, files, topics and handoffs from the phone.
    desk: Arc<crate::sessions::Desk>,
}

/// The daemon's bot; cheap to clone.
#[derive(Clone)]
pub struct Bot {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Bot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bot")
            .field("home", &self.inner.home)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn hook_answer(decision: &str, reason: &str) -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }})
}

impl Bot {
    /// The bot of `home`, its approval wait read from `var` (`CROSS_AGENT_APPROVAL_WAIT`).
    pub fn new(home: &Path, var: impl Fn(&str) -> Option<String>) -> Bot {
        let approval_wait = var(var::APPROVAL_WAIT)
            .and_then(|v| v.trim().parse().ok())
            .map_or(DEFAULT_APPROVAL_WAIT, Duration::from_secs);
        let decisions = DecisionLog::new(home);
        Bot {
            inner: Arc::new(Inner {
                home: home.to_owned(),
                decisions: decisions.clone(),
                approval_wait,
                api: Mutex::new(None),
                pending: Mutex::new(HashMap::new()),
                edits: EditLimiter::default(),
                desk: Arc::new(crate::sessions::Desk::new(home, decisions)),
            }),
        }
    }

    fn record(&self, decision: Decision) {
        self.inner.decisions.record(decision);
    }

    /// Runs for the daemon's whole life: once a token is stored, takes that token's lock
    /// (waiting while another poller, maybe another daemon's, holds it) and polls until `stop`.
    pub async fn supervise(self, stop: watch::Receiver<bool>) {
        let home = self.inner.home.clone();
        let config = poller::PollerConfig::from_vars(|name| std::env::var(name).ok());
        let mut told_locked = false;
        loop {
            if *stop.borrow() {
                return;
            }
            if let Some(token) = store::read_token(&home).ok().flatten() {
                let held = {
                    let token = token.clone();
                    tokio::task::spawn_blocking(move || poller::lock_token(&token)).await
                };
                match held {
                    Ok(Ok(lock)) => match HttpApi::from_env(&token) {
                        Ok(api) => {
                            tracing::info!("telegram poller started");
                            *lock_api(&self.inner.api) = Some(api.clone());
                            poller::Poller::new(
                                api,
                                &home,
                                config.clone(),
                                self.inner.decisions.clone(),
                            )
                            .with_bot(self.clone())
                            .run(stop.clone())
                            .await;
                            lock_api(&self.inner.api).take();
                            drop(lock);
                            tracing::info!("telegram poller stopped");
                            return;
                        }
                        Err(error) => {
                            tracing::warn!(%error, "the stored telegram token is unusable")
                        }
                    },
                    Ok(Err(error)) => {
                        if !told_locked {
                            tracing::info!(%error, "another poller has this bot; waiting for it");
                            told_locked = true;
                        }
                    }
                    Err(error) => tracing::warn!(%error, "the telegram lock task failed"),
                }
            }
            let mut stop = stop.clone();
            tokio::select! {
                () = tokio::time::sleep(SUPERVISE_PAUSE) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Answers one hook call. Only `PreToolUse` is acted on; the others print nothing.
    pub async fn hook(&self, params: HookParams) -> HookResponse {
        if params.event != "PreToolUse" {
            return HookResponse { output: None };
        }
        let payload = &params.payload;
        let tool = payload["tool_name"].as_str().unwrap_or("").to_owned();
        let input = payload.get("tool_input").cloned().unwrap_or(Value::Null);
        let session = payload["session_id"].as_str().unwrap_or("").to_owned();
        let subject = gate::subject(&tool, &input);
        let verdict = match Gate::load(&self.inner.home) {
            Ok(gate) => gate.judge(&tool, &subject),
            Err(error) => {
                // A broken gate.toml must not let anything through unseen, nor block work: the
                // editor asks as it would without us.
                self.record(
                    Decision::new(DecisionKind::new("gate_verdict"), Outcome::new("ask"))
                        .session(session.clone())
                        .reason(error.to_string())
                        .detail("tool", tool.clone()),
                );
                return HookResponse {
                    output: Some(hook_answer("ask", &format!("cross-agent: {error}"))),
                };
            }
        };
        let base = |outcome: &'static str| {
            Decision::new(DecisionKind::new("gate_verdict"), Outcome::new(outcome))
                .session(session.clone())
                .agent("claude")
                .detail("tool", tool.clone())
        };
        match verdict {
            Verdict::Pass => {
                self.record(base("pass"));
                HookResponse { output: None }
            }
            Verdict::Allow { rule } => {
                self.record(base("allow").guard(rule.clone()));
                HookResponse {
                    output: Some(hook_answer(
                        "allow",
                        &format!("allowed by gate.toml rule {rule}"),
                    )),
                }
            }
            Verdict::Deny { rule } => {
                self.record(base("deny").guard(rule.clone()));
                HookResponse {
                    output: Some(hook_answer(
                        "deny",
                        &format!("denied by gate.toml rule {rule}"),
                    )),
                }
            }
            Verdict::Escalate { rule, danger } => {
                let mut decision = base("escalate");
                if let Some(rule) = &rule {
                    decision = decision.guard(rule.clone());
                }
                self.record(decision);
                if let Some(pattern) = &danger {
                    self.record(
                        Decision::new(DecisionKind::new("danger_match"), Outcome::new("escalate"))
                            .session(session.clone())
                            .agent("claude")
                            .guard(pattern.clone())
                            .detail("tool", tool.clone()),
                    );
                }
                let card = Card {
                    tool: &tool,
                    input: &input,
                    session: &session,
                    cwd: payload["cwd"].as_str().unwrap_or(""),
                    danger: danger.as_deref(),
                };
                let answer = self.escalate(&card).await;
                HookResponse {
                    output: Some(answer),
                }
            }
        }
    }

    async fn escalate(&self, card: &Card<'_>) -> Value {
        let api = lock_api(&self.inner.api).clone();
        let chats: Vec<i64> = store::read_access(&self.inner.home)
            .map(|access| {
                let mut chats: Vec<i64> = access.paired.iter().map(|p| p.chat_id).collect();
                chats.dedup();
                chats
            })
            .unwrap_or_default();
        let approval = |outcome: &'static str| {
            Decision::new(DecisionKind::new("approval"), Outcome::new(outcome))
                .session(card.session.to_owned())
                .agent("claude")
                .detail("tool", card.tool.to_owned())
        };
        let Some(api) = api.filter(|_| !chats.is_empty()) else {
            self.record(approval("ask").reason("no paired Telegram chat is being polled"));
            return hook_answer("ask", "cross-agent: no phone to ask; asking here");
        };
        let key = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let (answer_tx, answer_rx) = oneshot::channel();
        lock(&self.inner.pending).insert(
            key.clone(),
            Pending {
                answer: Some(answer_tx),
                posted: Vec::new(),
                summary: card.headline(),
                session: card.session.to_owned(),
            },
        );
        let markup = json!({"inline_keyboard": [[
            {"text": "✅ Allow", "callback_data": format!("a:{key}")},
            {"text": "❌ Deny", "callback_data": format!("d:{key}")},
        ]]});
        let started = Instant::now();
        for chat in &chats {
            let html = card.html();
            let html = if html.chars().count() > MAX_TEXT_CHARS {
                // Never approve blind: the whole of it goes first, in pieces, then the buttons.
                send_text(
                    &api,
                    &self.inner.decisions,
                    *chat,
                    &card.detail(),
                    ParseMode::Html,
                )
                .await;
                format!(
                    "{}\n(what it would do is above)",
                    escape_html(&card.headline())
                )
            } else {
                html
            };
            match api
                .send_message(*chat, &html, ParseMode::Html, Some(markup.clone()))
                .await
            {
                Ok(message) => {
                    self.record(
                        Decision::new(DecisionKind::new("telegram_delivery"), Outcome::new("sent"))
                            .detail("chat_id", *chat)
                            .detail("what", "approval"),
                    );
                    if let Some(pending) = lock(&self.inner.pending).get_mut(&key) {
                        pending.posted.push((*chat, message.message_id));
                    }
                }
                Err(error) => self.record(
                    Decision::new(
                        DecisionKind::new("telegram_delivery"),
                        Outcome::new("failed"),
                    )
                    .reason(error.to_string())
                    .detail("chat_id", *chat)
                    .detail("what", "approval"),
                ),
            }
        }
        let tapped = tokio::time::timeout(self.inner.approval_wait, answer_rx).await;
        let waited_ms = started.elapsed().as_millis() as u64;
        match tapped {
            Ok(Ok(tap)) => {
                let (outcome, word) = if tap.allow {
                    ("allowed", "allow")
                } else {
                    ("denied", "deny")
                };
                self.record(
                    approval(outcome)
                        .detail("user_id", tap.user_id)
                        .detail("waited_ms", waited_ms),
                );
                let verb = if tap.allow { "allowed" } else { "denied" };
                hook_answer(
                    word,
                    &format!("{verb} from Telegram by user {}", tap.user_id),
                )
            }
            _ => {
                let posted = lock(&self.inner.pending)
                    .remove(&key)
                    .map(|p| (p.posted, p.summary));
                if let Some((posted, summary)) = posted {
                    let text = format!(
                        "⌛ No answer in {} s; asked in the editor instead.\n{}",
                        self.inner.approval_wait.as_secs(),
                        escape_html(&summary)
                    );
                    for (chat, message) in posted {
                        edit_text(
                            &api,
                            &self.inner.edits,
                            &self.inner.decisions,
                            chat,
                            message,
                            &text,
                        )
                        .await;
                    }
                }
                self.record(
                    approval("ask")
                        .detail("waited_ms", waited_ms)
                        .reason("no tap in time"),
                );
                hook_answer("ask", "cross-agent: no answer from the phone in time")
            }
        }
    }

    /// A button tap from a paired user (the poller checked the allowlist): the first wins.
    /// Returns the text for `answerCallbackQuery`.
    pub(crate) async fn tap<A: TelegramApi>(
        &self,
        api: &A,
        data: &str,
        user_id: i64,
    ) -> &'static str {
        let (allow, key) = match data.split_once(':') {
            Some(("a", key)) => (true, key),
            Some(("d", key)) => (false, key),
            _ => return "Unknown button",
        };
        let Some(mut pending) = lock(&self.inner.pending).remove(key) else {
            return "Already answered";
        };
        if let Some(answer) = pending.answer.take() {
            let _ = answer.send(Tap { allow, user_id });
        }
        let verdict = if allow { "✅ Allowed" } else { "❌ Denied" };
        let text = format!(
            "{verdict} by user {user_id}\n{}",
            escape_html(&pending.summary)
        );
        for (chat, message) in pending.posted {
            edit_text(
                api,
                &self.inner.edits,
                &self.inner.decisions,
                chat,
                message,
                &text,
            )
            .await;
        }
        if allow { "Allowed" } else { "Denied" }
    }
}

impl Bot {
    /// What the bot asks about sessions (the daemon's hub); set once.
    pub fn set_session_host(&self, host: Arc<dyn crate::sessions::SessionHost>) {
        self.inner.desk.set_host(host);
    }

    /// The sessions with an approval waiting for a tap.
    fn awaiting_approval(&self) -> std::collections::HashSet<String> {
        lock(&self.inner.pending)
            .values()
            .map(|p| p.session.clone())
            .collect()
    }

    /// A message from a paired person that is not `/pair`.
    pub(crate) async fn on_message<A: TelegramApi + Clone + 'static>(
        &self,
        api: &A,
        message: crate::api::Message,
    ) {
        let awaiting = self.awaiting_approval();
        self.inner.desk.on_message(api, message, awaiting).await;
    }

    /// A tap on a session card's button (`s:…`) from a paired person.
    pub(crate) fn session_tap<A: TelegramApi + Clone + 'static>(
        &self,
        api: &A,
        query: &crate::api::CallbackQuery,
    ) -> &'static str {
        self.inner.desk.tap(api, query, self.awaiting_approval())
    }
}

fn lock_api(api: &Mutex<Option<HttpApi>>) -> MutexGuard<'_, Option<HttpApi>> {
    lock(api)
}

/// What an approval card shows.
struct Card<'a> {
    tool: &'a str,
    input: &'a Value,
    session: &'a str,
    cwd: &'a str,
    danger: Option<&'a str>,
}

impl Card<'_> {
    fn headline(&self) -> String {
        let session: String = self.session.chars().take(8).collect();
        let mut line = format!("Claude · {} in {} (session {session})", self.tool, self.cwd);
        if let Some(pattern) = self.danger {
            line.push_str(&format!(" — danger: {pattern}"));
        }
        line
    }

    /// The full command, or the diff the file tool would make.
    fn detail(&self) -> String {
        let field = |name: &str| self.input[name].as_str().unwrap_or("");
        let diff_lines = |prefix: char, text: &str| {
            text.lines()
                .map(|line| format!("{prefix}{line}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        match self.tool {
            "Bash" => field("command").to_owned(),
            "Write" => format!(
                "--- /dev/null\n+++ {}\n{}",
                field("file_path"),
                diff_lines('+', field("content"))
            ),
            "Edit" => format!(
                "--- {0}\n+++ {0}\n{1}\n{2}",
                field("file_path"),
                diff_lines('-', field("old_string")),
                diff_lines('+', field("new_string"))
            ),
            "MultiEdit" => {
                let mut out = format!("--- {0}\n+++ {0}", field("file_path"));
                for edit in self.input["edits"].as_array().into_iter().flatten() {
                    let old = edit["old_string"].as_str().unwrap_or("");
                    let new = edit["new_string"].as_str().unwrap_or("");
                    out.push_str(&format!(
                        "\n@@\n{}\n{}",
                        diff_lines('-', old),
                        diff_lines('+', new)
                    ));
                }
                out
            }
            _ => serde_json::to_string_pretty(self.input).unwrap_or_default(),
        }
    }

    fn html(&self) -> String {
        format!(
            "<b>Approve?</b> {}\n<pre>{}</pre>",
            escape_html(&self.headline()),
            escape_html(&self.detail())
        )
    }
}
