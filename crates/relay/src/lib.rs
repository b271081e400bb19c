//! Claude's native peer door (issue 14, spec 003 `claude_relay`): a **relay** is a real Claude
//! Code runtime the daemon hosts, one per represented sender, named `xa-<name>-on-<machine>`,
//! whose API is a deterministic endpoint this crate serves on loopback — so no model ever runs
//! in it. It sends through Claude's own `SendMessage` and receives peers' replies through its
//! `UserPromptSubmit` hook.
//!
//! Three rules (spec 003):
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
//! RelayHost::start(RelayConfig) -> Result<RelayHost, RelayError>      // Clone; binds 127.0.0.1:0
//! RelayHost::send(NativeSend) -> Result<RelayReceipt, RelayError>     // queue, send turn, Claude's receipt
//! RelayHost::hook(&HookParams) -> Option<HookResponse>                // Some(..) iff the call is a relay's
//! RelayHost::take_inbound() -> Option<UnboundedReceiver<InboundMail>> // once, for the hub
//! RelayHost::relays() -> Vec<RelayInfo>; RelayHost::model_requests(relay) -> u64
//! RelayHost::endpoint_url() -> String; RelayReceipt::name() -> "sent" | "refused" | …
//! RelayHost::shutdown()                                               // stops every relay
//! parse_inbound_text(&str) -> Option<InboundKind>
//! ```
//! How a relay runs: `claude -p --input-format stream-json --output-format stream-json --verbose
//! --name <relay> --settings <dir>/hooks.json --strict-mcp-config --mcp-config '{"mcpServers":{}}'
//! --setting-sources local --no-session-persistence [--permission-mode <target's>]`, cwd its own
//! directory, environment cleared to `RelayConfig::claude_env` (the target's `HOME`) plus the
//! endpoint as `ANTHROPIC_BASE_URL`, its own API key, `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`
//! and `CROSS_AGENT_HOME` (for its hooks). So no MCP server, no user hook or rule, and no
//! transcript in the user's store. Claude itself rate-limits messages to one session (seen:
//! "Too many messages to this session just now: 34 were sent recently …"): that comes back as
//! [`RelayReceipt::Refused`] with Claude's words and `dead: false`.
//!
//! Changes from the first contract: [`RelayConfig`] also names the `cross-agent` program the
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
pub use receipt::RelayReceipt;

/// Prefix marking a registry name as a relay rather than a session: such names are never
/// listed or chosen as sessions.
pub const RELAY_NAME_PREFIX: &str = "xa-";

/// Text every relay turn ends with. Claude quotes a session's last line in its idle notices, so
/// this is what a peer that subscribed to the relay reads about it.
pub const RELAY_STATUS_LINE: &str = "[cross-agent relay] This session is a cross-agent relay: it runs no model and reads nothing; it only carries messages for the session it is named after, and replies to it reach that session.";

/// Model name a relay's requests carry; the relay endpoint answers without any model.
pub const RELAY_MODEL: &str = "cross-agent-relay";

/// The longest relay name: Claude shows names in listings and the `to` of `SendMessage` allows
/// 300 characters, so this leaves room while keeping listings readable.
pub const MAX_RELAY_NAME: usize = 64;

/// The registry name of the relay that represents `represented` on `machine`:
/// `xa-<name>-on-<machine>`, every character but ASCII letters, digits, `.` and `_` turned
/// into `-` (runs collapsed, lower case), the name part shortened so the whole fits
/// [`MAX_RELAY_NAME`].
pub fn relay_name(represented: &str, machine: &str) -> String {
    let machine = truncate(&sanitize(machine, "machine"), 24);
    let room = MAX_RELAY_NAME
        .saturating_sub(RELAY_NAME_PREFIX.len() + "-on-".len() + machine.len())
        .max(1);
    let name = truncate(&sanitize(represented, "session"), room);
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
        assert_eq!(
            relay_name("Fix the login bug!", "My Laptop.local"),
            "xa-fix-the-login-bug-on-my-laptop.local"
        );
        assert_eq!(relay_name("", "  "), "xa-session-on-machine");
        let long = relay_name(&"é".repeat(10).replace('é', "abcdefghij"), "m");
        assert!(long.len() <= MAX_RELAY_NAME, "{long}");
        assert!(long.ends_with("-on-m"));
        assert!(is_relay_name(&long));
        assert!(!is_relay_name("bravo"));
    }
}
