//! The configuration: `providers.toml` (the documented example, bad entries named, unsafe
//! files refused), the shorthand in both its names, which one wins, the timeout's settings,
//! families defaulted and set, and `other_family`.

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use cross_agent_providers::config::{DEFAULT_TIMEOUT, Source, parse_shorthand};
use cross_agent_providers::{CliAgent, Family, Kind, Pool, ProvidersError};
use pretty_assertions::assert_eq;

use super::env;

/// The example in docs/providers.md.
const EXAMPLE: &str = r#"
timeout_secs = 90

[[provider]]
name = "grok"
kind = "chat"
base_url = "https://api.x.ai/v1"
key_var = "XAI_API_KEY"
model = "grok-4"

[[provider]]
name = "sonnet"
kind = "anthropic"
base_url = "https://api.anthropic.com"
key_var = "ANTHROPIC_API_KEY"
model = "claude-sonnet-4-5"
timeout_secs = 60

[[provider]]
name = "ollama"
kind = "chat"
base_url = "http://localhost:11434/v1"
model = "qwen3:8b"

[[provider]]
name = "codex"
kind = "codex-cli"
model = "gpt-5-codex"
env = ["MY_PROXY_TOKEN"]
"#;

fn home_with(text: &str, mode: u32) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("providers.toml");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    home
}

fn summary(pool: &Pool) -> Vec<(String, &'static str, String, Option<String>, Duration)> {
    pool.providers()
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.kind.as_str(),
                p.family.to_string(),
                p.model.clone(),
                p.timeout,
            )
        })
        .collect()
}

#[test]
fn the_documented_example_reads_with_families_and_timeouts() {
    let home = home_with(EXAMPLE, 0o600);
    let pool = Pool::load(Some(home.path()), env(&[])).unwrap();
    let s = |x: &str| x.to_owned();
    assert_eq!(
        summary(&pool),
        vec![
            (
                s("grok"),
                "chat",
                s("xai"),
                Some(s("grok-4")),
                Duration::from_secs(90)
            ),
            (
                s("sonnet"),
                "anthropic",
                s("anthropic"),
                Some(s("claude-sonnet-4-5")),
                Duration::from_secs(60)
            ),
            (
                s("ollama"),
                "chat",
                s("local"),
                Some(s("qwen3:8b")),
                Duration::from_secs(90)
            ),
            (
                s("codex"),
                "codex-cli",
                s("openai"),
                Some(s("gpt-5-codex")),
                Duration::from_secs(90)
            ),
        ]
    );
    assert_eq!(
        pool.source(),
        &Source::File(home.path().join("providers.toml"))
    );
    assert_eq!(pool.get("codex").unwrap().env, vec![s("MY_PROXY_TOKEN")]);
    assert_eq!(pool.get("ollama").unwrap().key_var, None);

    // A session of Anthropic's family may be reviewed by everyone else, in order.
    let others: Vec<&str> = pool
        .other_family(&Family::Anthropic)
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(others, ["grok", "ollama", "codex"]);

    // CROSS_AGENT_PROVIDER_TIMEOUT is below a provider's own and above the file's default.
    let pool = Pool::load(
        Some(home.path()),
        env(&[("CROSS_AGENT_PROVIDER_TIMEOUT", "7")]),
    )
    .unwrap();
    let timeouts: Vec<u64> = pool
        .providers()
        .iter()
        .map(|p| p.timeout.as_secs())
        .collect();
    assert_eq!(timeouts, [7, 60, 7, 7]);
}

#[test]
fn bad_entries_in_the_file_are_named() {
    for (text, expected) in [
        (
            "[[provider]]\nname = \"a\"\nkind = \"anthropic\"\nmodel = \"m\"\nkey_var = \"K\"\n",
            "[[provider]] #1 (a): kind anthropic needs a base_url",
        ),
        (
            "[[provider]]\nkind = \"claude-cli\"\n[[provider]]\nname = \"x\"\nkind = \"chat\"\nbase_url = \"https://example.com/v1\"\nmodel = \"mystery\"\n",
            "[[provider]] #2 (x): cannot tell the family of model \"mystery\"",
        ),
        (
            "[[provider]]\nkind = \"gemini\"\n",
            "unknown kind \"gemini\"",
        ),
        (
            "[[provider]]\nkind = \"codex-cli\"\nmodle = \"m\"\n",
            "unknown field `modle`",
        ),
        (
            "[[provider]]\nname = \"k\"\nkind = \"chat\"\nbase_url = \"https://api.x.ai/v1\"\nmodel = \"grok-4\"\nkey_var = \"xai-abc123\"\n",
            "key_var \"xai-abc123\" is not a variable name",
        ),
        (
            "[[provider]]\nkind = \"claude-cli\"\n[[provider]]\nkind = \"claude-cli\"\n",
            "a provider named \"claude-cli\" is already listed",
        ),
    ] {
        let home = home_with(text, 0o600);
        let error = Pool::load(Some(home.path()), env(&[])).unwrap_err();
        let shown = error.to_string();
        assert!(matches!(error, ProvidersError::BadFile { .. }), "{shown}");
        assert!(shown.contains("providers.toml"), "{shown}");
        assert!(shown.contains(expected), "{shown} does not say {expected}");
    }
}

#[test]
fn an_unsafe_file_is_refused_naming_the_path_and_the_fix() {
    let home = home_with(EXAMPLE, 0o620);
    let error = Pool::load(Some(home.path()), env(&[]))
        .unwrap_err()
        .to_string();
    let path = home.path().join("providers.toml");
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert!(error.contains("writable by group or others"), "{error}");
    assert!(error.contains("chmod go-w"), "{error}");

    // A symbolic link, even to a good file, is refused.
    let home = tempfile::tempdir().unwrap();
    let real = home.path().join("real.toml");
    std::fs::write(&real, EXAMPLE).unwrap();
    std::os::unix::fs::symlink(&real, home.path().join("providers.toml")).unwrap();
    let error = Pool::load(Some(home.path()), env(&[]))
        .unwrap_err()
        .to_string();
    assert!(error.contains("providers.toml"), "{error}");
    assert!(error.contains("symbolic link"), "{error}");
    assert!(error.contains("remove the link"), "{error}");
}

#[test]
fn the_shorthand_reads_every_kind() {
    let providers = parse_shorthand(
        "CROSS_AGENT_PROVIDERS",
        "anthropic https://api.anthropic.com/ ANTHROPIC_API_KEY claude-opus-4-1; \
         openai https://api.openai.com/v1 OPENAI_API_KEY gpt-5; \
         chat https://openrouter.ai/api/v1 OPENROUTER_API_KEY google/gemini-2.5-pro; \
         chat http://127.0.0.1:8080/v1 - local-model; \
         chat https://llm.example.com/v1 K m deepseek; \
         codex-cli; claude-cli sonnet; claude-cli",
        DEFAULT_TIMEOUT,
    )
    .unwrap();
    type Row = (String, Kind, String, Option<String>, Option<String>);
    let got: Vec<Row> = providers
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.kind,
                p.family.to_string(),
                p.base_url.clone(),
                p.key_var.clone(),
            )
        })
        .collect();
    let s = |x: &str| x.to_owned();
    assert_eq!(
        got,
        vec![
            (
                s("anthropic:claude-opus-4-1"),
                Kind::Anthropic,
                s("anthropic"),
                Some(s("https://api.anthropic.com")),
                Some(s("ANTHROPIC_API_KEY"))
            ),
            (
                s("openai:gpt-5"),
                Kind::Responses,
                s("openai"),
                Some(s("https://api.openai.com/v1")),
                Some(s("OPENAI_API_KEY"))
            ),
            (
                s("chat:google/gemini-2.5-pro"),
                Kind::Chat,
                s("google"),
                Some(s("https://openrouter.ai/api/v1")),
                Some(s("OPENROUTER_API_KEY"))
            ),
            (
                s("chat:local-model"),
                Kind::Chat,
                s("local"),
                Some(s("http://127.0.0.1:8080/v1")),
                None
            ),
            (
                s("chat:m"),
                Kind::Chat,
                s("deepseek"),
                Some(s("https://llm.example.com/v1")),
                Some(s("K"))
            ),
            (
                s("codex-cli"),
                Kind::Cli(CliAgent::Codex),
                s("openai"),
                None,
                None
            ),
            (
                s("claude-cli:sonnet"),
                Kind::Cli(CliAgent::Claude),
                s("anthropic"),
                None,
                None
            ),
            (
                s("claude-cli"),
                Kind::Cli(CliAgent::Claude),
                s("anthropic"),
                None,
                None
            ),
        ]
    );
    // The old form names an attempt as it always did.
    assert_eq!(
        providers[0].describe(),
        "provider anthropic (claude-opus-4-1)"
    );
    assert_eq!(providers[5].describe(), "codex exec");
}

#[test]
fn bad_shorthand_entries_are_named() {
    for (text, expected) in [
        ("anthropic https://a K", "\"anthropic https://a K\""),
        ("grok https://api.x.ai/v1 K grok-4", "unknown kind \"grok\""),
        ("codex-cli gpt-5 extra", "a CLI takes at most a model"),
        ("anthropic https://a - m", "kind anthropic needs key_var"),
        ("chat ftp://x K m", "not an http:// or https:// URL"),
    ] {
        let error = parse_shorthand(
            "CROSS_AGENT_PROVIDERS",
            &format!("codex-cli; {text}"),
            DEFAULT_TIMEOUT,
        )
        .unwrap_err()
        .to_string();
        assert!(error.starts_with("CROSS_AGENT_PROVIDERS: "), "{error}");
        assert!(error.contains(expected), "{error} does not say {expected}");
        assert!(
            !error.contains("codex-cli;"),
            "only the bad entry is quoted: {error}"
        );
    }
}

#[test]
fn the_variable_wins_over_the_file_and_the_new_name_over_the_old() {
    let home = home_with(EXAMPLE, 0o600);
    let names =
        |pool: Pool| -> Vec<String> { pool.providers().iter().map(|p| p.name.clone()).collect() };
    let pool = Pool::load(
        Some(home.path()),
        env(&[("CROSS_AGENT_HANDOFF_PROVIDERS", "claude-cli")]),
    )
    .unwrap();
    assert_eq!(
        pool.source(),
        &Source::Variable("CROSS_AGENT_HANDOFF_PROVIDERS")
    );
    assert_eq!(names(pool), ["claude-cli"]);
    let pool = Pool::load(
        Some(home.path()),
        env(&[
            ("CROSS_AGENT_HANDOFF_PROVIDERS", "claude-cli"),
            ("CROSS_AGENT_PROVIDERS", "codex-cli"),
            ("CROSS_AGENT_PROVIDER_TIMEOUT", "3"),
        ]),
    )
    .unwrap();
    assert_eq!(pool.source(), &Source::Variable("CROSS_AGENT_PROVIDERS"));
    assert_eq!(pool.providers()[0].timeout, Duration::from_secs(3));
    assert_eq!(names(pool), ["codex-cli"]);
    // No variable, no file: an empty pool. A bad timeout is named.
    let empty = tempfile::tempdir().unwrap();
    assert!(
        Pool::load(Some(empty.path()), env(&[]))
            .unwrap()
            .providers()
            .is_empty()
    );
    let error = Pool::load(None, env(&[("CROSS_AGENT_PROVIDER_TIMEOUT", "soon")]))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("CROSS_AGENT_PROVIDER_TIMEOUT") && error.contains("\"soon\""),
        "{error}"
    );
}
