//! The names of every `CROSS_AGENT_*` environment variable, spelled once. Each constant is the
//! variable's name without the prefix; what the value means is said where it is read.
//!
//! The names are the interface (docs/spec/cross-agent-mcp.md "Settings"): people put them in their agents' MCP
//! registrations, so a name never changes.

/// The prefix every setting shares: a registration forwards all variables that start with it.
pub const PREFIX: &str = "CROSS_AGENT_";

// Identity and conversation, set by the bridge for the turns it starts.

/// Forces the caller's agent (`claude`, `codex`, `grok`).
pub const SELF: &str = "CROSS_AGENT_SELF";
/// `<agent>:<session id>`: the session a bridge-started turn runs in.
pub const SELF_SESSION: &str = "CROSS_AGENT_SELF_SESSION";
/// The conversation a bridge-started turn belongs to (shares the hop budget).
pub const CONVERSATION_ID: &str = "CROSS_AGENT_CONVERSATION_ID";

// Guards and discovery, read per call from the caller's registration.

pub const MAX_HOPS: &str = "CROSS_AGENT_MAX_HOPS";
pub const REQUIRE_EXPLICIT_TARGET: &str = "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET";
pub const DISABLE_HEADLESS: &str = "CROSS_AGENT_DISABLE_HEADLESS";
pub const TIMEOUT: &str = "CROSS_AGENT_TIMEOUT";
pub const SCOPE: &str = "CROSS_AGENT_SCOPE";
pub const ACTIVE_WINDOW_MIN: &str = "CROSS_AGENT_ACTIVE_WINDOW_MIN";
pub const NAME_SCAN_LIMIT: &str = "CROSS_AGENT_NAME_SCAN_LIMIT";
pub const CODEX_SCAN_LIMIT: &str = "CROSS_AGENT_CODEX_SCAN_LIMIT";
pub const LATE_ANSWER_WATCH: &str = "CROSS_AGENT_LATE_ANSWER_WATCH";
pub const PANEL_PATIENCE: &str = "CROSS_AGENT_PANEL_PATIENCE";
pub const UI_HOOK: &str = "CROSS_AGENT_UI_HOOK";
/// Extra names, comma-separated, a spawned peer CLI may inherit.
pub const CHILD_ENV: &str = "CROSS_AGENT_CHILD_ENV";

// How a peer CLI is run.

pub const CLAUDE_BIN: &str = "CROSS_AGENT_CLAUDE_BIN";
pub const CODEX_BIN: &str = "CROSS_AGENT_CODEX_BIN";
pub const GROK_BIN: &str = "CROSS_AGENT_GROK_BIN";
pub const CLAUDE_MODEL: &str = "CROSS_AGENT_CLAUDE_MODEL";
pub const CODEX_MODEL: &str = "CROSS_AGENT_CODEX_MODEL";
pub const GROK_MODEL: &str = "CROSS_AGENT_GROK_MODEL";
pub const CODEX_SANDBOX: &str = "CROSS_AGENT_CODEX_SANDBOX";
pub const CLAUDE_PERMISSION_MODE: &str = "CROSS_AGENT_CLAUDE_PERMISSION_MODE";
pub const GROK_PERMISSION_MODE: &str = "CROSS_AGENT_GROK_PERMISSION_MODE";

// The panel shims: the real agent binary a shim runs, instead of the one it finds.

/// Replaces the binary the Claude wrapper is handed (`<wrapper> <real-claude> <args…>`).
pub const REAL_CLAUDE: &str = "CROSS_AGENT_REAL_CLAUDE";
/// The real codex (default: the newest `openai.chatgpt-*` extension folder's bundled binary).
pub const REAL_CODEX: &str = "CROSS_AGENT_REAL_CODEX";
/// The real grok (default: `~/.grok/bin/grok`, then `grok` on PATH).
pub const REAL_GROK: &str = "CROSS_AGENT_REAL_GROK";

// Where things are, and the daemon's own.

/// The state directory (default `~/.cross-agent`).
pub const HOME: &str = "CROSS_AGENT_HOME";
/// Where Grok GUI tab names are read from, instead of Grok's own database.
pub const GROK_NAMES_DB: &str = "CROSS_AGENT_GROK_NAMES_DB";
/// VS Code Agent Host catalogs (`agent-host.db`) to read Copilot sessions from, `:`-separated;
/// entry `i` of each `CROSS_AGENT_COPILOT_*` list describes the same editor.
pub const COPILOT_HOST_DB: &str = "CROSS_AGENT_COPILOT_HOST_DB";
/// The editors' `agentSessionData` folders (one `<session>/session.db` each), `:`-separated.
pub const COPILOT_SESSION_DIR: &str = "CROSS_AGENT_COPILOT_SESSION_DIR";
/// The Copilot SDK's `session-state` folders (`<sdk session>/events.jsonl`), `:`-separated.
pub const COPILOT_SDK_SESSION_DIR: &str = "CROSS_AGENT_COPILOT_SDK_SESSION_DIR";
/// The Agent Host endpoint registries (`agent-host/local-endpoint/entries`), `:`-separated.
pub const COPILOT_ENDPOINT_DIR: &str = "CROSS_AGENT_COPILOT_ENDPOINT_DIR";
/// The program started as the daemon (tests point it at the built binary).
pub const DAEMON_BIN: &str = "CROSS_AGENT_DAEMON_BIN";
/// The ssh program the daemon runs for its links to other machines (default: `ssh` on its
/// `PATH`). For tests, which point it at a wrapper adding `-F <their ssh_config>`; a person
/// configures ssh in `~/.ssh/config` instead (docs/remote.md).
pub const SSH: &str = "CROSS_AGENT_SSH";
/// Set in a successor daemon's environment: bind over the live socket instead of refusing it.
pub const DAEMON_REPLACING: &str = "CROSS_AGENT_DAEMON_REPLACING";
/// The most client connections the daemon serves at once (default 512, and at most half its
/// file-descriptor limit unless set); one more is refused with `too_many_connections`.
pub const DAEMON_MAX_CONNECTIONS: &str = "CROSS_AGENT_DAEMON_MAX_CONNECTIONS";
/// Seconds a connection may wait between requests before the daemon closes it (default 300;
/// `0`: never). A request being answered is never cut.
pub const DAEMON_IDLE_TIMEOUT: &str = "CROSS_AGENT_DAEMON_IDLE_TIMEOUT";
/// Overrides the tools version `hello` reports (by default this build's version).
pub const TOOLS_VERSION: &str = "CROSS_AGENT_TOOLS_VERSION";
/// Overrides the size at which the decisions log is rotated.
pub const DECISIONS_MAX_BYTES: &str = "CROSS_AGENT_DECISIONS_MAX_BYTES";
/// A `tracing` filter for the logs.
pub const LOG: &str = "CROSS_AGENT_LOG";
/// Debug logging for the daemon.
pub const DEBUG: &str = "CROSS_AGENT_DEBUG";

// Timing: how long a finished record is kept, and two test knobs (not user settings) that
// shorten the late-answer poll and the transcript check of a running turn.

pub const DELIVERY_TTL: &str = "CROSS_AGENT_DELIVERY_TTL";
pub const LATE_ANSWER_POLL_MS: &str = "CROSS_AGENT_LATE_ANSWER_POLL_MS";
pub const TRANSCRIPT_CHECK_MS: &str = "CROSS_AGENT_TRANSCRIPT_CHECK_MS";

// The daemon's live session index: how often each store is walked again whatever the
// file-system notifications said (the safety net for lost ones), and `off` for a filesystem that
// sends none, where listings are then as current as that re-walk keeps them.

pub const INDEX_REWALK_MS: &str = "CROSS_AGENT_INDEX_REWALK_MS";
pub const INDEX_NOTIFY: &str = "CROSS_AGENT_INDEX_NOTIFY";
// `1` makes every listing and resolution wait for a running walk of the index, as before walks
// ran beside requests: only for the index benchmark's before/after in one run.
pub const INDEX_SERIAL_WALKS: &str = "CROSS_AGENT_INDEX_SERIAL_WALKS";

// The Telegram bot.

/// The Bot API base URL (default `https://api.telegram.org`): a self-hosted Bot API server.
pub const TELEGRAM_API: &str = "CROSS_AGENT_TELEGRAM_API";
/// Seconds one `getUpdates` long poll waits (default 30).
pub const TELEGRAM_POLL_TIMEOUT: &str = "CROSS_AGENT_TELEGRAM_POLL_TIMEOUT";
/// Test knob: the pause after a 409 conflict, in milliseconds (default 60,000).
pub const TELEGRAM_CONFLICT_BACKOFF_MS: &str = "CROSS_AGENT_TELEGRAM_CONFLICT_BACKOFF_MS";
/// Seconds between two passes of the review robot (default 60; docs/review.md "The robot").
pub const REVIEW_ROBOT_PASS_SECONDS: &str = "CROSS_AGENT_REVIEW_ROBOT_PASS_SECONDS";
/// Seconds between two looks of the budget watcher at today's spend (default 120;
/// docs/usage.md "Budgets").
pub const USAGE_BUDGET_PASS_SECONDS: &str = "CROSS_AGENT_USAGE_BUDGET_PASS_SECONDS";
/// Seconds a `PreToolUse` escalated to the phone waits for a tap before the hook answers
/// `"ask"` (default 120).
pub const APPROVAL_WAIT: &str = "CROSS_AGENT_APPROVAL_WAIT";

// The desktop (docs/desktop.md "Focus and GUI fallback").

/// `1` turns the GUI fallback on (`0` off), over `gui_fallback` in `[control]` of `config.toml`.
pub const GUI_FALLBACK: &str = "CROSS_AGENT_GUI_FALLBACK";
/// The editor CLI `focus` runs as `<cli> --reuse-window <folder>` where no X11 window can be
/// checked (default: `code` on `PATH`).
pub const EDITOR_CLI: &str = "CROSS_AGENT_EDITOR_CLI";
