//! Claude Code reader: discovery, names (last `custom-title` wins), generated titles, sidechain
//! and prompt-less files skipped, running turns, relocation. Fixtures under
//! `tests/fixtures/claude/` are hand-written in the record shapes Claude Code 2.1.332 wrote
//! against the scripted endpoint here (keys, `message.id` shared by a reply's blocks, `stop_reason`
//! on every block record, `custom-title` / `ai-title` / `relocated` records as found in the
//! binary's writer).

use std::path::PathBuf;

use cross_agent_stores::claude::{self, ClaudeFold};
use cross_agent_stores::{Agent, Session, StoreRoots, TranscriptFold, Warnings};
use pretty_assertions::assert_eq;

use super::reader_support::{FixtureHome, fold_file, ms, sessions_of};

const RENAMED: &str = "11111111-1111-4111-8111-111111111111";
const COMMAND_FIRST: &str = "22222222-2222-4222-8222-222222222222";
const AI_TITLE: &str = "33333333-3333-4333-8333-333333333333";
const WORKING: &str = "66666666-6666-4666-8666-666666666666";
const RELOCATED: &str = "77777777-7777-4777-8777-777777777777";
const INTERRUPTED: &str = "88888888-8888-4888-8888-888888888888";

fn transcript(home: &FixtureHome, id: &str) -> PathBuf {
    home.path()
        .join(".claude/projects/-home-u-billing")
        .join(format!("{id}.jsonl"))
}

#[test]
fn lists_every_transcript_except_sidechain_only_and_prompt_less_ones() {
    let home = FixtureHome::new();
    // A sub-agent transcript Claude keeps below the session: not a session of its own.
    let sub = home
        .path()
        .join(".claude/projects/-home-u-billing")
        .join(RENAMED)
        .join("subagents");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("agent-1.jsonl"), "{}\n").unwrap();

    let mut warnings = Warnings::default();
    let files = claude::discover(&home.roots(), &mut warnings);
    assert_eq!(files.len(), 8, "{files:#?}");
    assert!(
        files
            .iter()
            .all(|f| f.agent == Agent::Claude && !f.compressed)
    );

    let ids: Vec<String> = sessions_of::<ClaudeFold>(&files, &mut warnings)
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert_eq!(
        ids,
        vec![
            RENAMED,
            COMMAND_FIRST,
            AI_TITLE,
            WORKING,
            RELOCATED,
            INTERRUPTED
        ]
    );
    assert!(warnings.items.is_empty(), "{:#?}", warnings.items);
}

#[test]
fn renamed_twice_the_last_custom_title_wins() {
    let home = FixtureHome::new();
    let path = transcript(&home, RENAMED);
    let (fold, _, warnings) = fold_file::<ClaudeFold>(&path);
    assert_eq!(
        fold.session(&path),
        Some(Session {
            agent: Agent::Claude,
            session_id: RENAMED.to_owned(),
            cwd: Some(PathBuf::from("/home/u/billing")),
            title: Some("billing-api".to_owned()),
            title_is_assigned: true,
            first_activity: ms("2026-11-20T09:59:59.000Z"),
            last_activity: ms("2026-11-20T10:06:00.000Z"),
            is_working: false,
            path: path.clone(),
            copilot: None,
        })
    );
    assert!(warnings.items.is_empty());
}

#[test]
fn generated_titles_come_from_ai_title_or_the_first_typed_prompt() {
    let home = FixtureHome::new();

    let path = transcript(&home, AI_TITLE);
    let session = fold_file::<ClaudeFold>(&path).0.session(&path).unwrap();
    assert_eq!(session.title.as_deref(), Some("README summary"));
    assert!(!session.title_is_assigned);
    assert_eq!(session.cwd, Some(PathBuf::from("/home/u/web")));

    // The first user records are a command echo and a system reminder: neither is the prompt.
    let path = transcript(&home, COMMAND_FIRST);
    let session = fold_file::<ClaudeFold>(&path).0.session(&path).unwrap();
    assert_eq!(
        session.title.as_deref(),
        Some("Refactor the login form to use hooks")
    );
    assert!(!session.title_is_assigned);
}

#[test]
fn a_turn_is_running_while_the_last_reply_stopped_on_tool_use() {
    let home = FixtureHome::new();
    let path = transcript(&home, WORKING);
    let session = fold_file::<ClaudeFold>(&path).0.session(&path).unwrap();
    assert!(
        session.is_working,
        "tool result back, reply not yet written"
    );

    // The person stopped the tool: the turn is over.
    let path = transcript(&home, INTERRUPTED);
    let session = fold_file::<ClaudeFold>(&path).0.session(&path).unwrap();
    assert!(!session.is_working);
}

#[test]
fn relocation_moves_the_cwd_and_an_empty_custom_title_clears_the_name() {
    let home = FixtureHome::new();
    let path = transcript(&home, RELOCATED);
    let session = fold_file::<ClaudeFold>(&path).0.session(&path).unwrap();
    assert_eq!(session.cwd, Some(PathBuf::from("/home/u/new")));
    assert_eq!(session.title.as_deref(), Some("Move this project"));
    assert!(!session.title_is_assigned);
}

#[test]
fn a_custom_title_appended_later_is_seen_by_a_resumed_fold() {
    let home = FixtureHome::new();
    let path = transcript(&home, AI_TITLE);
    let (mut fold, pos, mut warnings) = fold_file::<ClaudeFold>(&path);

    // Persist the fold as the index would, then append a rename and resume.
    let saved = serde_json::to_string(&fold).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(
        &mut file,
        format!("{{\"type\":\"custom-title\",\"customTitle\":\"readme-bot\",\"sessionId\":\"{AI_TITLE}\"}}\n")
            .as_bytes(),
    )
    .unwrap();
    fold = serde_json::from_str(&saved).unwrap();
    let end = cross_agent_stores::lines::read_complete_lines(&path, pos, &mut fold, &mut warnings)
        .unwrap();
    assert_eq!(end.line, pos.line + 1);
    assert_eq!(end.offset, std::fs::metadata(&path).unwrap().len());
    let session = fold.session(&path).unwrap();
    assert_eq!(session.title.as_deref(), Some("readme-bot"));
    assert!(session.title_is_assigned);
}

#[test]
fn config_root_comes_from_the_environment_then_the_home_folders() {
    let home = tempfile::tempdir().unwrap();
    let no_vars = |_: &str| None;

    // Neither folder exists: ~/.claude.
    let roots = StoreRoots::from_vars(Some(home.path()), no_vars);
    assert_eq!(roots.claude_config, Some(home.path().join(".claude")));

    // Only ~/.config/claude exists: that one.
    std::fs::create_dir_all(home.path().join(".config/claude")).unwrap();
    let roots = StoreRoots::from_vars(Some(home.path()), no_vars);
    assert_eq!(
        roots.claude_config,
        Some(home.path().join(".config/claude"))
    );

    // CLAUDE_CONFIG_DIR wins.
    let roots = StoreRoots::from_vars(Some(home.path()), |name| {
        (name == "CLAUDE_CONFIG_DIR").then(|| "/elsewhere/claude".into())
    });
    assert_eq!(
        roots.claude_config,
        Some(PathBuf::from("/elsewhere/claude"))
    );
    assert_eq!(roots.codex_home, Some(home.path().join(".codex")));
    assert_eq!(roots.grok_home, Some(home.path().join(".grok")));
}

#[test]
fn project_slug_replaces_every_non_alphanumeric() {
    assert_eq!(
        claude::project_slug(std::path::Path::new("/home/u/my_proj.v2")),
        "-home-u-my-proj-v2"
    );
}
