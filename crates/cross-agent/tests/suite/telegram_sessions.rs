//! Sessions from the phone, end to end: the built binary's daemon polls the fake Bot API
//! (testkit `telegram`), real Claude Code 2.1.332 and Codex 0.171.0 sessions answer through the
//! scripted model endpoint, and the test acts as the person on the phone: pair, `/sessions`,
//! reply to a card, tap Prompt, send a file, use a forum supergroup's topics, hand off.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cross_agent_testkit::ModelEndpoint;
use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, Codex, agent_binary};
use cross_agent_testkit::endpoint::{Reply, Rule, ToolCall};
use cross_agent_testkit::telegram::FakeBotApi;
use serde_json::{Value, json};

use super::telegram::{BIN, WAIT, bot, spawn_fed, wait_within};

/// A real turn through the hub (CLI start, model, transcript) takes seconds; this is a ceiling.
const TURN_WAIT: Duration = Duration::from_secs(180);
const PERSON: i64 = 5001;
const STRANGER: i64 = 666;

/// The variables a spawned CLI needs to reach the scripted endpoint, opted in by name exactly
/// as a user would with `CROSS_AGENT_CHILD_ENV`.
const CHILD_ENV: &str = "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,SCRIPTED_KEY,\
                         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,DISABLE_AUTOUPDATER,DISABLE_TELEMETRY";

struct Phone {
    _dir: tempfile::TempDir,
    state: PathBuf,
    agents: AgentHome,
    project: PathBuf,
    endpoint: ModelEndpoint,
    api: FakeBotApi,
    /// The chat the person is paired in.
    chat: i64,
    forum: bool,
    /// More variables for the daemon (its settings).
    extra_env: Vec<(&'static str, &'static str)>,
    daemon: Option<Child>,
}

impl Phone {
    /// A daemon with a bot set up, the person paired in `chat` (their private chat, or a forum
    /// supergroup).
    fn start(chat: i64, forum: bool) -> Phone {
        Phone::start_with(chat, forum, Vec::new())
    }

    fn start_with(chat: i64, forum: bool, extra_env: Vec<(&'static str, &'static str)>) -> Phone {
        let (token, api) = bot();
        let dir = tempfile::tempdir().unwrap();
        let agents = AgentHome::new().unwrap();
        let project = agents.project("proj").unwrap();
        let endpoint = ModelEndpoint::start().unwrap();
        // Writes CODEX_HOME/config.toml with the scripted provider.
        Codex::new(&agents, &endpoint.openai_base_url()).unwrap();
        let mut phone = Phone {
            state: dir.path().join("state"),
            _dir: dir,
            agents,
            project,
            endpoint,
            api,
            chat,
            forum,
            extra_env,
            daemon: None,
        };
        let mut setup = phone.command(&["telegram", "setup", "--json"]);
        setup.stdout(Stdio::piped()).stderr(Stdio::piped());
        let setup = spawn_fed(&mut setup, &format!("{token}\n"));
        assert!(setup.wait_with_output().unwrap().status.success());
        phone.daemon = Some(
            phone
                .command(&["daemon", "run"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let out = phone
            .command(&["telegram", "pair", "--json"])
            .output()
            .unwrap();
        let code: Value = serde_json::from_slice(&out.stdout).unwrap();
        phone.say(json!({"text": format!("/pair {}", code["code"].as_str().unwrap())}));
        assert!(
            wait_within(WAIT, || phone
                .decisions()
                .iter()
                .any(|d| d["kind"] == "telegram_pair" && d["outcome"] == "paired")),
            "paired"
        );
        phone
    }

    fn command(&self, args: &[&str]) -> Command {
        let bin = |kind| agent_binary(kind).unwrap().to_string_lossy().into_owned();
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("HOME", self.agents.path())
            .env("TMPDIR", self.agents.path().join("tmp"))
            .env("CODEX_HOME", self.agents.codex_home())
            .env("CROSS_AGENT_HOME", &self.state)
            .env("CROSS_AGENT_TELEGRAM_API", self.api.base_url())
            .env("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT", "1")
            .env("CROSS_AGENT_CLAUDE_BIN", bin(AgentKind::Claude))
            .env("CROSS_AGENT_CODEX_BIN", bin(AgentKind::Codex))
            .env("CROSS_AGENT_CHILD_ENV", CHILD_ENV)
            .env("CROSS_AGENT_HANDOFF_COMPACT_TIMEOUT", "30")
            .env("ANTHROPIC_BASE_URL", self.endpoint.anthropic_base_url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("SCRIPTED_KEY", "test-key")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CROSS_AGENT_DAEMON_BIN");
        for (name, value) in &self.extra_env {
            command.env(name, value);
        }
        command
    }

    fn claude(&self) -> Claude {
        Claude::new(&self.agents, &self.endpoint.anthropic_base_url()).unwrap()
    }

    /// A real Claude session in the project, made by a plain `claude -p` turn.
    fn claude_session(&self, prompt: &str) -> String {
        self.endpoint.push(
            Rule::on_user_text(prompt)
                .reply_text("seeded claude answer")
                .once(),
        );
        let run = self.claude().turn(&self.project, prompt).run().unwrap();
        run.expect_success()
            .unwrap()
            .session_id()
            .unwrap()
            .to_owned()
    }

    /// A real Codex thread in the project, made by a plain `codex exec` turn.
    fn codex_session(&self, prompt: &str) -> String {
        self.endpoint.push(
            Rule::on_user_text(prompt)
                .reply_text("seeded codex answer")
                .once(),
        );
        let codex = Codex::new(&self.agents, &self.endpoint.openai_base_url()).unwrap();
        let run = codex.turn(&self.project, prompt).run().unwrap();
        run.expect_success()
            .unwrap()
            .thread_id()
            .unwrap()
            .to_owned()
    }

    /// The person sends a message with `fields` in their chat.
    fn say(&self, fields: Value) {
        self.api
            .push_message_with(PERSON, self.chat, self.forum, fields);
    }

    /// What the bot's messages look like from the chat, for a tap or a reply on one.
    fn message_ref(&self, message_id: i64, thread: Option<i64>) -> Value {
        let kind = if self.forum { "supergroup" } else { "private" };
        let mut message = json!({"message_id": message_id, "date": 1_760_000_000,
            "chat": {"id": self.chat, "type": kind, "is_forum": self.forum}});
        if let Some(thread) = thread {
            message["message_thread_id"] = json!(thread);
        }
        message
    }

    fn tap(&self, user: i64, card: &Card, button: usize) {
        let message = self.message_ref(card.message_id, card.thread);
        self.api
            .push_callback_on(user, message, &card.buttons[button]);
    }

    fn decisions(&self) -> Vec<Value> {
        std::fs::read_to_string(self.state.join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// The first message the bot sent after the first `skip` whose text contains `needle`.
    fn wait_sent(&self, skip: usize, needle: &str, limit: Duration) -> (i64, Value) {
        let mut found = None;
        wait_within(limit, || {
            found = self
                .api
                .sent()
                .into_iter()
                .skip(skip)
                .find(|(_, body)| body["text"].as_str().is_some_and(|t| t.contains(needle)));
            found.is_some()
        });
        found.unwrap_or_else(|| {
            panic!(
                "no message containing {needle:?}; the chat: {:#?}",
                self.api
                    .sent()
                    .iter()
                    .map(|(_, b)| b["text"].clone())
                    .collect::<Vec<_>>()
            )
        })
    }

    /// The card the bot posted (after the first `skip` messages) for `session_id`.
    fn card(&self, skip: usize, session_id: &str) -> Card {
        let (message_id, body) = self.wait_sent(skip, session_id, WAIT);
        let buttons: Vec<String> = body["reply_markup"]["inline_keyboard"][0]
            .as_array()
            .unwrap_or_else(|| panic!("the card has buttons: {body:#}"))
            .iter()
            .map(|b| b["callback_data"].as_str().unwrap().to_owned())
            .collect();
        Card {
            message_id,
            thread: body["message_thread_id"].as_i64(),
            text: body["text"].as_str().unwrap().to_owned(),
            buttons,
            labels: body["reply_markup"]["inline_keyboard"][0]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["text"].as_str().unwrap().to_owned())
                .collect(),
        }
    }

    /// The turn prompts the model received that contain `needle`.
    fn prompts_with(&self, needle: &str) -> Vec<String> {
        self.endpoint
            .model_requests()
            .into_iter()
            .filter_map(|r| r.last_user_prompt)
            .filter(|p| p.contains(needle))
            .collect()
    }

    /// The person sends `/sessions`; returns how many messages the chat held before it, where
    /// the cards (and what follows them) start for `card` and `wait_sent`.
    fn list_sessions(&self) -> usize {
        let before = self.api.sent().len();
        self.say(json!({"text": "/sessions"}));
        before
    }

    /// The model answers the turn whose prompt holds `prompt` once, echoing `answer` (and the
    /// request id, which the chat must not show).
    fn answer_once(&self, prompt: &str, answer: &str) {
        self.endpoint.push(
            Rule::on_user_text(prompt)
                .reply(Reply::echo_token(answer))
                .once(),
        );
    }

    /// The model answers the turn whose prompt holds `prompt` by `cat`-ing the inbox files
    /// matching `glob`, and once the tool's output shows `seen`, with `answer`: the session
    /// really read what the phone sent.
    fn cat_from_inbox_then_answer(&self, prompt: &str, glob: &str, seen: &str, answer: &str) {
        self.endpoint.push(
            Rule::on_user_text(prompt)
                .tool_call(ToolCall::new(
                    "Bash",
                    json!({"command": format!("cat .cross-agent/inbox/{glob}"),
                           "description": "read"}),
                ))
                .once(),
        );
        self.endpoint.push(
            Rule::on_tool_result(seen)
                .reply(Reply::echo_token(answer))
                .once(),
        );
    }

    /// The person sends a message with `fields` as a reply to `card` (a private chat's reply
    /// names no topic).
    fn reply_to(&self, card: &Card, mut fields: Value) {
        fields["reply_to_message"] = self.message_ref(card.message_id, None);
        self.say(fields);
    }

    /// The project's settings let Claude run `cat` unasked, so a session can read what the
    /// phone sent without an approval in the way.
    fn allow_cat_in_project(&self) {
        std::fs::create_dir_all(self.project.join(".claude")).unwrap();
        std::fs::write(
            self.project.join(".claude/settings.json"),
            json!({"permissions": {"allow": ["Bash(cat:*)"]}}).to_string(),
        )
        .unwrap();
    }

    /// The one file of the session's inbox whose name ends in `suffix`: it holds `content`
    /// and only its owner may read it.
    fn saved_in_inbox(&self, suffix: &str, content: &[u8]) -> PathBuf {
        let saved: Vec<PathBuf> = std::fs::read_dir(self.inbox())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .collect();
        assert_eq!(saved.len(), 1, "{saved:?}");
        assert_eq!(std::fs::read(&saved[0]).unwrap(), content);
        assert_owner_only(&saved[0]);
        saved[0].clone()
    }

    fn inbox(&self) -> PathBuf {
        self.project.join(".cross-agent/inbox")
    }

    /// The saved file reached the session: the turn's prompt (the one holding `prompt`) names
    /// it, and its `telegram_file` line says where it was saved.
    fn assert_prompt_names_saved(&self, prompt: &str, saved: &Path) {
        let path = saved.display().to_string();
        let prompts = self.prompts_with(prompt);
        assert!(
            prompts.iter().any(|p| p.contains(&path)),
            "the prompt names the saved file: {prompts:#?}"
        );
        assert!(
            self.decided("telegram_file", "saved")
                .iter()
                .any(|d| d["details"]["path"] == path)
        );
    }

    /// A file over the 20 MB cap, sent as a reply to `card` with the fields `message` makes of
    /// its file id: refused with the cap stated, never downloaded.
    fn assert_over_the_cap_is_refused_unread(
        &self,
        card: &Card,
        message: impl FnOnce(String) -> Value,
    ) {
        let before = self.api.sent().len();
        let downloads = self.api.downloads().len();
        let big = self.api.add_file(b"not really big");
        self.reply_to(card, message(big));
        let (_, refused) = self.wait_sent(before, "Not saved", WAIT);
        assert!(text(&refused).contains("up to 20 MB"), "{refused:#}");
        assert_eq!(self.api.downloads().len(), downloads);
    }

    /// `cross-agent hook <event>` with `payload` on its stdin (closed after it), as Claude Code
    /// runs it.
    fn run_hook(&self, event: &str, payload: &Value, stdout: Stdio) -> Child {
        let mut hook = self.command(&["hook", event]);
        hook.stdout(stdout).stderr(Stdio::null());
        spawn_fed(&mut hook, &payload.to_string())
    }

    /// The decision lines of `kind` with `outcome`.
    fn decided(&self, kind: &str, outcome: &str) -> Vec<Value> {
        self.decisions()
            .into_iter()
            .filter(|d| d["kind"] == kind && d["outcome"] == outcome)
            .collect()
    }
}

impl Drop for Phone {
    fn drop(&mut self) {
        // Whether or not the test still holds the daemon it started: after a reload it has
        // taken that one (long gone) and the home's daemon is the detached successor, which
        // this `stop` reaches through the socket.
        let _ = self.command(&["daemon", "stop"]).output();
        if let Some(mut child) = self.daemon.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // Any daemon of this home still alive (a restart's successor, one a hook autostarted)
        // ends here, before the temporary home is deleted under it.
        cross_agent_testkit::leaks::stop_daemons(&self.state, cross_agent_testkit::leaks::SETTLE);
    }
}

struct Card {
    message_id: i64,
    thread: Option<i64>,
    text: String,
    /// callback_data of Prompt, Status, Focus, Hand off.
    buttons: Vec<String>,
    labels: Vec<String>,
}

impl Card {
    /// The card's text holds `needle` (the whole text is shown if not).
    fn assert_shows(&self, needle: &str) {
        assert!(self.text.contains(needle), "{}", self.text);
    }
}

/// The text of a message the bot sent.
fn text(body: &Value) -> &str {
    body["text"].as_str().unwrap()
}

fn assert_owner_only(path: &Path) {
    assert_eq!(
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777,
        0o600,
        "{}",
        path.display()
    );
}

/// A real Claude and a real Codex session listed by `/sessions`; each prompted from the phone
/// (a reply to the Claude card, a tap on the Codex card's Prompt then a plain message), each
/// answer back in the chat; a stranger's tap does nothing; Hand off lists the destinations as
/// buttons and reports the handoff it ran.
#[test]
fn sessions_are_listed_prompted_from_the_phone_answered_in_the_chat_and_handed_off() {
    let phone = Phone::start(PERSON, false);
    let claude_id = phone.claude_session("seed the claude session");
    let thread = phone.codex_session("seed the codex session");

    let before = phone.list_sessions();
    let claude_card = phone.card(before, &claude_id);
    let codex_card = phone.card(before, &thread);
    assert!(
        claude_card.text.starts_with("<b>claude · "),
        "{}",
        claude_card.text
    );
    assert!(
        codex_card.text.starts_with("<b>codex · "),
        "{}",
        codex_card.text
    );
    for card in [&claude_card, &codex_card] {
        card.assert_shows("💤 idle");
        card.assert_shows(&phone.project.display().to_string());
        assert_eq!(
            card.labels,
            [
                "✍️ Prompt",
                "ℹ️ Status",
                "🎯 Focus",
                "🤝 Hand off",
                "🔍 Review"
            ]
        );
        assert!(card.buttons.iter().all(|d| d.len() <= 64));
    }
    claude_card.assert_shows("💬 seeded claude answer");
    codex_card.assert_shows("💬 seeded codex answer");

    // A stranger in the person's chat taps Focus: refused, logged, nothing said.
    let before = phone.api.sent().len();
    phone.tap(STRANGER, &claude_card, 2);
    assert!(wait_within(WAIT, || phone.decisions().iter().any(
        |d| d["kind"] == "telegram_refused"
            && d["details"]["user_id"] == STRANGER
            && d["details"]["update"] == "callback_query"
    )));
    assert!(wait_within(WAIT, || phone.api.all_confirmed()));

    // A reply to the Claude card is a prompt to that session; the answer comes back.
    phone.answer_once("phone prompt for claude", "claude heard the phone");
    phone.reply_to(&claude_card, json!({"text": "phone prompt for claude"}));
    let (_, receipt) = phone.wait_sent(before, "📨 Sent to", WAIT);
    assert!(
        text(&receipt).contains("by resuming it headless"),
        "{receipt:#}"
    );
    phone.wait_sent(before, "claude heard the phone", TURN_WAIT);
    assert!(
        !phone.api.sent()[before..]
            .iter()
            .any(|(_, b)| b["text"].as_str().is_some_and(|t| t.contains("🎯"))),
        "the stranger's Focus did nothing"
    );
    let prompts = phone.prompts_with("phone prompt for claude");
    assert_eq!(prompts.len(), 1, "{prompts:#?}");
    assert!(
        prompts[0].contains("from: the human user, on their phone"),
        "{}",
        prompts[0]
    );

    // Prompt on the Codex card, then a plain message: it goes to Codex.
    let before = phone.api.sent().len();
    phone.answer_once("phone prompt for codex", "codex heard the phone");
    phone.tap(PERSON, &codex_card, 0);
    phone.wait_sent(before, "Your next message here goes to", WAIT);
    phone.say(json!({"text": "phone prompt for codex"}));
    let (_, answer) = phone.wait_sent(before, "codex heard the phone", TURN_WAIT);
    assert!(text(&answer).starts_with("💬 codex · "), "{answer:#}");
    assert!(
        !text(&answer).contains("req_"),
        "the closing request id is not shown: {answer:#}"
    );

    let decisions = phone.decided("telegram_prompt", "sent");
    for (agent, session) in [("claude", &claude_id), ("codex", &thread)] {
        assert!(
            decisions
                .iter()
                .any(|d| d["agent"] == agent && d["session"] == session.as_str()),
            "{agent}: {decisions:#?}"
        );
    }

    // Hand off: the destinations as buttons (the Codex thread among them), then the handoff,
    // run off the bot's loop, reported in the chat and logged.
    let before = phone.api.sent().len();
    phone.tap(PERSON, &claude_card, 3);
    let (_, offer) = phone.wait_sent(before, "🤝 Hand", WAIT);
    let rows = offer["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .clone();
    let to_codex = rows
        .iter()
        .map(|row| &row[0])
        .find(|b| b["text"].as_str().is_some_and(|t| t.starts_with("codex")))
        .unwrap_or_else(|| panic!("the Codex thread is offered: {offer:#}"))
        .clone();
    phone
        .endpoint
        .set_fallback(Reply::echo_token("took it over"));
    phone.api.push_callback_on(
        PERSON,
        phone.message_ref(1, None),
        to_codex["callback_data"].as_str().unwrap(),
    );
    phone.wait_sent(before, "⏳ Handing", WAIT);
    let (_, done) = phone.wait_sent(before, "Handed", TURN_WAIT);
    assert!(text(&done).contains("HANDOFF.md"), "{done:#}");
    assert!(phone.project.join("HANDOFF.md").exists());
    assert!(wait_within(WAIT, || phone
        .decided("telegram_handoff", "done")
        .iter()
        .any(
            |d| d["details"]["destination"] == format!("chat:{thread}")
        )));
}

/// A document sent as a reply to a card is saved owner-only in the session's git-ignored
/// inbox, the prompt names it, and the real Claude session reads it (`cat`, allowed by the
/// project's settings) and answers with what it holds. A file over the cap is refused unread.
#[test]
fn a_file_from_the_phone_lands_in_the_session_inbox_and_the_session_reads_it() {
    let phone = Phone::start(PERSON, false);
    phone.allow_cat_in_project();
    let claude_id = phone.claude_session("seed the claude session for a file");
    let before = phone.list_sessions();
    let card = phone.card(before, &claude_id);

    let content = b"PHONE-FILE-CONTENT-42\n";
    let file_id = phone.api.add_file(content);
    phone.cat_from_inbox_then_answer(
        "read the notes I sent",
        "*-notes.txt",
        "PHONE-FILE-CONTENT-42",
        "the notes say PHONE-FILE-CONTENT-42",
    );
    phone.reply_to(
        &card,
        json!({"caption": "read the notes I sent",
            "document": {"file_id": file_id, "file_unique_id": "u1", "file_name": "notes.txt",
                         "file_size": content.len()}}),
    );
    phone.wait_sent(before, "the notes say PHONE-FILE-CONTENT-42", TURN_WAIT);

    let saved = phone.saved_in_inbox("-notes.txt", content);
    assert!(
        std::fs::read_to_string(phone.inbox().join(".gitignore"))
            .unwrap()
            .lines()
            .any(|l| l == "*")
    );
    phone.assert_prompt_names_saved("read the notes I sent", &saved);

    phone.assert_over_the_cap_is_refused_unread(&card, |big| {
        json!({"document": {"file_id": big, "file_unique_id": "u2", "file_name": "big.bin",
                            "file_size": 25 * 1024 * 1024}})
    });
    assert!(!phone.decided("telegram_file", "refused").is_empty());
}

/// In a forum supergroup each session gets one topic, created on its first activity and
/// reused after (also across the mapping file); text in the topic prompts that session and the
/// answer comes back into the topic.
#[test]
fn a_forum_supergroup_gets_one_topic_per_session_and_the_topic_is_the_session() {
    let phone = Phone::start(-100_123_456, true);
    let claude_id = phone.claude_session("seed the claude session for topics");

    let before = phone.list_sessions();
    let card = phone.card(before, &claude_id);
    let created = phone.api.calls_to("createForumTopic");
    assert_eq!(created.len(), 1, "{created:#?}");
    assert!(
        created[0].body["name"]
            .as_str()
            .unwrap()
            .starts_with("claude · "),
        "{created:#?}"
    );
    let thread = card
        .thread
        .expect("the card is posted in the session's topic");

    let before = phone.list_sessions();
    let again = phone.card(before, &claude_id);
    assert_eq!(again.thread, Some(thread));
    assert_eq!(
        phone.api.calls_to("createForumTopic").len(),
        1,
        "one topic per session"
    );
    assert_owner_only(&phone.state.join("telegram/topics.json"));

    phone.answer_once("topic prompt for claude", "claude answered in its topic");
    phone.say(json!({"text": "topic prompt for claude", "message_thread_id": thread}));
    let (_, answer) = phone.wait_sent(before, "claude answered in its topic", TURN_WAIT);
    assert_eq!(answer["message_thread_id"], thread, "{answer:#}");
    assert_eq!(phone.api.calls_to("createForumTopic").len(), 1);
    let topics: Vec<Value> = phone
        .decisions()
        .into_iter()
        .filter(|d| d["kind"] == "telegram_topic")
        .collect();
    assert_eq!(topics.len(), 1, "{topics:#?}");
    assert_eq!(topics[0]["outcome"], "created");

    // An approval waiting for this session shows on its card (Status: the card as it is now).
    let payload = json!({"session_id": claude_id, "transcript_path": "/tmp/t.jsonl",
        "cwd": phone.project, "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "rm -rf ./build", "description": "x"},
        "tool_use_id": "toolu_1"});
    let hook = phone.run_hook("PreToolUse", &payload, Stdio::piped());
    let (_, approval) = phone.wait_sent(before, "Approve?", WAIT);
    let before = phone.api.sent().len();
    phone.tap(PERSON, &again, 1);
    let status = phone.card(before, &claude_id);
    status.assert_shows("⏳ awaiting approval");
    assert_eq!(status.thread, Some(thread));
    let deny = approval["reply_markup"]["inline_keyboard"][0][1]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    phone
        .api
        .push_callback_on(PERSON, phone.message_ref(1, None), &deny);
    let out = hook.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"deny\""));
}

/// A session a panel shim hosts (real Claude Code behind `cross-agent shim claude`, the test
/// playing the editor extension): a prompt from the phone goes into that panel, not a headless
/// resume, and the panel's answer comes back to the chat.
#[test]
fn a_prompt_to_a_session_held_by_a_panel_goes_into_the_panel_and_its_answer_to_the_chat() {
    use cross_agent_testkit::panel::{
        CLAUDE_SDK_ARGS, PanelDriver, claude_initialize, claude_user,
    };

    let phone = Phone::start(PERSON, false);
    let claude = phone.claude();
    let mut command = Command::new("sh");
    // `; exit` keeps sh as the shim's parent, as an extension host is.
    command
        .arg("-c")
        .arg("\"$@\"; exit $?")
        .arg("window")
        .arg(BIN)
        .arg("shim")
        .arg("claude")
        .arg(claude.binary())
        .args(CLAUDE_SDK_ARGS)
        .current_dir(&phone.project)
        .env_clear()
        .envs(claude.env())
        .env("CROSS_AGENT_HOME", &phone.state);
    let mut panel = PanelDriver::start(command).unwrap();
    panel.send(&claude_initialize("init-1")).unwrap();
    panel
        .next_line(TURN_WAIT, |l| l["type"] == "control_response")
        .unwrap();
    phone.endpoint.push(
        Rule::on_user_text("typed in the panel")
            .reply_text("panel reply")
            .once(),
    );
    panel.send(&claude_user("typed in the panel")).unwrap();
    let result = panel
        .next_line(TURN_WAIT, |l| l["type"] == "result")
        .unwrap();
    let session = result["session_id"].as_str().unwrap().to_owned();

    let before = phone.list_sessions();
    let card = phone.card(before, &session);
    phone.answer_once(
        "phone prompt into the panel",
        "the panel answered the phone",
    );
    phone.reply_to(&card, json!({"text": "phone prompt into the panel"}));
    let (_, receipt) = phone.wait_sent(before, "📨 Sent to", WAIT);
    assert!(text(&receipt).contains("into its panel"), "{receipt:#}");
    phone.wait_sent(before, "the panel answered the phone", TURN_WAIT);
    // The panel itself ran the turn: the editor saw the prompt arrive and the answer.
    panel
        .next_line(TURN_WAIT, |l| {
            l["type"] == "result"
                && l["result"]
                    .as_str()
                    .is_some_and(|r| r.contains("the panel answered the phone"))
        })
        .unwrap();
    assert!(
        phone
            .decided("telegram_prompt", "sent")
            .iter()
            .any(|d| d["details"]["transport"] == "panel")
    );
    panel.close_stdin();
    let _ = panel.wait(Duration::from_secs(120));
}

/// A prompt the hub refuses (here: headless resumes are off and no panel holds the session)
/// is not sent, the chat is told why, and the refusal is a decision line.
#[test]
fn a_prompt_the_hub_refuses_is_reported_in_the_chat_and_logged() {
    let phone = Phone::start_with(PERSON, false, vec![("CROSS_AGENT_DISABLE_HEADLESS", "1")]);
    let claude_id = phone.claude_session("seed the claude session for a refusal");
    let before = phone.list_sessions();
    let card = phone.card(before, &claude_id);
    phone.tap(PERSON, &card, 2);
    phone.wait_sent(before, "Plain messages in this chat now go to", WAIT);
    phone.say(json!({"text": "a prompt nobody may resume"}));
    let (_, refused) = phone.wait_sent(before, "❌ Not sent to", WAIT);
    assert!(
        text(&refused).contains("CROSS_AGENT_DISABLE_HEADLESS"),
        "{refused:#}"
    );
    assert!(phone.prompts_with("a prompt nobody may resume").is_empty());
    assert!(
        phone
            .decided("telegram_prompt", "refused")
            .iter()
            .any(|d| d["session"] == claude_id.as_str())
    );
}

/// A photo from the phone is saved at its largest size (only that one downloaded), owner-only
/// in the session's inbox, and the session reads it from there — the document path's twin.
#[test]
fn a_photo_from_the_phone_is_saved_at_its_largest_size_and_the_session_reads_it() {
    let phone = Phone::start(PERSON, false);
    phone.allow_cat_in_project();
    let claude_id = phone.claude_session("seed the claude session for a photo");
    let before = phone.list_sessions();
    let card = phone.card(before, &claude_id);

    // Three sizes, as Telegram makes them (smallest first); the bytes say which one it is.
    let thumb = phone.api.add_file(b"PHOTO-SIZE-THUMB\n");
    let large = phone.api.add_file(b"PHOTO-SIZE-LARGEST-77\n");
    let medium = phone.api.add_file(b"PHOTO-SIZE-MEDIUM\n");
    phone.cat_from_inbox_then_answer(
        "what does the photo show",
        "*-photo.jpg",
        "PHOTO-SIZE-LARGEST-77",
        "the photo shows PHOTO-SIZE-LARGEST-77",
    );
    let downloads = phone.api.downloads().len();
    phone.reply_to(&card, json!({"caption": "what does the photo show",
        "photo": [
            {"file_id": thumb, "file_unique_id": "p1", "width": 90, "height": 60, "file_size": 17},
            {"file_id": large, "file_unique_id": "p3", "width": 1280, "height": 853, "file_size": 22},
            {"file_id": medium, "file_unique_id": "p2", "width": 320, "height": 213, "file_size": 18}
        ]}));
    phone.wait_sent(before, "the photo shows PHOTO-SIZE-LARGEST-77", TURN_WAIT);

    let saved = phone.saved_in_inbox("-photo.jpg", b"PHOTO-SIZE-LARGEST-77\n");
    assert_eq!(
        phone.api.downloads().len(),
        downloads + 1,
        "only the largest size is downloaded"
    );
    phone.assert_prompt_names_saved("what does the photo show", &saved);

    phone.assert_over_the_cap_is_refused_unread(&card, |big| {
        json!({"photo": [{"file_id": big, "file_unique_id": "p4", "width": 9000,
                          "height": 9000, "file_size": 25 * 1024 * 1024}]})
    });
}

/// A prompt from the phone whose turn is still running when the daemon is replaced
/// (`cross-agent reload`): the successor, which now polls the bot, relays the answer to the
/// chat, exactly once. What the chat set up before the reload holds after it: a pending Prompt
/// (the next message), Focus (the messages after), replies to an old card, and its buttons.
#[test]
fn a_phone_prompt_survives_a_daemon_reload_and_its_answer_is_relayed_once() {
    let mut phone = Phone::start(PERSON, false);
    let first = phone.claude_session("seed the first session for a reload");
    let second = phone.claude_session("seed the second session for a reload");
    let before = phone.list_sessions();
    let card_one = phone.card(before, &first);
    let card_two = phone.card(before, &second);
    phone.tap(PERSON, &card_two, 2);
    phone.wait_sent(before, "Plain messages in this chat now go to", WAIT);

    // The answer is held back until the reload is under way.
    let release = phone.state.with_file_name("release-the-answer");
    phone.endpoint.push(
        Rule::on_user_text("answer me across the reload")
            .reply(Reply::echo_token("RELOAD-SURVIVED-ANSWER").after_file(&release))
            .once(),
    );
    phone.reply_to(&card_one, json!({"text": "answer me across the reload"}));
    let (_, receipt) = phone.wait_sent(before, "📨 Sent to", WAIT);
    let receipt = text(&receipt).to_owned();
    // Prompt on the first card: the chat's next message goes there, even after the reload.
    let tapped = phone.api.sent().len();
    phone.tap(PERSON, &card_one, 0);
    phone.wait_sent(tapped, "Your next message here goes to", WAIT);
    let desk_path = phone.state.join("telegram/desk.json");
    let desk: Value = serde_json::from_slice(&std::fs::read(&desk_path).unwrap()).unwrap();
    let relay = &desk["relays"][0];
    assert!(
        receipt.contains(relay["delivery_id"].as_str().unwrap()),
        "{desk:#}"
    );
    assert_eq!(relay["relayed_at_ms"], Value::Null);
    assert_owner_only(&desk_path);

    let reloaded = phone.command(&["reload"]).output().unwrap();
    assert!(reloaded.status.success(), "{reloaded:?}");
    // The successor polls the bot (the old daemon let go of it) and waits for the answer
    // again; only then does the model answer, while the old daemon still carries the turn.
    assert!(
        wait_within(WAIT, || !phone
            .decided("telegram_prompt", "rearmed")
            .is_empty()),
        "the successor re-armed the wait"
    );
    std::fs::write(&release, b"go").unwrap();
    phone.wait_sent(before, "RELOAD-SURVIVED-ANSWER", TURN_WAIT);
    // The daemon that carried the turn has exited: nothing more can come from it.
    let mut old = phone.daemon.take().unwrap();
    let exited = old.wait().unwrap();
    assert!(exited.success(), "{exited:?}");
    let answers = phone
        .api
        .sent()
        .iter()
        .filter(|(_, b)| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.contains("RELOAD-SURVIVED-ANSWER"))
        })
        .count();
    assert_eq!(answers, 1, "the answer is posted once");
    let desk: Value = serde_json::from_slice(&std::fs::read(&desk_path).unwrap()).unwrap();
    assert!(desk["relays"][0]["relayed_at_ms"].is_i64(), "{desk:#}");

    // Each of these is a real turn; the session it went to is on its `telegram_prompt` line.
    let prompt_to = |text: &str, answer: &str, fields: Value| -> String {
        let before = phone.api.sent().len();
        let sent_before = phone.decided("telegram_prompt", "sent").len();
        phone.answer_once(text, answer);
        let mut message = json!({"text": text});
        if let Some(reply) = fields.get("reply_to_message") {
            message["reply_to_message"] = reply.clone();
        }
        phone.say(message);
        phone.wait_sent(before, answer, TURN_WAIT);
        phone.decided("telegram_prompt", "sent")[sent_before]["session"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // The pending Prompt: the first card's session, once.
    assert_eq!(
        prompt_to("the prompt I tapped for", "PROMPT-KEPT", json!({})),
        first
    );
    // Then Focus: the second card's session.
    assert_eq!(
        prompt_to("plain after the reload", "FOCUS-KEPT", json!({})),
        second
    );
    // A reply to the first card goes to it, not to the focused session.
    let reply = json!({"reply_to_message": phone.message_ref(card_one.message_id, None)});
    assert_eq!(
        prompt_to("a reply to the old card", "CARD-KEPT", reply),
        first
    );
    // A button of a card posted before the reload still answers.
    let before = phone.api.sent().len();
    phone.tap(PERSON, &card_one, 1);
    let status = phone.card(before, &first);
    status.assert_shows("CARD-KEPT");

    // `daemon stop` after a reload reaches the successor: no daemon of the home is left to
    // outlive it (this test used to leave the detached successor running, orphaned).
    let stopped = phone.command(&["daemon", "stop"]).output().unwrap();
    assert!(stopped.status.success(), "{stopped:?}");
    cross_agent_testkit::leaks::assert_none_left(&phone.state, cross_agent_testkit::leaks::SETTLE)
        .unwrap();
}

/// The receipt and the answer of a phone prompt go through the same per-chat queue as the
/// notifications: a notification held by a 429 goes first and the receipt and the answer wait
/// their turn behind it (`telegram status` shows that 429); the answer, refused by a parse
/// error, goes again as plain text.
#[test]
fn a_phone_answer_waits_behind_a_rate_limited_notification_and_a_parse_error_goes_again_plain() {
    let phone = Phone::start(PERSON, false);
    let claude_id = phone.claude_session("seed the claude session for the queue");
    let before = phone.list_sessions();
    let card = phone.card(before, &claude_id);

    // A hook's notification meets a 429 that holds the chat for 5 s.
    phone.api.fail_next(
        "sendMessage",
        cross_agent_testkit::telegram::Failure::too_many(5),
    );
    let notification = json!({"session_id": "99999999-0000-4000-8000-000000000001",
        "transcript_path": "/tmp/t.jsonl", "cwd": "/work/other", "hook_event_name": "Notification",
        "message": "Claude is waiting for your input", "notification_type": "idle_prompt"});
    let mut hook = phone.run_hook("Notification", &notification, Stdio::null());
    assert!(hook.wait().unwrap().success());
    assert!(
        wait_within(WAIT, || phone
            .api
            .calls_to("sendMessage")
            .iter()
            .any(|c| c.failed_with == Some(429))),
        "the notification met the 429"
    );
    // The answer is refused once as unreadable HTML.
    phone.api.fail_next_containing(
        "sendMessage",
        "claude answered",
        cross_agent_testkit::telegram::Failure::cant_parse_entities(),
    );
    phone.answer_once(
        "queued prompt for claude",
        "if a < b && c > d, claude answered",
    );
    phone.reply_to(&card, json!({"text": "queued prompt for claude"}));
    phone.wait_sent(before, "📨 Sent to", WAIT);
    let status: Value = serde_json::from_slice(
        &phone
            .command(&["telegram", "status", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(
        status["outbound"]["last_rate_limited"]["chat_id"], PERSON,
        "{status:#}"
    );
    assert_eq!(status["outbound"]["last_rate_limited"]["retry_after_s"], 5);
    phone.wait_sent(before, "claude answered", TURN_WAIT);

    let texts: Vec<String> = phone.api.sent()[before..]
        .iter()
        .filter_map(|(_, b)| b["text"].as_str().map(str::to_owned))
        .collect();
    let at = |needle: &str| {
        texts
            .iter()
            .position(|t| t.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} in {texts:#?}"))
    };
    assert!(
        at("waiting for your input") < at("📨 Sent to"),
        "the receipt waited behind the rate-limited notification: {texts:#?}"
    );
    assert!(at("📨 Sent to") < at("claude answered"), "{texts:#?}");
    let refused = phone
        .api
        .calls_to("sendMessage")
        .into_iter()
        .find(|c| c.failed_with == Some(400))
        .expect("the answer was refused once");
    assert!(
        refused.body["text"]
            .as_str()
            .unwrap()
            .contains("if a &lt; b &amp;&amp; c &gt; d"),
        "{:#}",
        refused.body
    );
    let (_, answer) = phone
        .api
        .sent()
        .into_iter()
        .find(|(_, b)| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.contains("claude answered"))
        })
        .unwrap();
    assert!(answer.get("parse_mode").is_none(), "{answer:#}");
    assert!(
        text(&answer).contains("if a < b && c > d, claude answered"),
        "{answer:#}"
    );
    // The bot records the plain retry after Telegram took it: wait for the line, never race it.
    assert!(
        wait_within(WAIT, || phone
            .decided("telegram_delivery", "retried_plain")
            .iter()
            .any(|d| d["details"]["what"] == "answer")),
        "the plain retry of the answer was recorded: {:#?}",
        phone.decided("telegram_delivery", "retried_plain")
    );
}
