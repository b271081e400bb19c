//! Keeping secrets out of what the bot sends and records: the bot token and the value of every
//! variable `CROSS_AGENT_CHILD_ENV` names (credentials a user chose to pass to child agents)
//! are replaced by `[secret]` in every text, caption, file and decision reason the bot makes —
//! a command on an approval card or an answer that happens to echo `$OPENAI_API_KEY` must not
//! put the key into a chat history on Telegram's servers.

use std::sync::Arc;

use cross_agent_protocol::settings as var;

/// What a secret is replaced by.
pub const REPLACEMENT: &str = "[secret]";

/// Values shorter than this are not treated as secrets: replacing `1` or `on` everywhere would
/// garble every message and hide nothing.
const MIN_SECRET_CHARS: usize = 6;

/// The secrets to scrub; cheap to clone.
#[derive(Clone, Default)]
pub struct Scrubber {
    secrets: Arc<Vec<String>>,
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrubber")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl Scrubber {
    /// The token, and the values `var` gives for the names in `CROSS_AGENT_CHILD_ENV`.
    pub fn new(token: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Scrubber {
        let mut secrets: Vec<String> = token.into_iter().map(str::to_owned).collect();
        if let Some(names) = var(var::CHILD_ENV) {
            for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if let Some(value) = var(name) {
                    secrets.push(value);
                }
            }
        }
        secrets.retain(|s| s.trim().chars().count() >= MIN_SECRET_CHARS);
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Scrubber {
            secrets: Arc::new(secrets),
        }
    }

    /// The scrubber of the daemon's own environment and `token`.
    pub fn from_env(token: Option<&str>) -> Scrubber {
        Scrubber::new(token, |name| std::env::var(name).ok())
    }

    /// `text` with every secret replaced.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in self.secrets.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REPLACEMENT);
            }
        }
        out
    }

    /// `bytes` (a file to send) with every secret replaced; non-UTF-8 content is left as it is
    /// only when no secret's bytes occur in it.
    pub fn scrub_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        match String::from_utf8(bytes) {
            Ok(text) => self.scrub(&text).into_bytes(),
            Err(error) => {
                let bytes = error.into_bytes();
                let lossy = String::from_utf8_lossy(&bytes);
                if self.secrets.iter().any(|s| lossy.contains(s.as_str())) {
                    self.scrub(&lossy).into_bytes()
                } else {
                    bytes
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_and_child_env_values_are_replaced_and_short_values_left() {
        let vars = |name: &str| match name {
            "CROSS_AGENT_CHILD_ENV" => Some("ACC_KEY, SHORT,MISSING".to_owned()),
            "ACC_KEY" => Some("sk-live-123456".to_owned()),
            "SHORT" => Some("on".to_owned()),
            _ => None,
        };
        let scrubber = Scrubber::new(Some("4242:SECRETtoken"), vars);
        assert_eq!(
            scrubber.scrub("curl -H 'k: sk-live-123456' bot4242:SECRETtoken on"),
            "curl -H 'k: [secret]' bot[secret] on"
        );
    }
}
