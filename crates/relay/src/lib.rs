//! Claude's native peer door (docs/spec/claude-relay.txt, `claude_relay`): a **relay** is a real Claude
//! Code runtime the daemon hosts, one per represented sender and permission class, named
//! `xa-<name>-on-<machine>`,
//! whose API is a deterministic endpoint this crate serves on loopback — so no model ever runs
//! in it. It sends through Claude's own `SendMessage` and receives peers' replies through its
//! `UserPromptSubmit` hook.
//!
//! Three rules (docs/spec/claude-relay.txt):
//! 1. **No model runs.** Every send is queued first; the relay endpoint answers the send turn
//!    with a `SendMessage` of exactly the queued `(to, message)` pair, then ends the turn with
//!    [`RELAY_STATUS_LINE`]; anything else gets [`RELAY_STATUS_LINE`] alone. The `PreToolUse`
//!    hook still denies any tool call but a `SendMessage` of exactly that pair, once.
//! 2. **Receipts come from Claude, through hooks.** `PostToolUse` writes Claude's own
//!    `SendMessage` result beside the queue; a gate denial and a turn that ends without sending
//!    write theirs too, and a relay that dies mid-send gets [`RelayReceipt::RelayDied`]. The
//!    sender waits on that file (bounded), never on model words, and nothing is ever re-sent.
//! 3. **Inbound mail never reaches a model.** The relay's `UserPromptSubmit` hook receives every
//!    peer envelope and idle/delivery notice byte-exact; it is filed ([`InboundMail`], and a file
//!    in the relay's `inbox/`) and the prompt is blocked, so Claude makes no model request.
//!
//! # API (final; `native-route` builds on it)
//!
//! ```text
//! RELAY_NAME_PREFIX = "xa-"; RELAY_STATUS_LINE; relay_name(represented, machine); is_relay_name(name)
//! relay_name_for(represented, machine, permission_mode) // the relay a send in that mode goes through
//! permission_class(permission_mode) -> "prompting" | "bypass"
//! RelayHost::start(RelayConfig) -> Result<RelayHost, RelayError>      // Clone; binds 127.0.0.1:0
//! RelayHost::send(NativeSend) -> Result<RelayReceipt, RelayError>     // queue, send turn, Claude's receipt
//! RelayHost::hook(&HookParams) -> Option<HookResponse>                // Some(..) iff the call is a relay's
//! RelayHost::take_inbound() -> Option<UnboundedReceiver<InboundMail>> // once, for the hub
//! RelayHost::relays() -> Vec<RelayInfo>; RelayHost::model_requests(relay) -> u64
//! RelayHost::endpoint_url() -> String; RelayReceipt::name() -> "sent" | "refused" | "rate_limited" | …
//! RelayReceipt::RateLimited { claude, words }; RATE_LIMITED_NOTE   // Claude's per-session rate limit
//! RelayHost::shutdown()                                               // stops every relay
//! parse_inbound_text(&str) -> Option<InboundKind>
//! ```
//! How a relay runs: `claude -p --input-format stream-json --output-format stream-json --verbose
//! --name <relay> --settings <dir>/hooks.json --strict-mcp-config --mcp-config '{"mcpServers":{}}'
//! --setting-sources local --no-session-persistence [--permission-mode bypassPermissions]`, cwd its own
//! directory, environment cleared to `RelayConfig::claude_env` (the target's `HOME`) plus the
//! endpoint as `ANTHROPIC_BASE_URL`, its own API key, `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`
//! and `CROSS_AGENT_HOME` (for its hooks). So no MCP server, no user hook or rule, and no
//! transcript in the user's store. Claude itself rate-limits messages to one session (seen:
//! "Too many messages to this session just now: 34 were sent recently …"): that comes back as
//! [`RelayReceipt::RateLimited`] with Claude's words (show it as [`RATE_LIMITED_NOTE`]; nothing
//! was sent, the target is alive).
//!
//! Relays are keyed by (represented sender, permission class): a send whose target runs in the
//! other class ([`permission_class`] of `NativeSend::permission_mode`) goes through the sender's
//! relay of that class, started beside the first (in `bypassPermissions` for `bypass`, the
//! default mode for `prompting`), so the first keeps the replies it awaits. Names are unique per
//! sender and class ([`relay_name_for`]): `xa-cli-on-box` for `cli`, a stable hash suffix when
//! sanitizing changed the name or the class is `bypass`. A caller naming the relay a send
//! used calls `relay_name_for` with the send's permission mode.
//!
//! Changes from the first contract (and its follow-up: [`RelayReceipt::RateLimited`],
//! [`relay_name_for`], [`permission_class`], [`RelayInfo::permission_class`]):
//! [`RelayConfig`] also names the `cross-agent` program the
//! hooks run (`cross_agent`) and how long a relay waits for replies to what it sent
//! (`reply_wait`); [`InboundKind::Other`] files a prompt that is neither an envelope nor a
//! notice (it is blocked all the same); relays are stopped when idle by the host itself, and
//! [`RelayHost::shutdown`] stops them all (the daemon's stop).
//!
//! # Files (`<CROSS_AGENT_HOME>/relays/<relay name>/`, also the relay's working directory)
//!
//! | file | written by | what |
//! |---|---|---|
//! | `hooks.json` | host, at start | the `--settings` document installing the hooks |
//! | `queue/<send id>.json` | `send` | the queued `(to, message)` pair and its delivery |
//! | `receipts/<send id>.json` | the hooks (via the daemon) | Claude's receipt, read back by `send` |
//! | `inbox/<ms>-<n>.txt` | the `UserPromptSubmit` hook | inbound mail, byte-exact |
//! | `stderr.log` | Claude | the relay's stderr, for diagnosis |
//!
//! Queue, receipt and inbox files older than seven days are removed when their relay starts.

mod endpoint;
mod error;
mod gate;
mod host;
mod inbound;
mod receipt;

pub use error::RelayError;
pub use gate::{gate_decision, gate_denial, inbound_block};
pub use host::{NativeSend, RelayConfig, RelayHost, RelayInfo};
pub use inbound::{InboundKind, InboundMail, parse_inbound_text};
pub use receipt::{RATE_LIMITED_NOTE, RelayReceipt};

pub use cross_agent_protocol::vocabulary::{RELAY_NAME_PREFIX, RELAYS_DIR};

/// Text every relay turn ends with. Claude quotes a session's last line in its idle notices, so
/// this is what a peer that subscribed to the relay reads about it.
pub const RELAY_STATUS_LINE: &str = "[cross-agent relay] This session is a cross-agent relay: it runs no model and reads nothing; it only carries messages for the session it is named after, and replies to it reach that session.";

/// How a relay talks to Claude over stdio: stream-json both ways (`--verbose` is what Claude
/// asks for beside stream-json output). Tests start their live target sessions with the same.
pub const CLAUDE_STREAM_JSON_ARGS: &[&str] = &[
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
];

/// Model name a relay's requests carry; the relay endpoint answers without any model.
pub const RELAY_MODEL: &str = "cross-agent-relay";

/// The longest relay name: Claude shows names in listings and the `to` of `SendMessage` allows
/// 300 characters, so this leaves room while keeping listings readable.
pub const MAX_RELAY_NAME: usize = 64;

/// The permission class a session in `permission_mode` runs in, as Claude sorts senders and
/// recipients: `bypass` for `bypassPermissions`, `prompting` for every other mode and for none
/// (Claude 2.1.332 decides it the same way; a message across classes is held).
pub fn permission_class(permission_mode: Option<&str>) -> &'static str {
    if permission_mode == Some("bypassPermissions") {
        "bypass"
    } else {
        "prompting"
    }
}

/// The registry name of the relay that represents `represented` on `machine` in the
/// `prompting` class: [`relay_name_for`] with no permission mode.
pub fn relay_name(represented: &str, machine: &str) -> String {
    relay_name_for(represented, machine, None)
}

/// The registry name of the relay that represents `represented` on `machine` for a target in
/// `permission_mode`: `xa-<name>-on-<machine>`, every character but ASCII letters, digits, `.`
/// and `_` turned into `-` (runs collapsed, lower case), the whole at most [`MAX_RELAY_NAME`].
///
/// Names are unique per (represented sender, permission class): `<name>` is the represented
/// name itself when that is already a clean name (sanitizing changed nothing and it fits) and
/// the class is `prompting`; otherwise it is the sanitized name, `-bypass` for that class, and
/// `--<8 hex digits>` of a stable hash of the exact represented name and class. Sanitizing
/// collapses runs of `-`, so no clean name holds `--` and none can equal a suffixed one. So
/// `cli` → `xa-cli-on-box` and `codex-019a0000` → `xa-codex-019a0000-on-box`, while
/// `Fix the bug!` and `fix the bug` get distinct suffixed names, and a `bypass` relay never
/// shares its name.
pub fn relay_name_for(represented: &str, machine: &str, permission_mode: Option<&str>) -> String {
    let class = permission_class(permission_mode);
    let machine = truncate(&sanitize(machine, "machine"), 24);
    let room = MAX_RELAY_NAME
        .saturating_sub(RELAY_NAME_PREFIX.len() + "-on-".len() + machine.len())
        .max(1);
    let sanitized = sanitize(represented, "session");
    let clean = class == "prompting" && sanitized == represented && sanitized.len() <= room;
    let name = if clean {
        sanitized
    } else {
        let class_part = if class == "prompting" { "" } else { "-bypass" };
        let hash = xxhash_rust::xxh3::xxh3_64(format!("{represented}\0{class}").as_bytes());
        // 32 bits of a frozen hash (XXH3 does not change between versions): stable across
        // daemons, and two senders of one machine meet in it about once in four billion.
        let tag = format!("--{:08x}", hash & 0xffff_ffff);
        let keep = room.saturating_sub(class_part.len() + tag.len()).max(1);
        format!("{}{class_part}{tag}", truncate(&sanitized, keep))
    };
    format!("{RELAY_NAME_PREFIX}{name}-on-{machine}")
}

/// Whether a registry name belongs to a relay.
pub fn is_relay_name(name: &str) -> bool {
    name.starts_with(RELAY_NAME_PREFIX)
}

fn sanitize(text: &str, empty: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            c.to_ascii_lowercase()
        } else {
            '-'
        };
        if c == '-' && (out.is_empty() || out.ends_with('-')) {
            continue;
        }
        out.push(c);
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        empty.to_owned()
    } else {
        out
    }
}

fn truncate(text: &str, max: usize) -> String {
    // ASCII only after `sanitize`, so a byte cut is a character cut.
    text[..text.len().min(max)].trim_end_matches('-').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_names_are_prefixed_sanitized_and_bounded() {
        assert_eq!(relay_name("cli", "box-1"), "xa-cli-on-box-1");
        assert_eq!(relay_name("a1b2c3d4", "box-1"), "xa-a1b2c3d4-on-box-1");
        assert_eq!(
            relay_name("codex-019a0000", "box-1"),
            "xa-codex-019a0000-on-box-1"
        );
        let titled = relay_name("Fix the login bug!", "My Laptop.local");
        assert!(
            titled.starts_with("xa-fix-the-login-bug--") && titled.ends_with("-on-my-laptop.local"),
            "{titled}"
        );
        assert_eq!(
            titled,
            relay_name("Fix the login bug!", "My Laptop.local"),
            "stable"
        );
        let empty = relay_name("", "  ");
        assert!(
            empty.starts_with("xa-session--") && empty.ends_with("-on-machine"),
            "{empty}"
        );
        let long = relay_name(&"abcdefghij".repeat(10), "m");
        assert!(long.len() <= MAX_RELAY_NAME, "{long}");
        assert!(long.ends_with("-on-m"));
        assert!(is_relay_name(&long));
        assert!(!is_relay_name("bravo"));
    }

    #[test]
    fn represented_names_that_sanitize_alike_get_distinct_relays() {
        let machine = "box";
        let alike = [
            "Fix the bug",
            "fix the bug",
            "fix-the-bug",
            "fix_the bug!",
            "FIX THE BUG",
            "fix--the--bug",
        ];
        let names: std::collections::BTreeSet<String> =
            alike.iter().map(|r| relay_name(r, machine)).collect();
        assert_eq!(names.len(), alike.len(), "{names:?}");
        // The clean one keeps the plain shape; the others carry a suffix.
        assert!(names.contains("xa-fix-the-bug-on-box"), "{names:?}");
        // A name spelled like a suffixed one is not clean (it holds `--`): it gets its own.
        let suffixed = relay_name("Fix the bug", machine);
        let part = suffixed
            .strip_prefix("xa-")
            .and_then(|s| s.strip_suffix("-on-box"))
            .unwrap();
        assert_ne!(relay_name(part, machine), suffixed);
        // Long names that share their first 60 characters stay apart.
        let a = relay_name(&format!("{}a", "x".repeat(80)), machine);
        let b = relay_name(&format!("{}b", "x".repeat(80)), machine);
        assert_ne!(a, b);
        assert!(a.len() <= MAX_RELAY_NAME && b.len() <= MAX_RELAY_NAME);
    }

    #[test]
    fn each_permission_class_has_its_own_relay_name() {
        assert_eq!(permission_class(None), "prompting");
        assert_eq!(permission_class(Some("acceptEdits")), "prompting");
        assert_eq!(permission_class(Some("bypassPermissions")), "bypass");
        let prompting = relay_name_for("cli", "box", Some("default"));
        let bypass = relay_name_for("cli", "box", Some("bypassPermissions"));
        assert_eq!(prompting, relay_name("cli", "box"));
        assert_eq!(prompting, relay_name_for("cli", "box", Some("acceptEdits")));
        assert_ne!(prompting, bypass);
        assert!(
            bypass.starts_with("xa-cli-bypass--") && bypass.ends_with("-on-box"),
            "{bypass}"
        );
        // A sender literally named `cli-bypass` is not the bypass relay of `cli`.
        assert_ne!(relay_name("cli-bypass", "box"), bypass);
        assert_ne!(
            relay_name_for("cli-bypass", "box", Some("bypassPermissions")),
            bypass
        );
        assert!(bypass.len() <= MAX_RELAY_NAME);
    }
}
