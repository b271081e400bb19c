//! The provider pool (docs/architecture.md, crate `providers`; docs/providers.md): every model
//! cross-agent asks for itself — the handoff's compact, the cross review's verdict — is asked
//! through here. Beside `handoff` in the crate map; it reads no agent store but Codex's
//! `config.toml` (for the key variable its CLI needs) and never talks to the daemon.
//!
//! - [`config`]: `providers.toml` in the home and the `CROSS_AGENT_PROVIDERS` shorthand;
//! - [`family`]: the kinds ([`Kind`], [`CliAgent`]) and model families ([`Family`]);
//! - [`ask`]: [`Request`], [`Answer`], [`Failure`];
//! - `http`: Anthropic Messages, OpenAI Responses, Chat Completions, with [`retry`];
//! - `cli`: `claude -p`, `codex exec` (and Cursor's and Antigravity's CLIs);
//! - [`env`](mod@env): where variables (keys among them) are read from.
//!
//! Asking is blocking: the handoff and the CLI are synchronous, and the daemon calls it through
//! `spawn_blocking`.

pub mod ask;
mod cli;
pub mod config;
pub mod env;
mod error;
pub mod family;
mod http;
pub mod retry;

use std::path::Path;

pub use ask::{Answer, Failure, FailureKind, Request};
pub use config::{Provider, Source};
pub use env::Env;
pub use error::{ProvidersError, Result};
pub use family::{CliAgent, Family, Kind};

/// The configured providers, in order, and where variables are read from.
#[derive(Debug, Clone)]
pub struct Pool {
    providers: Vec<Provider>,
    source: Source,
    env: Env,
}

impl Pool {
    /// The pool of this process: the shorthand variable, else `home/providers.toml`.
    pub fn from_env(home: Option<&Path>) -> Result<Pool> {
        Pool::load(home, Env::process())
    }

    /// The pool from these variables (the shorthand, the timeout) and this home's file; keys
    /// are read from `env` too, when a provider is asked.
    pub fn load(home: Option<&Path>, env: Env) -> Result<Pool> {
        let config = config::load(home, &env)?;
        Ok(Pool {
            providers: config.providers,
            source: config.source,
            env,
        })
    }

    /// A pool of exactly these providers.
    pub fn new(providers: Vec<Provider>, env: Env) -> Pool {
        Pool {
            providers,
            source: Source::None,
            env,
        }
    }

    /// Every provider, in the configured order.
    pub fn providers(&self) -> &[Provider] {
        &self.providers
    }

    /// Where the providers came from.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The provider of this name.
    pub fn get(&self, name: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// The providers of a family other than `family`, in order: who may review a session of
    /// that family.
    pub fn other_family<'a>(&'a self, family: &'a Family) -> impl Iterator<Item = &'a Provider> {
        self.providers.iter().filter(move |p| &p.family != family)
    }

    /// Asks `provider` (of this pool or not) one question, within its timeout, retrying on
    /// 429 and 5xx as [`retry`] says.
    pub fn ask(
        &self,
        provider: &Provider,
        request: &Request,
    ) -> std::result::Result<Answer, Failure> {
        match provider.kind {
            Kind::Anthropic | Kind::Responses | Kind::Chat => {
                http::ask(provider, request, &self.env)
            }
            Kind::Cli(agent) => cli::ask(agent, provider, request, &self.env),
        }
    }
}
