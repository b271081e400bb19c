//! The suites: configuration (file and shorthand), the HTTP kinds against the scripted model
//! endpoint on loopback, and the real pinned `claude -p` and `codex exec`.

mod cli;
mod config;
mod http;

use std::collections::BTreeMap;

use cross_agent_providers::Env;

/// An environment of exactly these variables.
pub(crate) fn env(vars: &[(&str, &str)]) -> Env {
    Env::fixed(
        vars.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    )
}
