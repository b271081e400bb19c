//! The send guards, called on an `Engine` opened in-process over a temporary `hub.db` (the
//! daemon's end-to-end tests drive the same guards through a spawned daemon). No worker pool
//! is started: an accepted send stays queued, so what a refusal left behind is plain to see.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cross_agent_hub::{Engine, EngineConfig, EngineInfo};
use cross_agent_protocol::bridge::{
    Agent, CallerContext, DeliveryState, Refusal, RefusalReason, SendParams, SendReceipt,
    SendResponse, TargetSelectedBy,
};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, now_millis};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

pub(super) const CLAUDE_A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
pub(super) const CLAUDE_B: &str = "bbbbbbbb-0000-4000-8000-000000000002";

/// An engine over a temporary home, with a project folder holding two Claude sessions.
pub(super) struct Bench {
    _tmp: TempDir,
    pub(super) home: PathBuf,
    pub(super) project: PathBuf,
    pub(super) engine: Engine,
}

pub(super) fn bench() -> Bench {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let state = tmp.path().join("state");
    let project = tmp.path().join("project");
    for dir in [&home, &state, &project] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let cwd = project.to_string_lossy().into_owned();
    let now = now_millis();
    for (id, ago) in [(CLAUDE_A, 60_000), (CLAUDE_B, 120_000)] {
        let mut transcript = ClaudeTranscript::new(&home, &cwd, id);
        transcript
            .user("hello", now - ago)
            .assistant_text("hi", now - ago + 1000);
        transcript.write().unwrap();
    }
    let engine = Engine::open(
        &state.join("hub.db"),
        EngineInfo {
            pid: std::process::id(),
            generation: 1,
            started_at: "2026-12-01T00:00:00Z".into(),
            version: "test".into(),
            state_root: state,
        },
        EngineConfig::default(),
    )
    .unwrap();
    Bench {
        _tmp: tmp,
        home,
        project,
        engine,
    }
}

impl Bench {
    /// A caller of `agent` (forced with `CROSS_AGENT_SELF`) in the project, with `settings`.
    pub(super) fn caller(&self, agent: &str, settings: &[(&str, &str)]) -> CallerContext {
        CallerContext {
            cwd: Some(self.project.to_string_lossy().into_owned()),
            pid: std::process::id(),
            self_agent: Some(agent.into()),
            child_env: BTreeMap::from([(
                "HOME".to_owned(),
                self.home.to_string_lossy().into_owned(),
            )]),
            settings: settings
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..CallerContext::default()
        }
    }

    pub(super) fn params(&self, agent: Agent, caller: CallerContext) -> SendParams {
        SendParams {
            agent,
            message: "m".into(),
            session_id: None,
            new_session: false,
            scope: None,
            cwd: None,
            timeout: None,
            conversation_id: None,
            raw: false,
            allow_same_agent: false,
            caller,
        }
    }

    pub(super) fn refused(&self, params: SendParams) -> Refusal {
        match self.engine.send(params).unwrap() {
            SendResponse::Refused(refusal) => refusal,
            SendResponse::Accepted(receipt) => panic!("accepted: {receipt:?}"),
        }
    }

    pub(super) fn accepted(&self, params: SendParams) -> SendReceipt {
        match self.engine.send(params).unwrap() {
            SendResponse::Accepted(receipt) => receipt,
            SendResponse::Refused(refusal) => panic!("refused: {refusal:?}"),
        }
    }

    /// How many deliveries were recorded, in any state.
    pub(super) fn recorded(&self) -> usize {
        let db = cross_agent_hub::db::HubDb::open(&self.hub_db()).unwrap();
        db.deliveries_in(
            &[
                DeliveryState::Queued,
                DeliveryState::Delivering,
                DeliveryState::AwaitingPeer,
                DeliveryState::Delivered,
                DeliveryState::Failed,
            ],
            1000,
        )
        .unwrap()
        .len()
    }

    pub(super) fn hub_db(&self) -> PathBuf {
        self.engine.info().state_root.join("hub.db")
    }
}

fn cwd_of(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn contradicting_arguments_are_refused_and_nothing_is_recorded() {
    let bench = bench();
    let mut params = bench.params(Agent::Claude, bench.caller("codex", &[]));
    params.session_id = Some(CLAUDE_A.into());
    params.new_session = true;
    let refusal = bench.refused(params);
    assert_eq!(refusal.reason, RefusalReason::InvalidArguments);
    assert!(
        refusal.message.contains("cannot be used together"),
        "{}",
        refusal.message
    );

    let mut empty = bench.params(Agent::Claude, bench.caller("codex", &[]));
    empty.message = "  \n".into();
    assert_eq!(bench.refused(empty).reason, RefusalReason::InvalidArguments);

    let mut no_cwd = bench.params(Agent::Claude, bench.caller("codex", &[]));
    no_cwd.caller.cwd = None;
    let refusal = bench.refused(no_cwd);
    assert_eq!(refusal.reason, RefusalReason::InvalidArguments);
    assert!(refusal.message.contains("no working directory"));
    assert_eq!(bench.recorded(), 0);
}

#[test]
fn strict_mode_wants_a_named_session_and_a_pin_does_not_count() {
    let bench = bench();
    let strict = bench.caller("codex", &[("CROSS_AGENT_REQUIRE_EXPLICIT_TARGET", "1")]);
    // A named session passes; so does new_session, whose session is pinned at once.
    let mut named = bench.params(Agent::Claude, strict.clone());
    named.session_id = Some(CLAUDE_B.into());
    assert_eq!(
        bench.accepted(named).target_selected_by,
        TargetSelectedBy::Caller
    );
    let mut new = bench.params(Agent::Claude, strict.clone());
    new.new_session = true;
    let created = bench.accepted(new);
    assert!(created.will_create_session);

    // A blank id counts as none, and the pin does not count.
    let mut blank = bench.params(Agent::Claude, strict);
    blank.session_id = Some("   ".into());
    let refusal = bench.refused(blank);
    assert_eq!(refusal.reason, RefusalReason::RequireExplicitTarget);
    assert!(
        refusal.message.contains("send_to_claude"),
        "{}",
        refusal.message
    );
    assert_eq!(bench.recorded(), 2);

    // Off values leave it off: the pin is used.
    let off = bench.caller("codex", &[("CROSS_AGENT_REQUIRE_EXPLICIT_TARGET", "off")]);
    let receipt = bench.accepted(bench.params(Agent::Claude, off));
    assert_eq!(receipt.target_selected_by, TargetSelectedBy::Pin);
    assert_eq!(receipt.target_session_id, created.target_session_id);
}

#[test]
fn the_self_call_guard_both_ways() {
    let bench = bench();
    let claude = CallerContext {
        claude_code_session_id: Some(CLAUDE_A.into()),
        ..bench.caller("claude", &[])
    };
    let refusal = bench.refused(bench.params(Agent::Claude, claude.clone()));
    assert_eq!(refusal.reason, RefusalReason::SelfCall);
    assert!(
        refusal.message.contains("send_to_codex or send_to_grok")
            && refusal.message.contains("allow_same_agent=true"),
        "{}",
        refusal.message
    );
    // allow_same_agent discovers another session, never the caller's own.
    let mut allowed = bench.params(Agent::Claude, claude.clone());
    allowed.allow_same_agent = true;
    assert_eq!(
        bench.accepted(allowed).target_session_id.as_deref(),
        Some(CLAUDE_B)
    );
    // Naming its own session is refused.
    let mut own = bench.params(Agent::Claude, claude);
    own.session_id = Some(CLAUDE_A.into());
    let refusal = bench.refused(own);
    assert_eq!(refusal.reason, RefusalReason::SelfCall);
    assert!(refusal.message.contains("calling session itself"));

    // Codex → Codex: allow_same_agent does not exist for it.
    let mut codex = bench.params(Agent::Codex, bench.caller("codex", &[]));
    codex.allow_same_agent = true;
    let refusal = bench.refused(codex);
    assert_eq!(refusal.reason, RefusalReason::SelfCall);
    assert!(
        refusal
            .message
            .contains("send_to_codex has no allow_same_agent"),
        "{}",
        refusal.message
    );
    assert_eq!(bench.recorded(), 1, "only the allowed send was recorded");
}

#[test]
fn no_headless_refuses_every_send_naming_the_session() {
    let bench = bench();
    let caller = bench.caller("codex", &[("CROSS_AGENT_DISABLE_HEADLESS", "1")]);
    let mut named = bench.params(Agent::Claude, caller.clone());
    named.session_id = Some(CLAUDE_B.into());
    let refusal = bench.refused(named);
    assert_eq!(refusal.reason, RefusalReason::DisableHeadless);
    assert!(
        refusal.message.contains(CLAUDE_B)
            && refusal
                .message
                .contains("Nothing was sent, queued or spent"),
        "{}",
        refusal.message
    );
    let mut new = bench.params(Agent::Claude, caller);
    new.new_session = true;
    let refusal = bench.refused(new);
    assert_eq!(refusal.reason, RefusalReason::DisableHeadless);
    // A new Claude session's id is chosen before it starts: the refusal names it.
    let chosen = refusal.details["target_session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(refusal.message.contains(&chosen), "{}", refusal.message);
    assert_eq!(bench.recorded(), 0);
}

#[test]
fn ui_hook_require_refuses_only_what_a_panel_would_have_taken() {
    let bench = bench();
    let caller = bench.caller("codex", &[("CROSS_AGENT_UI_HOOK", "require")]);
    let refusal = bench.refused(bench.params(Agent::Claude, caller.clone()));
    assert_eq!(refusal.reason, RefusalReason::UiHookRequire);
    assert!(
        refusal.message.contains("names no session") && refusal.message.contains(CLAUDE_A),
        "{}",
        refusal.message
    );
    assert_eq!(refusal.details["target_selected_by"], "discovery");
    let mut new = bench.params(Agent::Claude, caller.clone());
    new.new_session = true;
    let refusal = bench.refused(new);
    assert_eq!(refusal.reason, RefusalReason::UiHookRequire);
    assert!(refusal.message.contains("new claude conversation"));
    assert_eq!(bench.recorded(), 0);

    let mut named = bench.params(Agent::Claude, caller);
    named.session_id = Some(CLAUDE_B.into());
    assert_eq!(
        bench.accepted(named).target_session_id.as_deref(),
        Some(CLAUDE_B)
    );
}

#[test]
fn ui_hook_off_with_no_headless_refuses_before_any_lookup() {
    let bench = bench();
    let off = bench.caller("codex", &[("CROSS_AGENT_UI_HOOK", "off")]);
    let mut named = bench.params(Agent::Claude, off);
    named.session_id = Some(CLAUDE_B.into());
    bench.accepted(named);

    let both = bench.caller(
        "codex",
        &[
            ("CROSS_AGENT_UI_HOOK", "off"),
            ("CROSS_AGENT_DISABLE_HEADLESS", "1"),
        ],
    );
    // A session that does not exist: nothing is looked up, so the refusal is about the
    // settings, not the name.
    for session in [Some(CLAUDE_B), Some("no-such-session"), None] {
        let mut params = bench.params(Agent::Claude, both.clone());
        params.session_id = session.map(str::to_owned);
        let refusal = bench.refused(params);
        assert_eq!(
            refusal.reason,
            RefusalReason::DisableHeadless,
            "{session:?}"
        );
        assert!(
            refusal.message.contains("CROSS_AGENT_UI_HOOK=off")
                && refusal.message.contains("every send is refused"),
            "{}",
            refusal.message
        );
    }
    assert_eq!(bench.recorded(), 1);
}

#[test]
fn a_setting_that_cannot_be_read_refuses_the_send_naming_it() {
    let bench = bench();
    for (name, value) in [
        ("CROSS_AGENT_UI_HOOK", "requre"),
        ("CROSS_AGENT_MAX_HOPS", "four"),
        ("CROSS_AGENT_SCOPE", "everywhere"),
    ] {
        let mut params = bench.params(Agent::Claude, bench.caller("codex", &[(name, value)]));
        params.session_id = Some(CLAUDE_B.into());
        let refusal = bench.refused(params);
        assert_eq!(refusal.reason, RefusalReason::InvalidSetting);
        assert!(
            refusal.message.contains(name) && refusal.message.contains(value),
            "{}",
            refusal.message
        );
    }
    assert_eq!(bench.recorded(), 0);
}

#[test]
fn the_hop_budget_is_per_conversation() {
    let bench = bench();
    let caller = bench.caller("codex", &[("CROSS_AGENT_MAX_HOPS", "2")]);
    let send = |conversation: Option<&str>| {
        let mut params = bench.params(Agent::Claude, caller.clone());
        params.session_id = Some(CLAUDE_B.into());
        params.cwd = Some(cwd_of(&bench.project));
        params.conversation_id = conversation.map(str::to_owned);
        params
    };
    let first = bench.accepted(send(None));
    assert_eq!((first.hop, first.max_hops), (1, 2));
    let conversation = first.conversation_id.clone();
    assert_eq!(bench.accepted(send(Some(&conversation))).hop, 2);
    let refusal = bench.refused(send(Some(&conversation)));
    assert_eq!(refusal.reason, RefusalReason::HopBudget);
    assert_eq!(refusal.details["hops_spent"], 2);
    // The conversation a bridge-started turn inherits counts the same.
    let mut inherited = send(None);
    inherited.caller.conversation_id = Some(conversation);
    assert_eq!(bench.refused(inherited).reason, RefusalReason::HopBudget);
    // Another conversation has its own budget.
    assert_eq!(bench.accepted(send(None)).hop, 1);
    assert_eq!(bench.recorded(), 3);
}

/// A `cwd` that is not an existing directory's absolute path is refused at send (not at
/// delivery, after an accepted receipt), naming the path, and the refusal is a decision line.
#[test]
fn a_cwd_that_is_not_a_directory_is_refused_and_logged() {
    let bench = bench();
    for (cwd, problem) in [
        ("/nonexistent/cross-agent", "does not exist"),
        ("relative/dir", "is not an absolute path"),
    ] {
        let mut params = bench.params(Agent::Claude, bench.caller("codex", &[]));
        params.cwd = Some(cwd.into());
        let refusal = bench.refused(params);
        assert_eq!(refusal.reason, RefusalReason::InvalidArguments);
        assert!(
            refusal.message.contains(cwd) && refusal.message.contains(problem),
            "{}",
            refusal.message
        );
    }
    assert_eq!(bench.recorded(), 0);
    let log = std::fs::read_to_string(bench.engine.info().state_root.join("decisions.jsonl"))
        .unwrap_or_default();
    assert!(
        log.lines()
            .filter(|line| line.contains("invalid_arguments"))
            .count()
            >= 2,
        "{log}"
    );
}
