//! The pool's configuration: `providers.toml` in `CROSS_AGENT_HOME`, or the one-line
//! shorthand `CROSS_AGENT_PROVIDERS` (old name `CROSS_AGENT_HANDOFF_PROVIDERS`, still read).
//! When the variable is set (and not blank) it is the whole pool and the file is not read:
//! a variable is what a person sets for one run, so it overrides what is kept on disk.
//! docs/providers.md describes both formats.
//!
//! The file is read only when it is safe: not a symbolic link, this user's, not writable by
//! group or others (it names programs cross-agent runs and the variables keys are read from).

use std::collections::BTreeSet;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::env::Env;
use crate::error::{ProvidersError, Result};
use crate::family::{CliAgent, Family, KIND_NAMES, Kind};

/// The file's name in the home.
pub const FILE_NAME: &str = "providers.toml";
/// The one-line shorthand.
pub const PROVIDERS_VAR: &str = "CROSS_AGENT_PROVIDERS";
/// The shorthand's old name, read when [`PROVIDERS_VAR`] is not set.
pub const OLD_PROVIDERS_VAR: &str = "CROSS_AGENT_HANDOFF_PROVIDERS";
/// The timeout of every provider without its own `timeout_secs`, in seconds.
pub const TIMEOUT_VAR: &str = "CROSS_AGENT_PROVIDER_TIMEOUT";
/// A provider's timeout when nothing sets one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The most of `providers.toml` read; a real one is a few hundred bytes.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// One provider of the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// Unique in the pool: the file's `name`, else `KIND:MODEL` (or the CLI kind alone).
    pub name: String,
    pub kind: Kind,
    pub family: Family,
    /// Required for the API kinds; a CLI without one uses its own default.
    pub model: Option<String>,
    /// The API kinds' base URL, without a trailing `/`.
    pub base_url: Option<String>,
    /// The variable holding the key (the key itself is never stored); optional for `chat`
    /// (a local server needs none).
    pub key_var: Option<String>,
    /// For the whole ask, retries and their waits included.
    pub timeout: Duration,
    /// A CLI's program; `None` uses `CROSS_AGENT_<AGENT>_BIN`, else the bare name on PATH.
    pub program: Option<PathBuf>,
    /// Further variables a CLI child is given (besides the baseline and its agent's own).
    pub env: Vec<String>,
}

impl Provider {
    /// A CLI provider (the handoff's family CLI is one).
    pub fn cli(agent: CliAgent, program: Option<PathBuf>, timeout: Duration) -> Provider {
        Provider {
            name: Kind::Cli(agent).as_str().to_owned(),
            kind: Kind::Cli(agent),
            family: agent.family(),
            model: None,
            base_url: None,
            key_var: None,
            timeout,
            program,
            env: Vec::new(),
        }
    }

    /// How an attempt is named in records: `claude -p`, `codex exec`, or
    /// `provider anthropic (MODEL)` (the handoff's decision lines have always said so).
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::Cli(agent) => agent.command_name().to_owned(),
            Kind::Anthropic | Kind::Responses | Kind::Chat => format!(
                "provider {} ({})",
                self.kind.as_str(),
                self.model.as_deref().unwrap_or("?")
            ),
        }
    }
}

/// Where the pool's entries came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Nothing configured.
    None,
    /// The shorthand, from this variable.
    Variable(&'static str),
    /// `providers.toml`.
    File(PathBuf),
}

/// The configured providers, in order.
#[derive(Debug, Clone)]
pub struct Config {
    pub providers: Vec<Provider>,
    pub source: Source,
}

/// Reads the configuration: the shorthand variable if set, else `home/providers.toml` if it
/// exists, else nothing. `home` is the state directory (`None` when there is none).
pub fn load(home: Option<&Path>, env: &Env) -> Result<Config> {
    let default_timeout = timeout_setting(env)?;
    for name in [PROVIDERS_VAR, OLD_PROVIDERS_VAR] {
        if let Some(text) = env.get(name) {
            return Ok(Config {
                providers: parse_shorthand(
                    name,
                    &text,
                    default_timeout.unwrap_or(DEFAULT_TIMEOUT),
                )?,
                source: Source::Variable(name),
            });
        }
    }
    let Some(home) = home else {
        return Ok(Config {
            providers: Vec::new(),
            source: Source::None,
        });
    };
    let path = home.join(FILE_NAME);
    let Some(text) = read_safely(&path)? else {
        return Ok(Config {
            providers: Vec::new(),
            source: Source::None,
        });
    };
    let providers = parse_file(&text, default_timeout).map_err(|why| ProvidersError::BadFile {
        path: path.clone(),
        why,
    })?;
    Ok(Config {
        providers,
        source: Source::File(path),
    })
}

/// [`TIMEOUT_VAR`], when set.
fn timeout_setting(env: &Env) -> Result<Option<Duration>> {
    let Some(value) = env.get(TIMEOUT_VAR) else {
        return Ok(None);
    };
    seconds(&value)
        .map(Some)
        .ok_or_else(|| ProvidersError::InvalidSetting {
            name: TIMEOUT_VAR,
            value,
            why: "expected a positive number of seconds".to_owned(),
        })
}

fn seconds(text: &str) -> Option<Duration> {
    let secs: f64 = text.trim().parse().ok()?;
    (secs.is_finite() && secs > 0.0 && secs < 1e9).then(|| Duration::from_secs_f64(secs))
}

/// The file's text, or `None` when there is no file; refused when it is a link, someone
/// else's, not a regular file, or writable by group or others.
fn read_safely(path: &Path) -> Result<Option<String>> {
    use cross_agent_home::safety::{SettingsFileRefusal as Refusal, read_settings_file};
    read_settings_file(path, MAX_FILE_BYTES).map_err(|refusal| match refusal {
        Refusal::Entry(e) => e.into(),
        Refusal::NotRegular => ProvidersError::Unsafe {
            path: path.to_owned(),
            problem: "it is not a regular file".to_owned(),
            fix: "Remove it and write providers.toml as a plain file (docs/providers.md)"
                .to_owned(),
        },
        Refusal::GroupWritable { mode } => ProvidersError::Unsafe {
            path: path.to_owned(),
            problem: format!(
                "it is writable by group or others (mode {mode:o}), and it names the programs \
                 cross-agent runs and the variables it reads keys from"
            ),
            fix: format!("Check its entries, then `chmod go-w {}`", path.display()),
        },
        Refusal::Io(source) => ProvidersError::Io {
            path: path.to_owned(),
            source,
        },
    })
}

/// `providers.toml` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// Every provider's timeout unless it has its own (below `CROSS_AGENT_PROVIDER_TIMEOUT`).
    timeout_secs: Option<f64>,
    #[serde(default)]
    provider: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: Option<String>,
    kind: Kind,
    family: Option<String>,
    model: Option<String>,
    base_url: Option<String>,
    key_var: Option<String>,
    timeout_secs: Option<f64>,
    program: Option<PathBuf>,
    #[serde(default)]
    env: Vec<String>,
}

/// Parses the file's text. A provider's timeout: its own `timeout_secs`, else
/// [`TIMEOUT_VAR`], else the file's top-level `timeout_secs`, else [`DEFAULT_TIMEOUT`].
pub fn parse_file(
    text: &str,
    timeout_var: Option<Duration>,
) -> std::result::Result<Vec<Provider>, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string().trim().to_owned())?;
    let file_timeout = match file.timeout_secs {
        Some(secs) => Some(
            seconds(&secs.to_string())
                .ok_or_else(|| format!("timeout_secs = {secs} is not a positive number"))?,
        ),
        None => None,
    };
    let default = timeout_var.or(file_timeout).unwrap_or(DEFAULT_TIMEOUT);
    let mut out: Vec<Provider> = Vec::new();
    let mut names = BTreeSet::new();
    for (index, entry) in file.provider.into_iter().enumerate() {
        let at = format!(
            "[[provider]] #{}{}",
            index + 1,
            entry
                .name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        );
        let timeout = match entry.timeout_secs {
            Some(secs) => seconds(&secs.to_string())
                .ok_or_else(|| format!("{at}: timeout_secs = {secs} is not a positive number"))?,
            None => default,
        };
        let provider = build(Fields {
            name: entry.name,
            kind: entry.kind,
            family: entry.family,
            model: entry.model,
            base_url: entry.base_url,
            key_var: entry.key_var,
            timeout,
            program: entry.program,
            env: entry.env,
        })
        .map_err(|why| format!("{at}: {why}"))?;
        if !names.insert(provider.name.clone()) {
            return Err(format!(
                "{at}: a provider named {:?} is already listed; give each a different `name`",
                provider.name
            ));
        }
        out.push(provider);
    }
    Ok(out)
}

/// What the shorthand says, for error messages.
const SHORTHAND: &str = "entries separated by `;`, each `anthropic|openai|chat BASE_URL \
                         KEY_VARIABLE MODEL [FAMILY]` (KEY_VARIABLE `-` for none, chat only) or \
                         `claude-cli|codex-cli|cursor-cli|agy-cli [MODEL]`";

/// Parses the one-line shorthand; `name` is the variable it came from, for errors.
pub fn parse_shorthand(name: &'static str, text: &str, timeout: Duration) -> Result<Vec<Provider>> {
    let mut out: Vec<Provider> = Vec::new();
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |why: String| ProvidersError::InvalidSetting {
            name,
            value: entry.to_owned(),
            why: format!("{why}; expected {SHORTHAND}"),
        };
        let words: Vec<&str> = entry.split_whitespace().collect();
        let kind = Kind::parse(words[0])
            .ok_or_else(|| bad(format!("unknown kind {:?} (one of {KIND_NAMES})", words[0])))?;
        let fields = match (kind, words.as_slice()) {
            (Kind::Cli(_), [_]) => Fields::bare(kind, None, timeout),
            (Kind::Cli(_), [_, model]) => Fields::bare(kind, Some(model), timeout),
            (Kind::Cli(_), _) => return Err(bad("a CLI takes at most a model".to_owned())),
            (_, [_, base_url, key_var, model, rest @ ..]) if rest.len() <= 1 => Fields {
                name: None,
                kind,
                family: rest.first().map(|f| (*f).to_owned()),
                model: Some((*model).to_owned()),
                base_url: Some((*base_url).to_owned()),
                key_var: (*key_var != "-").then(|| (*key_var).to_owned()),
                timeout,
                program: None,
                env: Vec::new(),
            },
            _ => return Err(bad(format!("{} words", words.len()))),
        };
        let mut provider = build(fields).map_err(bad)?;
        // Two entries for the same model keep both, told apart by a counter.
        let base = provider.name.clone();
        let mut n = 2;
        while out.iter().any(|p| p.name == provider.name) {
            provider.name = format!("{base}#{n}");
            n += 1;
        }
        out.push(provider);
    }
    Ok(out)
}

/// One entry's fields, from either format.
struct Fields {
    name: Option<String>,
    kind: Kind,
    family: Option<String>,
    model: Option<String>,
    base_url: Option<String>,
    key_var: Option<String>,
    timeout: Duration,
    program: Option<PathBuf>,
    env: Vec<String>,
}

impl Fields {
    fn bare(kind: Kind, model: Option<&&str>, timeout: Duration) -> Fields {
        Fields {
            name: None,
            kind,
            family: None,
            model: model.map(|m| (*m).to_owned()),
            base_url: None,
            key_var: None,
            timeout,
            program: None,
            env: Vec::new(),
        }
    }
}

/// Checks an entry's fields against its kind and fills in the defaults.
fn build(f: Fields) -> std::result::Result<Provider, String> {
    let blank = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    let model = blank(f.model);
    let base_url = blank(f.base_url).map(|u| u.trim_end_matches('/').to_owned());
    let key_var = blank(f.key_var);
    if let Some(var) = &key_var
        && !is_variable_name(var)
    {
        return Err(format!(
            "key_var {var:?} is not a variable name (name the variable holding the key, never \
             the key itself)"
        ));
    }
    if let Some(bad) = f.env.iter().find(|v| !is_variable_name(v)) {
        return Err(format!("env {bad:?} is not a variable name"));
    }
    match f.kind {
        Kind::Anthropic | Kind::Responses | Kind::Chat => {
            let Some(url) = &base_url else {
                return Err(format!("kind {} needs a base_url", f.kind.as_str()));
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "base_url {url:?} is not an http:// or https:// URL"
                ));
            }
            if model.is_none() {
                return Err(format!("kind {} needs a model", f.kind.as_str()));
            }
            if key_var.is_none() && f.kind != Kind::Chat {
                return Err(format!(
                    "kind {} needs key_var, the variable holding its key",
                    f.kind.as_str()
                ));
            }
            if f.program.is_some() || !f.env.is_empty() {
                return Err("program and env are for the CLI kinds".to_owned());
            }
        }
        Kind::Cli(_) => {
            if base_url.is_some() || key_var.is_some() {
                return Err(format!(
                    "kind {} takes no base_url or key_var: the CLI uses its own login and \
                     configuration",
                    f.kind.as_str()
                ));
            }
        }
    }
    let family = match blank(f.family) {
        Some(name) => Family::parse(&name),
        None => default_family(f.kind, base_url.as_deref(), model.as_deref()).ok_or_else(|| {
            format!(
                "cannot tell the family of model {:?} at {}: set `family` (anthropic, openai, \
                 xai, google, local, or another name)",
                model.as_deref().unwrap_or(""),
                base_url.as_deref().unwrap_or("")
            )
        })?,
    };
    let name = match blank(f.name) {
        Some(name) => name,
        None => match &model {
            Some(model) => format!("{}:{model}", f.kind.as_str()),
            None => f.kind.as_str().to_owned(),
        },
    };
    Ok(Provider {
        name,
        kind: f.kind,
        family,
        model,
        base_url,
        key_var,
        timeout: f.timeout,
        program: f.program,
        env: f.env,
    })
}

/// The family when none is given: the kind's own for Anthropic and the CLIs (a CLI's model
/// may say otherwise), else the host, else the model's name; Responses falls back to openai.
fn default_family(kind: Kind, base_url: Option<&str>, model: Option<&str>) -> Option<Family> {
    let by_model = || model.and_then(Family::of_model);
    match kind {
        Kind::Anthropic => Some(Family::Anthropic),
        Kind::Cli(agent) => Some(by_model().unwrap_or_else(|| agent.family())),
        Kind::Responses => base_url
            .and_then(Family::of_base_url)
            .or_else(by_model)
            .or(Some(Family::Openai)),
        Kind::Chat => base_url.and_then(Family::of_base_url).or_else(by_model),
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
