//! Receipts and the queue, as files beside each other in a relay's directory: `queue/<send
//! id>.json` is written before the send turn starts, `receipts/<send id>.json` by the hooks
//! (or by the host when the relay died). Both are written whole (temporary file, then rename),
//! so a reader never sees half a receipt, and they outlive the daemon.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::RelayError;

/// Outcome of one relayed send, as the sender reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "receipt", rename_all = "snake_case")]
pub enum RelayReceipt {
    /// Claude's own `SendMessage` result with `success: true`.
    Sent {
        msg_id: Option<String>,
        claude: Value,
    },
    /// Claude's `SendMessage` result with `success: false`; `dead` when the target's socket is
    /// gone or refuses connections (the target process died).
    Refused { claude: Value, dead: bool },
    /// Claude's `SendMessage` result with `success: false` because Claude's own rate limit for
    /// messages to one session stopped it ("Too many messages to this session just now: …"):
    /// nothing was sent, the target is alive, and a later send may pass. `words` is Claude's
    /// message, whole.
    RateLimited { claude: Value, words: String },
    /// The relay's gate denied a tool call of the send turn.
    Denied { reason: String },
    /// The send turn ended without a `SendMessage`.
    NoSend,
    /// The relay process went away mid-send. Never re-sent.
    RelayDied { detail: String },
}

impl RelayReceipt {
    /// The receipt for Claude's `SendMessage` result (the `PostToolUse` `tool_response`, which
    /// may arrive as the JSON object or as the JSON text of the tool result).
    pub(crate) fn from_claude(response: &Value) -> RelayReceipt {
        let claude = match response {
            Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| response.clone()),
            // A text block list: `[{"type":"text","text":"{…}"}]`.
            Value::Array(blocks) => blocks
                .iter()
                .find_map(|block| block.get("text").and_then(Value::as_str))
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_else(|| response.clone()),
            other => other.clone(),
        };
        if claude.get("success").and_then(Value::as_bool) == Some(true) {
            RelayReceipt::Sent {
                msg_id: claude
                    .get("msg_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                claude,
            }
        } else {
            let words = claude
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if words.contains(RATE_LIMIT_SIGN) {
                return RelayReceipt::RateLimited {
                    words: words.to_owned(),
                    claude,
                };
            }
            // Observed: `Failed to send to uds:…: ENOENT: no such file or directory … this
            // socket path is stale`. A socket left behind by a killed process refuses instead.
            let dead = ["ENOENT", "ECONNREFUSED", "is stale", "stale"]
                .iter()
                .any(|sign| words.contains(sign));
            RelayReceipt::Refused { claude, dead }
        }
    }

    /// A short name for records: `sent`, `refused`, `rate_limited`, `denied`, `no_send`,
    /// `relay_died`.
    pub fn name(&self) -> &'static str {
        match self {
            RelayReceipt::Sent { .. } => "sent",
            RelayReceipt::Refused { .. } => "refused",
            RelayReceipt::RateLimited { .. } => "rate_limited",
            RelayReceipt::Denied { .. } => "denied",
            RelayReceipt::NoSend => "no_send",
            RelayReceipt::RelayDied { .. } => "relay_died",
        }
    }
}

/// What a caller shows for [`RelayReceipt::RateLimited`], before Claude's words.
pub const RATE_LIMITED_NOTE: &str = "rate-limited by Claude, retry later";

/// The start of Claude's words when its per-session inbox rate limit refuses a send (Claude
/// Code 2.1.332, error class `sender_paced`): `Failed to send to <to>: Too many messages to
/// this session just now: <n> were sent recently and more would be dropped by its rate
/// limit, so this one was not sent. …`.
const RATE_LIMIT_SIGN: &str = "Too many messages to this session just now";

/// One queued send, as `queue/<send id>.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct QueuedSend {
    pub send_id: String,
    pub delivery_id: String,
    pub to: String,
    pub message: String,
    pub queued_at_ms: i64,
}

pub(crate) fn queue_path(dir: &Path, send_id: &str) -> PathBuf {
    dir.join("queue").join(format!("{send_id}.json"))
}

pub(crate) fn receipt_path(dir: &Path, send_id: &str) -> PathBuf {
    dir.join("receipts").join(format!("{send_id}.json"))
}

/// Writes `bytes` to `path` whole: a temporary file beside it, then a rename.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), RelayError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| RelayError::io("creating the directory", parent, e))?;
    }
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, bytes).map_err(|e| RelayError::io("writing", &temporary, e))?;
    std::fs::rename(&temporary, path).map_err(|e| RelayError::io("renaming into", path, e))
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RelayError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| RelayError::BadReceipt {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    write_whole(path, &bytes)
}

/// Writes a receipt unless one is already there: the first receipt of a send wins (a `Stop`
/// after a `PostToolUse`, or a death after a receipt, must not overwrite it). Returns whether
/// this one was written.
pub(crate) fn write_receipt_once(
    dir: &Path,
    send_id: &str,
    receipt: &RelayReceipt,
) -> Result<bool, RelayError> {
    let path = receipt_path(dir, send_id);
    if path.exists() {
        return Ok(false);
    }
    write_json(&path, receipt)?;
    Ok(true)
}

/// How long a relay's queue, receipt and inbox files are kept: long past any send's wait and
/// any reply's, and then they would only grow.
pub(crate) const RETENTION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 60 * 60);

/// Removes the files in `queue/`, `receipts/` and `inbox/` of a relay's directory last written
/// more than `max_age` ago. Returns how many went; a file that cannot be read or removed stays.
pub(crate) fn prune(dir: &Path, max_age: std::time::Duration) -> usize {
    let mut removed = 0;
    for sub in ["queue", "receipts", "inbox"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > max_age);
            if old && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// Reads the receipt the hooks wrote for `send_id`; `None` when there is none yet.
pub fn read_receipt(dir: &Path, send_id: &str) -> Result<Option<RelayReceipt>, RelayError> {
    let path = receipt_path(dir, send_id);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RelayError::io("reading", &path, e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| RelayError::BadReceipt {
            path,
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_results_map_to_receipts() {
        let ok = json!({"success":true,"message":"…","display":"…","msg_id":"60746633"});
        assert_eq!(
            RelayReceipt::from_claude(&Value::String(ok.to_string())),
            RelayReceipt::Sent {
                msg_id: Some("60746633".into()),
                claude: ok.clone()
            }
        );
        let dead = json!({"success":false,"message":"Failed to send to uds:/tmp/cc-socks/27873.sock: ENOENT: no such file or directory, lstat '/tmp/cc-socks/27873.sock' — the peer process may have restarted, so this socket path is stale. Call ListAgents to get the current address."});
        assert_eq!(
            RelayReceipt::from_claude(&dead),
            RelayReceipt::Refused {
                claude: dead.clone(),
                dead: true
            }
        );
        let unknown =
            json!({"success":false,"message":"No agent named 'nobody-here' is reachable."});
        assert_eq!(
            RelayReceipt::from_claude(&json!([{"type":"text","text": unknown.to_string()}])),
            RelayReceipt::Refused {
                claude: unknown,
                dead: false
            }
        );
    }

    #[test]
    fn claudes_rate_limit_is_its_own_receipt_with_claudes_words() {
        // Claude's words, as its SendMessage builds them for a `uds:` target (from the 2.1.332
        // program: `Failed to send to ${label}: ${error}` with the `sender_paced` error's text).
        let words = "Failed to send to uds:/tmp/cc-socks/41230.sock: Too many messages to this session just now: 34 were sent recently and more would be dropped by its rate limit, so this one was not sent. Batch what remains into one message, or wait a little before sending more.";
        let limited = json!({"success": false, "message": words});
        let receipt = RelayReceipt::from_claude(&Value::String(limited.to_string()));
        assert_eq!(
            receipt,
            RelayReceipt::RateLimited {
                claude: limited.clone(),
                words: words.to_owned()
            }
        );
        assert_eq!(receipt.name(), "rate_limited");
        // By name the code sits in brackets; still the same limit.
        let by_name = json!({"success": false, "message": "Failed to send to bravo: Too many messages to this session just now: 12 were sent recently and more would be dropped by its rate limit, so this one was not sent. Batch what remains into one message, or wait a little before sending more."});
        assert!(matches!(
            RelayReceipt::from_claude(&by_name),
            RelayReceipt::RateLimited { .. }
        ));
        // It round-trips through the receipt file like the others.
        let dir = tempfile::tempdir().unwrap();
        write_receipt_once(dir.path(), "r", &receipt).unwrap();
        assert_eq!(read_receipt(dir.path(), "r").unwrap(), Some(receipt));
    }

    #[test]
    fn old_files_are_pruned_and_recent_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        write_receipt_once(dir.path(), "old", &RelayReceipt::NoSend).unwrap();
        write_receipt_once(dir.path(), "new", &RelayReceipt::NoSend).unwrap();
        let old = std::fs::File::options()
            .write(true)
            .open(receipt_path(dir.path(), "old"))
            .unwrap();
        old.set_modified(std::time::SystemTime::now() - RETENTION * 2)
            .unwrap();
        assert_eq!(prune(dir.path(), RETENTION), 1);
        assert!(!receipt_path(dir.path(), "old").exists());
        assert!(receipt_path(dir.path(), "new").exists());
    }

    #[test]
    fn the_first_receipt_wins_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_receipt(dir.path(), "s1").unwrap(), None);
        assert!(write_receipt_once(dir.path(), "s1", &RelayReceipt::NoSend).unwrap());
        let died = RelayReceipt::RelayDied {
            detail: "gone".into(),
        };
        assert!(!write_receipt_once(dir.path(), "s1", &died).unwrap());
        assert_eq!(
            read_receipt(dir.path(), "s1").unwrap(),
            Some(RelayReceipt::NoSend)
        );
        std::fs::write(receipt_path(dir.path(), "s2"), b"{").unwrap();
        assert!(matches!(
            read_receipt(dir.path(), "s2"),
            Err(RelayError::BadReceipt { .. })
        ));
    }
}
