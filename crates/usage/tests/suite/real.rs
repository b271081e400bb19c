//! Files written by the real pinned Claude Code and Codex, run offline against the scripted
//! model endpoint, which reports the usage each test chooses; totals checked against it.

use cross_agent_stores::StoreRoots;
use cross_agent_testkit::agents::{AgentHome, Claude, Codex};
use cross_agent_testkit::{ModelEndpoint, Reply, Rule, ScriptedUsage};
use cross_agent_usage::{GroupBy, PriceTable, Report, Tokens, account, scan};
use pretty_assertions::assert_eq;

/// Claude Code 2.1.332 writes the reply's usage, 5 m / 1 h cache split included, and the model.
#[test]
fn real_claude_code_usage_is_read_to_the_token() {
    let endpoint = ModelEndpoint::start().unwrap();
    let chosen = ScriptedUsage {
        input: 11,
        output: 77,
        cache_write_5m: 300,
        cache_write_1h: 200,
        cache_read: 4000,
        reasoning: 0,
    };
    endpoint.script([Rule::on_user_text("count me").reply(Reply::text("Counted.").usage(chosen))]);
    let home = AgentHome::new().unwrap();
    let project = home.project("shop").unwrap();
    let claude = Claude::new(&home, &endpoint.anthropic_base_url()).unwrap();
    let run = claude
        .turn(&project, "count me")
        .arg("--model")
        .arg("claude-sonnet-4-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let session = run.session_id().unwrap().to_owned();

    let roots = StoreRoots {
        claude_config: Some(home.claude_config()),
        ..StoreRoots::default()
    };
    let found = scan::scan(&roots);
    assert_eq!(found.warnings, Vec::<String>::new());
    let acc = account(&found.files);
    let report = Report::build(
        &acc,
        &PriceTable::shipped().unwrap(),
        GroupBy::Session,
        None,
    );
    assert_eq!(report.rows.len(), 1, "{:#?}", acc.chunks);
    let row = &report.rows[0];
    assert_eq!(row.key, session);
    assert_eq!(
        row.tokens,
        Tokens {
            input: 11,
            output: 77,
            cache_write_5m: 300,
            cache_write_1h: 200,
            cache_read: 4000
        }
    );
    // Sonnet 4.5: 11×3 + 77×15 + 300×3.75 + 200×6 + 4000×0.3 = 33+1155+1125+1200+1200 = 4713 µ$.
    assert_eq!(row.cost().map(|m| m.micro_dollars()), Some(4713));
}

/// Codex 0.171.0 writes `token_count` events; a resumed thread's second turn counts once beside
/// the first (nothing replayed is counted twice), input net of cached input.
#[test]
fn real_codex_usage_is_read_to_the_token_across_a_resume() {
    let endpoint = ModelEndpoint::start().unwrap();
    let first = ScriptedUsage {
        input: 1000,
        cache_read: 600,
        output: 50,
        reasoning: 20,
        ..ScriptedUsage::default()
    };
    let second = ScriptedUsage {
        input: 70,
        cache_read: 1900,
        output: 9,
        reasoning: 0,
        ..ScriptedUsage::default()
    };
    endpoint.script([
        Rule::on_user_text("second turn").reply(Reply::text("Second.").usage(second)),
        Rule::on_user_text("first turn").reply(Reply::text("First.").usage(first)),
    ]);
    let home = AgentHome::new().unwrap();
    let project = home.project("shop").unwrap();
    let codex = Codex::new(&home, &endpoint.openai_base_url()).unwrap();
    let run = codex
        .turn(&project, "first turn")
        .arg("-m")
        .arg("gpt-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let thread = run.thread_id().unwrap().to_owned();
    codex
        .turn(&project, "second turn")
        .resume(&thread)
        .arg("-m")
        .arg("gpt-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();

    let roots = StoreRoots {
        codex_home: Some(codex.codex_home().to_path_buf()),
        ..StoreRoots::default()
    };
    let found = scan::scan(&roots);
    let acc = account(&found.files);
    let report = Report::build(
        &acc,
        &PriceTable::shipped().unwrap(),
        GroupBy::Session,
        None,
    );
    assert_eq!(report.rows.len(), 1, "{:#?}", acc.chunks);
    let row = &report.rows[0];
    assert_eq!((row.key.as_str(), row.calls), (thread.as_str(), 2));
    assert_eq!(
        row.tokens,
        Tokens {
            input: 1070,
            output: 59,
            cache_read: 2500,
            ..Tokens::default()
        }
    );
    // gpt-5: 1070×1.25 + 2500×0.125 + 59×10 = 1337.5 + 312.5 + 590 = 2240 µ$.
    assert_eq!(row.cost().map(|m| m.micro_dollars()), Some(2240));
}
