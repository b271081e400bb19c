//! Who is calling: the [`CallerContext`] a thin process (`cross-agent mcp`, `cross-agent send`)
//! gathers and hands the daemon with every call (docs/spec/cross-agent-mcp.md "Reply address", "What a spawned agent CLI
//! inherits").
//!
//! A crate of its own rather than a module of `mcp` or `ipc`: the CLI and the MCP server both
//! need exactly the same rules, neither may link the engine, and `ipc` is about reaching the
//! daemon, not about reading the caller's environment and process tree. It holds no policy that
//! needs the daemon's state: it only reads and filters, and the daemon decides.
//!
//! - [`env`]: the environment snapshot, the settings (`CROSS_AGENT_*`) and the child
//!   environment baseline with its withheld names.
//! - [`ancestry`]: the process chain above this process, from `/proc`.
//!
//! Everything is a pure function of a snapshot ([`Snapshot`]) so tests can feed any environment
//! without touching the process's own.

pub mod ancestry;
pub mod env;

use std::collections::BTreeMap;

use cross_agent_protocol::bridge::{AncestorProcess, CallerContext};
use cross_agent_protocol::settings as var;
use serde_json::Value;

pub use env::{ChildEnv, child_env, settings};

/// `CLAUDE_CODE_SESSION_ID`: Claude Code exports the calling session's id to its MCP servers.
pub const CLAUDE_SESSION_VAR: &str = "CLAUDE_CODE_SESSION_ID";
/// `GROK_SESSION_ID`: Grok exports it to every MCP server it starts (counts for a Grok caller
/// only; the daemon decides that).
pub const GROK_SESSION_VAR: &str = "GROK_SESSION_ID";
/// `COPILOT_AGENT_SESSION_ID`: the Copilot SDK gives each MCP process it starts the SDK session
/// it serves (the daemon maps it to the editor's session; it is never passed to a peer CLI).
pub const COPILOT_SESSION_VAR: &str = "COPILOT_AGENT_SESSION_ID";
/// The `tools/call` `_meta` key under which Codex declares the calling thread.
pub const CODEX_TURN_METADATA_KEY: &str = "x-codex-turn-metadata";
/// The `tools/call` `_meta` key under which a Copilot caller's host names the calling Host
/// session (a session URI or its UUID). Not seen on the wire: the Copilot SDK lets a host set a
/// call's `_meta` (`onPreMcpToolCall`), and no host is known to set this yet
/// (docs/observed/copilot.md §6).
pub const COPILOT_CALLER_SESSION_META_KEY: &str = "com.microsoft.vscode.agentHost/sessionUri";

/// What the caller's context is built from: taken once from the process (see
/// [`Snapshot::from_process`]) or made up by a test.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The environment, by name. Variables that are not valid UTF-8 are left out: none of the
    /// names the bridge reads can be one, and a lossy copy would hand a child a different value.
    pub vars: BTreeMap<String, String>,
    /// This process's working directory.
    pub cwd: Option<String>,
    /// This process's pid.
    pub pid: u32,
    /// The processes above this one, nearest first.
    pub ancestry: Vec<AncestorProcess>,
}

impl Snapshot {
    /// Reads this process: its environment, cwd, pid and ancestry. Cheap enough to take once at
    /// start; none of it changes while an MCP server runs (its parent is the agent session).
    pub fn from_process() -> Snapshot {
        let vars = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect();
        let cwd = std::env::current_dir()
            .ok()
            .map(|dir| dir.to_string_lossy().into_owned());
        let pid = std::process::id();
        Snapshot {
            vars,
            cwd,
            pid,
            ancestry: ancestry::of_parent(pid),
        }
    }

    fn var(&self, name: &str) -> Option<String> {
        self.vars
            .get(name)
            .filter(|value| !value.trim().is_empty())
            .cloned()
    }
}

/// What one call adds to the snapshot: the MCP client's name and Codex's per-call metadata.
#[derive(Debug, Clone, Default)]
pub struct PerCall {
    /// `clientInfo.name` from the handshake (or the 2026-07-28 request `_meta`).
    pub client_name: Option<String>,
    /// `_meta["x-codex-turn-metadata"]` of the `tools/call`, exactly as received.
    pub codex_turn_metadata: Option<Value>,
    /// The Host session a Copilot caller's `tools/call` names in its `_meta`
    /// ([`COPILOT_CALLER_SESSION_META_KEY`]).
    pub copilot_caller_session: Option<String>,
}

/// Builds the caller context for one call. Identity variables are passed as given (blank ones
/// as absent); the daemon parses and weighs them, so a malformed value is its to report.
pub fn context(snapshot: &Snapshot, call: PerCall) -> CallerContext {
    let ChildEnv {
        vars: child_env,
        withheld,
    } = child_env(&snapshot.vars);
    CallerContext {
        cwd: snapshot.cwd.clone(),
        pid: snapshot.pid,
        ancestry: snapshot.ancestry.clone(),
        client_name: call.client_name,
        claude_code_session_id: snapshot.var(CLAUDE_SESSION_VAR),
        grok_session_id: snapshot.var(GROK_SESSION_VAR),
        copilot_agent_session_id: snapshot.var(COPILOT_SESSION_VAR),
        self_session: snapshot.var(var::SELF_SESSION),
        self_agent: snapshot.var(var::SELF),
        conversation_id: snapshot.var(var::CONVERSATION_ID),
        codex_turn_metadata: call.codex_turn_metadata,
        copilot_caller_session: call.copilot_caller_session,
        settings: settings(&snapshot.vars),
        child_env,
        withheld_env: withheld,
    }
}

/// Takes `x-codex-turn-metadata` out of a `tools/call` `_meta` object, as received (an object,
/// or a string holding JSON — the daemon parses it defensively).
pub fn codex_turn_metadata(meta: Option<&serde_json::Map<String, Value>>) -> Option<Value> {
    meta.and_then(|meta| meta.get(CODEX_TURN_METADATA_KEY))
        .filter(|value| !value.is_null())
        .cloned()
}

/// Takes the Host session a Copilot caller's host names out of a `tools/call` `_meta` object: a
/// non-blank string, as received (the daemon parses it and checks it against the catalog).
pub fn copilot_caller_session(meta: Option<&serde_json::Map<String, Value>>) -> Option<String> {
    meta.and_then(|meta| meta.get(COPILOT_CALLER_SESSION_META_KEY))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn snapshot(vars: &[(&str, &str)]) -> Snapshot {
        Snapshot {
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: Some("/work/proj".into()),
            pid: 42,
            ancestry: vec![AncestorProcess {
                pid: 41,
                name: "claude".into(),
                cmdline: "claude -p hi".into(),
            }],
        }
    }

    #[test]
    fn identity_variables_are_read_and_blank_ones_are_absent() {
        let snap = snapshot(&[
            ("CLAUDE_CODE_SESSION_ID", "c-1"),
            ("GROK_SESSION_ID", "  "),
            (var::SELF_SESSION, "codex:t-9"),
            (var::SELF, "codex"),
            (var::CONVERSATION_ID, "conv_1"),
        ]);
        let ctx = context(
            &snap,
            PerCall {
                client_name: Some("claude-code".into()),
                codex_turn_metadata: None,
                copilot_caller_session: None,
            },
        );
        assert_eq!(ctx.claude_code_session_id.as_deref(), Some("c-1"));
        assert_eq!(ctx.grok_session_id, None);
        assert_eq!(ctx.self_session.as_deref(), Some("codex:t-9"));
        assert_eq!(ctx.self_agent.as_deref(), Some("codex"));
        assert_eq!(ctx.conversation_id.as_deref(), Some("conv_1"));
        assert_eq!(ctx.client_name.as_deref(), Some("claude-code"));
        assert_eq!(ctx.pid, 42);
        assert_eq!(ctx.cwd.as_deref(), Some("/work/proj"));
        assert_eq!(ctx.ancestry.len(), 1);
    }

    #[test]
    fn codex_metadata_passes_through_raw() {
        let object = json!({"thread_id": "t-1", "turn_id": "u-1", "future_field": [1, 2]});
        let meta = json!({"x-codex-turn-metadata": object.clone(), "callId": "c"});
        assert_eq!(codex_turn_metadata(meta.as_object()), Some(object));
        let as_string = json!({"x-codex-turn-metadata": "{\"thread_id\":\"t-2\"}"});
        assert_eq!(
            codex_turn_metadata(as_string.as_object()),
            Some(json!("{\"thread_id\":\"t-2\"}"))
        );
        assert_eq!(codex_turn_metadata(None), None);
        assert_eq!(
            codex_turn_metadata(json!({"x-codex-turn-metadata": null}).as_object()),
            None
        );
    }

    #[test]
    fn the_copilot_caller_session_is_a_non_blank_string_under_its_key() {
        let meta =
            json!({COPILOT_CALLER_SESSION_META_KEY: " ahp-session:/u-1 ", "progressToken": 3});
        assert_eq!(
            copilot_caller_session(meta.as_object()).as_deref(),
            Some("ahp-session:/u-1")
        );
        for other in [
            json!({COPILOT_CALLER_SESSION_META_KEY: "  "}),
            json!({COPILOT_CALLER_SESSION_META_KEY: {"uri": "x"}}),
            json!({"sessionUri": "ahp-session:/u-1"}),
        ] {
            assert_eq!(copilot_caller_session(other.as_object()), None, "{other}");
        }
        assert_eq!(copilot_caller_session(None), None);
    }
}
