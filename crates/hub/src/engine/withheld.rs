//! Naming a variable the bridge withheld when a relay fails for want of it (docs/spec/cross-agent-mcp.md §7, "What
//! a spawned agent CLI inherits": "If a CLI relay fails and an obvious auth variable was
//! withheld, the error says so and names it").
//!
//! The thin process reports every name it withheld, whatever it is called (never a value). A
//! failed relay names the ones that matter, found three ways, surest first:
//!
//! - the failure's own words name one (Codex: "Missing environment variable: `ACC_KEY`"; the
//!   same for Claude or Grok whenever their text names a variable);
//! - for Codex, the selected model provider's `env_key` in the child's `config.toml` is one, so
//!   the hint is there however Codex words its error;
//! - the failure looks like an authentication failure and a withheld name looks like a
//!   credential.

use std::ffi::OsString;
use std::path::PathBuf;

use cross_agent_caller::env::may_authenticate;
use cross_agent_protocol::settings as var;
use cross_agent_stores::StoreRoots;
use cross_agent_stores::codex_config::{self, ProviderKey};

use crate::Agent;
use crate::records::Job;

/// The longest provider id quoted in a hint; a longer or stranger one is left out (it comes
/// from a file, and the hint is one line of a record).
const MAX_QUOTED_PROVIDER_CHARS: usize = 40;

/// The sentence to lead a failed relay's error with when a variable the baseline withheld from
/// the peer is why it failed (see the module header), naming it and how to pass it. `None` when
/// nothing withheld is in question.
pub(super) fn withheld_hint(agent: Agent, detail: &str, stderr: &str, job: &Job) -> Option<String> {
    if job.withheld_env.is_empty() {
        return None;
    }
    let text = format!("{detail}\n{stderr}");
    // Only names that print as they are: a name is quoted into a record a person reads.
    let withheld: Vec<&str> = job
        .withheld_env
        .iter()
        .map(String::as_str)
        .filter(|name| name.chars().all(|c| c.is_ascii_graphic()))
        .collect();
    let provider = match agent {
        Agent::Codex => {
            codex_provider_key(job).filter(|key| withheld.contains(&key.env_key.as_str()))
        }
        Agent::Claude | Agent::Grok | Agent::Copilot => None,
    };
    let named: Vec<&str> = withheld
        .iter()
        .copied()
        .filter(|name| {
            names_variable(&text, name) || provider.as_ref().is_some_and(|p| p.env_key == *name)
        })
        .collect();
    if !named.is_empty() {
        let mut hint = withheld_from(agent, &named, job);
        if let Some(provider) = &provider {
            let from = if named.len() == 1 {
                "it"
            } else {
                provider.env_key.as_str()
            };
            hint.push_str(&format!(" ({} {from})", reads_its_key_from(provider)));
        }
        return Some(hint);
    }
    if !looks_like_auth(&text) {
        return None;
    }
    let credentials: Vec<&str> = withheld
        .iter()
        .copied()
        .filter(|name| may_authenticate(name))
        .collect();
    let prefixes: &[&str] = match agent {
        Agent::Claude => &["ANTHROPIC_", "CLAUDE_", "AWS_", "GOOGLE_", "VERTEX"],
        Agent::Codex => &["OPENAI_", "CODEX_", "AZURE_"],
        Agent::Grok => &["XAI_", "GROK_"],
        Agent::Copilot => &["GITHUB_", "COPILOT_", "GH_"],
    };
    let likely: Vec<&str> = credentials
        .iter()
        .copied()
        .filter(|name| {
            prefixes.iter().any(|p| name.starts_with(p))
                || name.to_ascii_lowercase().contains("proxy")
        })
        .collect();
    let names = if likely.is_empty() {
        credentials
    } else {
        likely
    };
    if names.is_empty() {
        return None;
    }
    Some(format!(
        "this looks like an authentication failure, and {}",
        withheld_from(agent, &names, job)
    ))
}

/// "cross-agent withheld X from the spawned codex CLI; pass it with CROSS_AGENT_CHILD_ENV=X in
/// the env of the sender's cross-agent registration". The setting shown keeps the names the
/// registration already passes, so it can be copied as it is.
fn withheld_from(agent: Agent, names: &[&str], job: &Job) -> String {
    let it = if names.len() == 1 { "it" } else { "them" };
    let mut passed: Vec<&str> = job
        .settings
        .get(var::CHILD_ENV)
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .collect()
        })
        .unwrap_or_default();
    for name in names {
        if !passed.contains(name) {
            passed.push(name);
        }
    }
    format!(
        "cross-agent withheld {} from the spawned {agent} CLI; pass {it} with {}={} in the env \
         of the sender's cross-agent registration",
        names.join(", "),
        var::CHILD_ENV,
        passed.join(",")
    )
}

/// "Codex's provider `acc` reads its key from", the id left out when it is not a plain one.
/// Short: the hint should fit the one-line summaries of the error.
fn reads_its_key_from(provider: &ProviderKey) -> String {
    let plain = provider.provider.chars().count() <= MAX_QUOTED_PROVIDER_CHARS
        && provider
            .provider
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if plain {
        format!(
            "Codex's provider `{}` reads its key from",
            provider.provider
        )
    } else {
        "Codex's model provider reads its key from".to_owned()
    }
}

/// The key variable of the provider the spawned Codex used: its `config.toml` is the one under
/// the child's own `CODEX_HOME` (else `HOME/.codex`), as the child's environment says.
fn codex_provider_key(job: &Job) -> Option<ProviderKey> {
    let child_var = |name: &str| {
        job.bridge_env
            .get(name)
            .or_else(|| job.child_env.get(name))
            .filter(|value| !value.is_empty())
    };
    let home = child_var("HOME").map(PathBuf::from);
    let roots = StoreRoots::from_vars(home.as_deref(), |name| child_var(name).map(OsString::from));
    codex_config::provider_key(roots.codex_home.as_deref()?)
}

/// Whether `text` names the variable `name` as a word of its own (not inside a longer name).
/// A name with no letter (`_`) names nothing.
fn names_variable(text: &str, name: &str) -> bool {
    if !name.chars().any(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_name_char) && !after.is_some_and(is_name_char)
    })
}

fn looks_like_auth(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    [
        "401",
        "403",
        "unauthorized",
        "authentication",
        "api key",
        "api_key",
        "invalid x-api-key",
        "not logged in",
        "login",
        "credential",
        "proxy",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pretty_assertions::assert_eq;

    use super::*;

    /// A job as far as the hint reads it: the names withheld, the child's environment and the
    /// registration's settings.
    fn job_with(
        withheld: &[&str],
        child_env: BTreeMap<String, String>,
        settings: BTreeMap<String, String>,
    ) -> Job {
        Job {
            body: String::new(),
            raw: false,
            settings,
            child_env,
            bridge_env: BTreeMap::new(),
            cwd: "/".into(),
            new_session_id: None,
            timeout_secs: 60,
            withheld_env: withheld.iter().map(|n| (*n).to_owned()).collect(),
            pin_cwd_key: String::new(),
            panel: None,
            native: None,
            agent_host: None,
            copilot_return: None,
        }
    }

    fn job(withheld: &[&str]) -> Job {
        job_with(withheld, BTreeMap::new(), BTreeMap::new())
    }

    /// A job whose child's `CODEX_HOME` holds `config`.
    fn codex_job(withheld: &[&str], config: &str) -> (tempfile::TempDir, Job) {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let env = BTreeMap::from([(
            "CODEX_HOME".to_owned(),
            home.path().to_string_lossy().into_owned(),
        )]);
        let job = job_with(withheld, env, BTreeMap::new());
        (home, job)
    }

    #[test]
    fn a_failure_naming_a_withheld_variable_names_only_it() {
        let hint = withheld_hint(
            Agent::Codex,
            "Missing environment variable: `ACC_KEY`.",
            "",
            &job(&["ACC_KEY_2", "ACC_KEY", "EDITOR", "GITHUB_TOKEN"]),
        );
        assert_eq!(
            hint.as_deref(),
            Some(
                "cross-agent withheld ACC_KEY from the spawned codex CLI; pass it with \
                 CROSS_AGENT_CHILD_ENV=ACC_KEY in the env of the sender's cross-agent \
                 registration"
            )
        );
    }

    #[test]
    fn the_setting_shown_keeps_what_the_registration_already_passes() {
        let settings = BTreeMap::from([(var::CHILD_ENV.to_owned(), " SCRIPTED_KEY ,,".to_owned())]);
        let job = job_with(&["GROK_GATEWAY", "OTHER"], BTreeMap::new(), settings);
        let hint = withheld_hint(Agent::Grok, "GROK_GATEWAY is not set", "", &job).unwrap();
        assert!(
            hint.ends_with(
                "pass it with CROSS_AGENT_CHILD_ENV=SCRIPTED_KEY,GROK_GATEWAY in the env of the \
                 sender's cross-agent registration"
            ),
            "{hint}"
        );
        assert!(hint.contains("from the spawned grok CLI"), "{hint}");
    }

    #[test]
    fn codex_configs_key_variable_is_named_whatever_codex_says() {
        let config = "profile = \"work\"\nmodel_provider = \"home\"\n\
                      [profiles.work]\nmodel_provider = \"acc\"\n\
                      [model_providers.home]\nenv_key = \"HOME_KEY\"\n\
                      [model_providers.acc]\nenv_key = \"ACC_KEY\"\n";
        let (_home, job) = codex_job(&["ACC_KEY", "EDITOR", "HOME_KEY"], config);
        let hint = withheld_hint(Agent::Codex, "stream disconnected", "", &job);
        assert_eq!(
            hint.as_deref(),
            Some(
                "cross-agent withheld ACC_KEY from the spawned codex CLI; pass it with \
                 CROSS_AGENT_CHILD_ENV=ACC_KEY in the env of the sender's cross-agent \
                 registration (Codex's provider `acc` reads its key from it)"
            )
        );
        // With another name the failure gives, the provider's key is named outright.
        let hint = withheld_hint(Agent::Codex, "EDITOR is unset", "", &job).unwrap();
        assert!(
            hint.starts_with(
                "cross-agent withheld ACC_KEY, EDITOR from the spawned codex CLI; \
                 pass them with CROSS_AGENT_CHILD_ENV=ACC_KEY,EDITOR in"
            ) && hint.ends_with("(Codex's provider `acc` reads its key from ACC_KEY)"),
            "{hint}"
        );
        // Not Codex: its config is not what the peer read.
        assert_eq!(
            withheld_hint(Agent::Claude, "stream disconnected", "", &job),
            None
        );
    }

    #[test]
    fn a_key_variable_the_child_had_or_a_bad_config_adds_nothing() {
        let config = "model_provider = \"acc\"\n[model_providers.acc]\nenv_key = \"ACC_KEY\"\n";
        let (_home, job) = codex_job(&["EDITOR"], config);
        assert_eq!(withheld_hint(Agent::Codex, "it broke", "", &job), None);
        let (_home, job) = codex_job(&["ACC_KEY"], "model_provider = [\n");
        assert_eq!(withheld_hint(Agent::Codex, "it broke", "", &job), None);
        // A strange provider id is not quoted; the key still is.
        let config = "model_provider = \"a\\u001b[31m\"\n\
                      [model_providers.\"a\\u001b[31m\"]\nenv_key = \"ACC_KEY\"\n";
        let (_home, job) = codex_job(&["ACC_KEY"], config);
        let hint = withheld_hint(Agent::Codex, "it broke", "", &job).unwrap();
        assert!(
            hint.ends_with("(Codex's model provider reads its key from it)"),
            "{hint}"
        );
    }

    #[test]
    fn an_auth_failure_names_the_likely_credentials_only() {
        let hint = withheld_hint(
            Agent::Claude,
            "Invalid API key · Please run /login",
            "",
            &job(&["ANTHROPIC_AUTH_TOKEN", "EDITOR", "GITHUB_TOKEN"]),
        )
        .unwrap();
        assert_eq!(
            hint,
            "this looks like an authentication failure, and cross-agent withheld \
             ANTHROPIC_AUTH_TOKEN from the spawned claude CLI; pass it with \
             CROSS_AGENT_CHILD_ENV=ANTHROPIC_AUTH_TOKEN in the env of the sender's cross-agent \
             registration"
        );
        // No likely one: every credential, never an ordinary name.
        let hint = withheld_hint(
            Agent::Codex,
            "401 Unauthorized",
            "",
            &job(&["EDITOR", "GITHUB_TOKEN"]),
        )
        .unwrap();
        assert!(hint.contains("withheld GITHUB_TOKEN from"), "{hint}");
        assert_eq!(
            withheld_hint(
                Agent::Codex,
                "401 Unauthorized",
                "",
                &job(&["EDITOR", "PAGER"])
            ),
            None
        );
    }

    #[test]
    fn nothing_withheld_or_an_unrelated_failure_adds_nothing() {
        assert_eq!(
            withheld_hint(
                Agent::Codex,
                "Missing environment variable: `X`",
                "",
                &job(&[])
            ),
            None
        );
        assert_eq!(
            withheld_hint(
                Agent::Codex,
                "the model refused",
                "",
                &job(&["OPENAI_API_KEY", "_", "EDITOR"])
            ),
            None
        );
        assert_eq!(
            withheld_hint(Agent::Codex, "a_b _ c", "", &job(&["_"])),
            None,
            "a name without a letter names nothing"
        );
        assert_eq!(
            withheld_hint(
                Agent::Codex,
                "K\u{1b}[2J is unset",
                "",
                &job(&["K\u{1b}[2J"])
            ),
            None,
            "a name that does not print as it is, is never quoted"
        );
    }
}
