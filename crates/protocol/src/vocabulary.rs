//! The words every crate shares — which agent, which scope, which transport, which target
//! session — defined once, with the text each is written as on the wire, in settings and on the
//! command line (clap's `ValueEnum` behind the `clap` feature, which only the CLI enables).

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A word that is not one of a vocabulary's values, naming what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not {what}; expected {expected}")]
pub struct UnknownValue {
    /// What the text was read as (`an agent`, `a scope`, …).
    pub what: &'static str,
    /// The text as given.
    pub value: String,
    /// The accepted spellings, in words.
    pub expected: &'static str,
}

/// Which agent program a session belongs to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    Claude,
    Codex,
    Grok,
    // GitHub Copilot in VS Code, through the editor's Agent Host. A plain comment: a documented
    // variant would turn the schema's `enum` into a `oneOf`.
    Copilot,
}

impl Agent {
    pub const ALL: [Agent; 4] = [Agent::Claude, Agent::Codex, Agent::Grok, Agent::Copilot];

    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Grok => "grok",
            Agent::Copilot => "copilot",
        }
    }

    /// The product name used in envelopes (`from: Claude Code (peer AI agent, …)`).
    pub fn product_name(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Grok => "Grok Build",
            Agent::Copilot => "GitHub Copilot",
        }
    }

    /// The MCP tool that sends to this agent.
    pub fn send_tool(self) -> &'static str {
        match self {
            Agent::Claude => "send_to_claude",
            Agent::Codex => "send_to_codex",
            Agent::Grok => "send_to_grok",
            Agent::Copilot => "send_to_copilot",
        }
    }

    /// `claude`, `codex`, `grok` or `copilot`, in any case, surrounding blanks ignored.
    pub fn parse(text: &str) -> Option<Agent> {
        Agent::ALL
            .into_iter()
            .find(|agent| agent.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Agent {
    type Err = UnknownValue;

    fn from_str(text: &str) -> Result<Agent, UnknownValue> {
        Agent::parse(text).ok_or_else(|| UnknownValue {
            what: "an agent",
            value: text.to_owned(),
            expected: "claude, codex, grok or copilot",
        })
    }
}

/// Which sessions discovery considers, relative to a working directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The directory and its subdirectories.
    #[default]
    Cwd,
    /// Also parent directories.
    Tree,
    /// Every session.
    Any,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Cwd, Scope::Tree, Scope::Any];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Cwd => "cwd",
            Scope::Tree => "tree",
            Scope::Any => "any",
        }
    }

    /// `cwd`, `tree` or `any`, in any case, surrounding blanks ignored.
    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = UnknownValue;

    fn from_str(text: &str) -> Result<Scope, UnknownValue> {
        Scope::parse(text).ok_or_else(|| UnknownValue {
            what: "a scope",
            value: text.to_owned(),
            expected: "cwd, tree or any",
        })
    }
}

/// How a message enters the target session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Transport {
    /// A headless run of the agent's CLI resuming the session.
    #[serde(rename = "headless-cli")]
    HeadlessCli,
    /// Written into the live editor panel through its shim (docs/spec/cross-agent-mcp.md "IDE panel integration").
    #[serde(rename = "panel")]
    Panel,
    /// Into a live Claude Code session through its own cross-session messaging (`SendMessage`
    /// from a relay the daemon hosts), because a running process holds it and no shim does.
    #[serde(rename = "claude-native")]
    ClaudeNative,
    /// A new turn in an existing Copilot session's default chat, handed to the VS Code Agent
    /// Host that runs it (AHP `chat/turnStarted`). Copilot has no other way in: no CLI, no shim.
    #[serde(rename = "agent-host")]
    AgentHost,
    /// Pasted into the chat input of the session's editor window through the desktop (the GUI
    /// fallback, docs/desktop.md): a session no shim or native door holds, when headless
    /// resume is off for it or the person prefers the GUI, and the fallback is turned on.
    #[serde(rename = "gui")]
    Gui,
}

impl Transport {
    /// What a receipt from a daemon that did not name its transport meant: a headless run
    /// (the only transport there was then).
    pub fn unnamed() -> Transport {
        Transport::HeadlessCli
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Transport::HeadlessCli => "headless-cli",
            Transport::Panel => "panel",
            Transport::ClaudeNative => "claude-native",
            Transport::AgentHost => "agent-host",
            Transport::Gui => "gui",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One target session as a text key, `<agent>:<session id>` (`codex:0199…`): the key deliveries
/// queue and lock on, and the value of `CROSS_AGENT_SELF_SESSION`. A session the bridge is about
/// to create has no id yet and is keyed `<agent>:new:<delivery id>` until it has one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetKey {
    pub agent: Agent,
    pub session_id: String,
}

impl TargetKey {
    pub fn new(agent: Agent, session_id: impl Into<String>) -> TargetKey {
        TargetKey {
            agent,
            session_id: session_id.into(),
        }
    }

    /// The placeholder key of a session a delivery will create.
    pub fn new_session(agent: Agent, delivery_id: &str) -> TargetKey {
        TargetKey::new(agent, format!("new:{delivery_id}"))
    }
}

impl fmt::Display for TargetKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.agent, self.session_id)
    }
}

impl FromStr for TargetKey {
    type Err = UnknownValue;

    /// The agent is everything before the first `:` (in any case), the session id everything
    /// after it; blanks around either are ignored and an empty id is refused.
    fn from_str(text: &str) -> Result<TargetKey, UnknownValue> {
        let unknown = || UnknownValue {
            what: "a target session",
            value: text.to_owned(),
            expected: "<agent>:<session id>",
        };
        let (agent, id) = text.trim().split_once(':').ok_or_else(unknown)?;
        let id = id.trim();
        if id.is_empty() {
            return Err(unknown());
        }
        let agent = Agent::parse(agent).ok_or_else(unknown)?;
        Ok(TargetKey::new(agent, id))
    }
}

/// Registry names starting with this are cross-agent relays (Claude Code runtimes the daemon
/// hosts to reach a live Claude session through its own `SendMessage`), never sessions: they
/// are not listed and never chosen as a target.
pub const RELAY_NAME_PREFIX: &str = "xa-";

/// The folder of `CROSS_AGENT_HOME` that holds one working directory per relay.
pub const RELAYS_DIR: &str = "relays";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_keys_read_back_as_written() {
        let key = TargetKey::new(Agent::Codex, "0199-abc");
        assert_eq!(key.to_string(), "codex:0199-abc");
        assert_eq!("codex:0199-abc".parse::<TargetKey>(), Ok(key));
        let new = TargetKey::new_session(Agent::Claude, "d1");
        assert_eq!(new.to_string(), "claude:new:d1");
        assert_eq!(new.to_string().parse::<TargetKey>(), Ok(new));
        assert_eq!(
            " Grok : s1 ".parse::<TargetKey>(),
            Ok(TargetKey::new(Agent::Grok, "s1"))
        );
        for bad in ["codex", "codex:", "codex: ", "gemini:s1", ""] {
            let err = bad.parse::<TargetKey>().unwrap_err();
            assert_eq!(err.value, bad, "{err}");
        }
    }

    #[test]
    fn words_parse_in_any_case_and_name_what_is_expected() {
        assert_eq!(" TREE ".parse::<Scope>(), Ok(Scope::Tree));
        assert_eq!("Codex".parse::<Agent>(), Ok(Agent::Codex));
        let err = "everywhere".parse::<Scope>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"everywhere\" is not a scope; expected cwd, tree or any"
        );
        for scope in Scope::ALL {
            assert_eq!(scope.to_string().parse::<Scope>(), Ok(scope));
        }
        assert_eq!(
            serde_json::to_string(&Transport::HeadlessCli).unwrap(),
            "\"headless-cli\""
        );
        assert_eq!(
            serde_json::to_string(&Transport::ClaudeNative).unwrap(),
            "\"claude-native\""
        );
        assert_eq!(Transport::ClaudeNative.to_string(), "claude-native");
        assert_eq!(
            serde_json::to_string(&Transport::AgentHost).unwrap(),
            "\"agent-host\""
        );
        assert_eq!(Transport::AgentHost.as_str(), "agent-host");
    }
}
