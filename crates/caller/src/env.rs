//! The environment rules: which variables are this registration's settings, and which a spawned
//! peer CLI may inherit (docs/spec/cross-agent-mcp.md "What a spawned agent CLI inherits").
//!
//! A peer CLI does not get the caller's environment: an editor hands every MCP server all it
//! has collected (API keys, cloud credentials, an ssh-agent socket), and forwarding that would
//! give it to the peer and to every command the peer runs. The child gets a named baseline,
//! plus what `CROSS_AGENT_CHILD_ENV` names. The name of every variable that was present but
//! withheld is reported (never its value), whatever it is called: a provider may read its key
//! from any name (Codex's `env_key = "ACC_KEY"`), so a failure that names a variable can be
//! told it was cross-agent that withheld it, and how to pass it.

use std::collections::BTreeMap;

use cross_agent_protocol::settings as var;

/// Named baseline: finding and running the binary, locale and terminal, where the CLIs keep
/// state, reaching the network through a proxy and trusting its CA, macOS Core Foundation, and
/// the session stores the bridge resolves against.
const BASELINE: &[&str] = &[
    "PATH",
    "HOME",
    "SHELL",
    "USER",
    "LOGNAME",
    "LANG",
    "TERM",
    "COLORTERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "__CF_USER_TEXT_ENCODING",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GROK_HOME",
    "COPILOT_HOME",
];

/// Baseline families: `LC_*` (locale) and `XDG_*` (state roots).
const BASELINE_PREFIXES: &[&str] = &["LC_", "XDG_"];

/// Proxy variables whose value is a URL that may carry a username and password.
const PROXY_VARS: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// `CROSS_AGENT_*` names that say who the caller *is*, not how the bridge is configured. A
/// child must work out its own identity (docs/spec/cross-agent-mcp.md: `CROSS_AGENT_SELF` is deliberately not
/// inherited); the bridge sets the self-session and conversation of a turn it starts itself.
const IDENTITY_SETTINGS: &[&str] = &[var::SELF, var::SELF_SESSION, var::CONVERSATION_ID];

/// Names that say which session the caller is, read by the thin process itself. Not reported
/// as withheld: the advice to pass one would make a child claim its caller's identity.
const IDENTITY_VARS: &[&str] = &[
    crate::CLAUDE_SESSION_VAR,
    crate::GROK_SESSION_VAR,
    crate::COPILOT_SESSION_VAR,
];

/// Obvious credentials, by exact name: what an authentication failure that names no variable
/// is pointed at.
const AUTH_NAMES: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "XAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "SSH_AUTH_SOCK",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "COPILOT_AGENT_SESSION_ID",
];

/// Obvious credential families, by prefix.
const AUTH_PREFIXES: &[&str] = &["AWS_", "AZURE_"];

/// Obvious credential families, by suffix (`GITHUB_TOKEN`, `NPM_TOKEN`, `FOO_API_KEY`, …).
const AUTH_SUFFIXES: &[&str] = &[
    "_TOKEN",
    "_API_KEY",
    "_APIKEY",
    "_SECRET",
    "_SECRET_KEY",
    "_PASSWORD",
    "_CREDENTIALS",
];

/// Every `CROSS_AGENT_*` variable: this registration's settings. Each registration guards its
/// own side, whatever the daemon was started with, so all of them travel with every call.
pub fn settings(vars: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    vars.iter()
        .filter(|(name, _)| name.starts_with(var::PREFIX))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// The environment a spawned peer CLI may inherit, and the names withheld from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnv {
    /// Name → value, for the child only.
    pub vars: BTreeMap<String, String>,
    /// Every name present here but not passed (credential-bearing proxies, obvious
    /// credentials, and any other variable outside the baseline not opted in), except the
    /// caller's identity. Names only, sorted.
    pub withheld: Vec<String>,
}

/// Applies the baseline, the credential-proxy rule and the `CROSS_AGENT_CHILD_ENV` opt-in.
pub fn child_env(vars: &BTreeMap<String, String>) -> ChildEnv {
    let opted_in = opted_in(vars);
    let mut child = ChildEnv::default();
    for (name, value) in vars {
        if name == crate::COPILOT_SESSION_VAR {
            // The Copilot SDK's binding of this MCP process to its session: a peer CLI must
            // never inherit it, even named in CROSS_AGENT_CHILD_ENV (it would claim to be
            // the caller's Copilot session).
            continue;
        }
        if opted_in.iter().any(|wanted| wanted == name) {
            // Named knowingly: passed as it is, even a credential or a proxy with a password.
            child.vars.insert(name.clone(), value.clone());
        } else if in_baseline(name) {
            if PROXY_VARS.contains(&name.as_str()) && proxy_has_credentials(value) {
                // Withheld whole, never rewritten without its credentials: a CLI handed a proxy
                // it cannot authenticate to would fail as if the proxy were broken.
                child.withheld.push(name.clone());
            } else {
                child.vars.insert(name.clone(), value.clone());
            }
        } else if !is_identity(name) {
            // Whatever it is called: a provider may read its key from any name.
            child.withheld.push(name.clone());
        }
    }
    child.withheld.sort();
    child
}

/// The names in `CROSS_AGENT_CHILD_ENV`, trimmed, blanks dropped.
fn opted_in(vars: &BTreeMap<String, String>) -> Vec<String> {
    vars.get(var::CHILD_ENV)
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Who the caller is: the bridge gives a child its own identity, so these are never advice.
fn is_identity(name: &str) -> bool {
    IDENTITY_SETTINGS.contains(&name) || IDENTITY_VARS.contains(&name)
}

fn in_baseline(name: &str) -> bool {
    if name.starts_with(var::PREFIX) {
        return !IDENTITY_SETTINGS.contains(&name);
    }
    BASELINE.contains(&name) || BASELINE_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Whether a name is an obvious credential: what an authentication failure that names no
/// variable may have needed.
pub fn looks_like_auth(name: &str) -> bool {
    AUTH_NAMES.contains(&name)
        || AUTH_PREFIXES.iter().any(|p| name.starts_with(p))
        || AUTH_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Whether a withheld name may be why a CLI could not authenticate: an obvious credential, or
/// a proxy variable (one in the baseline is withheld only when its URL carries credentials).
pub fn may_authenticate(name: &str) -> bool {
    looks_like_auth(name) || PROXY_VARS.contains(&name)
}

/// Whether a proxy URL carries credentials: `https://alice:s3cret@proxy:3128`, or scheme-less
/// `user:pass@host:8080`. Any userinfo counts, a lone token as user (`https://tok@proxy`)
/// included: it authenticates just the same.
pub fn proxy_has_credentials(value: &str) -> bool {
    let value = value.trim();
    let rest = match value.find("://") {
        Some(at) => &value[at + 3..],
        None => value,
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    match authority.rfind('@') {
        Some(at) => at > 0,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn proxy_credentials_are_seen_with_and_without_scheme() {
        assert!(proxy_has_credentials(
            "https://alice:s3cret@proxy.corp:3128"
        ));
        assert!(proxy_has_credentials("user:pass@host:8080"));
        assert!(proxy_has_credentials("http://token@proxy:3128/"));
        assert!(!proxy_has_credentials("http://proxy.corp:3128"));
        assert!(!proxy_has_credentials("proxy.corp:3128"));
        assert!(!proxy_has_credentials("http://proxy:3128/path@x"));
        assert!(!proxy_has_credentials(""));
    }

    #[test]
    fn settings_are_every_cross_agent_variable() {
        let env = vars(&[
            (var::MAX_HOPS, "2"),
            (var::SELF, "claude"),
            ("PATH", "/bin"),
        ]);
        assert_eq!(
            settings(&env),
            vars(&[(var::MAX_HOPS, "2"), (var::SELF, "claude")])
        );
    }

    #[test]
    fn every_name_outside_the_baseline_is_reported_withheld_but_not_who_the_caller_is() {
        let env = vars(&[
            ("PATH", "/bin"),
            ("ACC_KEY", "k-1"),
            ("EDITOR", "vi"),
            ("GITHUB_TOKEN", "ghp"),
            ("CLAUDE_CODE_SESSION_ID", "c-1"),
            ("GROK_SESSION_ID", "g-1"),
            (var::SELF, "claude"),
            (var::SELF_SESSION, "claude:c-1"),
            (var::CHILD_ENV, "EDITOR"),
        ]);
        let child = child_env(&env);
        assert_eq!(child.withheld, vec!["ACC_KEY", "GITHUB_TOKEN"]);
        assert_eq!(
            child.vars.keys().collect::<Vec<_>>(),
            vec![var::CHILD_ENV, "EDITOR", "PATH"]
        );
    }

    #[test]
    fn a_proxy_or_a_credential_may_authenticate_an_ordinary_name_is_not_guessed() {
        for name in ["HTTPS_PROXY", "all_proxy", "OPENAI_API_KEY", "AWS_PROFILE"] {
            assert!(may_authenticate(name), "{name}");
        }
        for name in ["ACC_KEY", "EDITOR", "NO_PROXY"] {
            assert!(!may_authenticate(name), "{name}");
        }
    }

    #[test]
    fn auth_names_are_recognised() {
        for name in [
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "SSH_AUTH_SOCK",
            "XAI_API_KEY",
        ] {
            assert!(looks_like_auth(name), "{name}");
        }
        for name in ["PATH", "EDITOR", "TOKENIZERS_PARALLELISM"] {
            assert!(!looks_like_auth(name), "{name}");
        }
    }
}
