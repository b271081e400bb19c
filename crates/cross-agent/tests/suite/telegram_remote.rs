//! One bot for every host (docs/remote.md, "What the phone sees"): the daemon with the bot
//! polls the fake Bot API (testkit `telegram`); another machine is a second HOME /
//! CROSS_AGENT_HOME behind a real sshd on loopback (testkit `sshd`), reached only over the
//! link. The test is the person on the phone: `/sessions` shows both machines' cards with the
//! host, a host that is down is said, a prompt typed for the remote session is delivered there
//! by a real Claude Code (scripted model) and its answer comes back to the chat, and an
//! approval the remote asks (its hook's, a real Claude panel's, a Copilot confirmation of a
//! `FakeAgentHost` there) is answered from the chat and applied there.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cross_agent_testkit::agent_host::{FakeAgentHost, FakeSession, TurnScript};
use cross_agent_testkit::agents::{AgentHome, AgentKind, Claude, agent_binary};
use cross_agent_testkit::binaries::cross_agent_bin;
use cross_agent_testkit::endpoint::{Reply, Rule};
use cross_agent_testkit::panel::{CLAUDE_SDK_ARGS, PanelDriver, claude_initialize, claude_user};
use cross_agent_testkit::sshd::Sshd;
use cross_agent_testkit::telegram::FakeBotApi;
use cross_agent_testkit::{ModelEndpoint, ToolCall};
use serde_json::{Value, json};

use super::telegram::{
    ClaudeProject, Env, WAIT, approval_card, bot, paired_with, pre_tool_use, spawn_fed, text,
    wait_until,
};

const PERSON: i64 = 5001;
/// A real turn through the remote hub (CLI start, model, transcript, the follower) takes
/// seconds; this is a ceiling.
const TURN_WAIT: Duration = Duration::from_secs(180);

/// The variables the remote daemon's Claude needs to reach the scripted endpoint, opted in by
/// name as a user would with `CROSS_AGENT_CHILD_ENV`.
const CHILD_ENV: &str = "ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,\
                         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,DISABLE_AUTOUPDATER,DISABLE_TELEMETRY";

fn rig() -> Option<Sshd> {
    if !Sshd::available() {
        eprintln!("skipped: no /usr/sbin/sshd (scripts/install-debian-packages installs it)");
        return None;
    }
    Some(Sshd::start(std::path::Path::new(super::telegram::BIN)).unwrap())
}

/// The machine with the bot: set up, daemon running, the person paired, its ssh the rig's.
fn here(api: &FakeBotApi, token: &str, sshd: &Sshd) -> Env {
    let ssh = sshd.ssh_program().to_string_lossy().into_owned();
    paired_with(api, token, "120", &[("CROSS_AGENT_SSH", &ssh)])
}

/// `hosts add NAME [DEST]` here, and (for `there`) its link up.
fn add_host(env: &Env, args: &[&str]) {
    let mut all = vec!["hosts", "add"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn wait_connected(env: &Env, host: &str) {
    let connected = wait_until(|| {
        let out = env.run(&["hosts", "status", "--json"]);
        let status: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        status["hosts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|h| h["name"] == host && h["state"] == "connected")
    });
    assert!(
        connected,
        "host {host} connected; log:\n{}",
        cross_agent_testkit::logs::daemon_log(&env.state)
    );
}

/// A Claude transcript titled `title` in `home`, active a minute ago.
fn claude_transcript(home: &std::path::Path, cwd: &str, id: &str, title: &str) {
    use cross_agent_testkit::synthetic_stores::ClaudeTranscript;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut t = ClaudeTranscript::new(home, cwd, id);
    t.user("hello", now - 60_000)
        .custom_title(title)
        .assistant_text("Hi.", now - 59_000);
    t.write().unwrap();
}

/// The first message the bot sent after the first `skip` whose text holds `needle`.
fn sent_after(api: &FakeBotApi, skip: usize, needle: &str, limit: Duration) -> (i64, Value) {
    let mut found = None;
    super::telegram::wait_within(limit, || {
        found = api
            .sent()
            .into_iter()
            .skip(skip)
            .find(|(_, body)| body["text"].as_str().is_some_and(|t| t.contains(needle)));
        found.is_some()
    });
    found.unwrap_or_else(|| {
        panic!(
            "no message containing {needle:?}; the chat: {:#?}",
            api.sent()
                .iter()
                .map(|(_, b)| b["text"].clone())
                .collect::<Vec<_>>()
        )
    })
}

/// The callback data of a card's buttons (Prompt, Status, Focus, Hand off, Review).
fn buttons(card: &Value) -> Vec<String> {
    card["reply_markup"]["inline_keyboard"][0]
        .as_array()
        .unwrap_or_else(|| panic!("the card has buttons: {card:#}"))
        .iter()
        .map(|b| b["callback_data"].as_str().unwrap().to_owned())
        .collect()
}

fn private_message(message_id: i64) -> Value {
    json!({"message_id": message_id, "date": 1_760_000_000,
           "chat": {"id": PERSON, "type": "private"}})
}

fn decisions_of(state: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(state.join("decisions.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// `/sessions` shows this machine's card and the remote's with `🖥 there` on it, and says
/// once that host `gone` (nothing listens on its port) is down; the remote card's Status
/// button (its key names the host) shows that same remote session again.
#[test]
fn the_phone_lists_every_host_s_sessions_with_the_host_and_says_a_host_that_is_down() {
    let Some(sshd) = rig() else { return };
    let (token, api) = bot();
    let env = here(&api, &token, &sshd);
    claude_transcript(&env.user, "/work/api", "c-here-0001", "local work");
    claude_transcript(
        &sshd.remote_home(),
        "/srv/api",
        "c-there-0001",
        "remote work",
    );
    add_host(&env, &[Sshd::ALIAS]);
    // Port 22 of loopback: nothing listens there, so ssh is refused and the link backs off.
    add_host(&env, &["gone", "127.0.0.1"]);
    wait_connected(&env, Sshd::ALIAS);

    let before = api.sent().len();
    api.push_message(PERSON, PERSON, "/sessions");
    let (_, down) = sent_after(&api, before, "🖥 gone is down", WAIT);
    assert!(
        text_of(&down).contains("host `gone` is not connected"),
        "{down:#}"
    );
    let (_, local) = sent_after(&api, before, "c-here-0001", WAIT);
    assert!(
        text_of(&local).starts_with("<b>claude · local work</b>\n📂 /work/api"),
        "this machine's card names no host: {local:#}"
    );
    let (remote_id, remote) = sent_after(&api, before, "c-there-0001", WAIT);
    assert!(
        text_of(&remote).starts_with("<b>claude · remote work on there</b>\n🖥 there\n📂 /srv/api"),
        "{remote:#}"
    );
    let downs = api
        .sent()
        .iter()
        .skip(before)
        .filter(|(_, b)| b["text"].as_str().is_some_and(|t| t.contains("is down")))
        .count();
    assert_eq!(downs, 1, "the host that is down is said once");

    // Status on the remote card: its key names the host, so the card comes back for it.
    let after = api.sent().len();
    api.push_callback_on(PERSON, private_message(remote_id), &buttons(&remote)[1]);
    let (_, again) = sent_after(&api, after, "c-there-0001", WAIT);
    assert!(text_of(&again).contains("\n🖥 there\n"), "{again:#}");
}

fn text_of(body: &Value) -> &str {
    body["text"].as_str().unwrap_or("")
}

/// The remote machine's own daemon, started before the link (which then relays to it) with
/// what its Claude needs: the scripted endpoint, the pinned CLI, those variables passed on.
fn remote_daemon(sshd: &Sshd, agents: &AgentHome, endpoint: &ModelEndpoint) -> Child {
    let claude = agent_binary(AgentKind::Claude).unwrap();
    let mut command: Command = sshd.remote_command(&["daemon", "run"]);
    command
        .env("HOME", agents.path())
        .env("TMPDIR", agents.path().join("tmp"))
        .env("CROSS_AGENT_CLAUDE_BIN", claude)
        .env("CROSS_AGENT_CHILD_ENV", CHILD_ENV)
        .env("ANTHROPIC_BASE_URL", endpoint.anthropic_base_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env_remove("CLAUDE_CONFIG_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = command.spawn().unwrap();
    let socket = sshd.remote_state().join("daemon.sock");
    assert!(wait_until(|| socket.exists()), "the remote daemon serves");
    child
}

/// A prompt typed as a reply to the remote session's card travels over the link (the CLI's
/// forwarded send), a real Claude Code on the remote answers it, and the answer comes back
/// to the chat; both machines record the delivery under the same id.
#[test]
fn a_prompt_from_the_phone_is_delivered_on_the_remote_and_its_answer_comes_back() {
    let Some(sshd) = rig() else { return };
    let remote_agents = AgentHome::new().unwrap();
    let project = remote_agents.project("proj").unwrap();
    std::fs::create_dir_all(remote_agents.path().join("tmp")).unwrap();
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(
        Rule::on_user_text("seed the remote")
            .reply_text("seeded")
            .once(),
    );
    let claude = Claude::new(&remote_agents, &endpoint.anthropic_base_url()).unwrap();
    let run = claude.turn(&project, "seed the remote").run().unwrap();
    let session = run
        .expect_success()
        .unwrap()
        .session_id()
        .unwrap()
        .to_owned();
    let mut remote = remote_daemon(&sshd, &remote_agents, &endpoint);

    let (token, api) = bot();
    let env = here(&api, &token, &sshd);
    add_host(&env, &[Sshd::ALIAS]);
    wait_connected(&env, Sshd::ALIAS);

    let before = api.sent().len();
    api.push_message(PERSON, PERSON, "/sessions");
    let (card_id, card) = sent_after(&api, before, &session, WAIT);
    assert!(text_of(&card).contains("\n🖥 there\n"), "{card:#}");

    endpoint.push(
        Rule::on_user_text("what is on the build box")
            .reply(Reply::echo_token("the remote session answers"))
            .once(),
    );
    let before = api.sent().len();
    api.push_message_with(
        PERSON,
        PERSON,
        false,
        json!({"text": "what is on the build box",
               "reply_to_message": private_message(card_id)}),
    );
    let (_, receipt) = sent_after(&api, before, "📨", WAIT);
    assert!(text_of(&receipt).contains("on there"), "{receipt:#}");
    let (_, answer) = sent_after(&api, before, "the remote session answers", TURN_WAIT);
    assert!(!text_of(&answer).contains("req_"), "{answer:#}");

    // One delivery id on both machines: recorded here as forwarded to `there`, delivered there.
    let prompt = decisions_of(&env.state)
        .into_iter()
        .find(|d| d["kind"] == "telegram_prompt" && d["outcome"] == "sent")
        .expect("the prompt's decision line");
    let id = prompt["details"]["delivery_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let status = env.run(&["status", &id, "--json"]);
    let local: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(local["delivery"]["host"], "there", "{local:#}");
    let there = sshd
        .remote_command(&["status", &id, "--json"])
        .output()
        .unwrap();
    let there: Value = serde_json::from_slice(&there.stdout).unwrap();
    assert_eq!(there["delivery"]["state"], "delivered", "{there:#}");
    let _ = remote.kill();
    let _ = remote.wait();
}

/// A Claude hook on the remote escalates a dangerous command; the remote has no bot of its
/// own, so the approval is held for the linked bot: the card shows here with `🖥 there`, the
/// tap goes back over the link, and the remote hook answers `allow`.
#[test]
fn an_approval_asked_on_the_remote_is_answered_from_the_chat_and_applied_there() {
    let Some(sshd) = rig() else { return };
    let (token, api) = bot();
    let env = here(&api, &token, &sshd);
    add_host(&env, &[Sshd::ALIAS]);
    wait_connected(&env, Sshd::ALIAS);
    // The bot's watcher asks the host twice a second; the remote holds an approval for it
    // once it has been asked.
    std::thread::sleep(Duration::from_secs(2));

    let mut hook = sshd.remote_command(&["hook", "PreToolUse"]);
    hook.stdout(Stdio::piped()).stderr(Stdio::piped());
    let hook = spawn_fed(&mut hook, &pre_tool_use("rm -rf build"));
    let (card, allow, _deny) = approval_card(&api);
    assert!(card.contains("🖥 there · Claude · Bash"), "{card}");
    assert!(card.contains("rm -rf build"), "the full command: {card}");
    api.push_callback(PERSON, PERSON, 1, &allow);
    let out = hook.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?}", text(&out.stdout)));
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "allow",
        "{answer}"
    );
    let remote_lines = decisions_of(&sshd.remote_state());
    assert!(
        remote_lines.iter().any(|d| d["kind"] == "approval"
            && d["outcome"] == "allowed"
            && d["details"]["via"] == "link"
            && d["details"]["user_id"] == PERSON),
        "{remote_lines:#?}"
    );
    assert!(wait_until(|| decisions_of(&env.state).iter().any(
        |d| d["kind"] == "approval" && d["outcome"] == "allowed" && d["details"]["host"] == "there"
    )));
}

/// A remote with a bot of its own that can ask asks there: its card is on its own chat
/// without a host, the tap there is applied, and the linked bot here never posts one — one
/// approval, one prompt.
#[test]
fn a_remote_with_its_own_bot_asks_there_and_the_linked_bot_posts_nothing() {
    let Some(sshd) = rig() else { return };
    let (remote_token, remote_api) = bot();
    let remote_env = |command: &mut Command| {
        command
            .env("CROSS_AGENT_TELEGRAM_API", remote_api.base_url())
            .env("CROSS_AGENT_TELEGRAM_POLL_TIMEOUT", "1")
            .env("CROSS_AGENT_APPROVAL_WAIT", "120");
    };
    let mut setup = sshd.remote_command(&["telegram", "setup", "--json"]);
    remote_env(&mut setup);
    setup.stdout(Stdio::null()).stderr(Stdio::null());
    let setup = spawn_fed(&mut setup, &format!("{remote_token}\n"));
    assert!(setup.wait_with_output().unwrap().status.success());
    let mut daemon = sshd.remote_command(&["daemon", "run"]);
    remote_env(&mut daemon);
    daemon
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut remote = daemon.spawn().unwrap();
    let socket = sshd.remote_state().join("daemon.sock");
    assert!(wait_until(|| socket.exists()), "the remote daemon serves");
    let mut pair = sshd.remote_command(&["telegram", "pair", "--json"]);
    remote_env(&mut pair);
    let code: Value = serde_json::from_slice(&pair.output().unwrap().stdout).unwrap();
    remote_api.push_message(
        PERSON,
        PERSON,
        &format!("/pair {}", code["code"].as_str().unwrap()),
    );
    assert!(wait_until(|| decisions_of(&sshd.remote_state())
        .iter()
        .any(
            |d| d["kind"] == "telegram_pair" && d["outcome"] == "paired"
        )));

    let (token, api) = bot();
    let env = here(&api, &token, &sshd);
    add_host(&env, &[Sshd::ALIAS]);
    wait_connected(&env, Sshd::ALIAS);
    std::thread::sleep(Duration::from_secs(2));

    let mut hook = sshd.remote_command(&["hook", "PreToolUse"]);
    hook.stdout(Stdio::piped()).stderr(Stdio::piped());
    let hook = spawn_fed(&mut hook, &pre_tool_use("rm -rf build"));
    let (card, allow, _deny) = approval_card(&remote_api);
    assert!(!card.contains("🖥"), "its own bot names no host: {card}");
    // The linked bot's watcher asks several times meanwhile: nothing is held for it.
    std::thread::sleep(Duration::from_secs(2));
    remote_api.push_callback(PERSON, PERSON, 1, &allow);
    let out = hook.wait_with_output().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "allow");
    let cards_here = api
        .calls_to("sendMessage")
        .into_iter()
        .filter(|c| c.body.get("reply_markup").is_some())
        .count();
    assert_eq!(cards_here, 0, "the linked bot posted no card");
    let _ = remote.kill();
    let _ = remote.wait();
}

/// The first card (a message with buttons) whose text holds `needle`, and its buttons as
/// (text, callback data).
fn card_with(api: &FakeBotApi, needle: &str) -> (String, Vec<(String, String)>) {
    let card = api
        .wait_for_call("sendMessage", WAIT, |body| {
            body.get("reply_markup").is_some()
                && body["text"].as_str().is_some_and(|t| t.contains(needle))
        })
        .unwrap_or_else(|| panic!("a card with {needle:?}; sent: {:#?}", api.sent()));
    let buttons = card.body["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .map(|b| {
            (
                b["text"].as_str().unwrap().to_owned(),
                b["callback_data"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (card.body["text"].as_str().unwrap().to_owned(), buttons)
}

fn button(buttons: &[(String, String)], label: &str) -> String {
    buttons
        .iter()
        .find(|(text, _)| text.contains(label))
        .unwrap_or_else(|| panic!("no button {label:?} in {buttons:?}"))
        .1
        .clone()
}

/// A real Claude panel (`cross-agent shim claude`, the test playing the extension) on the
/// remote asks for a `Write`; the remote has no bot, so the request is held for the linked
/// bot: its card shows here with `🖥 there` and the diff, the tap goes back over the link, and
/// the remote's daemon answers the panel's shim — the file is written there.
#[test]
fn a_panel_approval_on_the_remote_is_answered_from_the_chat_and_applied_there() {
    let Some(sshd) = rig() else { return };
    let (token, api) = bot();
    let env = here(&api, &token, &sshd);
    add_host(&env, &[Sshd::ALIAS]);
    wait_connected(&env, Sshd::ALIAS);
    std::thread::sleep(Duration::from_secs(2));

    let claude = ClaudeProject::new();
    let notes = claude.project.join("notes.txt");
    std::fs::write(&notes, "alpha\nbeta\n").unwrap();
    claude.endpoint.push(
        Rule::on_user_text("fix the notes")
            .tool_call(ToolCall::new(
                "Write",
                json!({"file_path": notes, "content": "alpha\nBETA\n"}),
            ))
            .once(),
    );
    claude
        .endpoint
        .push(Rule::on_any_tool_result().reply_text("done with the file"));
    let mut command = Command::new(cross_agent_bin().unwrap());
    command
        .arg("shim")
        .arg("claude")
        .arg(claude.claude.binary())
        .args(CLAUDE_SDK_ARGS)
        .current_dir(&claude.project)
        .env_clear()
        .envs(claude.claude.env())
        .env("CROSS_AGENT_HOME", sshd.remote_state());
    let mut panel = PanelDriver::start(command).unwrap();
    panel.send(&claude_initialize("init-1")).unwrap();
    panel
        .next_line(TURN_WAIT, |l| l["type"] == "control_response")
        .unwrap();
    panel.send(&claude_user("fix the notes")).unwrap();
    panel
        .next_line(TURN_WAIT, |l| l["type"] == "control_request")
        .unwrap();

    let (card, buttons) = card_with(&api, "🖥 there · Claude panel · Write");
    assert!(card.contains("+BETA"), "the diff as it is there: {card}");
    api.push_callback(PERSON, PERSON, 1, &button(&buttons, "Allow"));
    panel
        .next_line(TURN_WAIT, |l| l["type"] == "result")
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "alpha\nBETA\n",
        "allowed from the chat: the tool ran there"
    );
    assert!(wait_until(|| decisions_of(&sshd.remote_state())
        .iter()
        .any(|d| d["kind"] == "approval"
            && d["outcome"] == "allowed"
            && d["details"]["via"] == "panel"
            && d["details"]["user_id"] == PERSON
            && d["details"]["from_machine"].is_string())));
    assert!(wait_until(|| decisions_of(&env.state).iter().any(
        |d| d["kind"] == "approval" && d["outcome"] == "allowed" && d["details"]["host"] == "there"
    )));
    panel.close_stdin();
    let _ = panel.wait(Duration::from_secs(30));
}

/// A Copilot confirmation on the remote (its `FakeAgentHost`, with the host's own options):
/// the remote has no bot, so the linked bot asks, the options as its buttons; the tap's option
/// goes back over the link and the remote's daemon confirms it to its Agent Host, whose turn
/// goes on to the model.
#[test]
fn a_copilot_confirmation_on_the_remote_is_answered_from_the_chat_with_its_option() {
    let Some(sshd) = rig() else { return };
    let (token, api) = bot();
    let env = here(&api, &token, &sshd);
    let endpoint = ModelEndpoint::start().unwrap();
    endpoint.push(Rule::on_user_text("build it").reply_text("built"));
    let session = FakeSession::new("Build")
        .cwd("file:///srv/tidy")
        .script(TurnScript::AskApproval {
            tool_name: "run_in_terminal".to_owned(),
            display_name: "Terminal".to_owned(),
            message: "cargo build".to_owned(),
        })
        .confirmation_options(json!([
            {"id": "allow-once", "label": "Allow once", "kind": "approve", "group": 0},
            {"id": "allow-session", "label": "Always allow in this session", "kind": "approve", "group": 0},
            {"id": "deny", "label": "Skip", "kind": "deny", "group": 1},
        ]));
    let host = FakeAgentHost::builder(sshd.remote_home().join(".config/Code"))
        .model_endpoint(&endpoint)
        .session(session.clone())
        .start()
        .unwrap();
    add_host(&env, &[Sshd::ALIAS]);
    wait_connected(&env, Sshd::ALIAS);
    std::thread::sleep(Duration::from_secs(2));

    host.editor_turn(&session.uri(), "build it").unwrap();
    let (card, buttons) = card_with(&api, "🖥 there · Copilot · Terminal in /srv/tidy");
    assert!(card.contains("cargo build"), "{card}");
    let texts: Vec<&str> = buttons.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "✅ Allow once",
            "✅ Always allow in this session",
            "❌ Skip"
        ],
        "the host's own options"
    );
    api.push_callback(PERSON, PERSON, 1, &button(&buttons, "in this session"));
    let confirmed = || {
        host.dispatched()
            .into_iter()
            .filter(|p| p["action"]["type"] == "chat/toolCallConfirmed")
            .collect::<Vec<_>>()
    };
    assert!(
        wait_until(|| confirmed().len() == 1),
        "the tap reached the host there"
    );
    let action = &confirmed()[0]["action"];
    assert_eq!(action["approved"], true, "{action:#}");
    assert_eq!(action["selectedOptionId"], "allow-session", "{action:#}");
    assert!(
        wait_until(|| endpoint
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains("build it"))),
        "the approved turn went on to the model"
    );
    assert!(
        wait_until(|| decisions_of(&sshd.remote_state())
            .iter()
            .any(|d| d["agent"] == "copilot"
                && d["outcome"] == "allowed"
                && d["details"]["choice"] == "allow-session"
                && d["details"]["user_id"] == PERSON)),
        "{:#?}",
        decisions_of(&sshd.remote_state())
    );
    assert!(wait_until(|| decisions_of(&env.state).iter().any(
        |d| d["kind"] == "approval"
            && d["outcome"] == "allowed"
            && d["details"]["host"] == "there"
            && d["details"]["choice"] == "allow-session"
    )));
}
