//! The hard cases from files the real pinned CLIs write, run offline against the scripted
//! endpoint: a Codex fork (`codex exec fork`) and a Claude Code sub-agent (the `Task` tool,
//! the sub-agent's own request scripted with its own usage). Each total is checked against the
//! hand-computed one and side by side with ccusage (docs/observed/usage.md).

use std::collections::BTreeMap;

use cross_agent_stores::StoreRoots;
use cross_agent_testkit::agents::{AgentHome, Claude, Codex};
use cross_agent_testkit::ccusage::Source;
use cross_agent_testkit::{ModelEndpoint, Reply, Rule, ScriptedUsage, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::ccusage::{Seen, assert_same_cost, ours, theirs, tokens_only};

/// `codex exec fork` (Codex 0.171.0) copies the base thread's history, its `token_count`
/// events included, into a new rollout. The base's call counts once, for the base; the fork
/// counts only its own call.
#[test]
fn a_real_codex_fork_counts_the_base_call_once() {
    let endpoint = ModelEndpoint::start().unwrap();
    let base = ScriptedUsage {
        input: 1000,
        cache_read: 600,
        output: 50,
        reasoning: 20,
        ..ScriptedUsage::default()
    };
    let forked = ScriptedUsage {
        input: 3000,
        cache_read: 2800,
        output: 7,
        ..ScriptedUsage::default()
    };
    endpoint.script([
        Rule::on_user_text("fork turn").reply(Reply::text("Forked.").usage(forked)),
        Rule::on_user_text("base turn").reply(Reply::text("Based.").usage(base)),
    ]);
    let home = AgentHome::new().unwrap();
    let project = home.project("shop").unwrap();
    let codex = Codex::new(&home, &endpoint.openai_base_url()).unwrap();
    let base_thread = codex
        .turn(&project, "base turn")
        .arg("-m")
        .arg("gpt-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap()
        .thread_id()
        .unwrap()
        .to_owned();
    let fork_thread = codex
        .turn(&project, "fork turn")
        .fork(&base_thread)
        .arg("-m")
        .arg("gpt-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap()
        .thread_id()
        .unwrap()
        .to_owned();
    assert_ne!(base_thread, fork_thread);
    let fork_rollout = codex.rollout_of(&fork_thread).unwrap();
    let text = std::fs::read_to_string(&fork_rollout).unwrap();
    // The fork names its base. Codex 0.171.0 copies the base's history but not its
    // `token_count` events: the fork's one event is its own call, whose running total starts
    // from the base's (1600 + 5800 input).
    assert!(
        text.contains(&format!("\"forked_from_id\":\"{base_thread}\"")),
        "{text}"
    );
    assert_eq!(
        text.matches("\"type\":\"token_count\"").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("\"total_token_usage\":{\"input_tokens\":7400"),
        "{text}"
    );

    let roots = StoreRoots {
        codex_home: Some(codex.codex_home().to_path_buf()),
        ..StoreRoots::default()
    };
    let (ours_sessions, ours_total) = ours(&roots).unwrap();
    // Hand-computed: the endpoint reports `input_tokens` = uncached + cached (1600, 5800), and
    // input is counted net of cached; each call once, for the thread that made it.
    let truth = BTreeMap::from([
        (base_thread.clone(), Seen::new(1000, 50, 0, 600)),
        (fork_thread.clone(), Seen::new(3000, 7, 0, 2800)),
    ]);
    assert_eq!(tokens_only(&ours_sessions), truth);
    assert_eq!(ours_total, Seen::new(4000, 57, 0, 3400));
    // gpt-5: 1000×1.25 + 600×0.125 + 50×10 = 1825 µ$; 3000×1.25 + 2800×0.125 + 7×10 = 4170 µ$.
    assert_same_cost(&base_thread, ours_sessions[&base_thread].1, Some(0.001825));
    assert_same_cost(&fork_thread, ours_sessions[&fork_thread].1, Some(0.00417));

    let ccusage_home = tempfile::tempdir().unwrap();
    let (theirs_sessions, _) =
        theirs(Source::Codex, codex.codex_home(), ccusage_home.path()).unwrap();
    assert_eq!(tokens_only(&theirs_sessions), truth, "ccusage's tokens");
    for thread in [&base_thread, &fork_thread] {
        assert_same_cost(thread, ours_sessions[thread].1, theirs_sessions[thread].1);
    }
}

/// Claude Code 2.1.332 runs a sub-agent when the model calls its `Task` tool. The agent is
/// launched in the background: the tool result says so at once (the model answers it), the
/// sub-agent's own request (its prompt is the tool's `prompt`) gets its own usage and is
/// written to `<session>/subagents/`, and its result comes back to the parent as a new user
/// turn (answered here by the fallback). All four calls count once, toward the parent session.
#[test]
fn a_real_claude_code_subagent_counts_toward_its_parent() {
    let endpoint = ModelEndpoint::start().unwrap();
    let usage = |input, output, cache_write_5m, cache_write_1h, cache_read| ScriptedUsage {
        input,
        output,
        cache_write_5m,
        cache_write_1h,
        cache_read,
        reasoning: 0,
    };
    let delegate = usage(20, 40, 1000, 0, 3000);
    let sub = usage(7, 90, 0, 600, 0);
    let waiting = usage(5, 6, 0, 0, 3100);
    let done = usage(3, 11, 0, 0, 4200);
    endpoint.set_fallback(Reply::text("All done.").usage(done));
    endpoint.script([
        Rule::on_tool_result("Async agent launched").reply(Reply::text("Waiting.").usage(waiting)),
        Rule::on_user_text("sub task alpha").reply(Reply::text("Sub done.").usage(sub)),
        Rule::on_user_text("delegate please").reply(
            Reply::tool_call(ToolCall::new(
                "Task",
                json!({"description": "Sub task", "prompt": "sub task alpha",
                    "subagent_type": "general-purpose"}),
            ))
            .usage(delegate),
        ),
    ]);
    let home = AgentHome::new().unwrap();
    let project = home.project("shop").unwrap();
    let claude = Claude::new(&home, &endpoint.anthropic_base_url()).unwrap();
    let run = claude
        .turn(&project, "delegate please")
        .allow_tool("Task")
        .arg("--model")
        .arg("claude-sonnet-4-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let session = run.session_id().unwrap().to_owned();
    assert_eq!(run.result_text(), Some("All done."));
    let transcript = claude.transcript_path(&project, &session);
    let subagents = transcript.with_extension("").join("subagents");
    let files: Vec<_> = std::fs::read_dir(&subagents)
        .unwrap_or_else(|e| panic!("{}: {e}", subagents.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    // Beside it: `agent-<id>.meta.json` (no usage in it).
    assert_eq!(files.len(), 1, "{files:?}");

    let roots = StoreRoots {
        claude_config: Some(home.claude_config()),
        ..StoreRoots::default()
    };
    let (ours_sessions, _) = ours(&roots).unwrap();
    // Hand-computed: input 20 + 5 + 7 + 3, output 40 + 6 + 90 + 11, writes 1000 (5 m) + 600
    // (1 h), reads 3000 + 3100 + 4200.
    let truth = BTreeMap::from([(session.clone(), Seen::new(35, 147, 1600, 10300))]);
    assert_eq!(tokens_only(&ours_sessions), truth);
    // Sonnet 4.5: 35×3 + 147×15 + 1000×3.75 + 600×6 + 10300×0.3
    // = 105 + 2205 + 3750 + 3600 + 3090 = 12750 µ$.
    assert_same_cost(&session, ours_sessions[&session].1, Some(0.01275));

    let ccusage_home = tempfile::tempdir().unwrap();
    let (theirs_sessions, _) =
        theirs(Source::Claude, &home.claude_config(), ccusage_home.path()).unwrap();
    assert_eq!(tokens_only(&theirs_sessions), truth, "ccusage's tokens");
    assert_same_cost(
        &session,
        ours_sessions[&session].1,
        theirs_sessions[&session].1,
    );
}
