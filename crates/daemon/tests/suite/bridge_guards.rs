//! The guards of a send, decided before anything runs: argument conflicts, strict mode, the
//! self-call guard both ways, no-headless mode and the hop budget; and what a spawned CLI's
//! environment holds. Sessions are synthetic transcripts shaped like the real ones
//! (`testkit::synthetic_stores`); accepted sends run a stand-in `claude` script, since what is
//! tested is the decision and the child's environment, not the agent.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cross_agent_protocol::bridge::{
    Agent, DeliveryState, RefusalReason, SendParams, TargetSelectedBy,
};
use cross_agent_testkit::synthetic_stores::{ClaudeTranscript, CodexRollout, now_millis};
use pretty_assertions::assert_eq;

use super::bridge_support::{Bridge, spawn_daemon_process};

const CLAUDE_A: &str = "aaaaaaaa-0000-4000-8000-00000000000a";
const CLAUDE_B: &str = "bbbbbbbb-0000-4000-8000-00000000000b";
const THREAD_A: &str = "019a0000-0000-7000-8000-0000000000a1";
const THREAD_B: &str = "019a0000-0000-7000-8000-0000000000b2";

/// A stand-in `claude -p` that records its environment and answers like the real one.
fn fake_claude(dir: &Path) -> PathBuf {
    let path = dir.join("fake-claude");
    // Written once: rewriting it while a delivery runs it fails with "text file busy".
    if path.exists() {
        return path;
    }
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nenv > {dir}/child-env.$$\nprintf '%s\\0' \"$@\" > {dir}/child-args.$$\n\
             echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"fake answer\",\"session_id\":\"x\",\"permission_denials\":[]}}'\n",
            dir = dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The argv of every run of the stand-in `claude`, NUL-separated arguments per run.
fn fake_runs(dir: &Path) -> Vec<Vec<String>> {
    let mut runs: Vec<(std::time::SystemTime, Vec<String>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("child-args."))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let args = text
                .split('\0')
                .filter(|a| !a.is_empty())
                .map(str::to_owned)
                .collect();
            (e.metadata().unwrap().modified().unwrap(), args)
        })
        .collect();
    runs.sort();
    runs.into_iter().map(|(_, args)| args).collect()
}

async fn bench() -> Bridge {
    let bridge = Bridge::start().await;
    let now = now_millis();
    let cwd = bridge.project.to_string_lossy().into_owned();
    for id in [CLAUDE_A, CLAUDE_B] {
        let mut transcript = ClaudeTranscript::new(bridge.agents.path(), &cwd, id);
        transcript
            .user("hello", now - 60_000)
            .assistant_text("hi", now - 59_000);
        transcript.write().unwrap();
    }
    for id in [THREAD_A, THREAD_B] {
        let mut rollout = CodexRollout::new(bridge.agents.path(), &cwd, id, now - 60_000);
        rollout.user("hello", now - 59_000);
        rollout.write().unwrap();
    }
    bridge
}

fn with_fake(bridge: &Bridge, mut params: SendParams) -> SendParams {
    let fake = fake_claude(bridge.agents.path());
    params.caller.settings.insert(
        "CROSS_AGENT_CLAUDE_BIN".into(),
        fake.to_string_lossy().into_owned(),
    );
    params
}

/// Pins Claude session A for `caller`'s directory.
async fn pin_claude_a(bridge: &Bridge, caller: &cross_agent_protocol::bridge::CallerContext) {
    let _: cross_agent_protocol::bridge::PinResponse = bridge
        .conn
        .client
        .call(cross_agent_protocol::bridge::PinParams {
            agent: Agent::Claude,
            session_id: Some(CLAUDE_A.into()),
            cwd: None,
            caller: caller.clone(),
        })
        .await
        .unwrap();
}

/// The Codex thread A calling, through a registration that sets `name=value`.
fn codex_caller_setting(
    bridge: &Bridge,
    name: &str,
    value: &str,
) -> cross_agent_protocol::bridge::CallerContext {
    let mut caller = bridge.codex_caller(THREAD_A);
    caller.settings.insert(name.into(), value.into());
    caller
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contradicting_arguments_and_strict_mode_are_refused_before_any_lookup() {
    let bridge = bench().await;
    let caller = bridge.codex_caller(THREAD_A);
    let mut params = bridge.send_params(Agent::Claude, "m", caller.clone());
    params.session_id = Some(CLAUDE_A.into());
    params.new_session = true;
    assert_eq!(
        bridge.refused(params).await.reason,
        RefusalReason::InvalidArguments
    );

    let mut strict = caller.clone();
    strict
        .settings
        .insert("CROSS_AGENT_REQUIRE_EXPLICIT_TARGET".into(), "1".into());
    // A blank id counts as none; a pin does not count either.
    pin_claude_a(&bridge, &caller).await;
    let mut params = bridge.send_params(Agent::Claude, "m", strict.clone());
    params.session_id = Some("   ".into());
    let refusal = bridge.refused(params).await;
    assert_eq!(refusal.reason, RefusalReason::RequireExplicitTarget);
    assert!(
        refusal.message.contains("session_id"),
        "{}",
        refusal.message
    );
    assert!(refusal.message.contains("new_session=true"));
    // Off values leave it off: the pin is used.
    strict
        .settings
        .insert("CROSS_AGENT_REQUIRE_EXPLICIT_TARGET".into(), "off".into());
    let receipt = bridge
        .accepted(with_fake(
            &bridge,
            bridge.send_params(Agent::Claude, "m", strict),
        ))
        .await;
    assert_eq!(receipt.target_session_id.as_deref(), Some(CLAUDE_A));
    assert_eq!(
        receipt.target_selected_by,
        cross_agent_protocol::bridge::TargetSelectedBy::Pin
    );
    assert_eq!(receipt.caller_supplied_session_id, None);
    let status = bridge.status(None).await;
    assert_eq!(
        status.deliveries.pending.len()
            + status.deliveries.in_flight.len()
            + status.deliveries.recent.len(),
        1,
        "only the accepted send was recorded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_self_call_guard_both_ways() {
    let bridge = bench().await;
    // Claude → Claude: refused unaddressed, naming the tools that lead elsewhere.
    let claude = bridge.claude_caller(CLAUDE_A);
    let refusal = bridge
        .refused(bridge.send_params(Agent::Claude, "m", claude.clone()))
        .await;
    assert_eq!(refusal.reason, RefusalReason::SelfCall);
    assert!(
        refusal.message.contains("send_to_codex or send_to_grok"),
        "{}",
        refusal.message
    );
    assert!(refusal.message.contains("allow_same_agent=true"));
    // allow_same_agent discovers another session, never the caller's own.
    let mut allowed = with_fake(
        &bridge,
        bridge.send_params(Agent::Claude, "m", claude.clone()),
    );
    allowed.allow_same_agent = true;
    let receipt = bridge.accepted(allowed).await;
    assert_eq!(receipt.target_session_id.as_deref(), Some(CLAUDE_B));
    // Naming its own session is refused.
    let mut own = bridge.send_params(Agent::Claude, "m", claude);
    own.session_id = Some(CLAUDE_A.into());
    assert_eq!(bridge.refused(own).await.reason, RefusalReason::SelfCall);

    // Codex → Codex: allow_same_agent does not exist for it; only an explicit id passes.
    let codex = bridge.codex_caller(THREAD_A);
    let mut params = bridge.send_params(Agent::Codex, "m", codex.clone());
    params.allow_same_agent = true;
    let refusal = bridge.refused(params).await;
    assert_eq!(refusal.reason, RefusalReason::SelfCall);
    assert!(
        refusal.message.contains("send_to_claude or send_to_grok"),
        "{}",
        refusal.message
    );
    assert!(
        refusal
            .message
            .contains("send_to_codex has no allow_same_agent")
    );
    // Forced agent: CROSS_AGENT_SELF makes a caller Claude whatever else says.
    let mut forced = codex;
    forced.self_agent = Some("claude".into());
    let refusal = bridge
        .refused(bridge.send_params(Agent::Claude, "m", forced))
        .await;
    assert_eq!(refusal.reason, RefusalReason::SelfCall);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_headless_refuses_every_send_with_nothing_sent() {
    let bridge = bench().await;
    let caller = codex_caller_setting(&bridge, "CROSS_AGENT_DISABLE_HEADLESS", "1");
    let mut params = bridge.send_params(Agent::Claude, "m", caller.clone());
    params.session_id = Some(CLAUDE_B.into());
    let refusal = bridge.refused(with_fake(&bridge, params)).await;
    assert_eq!(refusal.reason, RefusalReason::DisableHeadless);
    assert!(refusal.message.contains(CLAUDE_B), "{}", refusal.message);
    assert!(
        refusal
            .message
            .contains("Nothing was sent, queued or spent")
    );
    let mut params = bridge.send_params(Agent::Claude, "m", caller);
    params.new_session = true;
    assert_eq!(
        bridge.refused(with_fake(&bridge, params)).await.reason,
        RefusalReason::DisableHeadless
    );
    let status = bridge.status(None).await;
    assert_eq!(status.deliveries.recent, []);
    assert_eq!(status.deliveries.pending, []);
}

/// `CROSS_AGENT_UI_HOOK` with no panel registered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_hook_require_refuses_only_what_a_panel_would_have_taken() {
    use cross_agent_protocol::bridge::{BridgeStatusParams, BridgeStatusResponse};
    let bridge = bench().await;
    let caller = codex_caller_setting(&bridge, "CROSS_AGENT_UI_HOOK", "require");

    // A send naming no session: discovery would pick one, but only a panel may take it.
    let refusal = bridge
        .refused(with_fake(
            &bridge,
            bridge.send_params(Agent::Claude, "m", caller.clone()),
        ))
        .await;
    assert_eq!(refusal.reason, RefusalReason::UiHookRequire);
    assert!(
        refusal.message.contains("CROSS_AGENT_UI_HOOK=require")
            && refusal.message.contains("names no session")
            && refusal
                .message
                .contains("Nothing was sent, queued or spent"),
        "{}",
        refusal.message
    );
    assert_eq!(refusal.details["target_selected_by"], "discovery");
    // A new conversation: no panel can open one.
    let mut new = bridge.send_params(Agent::Claude, "m", caller.clone());
    new.new_session = true;
    let refusal = bridge.refused(with_fake(&bridge, new)).await;
    assert_eq!(refusal.reason, RefusalReason::UiHookRequire);
    assert!(
        refusal.message.contains("new claude conversation"),
        "{}",
        refusal.message
    );
    let status = bridge.status(None).await;
    assert_eq!(status.deliveries.recent, []);
    assert_eq!(status.deliveries.pending, []);

    // A session named by id goes over the CLI, as the spec says.
    let mut named = bridge.send_params(Agent::Claude, "m", caller.clone());
    named.session_id = Some(CLAUDE_B.into());
    let receipt = bridge.accepted(with_fake(&bridge, named)).await;
    assert_eq!(receipt.target_session_id.as_deref(), Some(CLAUDE_B));
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:?}");
    // So does a session named by a pin.
    pin_claude_a(&bridge, &caller).await;
    let receipt = bridge
        .accepted(with_fake(
            &bridge,
            bridge.send_params(Agent::Claude, "m", caller.clone()),
        ))
        .await;
    assert_eq!(receipt.target_session_id.as_deref(), Some(CLAUDE_A));
    assert_eq!(
        receipt.target_selected_by,
        cross_agent_protocol::bridge::TargetSelectedBy::Pin
    );
    bridge.wait_finished(&receipt.delivery_id).await;

    // bridge_status reports the setting of the registration asking.
    let status: BridgeStatusResponse = bridge
        .conn
        .client
        .call(BridgeStatusParams {
            cwd: Some(bridge.project.to_string_lossy().into_owned()),
            scope: None,
            delivery_id: None,
            caller,
        })
        .await
        .unwrap();
    assert_eq!(status.settings.ui_hook, "require");
    assert!(!status.settings.panels_available);
    assert_eq!(bridge.status(None).await.settings.ui_hook, "auto");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_hook_off_with_no_headless_refuses_every_send_before_any_lookup() {
    let bridge = bench().await;
    let mut caller = codex_caller_setting(&bridge, "CROSS_AGENT_UI_HOOK", "off");
    // `off` alone delivers over the CLI.
    let mut params = bridge.send_params(Agent::Claude, "m", caller.clone());
    params.session_id = Some(CLAUDE_B.into());
    let receipt = bridge.accepted(with_fake(&bridge, params)).await;
    bridge.wait_finished(&receipt.delivery_id).await;

    caller
        .settings
        .insert("CROSS_AGENT_DISABLE_HEADLESS".into(), "1".into());
    // Even a session that does not exist: nothing is looked up, so the refusal is about the
    // settings, not the name.
    for session in [Some(CLAUDE_B), Some("no-such-session"), None] {
        let mut params = bridge.send_params(Agent::Claude, "m", caller.clone());
        params.session_id = session.map(str::to_owned);
        let refusal = bridge.refused(with_fake(&bridge, params)).await;
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setting_that_cannot_be_read_refuses_the_send_naming_it() {
    let bridge = bench().await;
    for (name, value) in [
        ("CROSS_AGENT_UI_HOOK", "requre"),
        ("CROSS_AGENT_MAX_HOPS", "four"),
        ("CROSS_AGENT_SCOPE", "everywhere"),
    ] {
        let caller = codex_caller_setting(&bridge, name, value);
        // bridge_status shows the value it could not read, and the default in effect.
        let status: cross_agent_protocol::bridge::BridgeStatusResponse = bridge
            .conn
            .client
            .call(cross_agent_protocol::bridge::BridgeStatusParams {
                cwd: None,
                scope: None,
                delivery_id: None,
                caller: caller.clone(),
            })
            .await
            .unwrap();
        let invalid = status.settings.invalid.join("\n");
        assert!(
            invalid.contains(name) && invalid.contains(value),
            "{invalid}"
        );
        let mut params = bridge.send_params(Agent::Claude, "m", caller);
        params.session_id = Some(CLAUDE_B.into());
        let refusal = bridge.refused(with_fake(&bridge, params)).await;
        assert_eq!(refusal.reason, RefusalReason::InvalidSetting);
        assert!(
            refusal.message.contains(name) && refusal.message.contains(value),
            "{}",
            refusal.message
        );
    }
    let status = bridge.status(None).await;
    assert_eq!(status.deliveries.recent, []);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hop_budget_is_per_conversation() {
    let bridge = bench().await;
    let caller = codex_caller_setting(&bridge, "CROSS_AGENT_MAX_HOPS", "2");
    let send = |conversation: Option<&str>| {
        let mut params = with_fake(
            &bridge,
            bridge.send_params(Agent::Claude, "m", caller.clone()),
        );
        params.session_id = Some(CLAUDE_B.into());
        params.conversation_id = conversation.map(str::to_owned);
        params
    };
    let first = bridge.accepted(send(None)).await;
    assert_eq!((first.hop, first.max_hops), (1, 2));
    let conversation = first.conversation_id.clone();
    assert!(
        conversation.starts_with("conv_") && conversation.len() == 17,
        "{conversation}"
    );
    let second = bridge.accepted(send(Some(&conversation))).await;
    assert_eq!(second.hop, 2);
    let refusal = bridge.refused(send(Some(&conversation))).await;
    assert_eq!(refusal.reason, RefusalReason::HopBudget);
    assert_eq!(refusal.details["hops_spent"], 2);
    // The conversation id a bridge-started turn inherits counts the same.
    let mut inherited = send(None);
    inherited.caller.conversation_id = Some(conversation.clone());
    assert_eq!(
        bridge.refused(inherited).await.reason,
        RefusalReason::HopBudget
    );
    // Another conversation has its own budget.
    assert_eq!(bridge.accepted(send(None)).await.hop, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_sees_nothing_of_the_daemons_environment() {
    let bridge = bench().await;
    let root = bridge.state.dir.path().join("state2");
    let (_daemon, conn) = spawn_daemon_process(
        &root,
        &bridge.state.dir.path().join("user"),
        &[
            ("DAEMON_ONLY_SECRET", "hunter2-daemon"),
            ("CROSS_AGENT_MAX_HOPS", "1"),
        ],
    )
    .await;
    let mut params = with_fake(
        &bridge,
        bridge.send_params(Agent::Claude, "m", bridge.codex_caller(THREAD_A)),
    );
    params.session_id = Some(CLAUDE_B.into());
    // The caller has a secret of its own that is not in its child baseline.
    params.caller.withheld_env = vec!["CALLER_ONLY_SECRET".into()];
    params
        .caller
        .settings
        .insert("CROSS_AGENT_SELF".into(), "codex".into());
    let receipt = match conn.client.call(params.clone()).await.unwrap() {
        cross_agent_protocol::bridge::SendResponse::Accepted(receipt) => receipt,
        other => panic!("{other:?}"),
    };
    // The daemon's own CROSS_AGENT_MAX_HOPS=1 is not the caller's: the default 4 applies.
    assert_eq!(receipt.max_hops, 4);
    let deadline = Instant::now() + Duration::from_secs(30);
    let env_file = loop {
        let found = std::fs::read_dir(bridge.agents.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("child-env.")
            });
        if let Some(found) = found {
            tokio::time::sleep(Duration::from_millis(200)).await;
            break found;
        }
        assert!(Instant::now() < deadline, "the fake CLI never ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text = std::fs::read_to_string(env_file).unwrap();
    let env: BTreeMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
    assert!(
        !text.contains("hunter2-daemon"),
        "the daemon's secret leaked:\n{text}"
    );
    assert!(!env.contains_key("DAEMON_ONLY_SECRET"));
    assert!(!env.contains_key("CALLER_ONLY_SECRET"));
    assert!(
        !env.contains_key("CROSS_AGENT_SELF"),
        "CROSS_AGENT_SELF is never inherited"
    );
    assert_eq!(
        env.get("CROSS_AGENT_SELF_SESSION"),
        Some(&format!("claude:{CLAUDE_B}").as_str())
    );
    assert_eq!(
        env.get("CROSS_AGENT_CONVERSATION_ID"),
        Some(&receipt.conversation_id.as_str())
    );
    assert_eq!(
        env.get("HOME"),
        Some(&bridge.agents.path().to_string_lossy().as_ref())
    );
    let mut names: Vec<&str> = env.keys().copied().collect();
    names.retain(|n| !["PWD", "SHLVL", "_", "OLDPWD"].contains(n));
    let mut expected: Vec<String> = bridge.child_env().keys().cloned().collect();
    expected.extend([
        "CROSS_AGENT_CLAUDE_BIN".to_owned(),
        "CROSS_AGENT_CODEX_BIN".to_owned(),
        "CROSS_AGENT_CONVERSATION_ID".to_owned(),
        "CROSS_AGENT_SELF_SESSION".to_owned(),
    ]);
    expected.sort();
    assert_eq!(names, expected);
    let status = conn
        .client
        .call(cross_agent_protocol::bridge::BridgeStatusParams {
            cwd: None,
            scope: None,
            delivery_id: Some(receipt.delivery_id.clone()),
            caller: params.caller.clone(),
        });
    let status = status.await.unwrap();
    assert_ne!(status.delivery.unwrap().state, DeliveryState::Queued);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_failure_names_the_withheld_variable() {
    let bridge = bench().await;
    let script = bridge.agents.path().join("auth-fails");
    std::fs::write(
        &script,
        "#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"Invalid API key · Please run /login\",\"session_id\":\"x\"}'\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut params = bridge.send_params(Agent::Claude, "m", bridge.codex_caller(THREAD_A));
    params.session_id = Some(CLAUDE_B.into());
    params.caller.settings.insert(
        "CROSS_AGENT_CLAUDE_BIN".into(),
        script.to_string_lossy().into_owned(),
    );
    params.caller.withheld_env = vec!["GITHUB_TOKEN".into(), "ANTHROPIC_AUTH_TOKEN".into()];
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Failed);
    let error = record.error.unwrap();
    assert!(error.contains("Invalid API key"), "{error}");
    assert!(
        error.contains("cross-agent withheld ANTHROPIC_AUTH_TOKEN from the spawned claude CLI"),
        "{error}"
    );
    assert!(error.contains("CROSS_AGENT_CHILD_ENV"));
    assert!(
        !error.contains("GITHUB_TOKEN"),
        "only the likely one is named: {error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pins_listing_and_status() {
    use cross_agent_protocol::bridge::{
        AgentFilter, ListSessionsParams, ListSessionsResponse, PinParams, PinResponse,
    };
    let bridge = bench().await;
    let caller = bridge.codex_caller(THREAD_A);
    let pin = |session: Option<&str>| PinParams {
        agent: Agent::Claude,
        session_id: session.map(str::to_owned),
        cwd: None,
        caller: caller.clone(),
    };
    let pinned: PinResponse = bridge.conn.client.call(pin(Some(CLAUDE_B))).await.unwrap();
    match pinned {
        PinResponse::Pinned { pin, previous } => {
            assert_eq!(pin.session_id, CLAUDE_B);
            assert!(pin.sticky, "pin_agent_session pins never expire");
            assert_eq!(previous, None);
        }
        other => panic!("{other:?}"),
    }
    let missing: PinResponse = bridge.conn.client.call(pin(Some("no-such"))).await.unwrap();
    assert!(matches!(missing, PinResponse::Refused(r) if r.reason == RefusalReason::NoSuchSession));

    let listed: ListSessionsResponse = bridge
        .conn
        .client
        .call(ListSessionsParams {
            agent: AgentFilter::Both,
            scope: None,
            cwd: None,
            limit: None,
            caller: caller.clone(),
        })
        .await
        .unwrap();
    let claude = &listed.sessions["claude"];
    assert_eq!(claude.len(), 2);
    assert!(
        claude
            .iter()
            .any(|s| s.session_id == CLAUDE_B && s.is_pinned)
    );
    let codex = &listed.sessions["codex"];
    assert!(
        codex
            .iter()
            .any(|s| s.session_id == THREAD_A && s.is_caller)
    );

    let status = bridge.status(None).await;
    assert_eq!(status.server_process.pid, std::process::id());
    let claude = &status.resolved_sessions[&Agent::Claude];
    assert_eq!(claude.session_id.as_deref(), Some(CLAUDE_B));
    assert_eq!(claude.selected_by, TargetSelectedBy::Pin);
    assert_eq!(status.settings.max_hops, 4);
    assert!(!status.settings.disable_headless);

    let unpinned: PinResponse = bridge.conn.client.call(pin(Some("  "))).await.unwrap();
    assert!(
        matches!(unpinned, PinResponse::Unpinned { previous: Some(p) } if p.session_id == CLAUDE_B)
    );
    let status = bridge.status(None).await;
    assert!(status.pins.is_empty());
}

/// A relative `cwd` would scope a listing or a status to nothing, silently: any RPC client
/// sending one (not only the MCP server, which refuses it first) is refused, naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_cwd_is_refused_naming_it() {
    use cross_agent_ipc::Error as IpcError;
    use cross_agent_protocol::bridge::{
        AgentFilter, BridgeStatusParams, ListSessionsParams, ListSessionsResponse,
    };
    use cross_agent_protocol::rpc::ErrorCode;

    let bridge = bench().await;
    let caller = bridge.codex_caller(THREAD_A);
    let list = |cwd: &str| ListSessionsParams {
        agent: AgentFilter::All,
        scope: Some(cross_agent_protocol::bridge::Scope::Cwd),
        cwd: Some(cwd.to_owned()),
        limit: None,
        caller: caller.clone(),
    };
    let refused = |error: IpcError| match error {
        IpcError::Rpc {
            code: ErrorCode::InvalidParams,
            message,
            ..
        } => message,
        other => panic!("expected invalid params, got {other:?}"),
    };
    let message = refused(bridge.conn.client.call(list("proj")).await.unwrap_err());
    assert!(
        message.contains("`cwd`") && message.contains("proj") && message.contains("absolute"),
        "{message}"
    );
    let status = BridgeStatusParams {
        cwd: Some("./proj".to_owned()),
        scope: None,
        delivery_id: None,
        caller: caller.clone(),
    };
    let message = refused(bridge.conn.client.call(status).await.unwrap_err());
    assert!(
        message.contains("`cwd`") && message.contains("./proj"),
        "{message}"
    );

    // The same directory, absolute, lists its sessions; the connection is still good.
    let listed: ListSessionsResponse = bridge
        .conn
        .client
        .call(list(&bridge.project.to_string_lossy()))
        .await
        .unwrap();
    assert_eq!(listed.sessions["claude"].len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_mode_hands_over_the_message_alone() {
    let bridge = bench().await;
    let mut params = with_fake(
        &bridge,
        bridge.send_params(
            Agent::Claude,
            "-just the text",
            bridge.codex_caller(THREAD_A),
        ),
    );
    params.session_id = Some(CLAUDE_B.into());
    params.raw = true;
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:#?}");
    assert_eq!(record.reply_preview.as_deref(), Some("fake answer"));
    let runs = fake_runs(bridge.agents.path());
    assert_eq!(
        runs.last().unwrap(),
        &[
            "-p",
            "--output-format",
            "json",
            "--resume",
            CLAUDE_B,
            "--",
            "-just the text"
        ]
    );
}

/// Grok Build cannot run here. The stand-in prints streaming-json as Grok Build 0.2.101 was
/// publicly recorded doing (Anantys-oss/koan `koan/tests/grok_samples.py`: `text` deltas in
/// `data`, no tool events, a closing `end`) and writes the turn to the session's
/// `updates.jsonl` in the shapes of `testkit::synthetic_stores::GrokSession` (from docs/spec/cross-agent-mcp.md's
/// Grok notes): narration, a tool call, then the answer ending with the request id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grok_answer_is_what_it_said_after_its_last_tool_call() {
    use cross_agent_testkit::synthetic_stores::GrokSession;
    let bridge = bench().await;
    let now = now_millis();
    let cwd = bridge.project.to_string_lossy().into_owned();
    let mut session = GrokSession::new(bridge.agents.path(), &cwd, "grok-1", now - 60_000);
    session
        .user("hello", now - 60_000)
        .agent_chunk("hi", now - 59_000)
        .turn_completed(now - 59_000);
    let dir = session.write().unwrap();
    let updates = dir.join("updates.jsonl");
    // One `updates.jsonl` line stamped now; a second `%s` in `update` is filled from `$req`
    // (printf would repeat the format for an argument it has no `%s` for).
    let transcript_line = |method: &str, update: &str| {
        let req = if update.contains("%s") {
            " \"$req\""
        } else {
            ""
        };
        format!(
            "printf '{{\"timestamp\":%s,\"method\":\"{method}\",\"params\":{{\"sessionId\":\"grok-1\",\"update\":{update}}}}}\\n' \"$(date +%s.%3N)\"{req} >> '{}'\n",
            updates.display()
        )
    };
    let update = |update: &str| transcript_line("session/update", update);
    let chunk = |text: &str| {
        update(&format!(
            r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}"#
        ))
    };
    let script_body = [
        "sleep 0.05".to_owned(),
        // The request id, from the envelope in the arguments.
        "req=$(printf '%s' \"$*\" | grep -o 'req_[0-9]*_[a-z0-9]*' | head -1)".to_owned(),
        update(r#"{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"the message"}}"#),
        chunk("let me look. "),
        update(r#"{"sessionUpdate":"tool_call","toolCallId":"call_9","title":"cat notes","kind":"execute","status":"pending"}"#),
        update(r#"{"sessionUpdate":"tool_call_update","toolCallId":"call_9","status":"completed","content":[]}"#),
        chunk("the answer\\\\n%s"),
        transcript_line(
            "_x.ai/session/update",
            r#"{"sessionUpdate":"turn_completed","stopReason":"end_turn"}"#,
        ),
        // The stream: no tool events, the text deltas of the whole turn, then `end`.
        r#"printf '%s\n' '{"type":"thought","data":"Look first."}' '{"type":"text","data":"let me look. "}'"#.to_owned(),
        r#"printf '{"type":"text","data":"the answer\\n%s"}\n' "$req""#.to_owned(),
        r#"printf '%s\n' '{"type":"end","stopReason":"EndTurn","sessionId":"grok-1","requestId":"r-1","num_turns":2}'"#.to_owned(),
    ]
    .join("\n");
    let script = bridge.agents.path().join("fake-grok");
    std::fs::write(&script, format!("#!/bin/sh\n{script_body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let caller = codex_caller_setting(&bridge, "CROSS_AGENT_GROK_BIN", &script.to_string_lossy());
    let mut params = bridge.send_params(Agent::Grok, "what do the notes say?", caller);
    params.session_id = Some("grok-1".into());
    let receipt = bridge.accepted(params).await;
    let record = bridge.wait_finished(&receipt.delivery_id).await;
    assert_eq!(record.state, DeliveryState::Delivered, "{record:?}");
    assert_eq!(
        record.reply_preview.as_deref(),
        Some(format!("the answer\n{}", record.request_id).as_str()),
        "the narration before the tool call is not the answer"
    );
    assert!(record.answer.reply_carries_request_id, "{record:?}");
    let written = std::fs::read_to_string(&updates).unwrap();
    for line in written.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "the stand-in wrote a line Grok would not: {line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_grok_cannot_take_as_an_argument_is_refused_before_anything_is_queued() {
    let bridge = bench().await;
    let long = "x".repeat(cross_agent_transports::headless::MAX_ARGUMENT_BYTES);
    let mut params = bridge.send_params(Agent::Grok, &long, bridge.codex_caller(THREAD_A));
    params.new_session = true;
    let refusal = bridge.refused(params).await;
    assert_eq!(refusal.reason, RefusalReason::InvalidArguments);
    assert!(
        refusal.message.contains("only as a command-line argument")
            && refusal.message.contains(&long.len().to_string()),
        "{}",
        refusal.message
    );
    let status = bridge.status(None).await;
    assert_eq!(status.deliveries.pending, []);
    assert_eq!(status.deliveries.recent, []);
}
