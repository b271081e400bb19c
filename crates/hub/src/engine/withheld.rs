//! Naming a variable the bridge withheld when a relay fails for want of it (spec 004 §7, "What
//! a spawned agent CLI inherits": "If a CLI relay fails and an obvious auth variable was
//! withheld, the error says so and names it").

use crate::Agent;

/// What to add to a failed relay's error when the caller's environment had variables the
/// baseline withheld from the peer and the failure points at one: the failure names it (Codex:
/// "Missing environment variable: `ACC_KEY`"), or it looks like an authentication failure and
/// a withheld variable is one the agent may authenticate with. `None` otherwise.
pub(super) fn withheld_hint(
    agent: Agent,
    detail: &str,
    stderr: &str,
    withheld: &[String],
) -> Option<String> {
    if withheld.is_empty() {
        return None;
    }
    let text = format!("{detail}\n{stderr}");
    let named: Vec<&str> = withheld
        .iter()
        .map(String::as_str)
        .filter(|name| names_variable(&text, name))
        .collect();
    if !named.is_empty() {
        return Some(format!(". {}", pass_it(&named)));
    }
    if !looks_like_auth(&text) {
        return None;
    }
    let prefixes: &[&str] = match agent {
        Agent::Claude => &["ANTHROPIC_", "CLAUDE_", "AWS_", "GOOGLE_", "VERTEX"],
        Agent::Codex => &["OPENAI_", "CODEX_", "AZURE_"],
        Agent::Grok => &["XAI_", "GROK_"],
    };
    let likely: Vec<&str> = withheld
        .iter()
        .map(String::as_str)
        .filter(|name| {
            prefixes.iter().any(|p| name.starts_with(p))
                || name.to_ascii_lowercase().contains("proxy")
        })
        .collect();
    let names = if likely.is_empty() {
        withheld.iter().map(String::as_str).collect::<Vec<_>>()
    } else {
        likely
    };
    Some(format!(
        ". This looks like an authentication failure, and the {agent} CLI may authenticate with \
         a variable the sender's environment had: {}",
        pass_it(&names)
    ))
}

/// "cross-agent withheld X from the peer; name it in CROSS_AGENT_CHILD_ENV to pass it".
fn pass_it(names: &[&str]) -> String {
    let (it, them) = if names.len() == 1 {
        ("it", "it")
    } else {
        ("them", "them")
    };
    format!(
        "cross-agent withheld {} from the peer; name {it} in CROSS_AGENT_CHILD_ENV to pass {them}",
        names.join(", ")
    )
}

/// Whether `text` names the variable `name` as a word of its own (not inside a longer name).
fn names_variable(text: &str, name: &str) -> bool {
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
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn a_failure_naming_a_withheld_variable_names_only_it() {
        let hint = withheld_hint(
            Agent::Codex,
            "Missing environment variable: `ACC_KEY`.",
            "",
            &names(&["GITHUB_TOKEN", "ACC_KEY", "ACC_KEY_2"]),
        )
        .unwrap();
        assert_eq!(
            hint,
            ". cross-agent withheld ACC_KEY from the peer; name it in CROSS_AGENT_CHILD_ENV to \
             pass it"
        );
    }

    #[test]
    fn an_auth_failure_names_the_likely_variables() {
        let hint = withheld_hint(
            Agent::Claude,
            "Invalid API key · Please run /login",
            "",
            &names(&["GITHUB_TOKEN", "ANTHROPIC_AUTH_TOKEN"]),
        )
        .unwrap();
        assert!(
            hint.contains(
                "cross-agent withheld ANTHROPIC_AUTH_TOKEN from the peer; name it in \
                 CROSS_AGENT_CHILD_ENV to pass it"
            ),
            "{hint}"
        );
        assert!(!hint.contains("GITHUB_TOKEN"), "{hint}");
    }

    #[test]
    fn nothing_withheld_or_an_unrelated_failure_adds_nothing() {
        assert_eq!(
            withheld_hint(Agent::Codex, "Missing environment variable: `X`", "", &[]),
            None
        );
        assert_eq!(
            withheld_hint(
                Agent::Codex,
                "the model refused",
                "",
                &names(&["OPENAI_API_KEY"])
            ),
            None
        );
    }
}
