//! Side by side with `ccusage` (the pinned version `scripts/install-agents` installs) on the same
//! files: where both are right they agree to the token; where they differ the test names the
//! case, and ours is the hand-computed truth. Runs ccusage offline (its bundled prices).
//!
//! What ccusage 20.0.24 gets right here: one Claude reply over several lines (last usage), a
//! reply copied into a resumed session (counted once, for its maker), Claude sub-agents (under
//! their parent), a Codex fork that names its base, repeated `token_count` events, net input.
//! Where it differs: a model with no price costs $0 in ccusage (unknown in ours); a Codex fork
//! told only by its copied base `session_meta` gets the base's calls counted again; a spawned
//! Codex sub-agent is its own session rather than under the thread that spawned it.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use cross_agent_stores::StoreRoots;
use cross_agent_testkit::agents::{AgentHome, Claude, Codex};
use cross_agent_testkit::ccusage::{self, Source};
use cross_agent_testkit::{ModelEndpoint, Reply, Rule, ScriptedUsage};
use cross_agent_usage::{GroupBy, PriceTable, Report, account, scan};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::claude::assistant;
use super::codex::{F1, F2, S1, T0, store_lines};

/// Tokens as both tools can show them: ccusage has one cache-write count (5 m + 1 h).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Seen {
    input: u64,
    output: u64,
    cache_write: u64,
    cache_read: u64,
}

impl Seen {
    pub(super) fn new(input: u64, output: u64, cache_write: u64, cache_read: u64) -> Seen {
        Seen {
            input,
            output,
            cache_write,
            cache_read,
        }
    }

    fn plus(self, o: Seen) -> Seen {
        Seen::new(
            self.input + o.input,
            self.output + o.output,
            self.cache_write + o.cache_write,
            self.cache_read + o.cache_read,
        )
    }
}

/// A session's tokens and cost in dollars (`None`: unknown).
pub(super) type Sessions = BTreeMap<String, (Seen, Option<f64>)>;

pub(super) fn ours(roots: &StoreRoots) -> Result<(Sessions, Seen)> {
    let found = scan::scan(roots);
    anyhow::ensure!(found.warnings.is_empty(), "{:?}", found.warnings);
    let report = Report::build(
        &account(&found.files),
        &PriceTable::shipped()?,
        GroupBy::Session,
        None,
    );
    let seen = |t: &cross_agent_usage::Tokens| {
        Seen::new(
            t.input,
            t.output,
            t.cache_write_5m + t.cache_write_1h,
            t.cache_read,
        )
    };
    let sessions = report
        .rows
        .iter()
        .map(|r| {
            let cost = r.cost().map(|m| m.0 as f64 / 1e12);
            (r.key.clone(), (seen(&r.tokens), cost))
        })
        .collect();
    Ok((sessions, seen(&report.total.tokens)))
}

fn number(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("ccusage gave no {key} in {v}"))
}

fn seen_of(v: &Value) -> Seen {
    Seen::new(
        number(v, "inputTokens"),
        number(v, "outputTokens"),
        number(v, "cacheCreationTokens"),
        number(v, "cacheReadTokens"),
    )
}

/// ccusage's sessions keyed by session id (Claude: the file's stem; Codex: the rollout's path,
/// whose last 36 characters are the thread id), and its totals.
pub(super) fn theirs(source: Source, store: &Path, home: &Path) -> Result<(Sessions, Seen)> {
    let out = ccusage::sessions(source, store, home)?;
    let (id_key, cost_key) = match source {
        Source::Claude => ("sessionId", "totalCost"),
        Source::Codex => ("sessionFile", "costUSD"),
    };
    let sessions = out["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("ccusage gave no sessions: {out}"))
        .iter()
        .map(|s| {
            let id = s[id_key].as_str().unwrap_or_default();
            let id = &id[id.len().saturating_sub(36)..];
            (id.to_owned(), (seen_of(s), s[cost_key].as_f64()))
        })
        .collect();
    Ok((sessions, seen_of(&out["totals"])))
}

pub(super) fn tokens_only(sessions: &Sessions) -> BTreeMap<String, Seen> {
    sessions.iter().map(|(k, (t, _))| (k.clone(), *t)).collect()
}

pub(super) fn assert_same_cost(session: &str, ours: Option<f64>, theirs: Option<f64>) {
    let (Some(a), Some(b)) = (ours, theirs) else {
        panic!("{session}: cost ours {ours:?}, ccusage {theirs:?}");
    };
    assert!(
        (a - b).abs() < 1e-9,
        "{session}: cost ours {a}, ccusage {b}"
    );
}

fn write(path: &Path, lines: &[String]) -> Result<()> {
    let dir = path.parent().context("a file in a folder")?;
    fs::create_dir_all(dir)?;
    Ok(fs::write(path, lines.join("\n") + "\n")?)
}

fn usage(input: u64, output: u64, w5: u64, w1h: u64, read: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output,
        "cache_creation_input_tokens": w5 + w1h, "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h}})
}

const SONNET: &str = "claude-sonnet-4-5-20250929";
const HAIKU: &str = "claude-haiku-4-5-20251001";

/// Claude: one reply on three lines (partial output first), a reply without the 5 m / 1 h split,
/// a sub-agent, a reply copied into a resumed session, and a model with no price.
#[test]
fn claude_files_agree_with_ccusage_except_the_unpriced_model() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".claude");
    let project = config.join("projects/-work-shop");
    let at = |s: u32| format!("2026-12-01T10:00:{s:02}.000Z");
    write(
        &project.join("p1.jsonl"),
        &[
            assistant(
                "p1",
                "m1",
                "r1",
                &at(0),
                SONNET,
                usage(10, 1, 100, 50, 1000),
                false,
            ),
            assistant(
                "p1",
                "m1",
                "r1",
                &at(1),
                SONNET,
                usage(10, 1, 100, 50, 1000),
                false,
            ),
            assistant(
                "p1",
                "m1",
                "r1",
                &at(2),
                SONNET,
                usage(10, 120, 100, 50, 1000),
                false,
            ),
            assistant(
                "p1",
                "m4",
                "r4",
                &at(3),
                SONNET,
                json!({"input_tokens": 7, "output_tokens": 30,
                    "cache_creation_input_tokens": 40, "cache_read_input_tokens": 0}),
                false,
            ),
        ],
    )
    .unwrap();
    write(
        &project.join("p1/subagents/agent-a1.jsonl"),
        &[assistant(
            "agent-a1",
            "m2",
            "r2",
            &at(5),
            HAIKU,
            usage(200, 20, 0, 0, 0),
            true,
        )],
    )
    .unwrap();
    write(
        &project.join("r9.jsonl"),
        &[
            assistant(
                "r9",
                "m1",
                "r1",
                &at(40),
                SONNET,
                usage(10, 120, 100, 50, 1000),
                false,
            ),
            assistant(
                "r9",
                "m3",
                "r3",
                &at(41),
                SONNET,
                usage(1, 2, 0, 0, 0),
                false,
            ),
        ],
    )
    .unwrap();
    write(
        &project.join("u1.jsonl"),
        &[assistant(
            "u1",
            "m5",
            "r5",
            &at(50),
            "claude-opus-9-9",
            usage(5, 5, 0, 0, 0),
            false,
        )],
    )
    .unwrap();
    let roots = StoreRoots {
        claude_config: Some(config.clone()),
        ..StoreRoots::default()
    };
    let (ours, our_total) = ours(&roots).unwrap();
    let (theirs, their_total) = theirs(Source::Claude, &config, home.path()).unwrap();

    // Hand-computed. p1: m1 (in 10, out 120, writes 150, read 1000) + m4 (7, 30, 40) + the
    // sub-agent's m2 (200, 20). r9: only its own m3 (1, 2). u1: m5 (5, 5).
    let truth = BTreeMap::from([
        ("p1".to_owned(), Seen::new(217, 170, 190, 1000)),
        ("r9".to_owned(), Seen::new(1, 2, 0, 0)),
        ("u1".to_owned(), Seen::new(5, 5, 0, 0)),
    ]);
    assert_eq!(tokens_only(&ours), truth);
    assert_eq!(tokens_only(&theirs), truth, "ccusage's tokens");
    assert_eq!(
        (our_total, their_total),
        (Seen::new(223, 177, 190, 1000), our_total)
    );
    // Both priced: the same cost. Sonnet 4.5 for p1: m1 10×3 + 120×15 + 100×3.75 + 50×6 +
    // 1000×0.3 = 2805 µ$; m4 7×3 + 30×15 + 40×3.75 = 621 µ$; Haiku 4.5 m2 200×1 + 20×5 = 300 µ$.
    assert_eq!(ours["p1"].1, Some(0.003726));
    for session in ["p1", "r9"] {
        assert_same_cost(session, ours[session].1, theirs[session].1);
    }
    // The named difference — an unpriced model: ccusage says $0, ours says unknown.
    assert_eq!((ours["u1"].1, theirs["u1"].1), (None, Some(0.0)));
}

/// Codex: a base thread with a repeated `token_count`, a fork naming its base, a fork told only by
/// its copied base `session_meta`, and a spawned sub-agent (the synthetic store of `codex.rs`).
#[test]
fn codex_files_agree_with_ccusage_except_an_unnamed_fork_and_the_subagent() {
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join(".codex");
    for (name, lines) in store_lines() {
        write(&codex_home.join("sessions/2026/12/01").join(name), &lines).unwrap();
    }
    let roots = StoreRoots {
        codex_home: Some(codex_home.clone()),
        ..StoreRoots::default()
    };
    let (ours, our_total) = ours(&roots).unwrap();
    let (theirs, their_total) = theirs(Source::Codex, &codex_home, home.path()).unwrap();

    // Hand-computed (codex.rs): T0's own calls (in 600+500, out 100+50, read 400+1500), its
    // sub-agent S1 (300, 40); F1's own call (500, 70, read 2000); F2's own call (10, 1).
    let t0_own = Seen::new(1100, 150, 0, 1900);
    let s1 = Seen::new(300, 40, 0, 0);
    let replayed = t0_own;
    assert_eq!(
        tokens_only(&ours),
        BTreeMap::from([
            (T0.to_owned(), t0_own.plus(s1)),
            (F1.to_owned(), Seen::new(500, 70, 0, 2000)),
            (F2.to_owned(), Seen::new(10, 1, 0, 0)),
        ])
    );
    assert_eq!(
        tokens_only(&theirs),
        BTreeMap::from([
            // Agrees: the base's own calls, the repeat not counted twice, input net of cached.
            (T0.to_owned(), t0_own),
            // Agrees: the fork that names its base (`forked_from_id`).
            (F1.to_owned(), Seen::new(500, 70, 0, 2000)),
            // Differs (replay): a fork told only by the copied base `session_meta` gets the
            // base's two calls counted again.
            (F2.to_owned(), Seen::new(10, 1, 0, 0).plus(replayed)),
            // Differs (sub-agent): its own session, not under T0 — the tokens are the same.
            (S1.to_owned(), s1),
        ]),
        "ccusage's tokens"
    );
    assert_eq!(their_total, our_total.plus(replayed));
    // Both priced and both right: the same cost (gpt-5: 750+50+1000 + 625+187.5+500 µ$; F1:
    // 625+250+700 µ$).
    assert_same_cost(T0, Some(0.0031125), theirs[T0].1);
    assert_same_cost(F1, ours[F1].1, theirs[F1].1);
}

/// Files written by the real pinned Claude Code and Codex (a resumed Codex thread): the two agree
/// to the token, and on the cost.
#[test]
fn real_agent_files_agree_with_ccusage_to_the_token() {
    let endpoint = ModelEndpoint::start().unwrap();
    let claude_usage = ScriptedUsage {
        input: 11,
        output: 77,
        cache_write_5m: 300,
        cache_write_1h: 200,
        cache_read: 4000,
        reasoning: 0,
    };
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
        ..ScriptedUsage::default()
    };
    endpoint.script([
        Rule::on_user_text("count me").reply(Reply::text("Counted.").usage(claude_usage)),
        Rule::on_user_text("second turn").reply(Reply::text("Second.").usage(second)),
        Rule::on_user_text("first turn").reply(Reply::text("First.").usage(first)),
    ]);
    let home = AgentHome::new().unwrap();
    let project = home.project("shop").unwrap();
    let claude = Claude::new(&home, &endpoint.anthropic_base_url()).unwrap();
    let session = claude
        .turn(&project, "count me")
        .arg("--model")
        .arg("claude-sonnet-4-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap()
        .session_id()
        .unwrap()
        .to_owned();
    let codex = Codex::new(&home, &endpoint.openai_base_url()).unwrap();
    let thread = codex
        .turn(&project, "first turn")
        .arg("-m")
        .arg("gpt-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap()
        .thread_id()
        .unwrap()
        .to_owned();
    codex
        .turn(&project, "second turn")
        .resume(&thread)
        .arg("-m")
        .arg("gpt-5")
        .run()
        .unwrap()
        .expect_success()
        .unwrap();
    let ccusage_home = tempfile::tempdir().unwrap();

    let claude_roots = StoreRoots {
        claude_config: Some(home.claude_config()),
        ..StoreRoots::default()
    };
    let (ours_claude, _) = ours(&claude_roots).unwrap();
    let (theirs_claude, _) =
        theirs(Source::Claude, &home.claude_config(), ccusage_home.path()).unwrap();
    let truth = BTreeMap::from([(session.clone(), Seen::new(11, 77, 500, 4000))]);
    assert_eq!(tokens_only(&ours_claude), truth);
    assert_eq!(tokens_only(&theirs_claude), truth, "ccusage's tokens");
    assert_same_cost(&session, ours_claude[&session].1, theirs_claude[&session].1);

    let codex_roots = StoreRoots {
        codex_home: Some(codex.codex_home().to_path_buf()),
        ..StoreRoots::default()
    };
    let (ours_codex, _) = ours(&codex_roots).unwrap();
    let (theirs_codex, _) = theirs(Source::Codex, codex.codex_home(), ccusage_home.path()).unwrap();
    // The chosen usage, both turns once (the resume copies nothing counted): input 1000 + 70
    // (net of cached), output 50 + 9 (reasoning within), cache read 600 + 1900.
    let truth = BTreeMap::from([(thread.clone(), Seen::new(1070, 59, 0, 2500))]);
    assert_eq!(tokens_only(&ours_codex), truth);
    assert_eq!(tokens_only(&theirs_codex), truth, "ccusage's tokens");
    assert_same_cost(&thread, ours_codex[&thread].1, theirs_codex[&thread].1);
}
