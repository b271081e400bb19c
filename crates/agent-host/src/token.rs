//! The host's connection token: a secret that opens the host's socket to whoever holds it.
//!
//! It is kept in a type whose `Debug` and `Display` never show it, so that no error, log line or
//! record built with `{}`/`{:?}` can carry it; the only way out is [`ConnectionToken::expose`],
//! used once, to build the upgrade request.

use std::fmt;

/// The `connectionToken` of a host's endpoint entry.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ConnectionToken(String);

impl ConnectionToken {
    /// Wraps a token read from the host's endpoint entry.
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The secret itself, for the upgrade request only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ConnectionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ConnectionToken(<hidden>)")
    }
}

impl fmt::Display for ConnectionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden connection token>")
    }
}
