//! `cross-agent hook <event>` → the daemon: an agent's hook payload as it was read from the
//! hook's stdin, and what the hook prints back (nothing, or the hook's JSON answer).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One hook call (`hook` method).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookParams {
    /// The hook event (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `SessionStart`,
    /// `Notification`, `Stop`), as the hook's command line names it.
    pub event: String,
    /// The JSON the agent wrote on the hook's stdin, unchanged.
    pub payload: Value,
}

/// What the hook prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookResponse {
    /// The JSON to print on stdout; `None`: print nothing (the session goes on as if no hook).
    #[serde(default)]
    pub output: Option<Value>,
}
