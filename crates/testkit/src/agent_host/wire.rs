//! What the fake host puts on the wire: snapshots, summaries and envelopes as JSON in the shapes
//! `ahp-types` reads, URIs the way VS Code builds them, and its version negotiation.

use serde_json::{Value, json};

/// The version VS Code 1.141's host speaks.
pub const HOST_PROTOCOL_VERSION: &str = "0.10.0";

/// VS Code's rule (`isCompatibleProtocolVersion`): same major, same minor while the major is 0,
/// not newer than the host; the highest such offer wins, whatever the offer's order.
pub fn negotiate(offered: &[String], host_version: &str) -> Option<String> {
    let host = parse(host_version)?;
    offered
        .iter()
        .filter_map(|v| parse(v).map(|p| (p, v)))
        .filter(|(v, _)| v.0 == host.0 && (host.0 != 0 || v.1 == host.1) && *v <= host)
        .max_by_key(|(v, _)| *v)
        .map(|(_, s)| s.clone())
}

fn parse(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// The `-32005` answer, word for word as VS Code's host words it.
pub fn unsupported_version(id: u64, offered: &[String], host_version: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"error":{"code":-32005,
        "message": format!("Client offered protocol versions [{}], none of which are compatible with this server's version {host_version} (server accepts ^{host_version}).", offered.join(", ")),
        "data":{"supportedVersions":[format!("^{host_version}")]}}})
}

pub fn result(id: u64, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":result})
}

pub fn error(id: u64, code: i32, message: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","method":method,"params":params})
}

/// `ahp-chat://default/<base64url(sessionUri)>`, unpadded (VS Code's `buildDefaultChatUri`).
pub fn default_chat_uri(session_uri: &str) -> String {
    format!("ahp-chat://default/{}", base64url(session_uri.as_bytes()))
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// A random base64url token of `bytes` bytes, like the host's `connectionToken`/`instanceId`.
pub fn random_base64url(bytes: usize) -> String {
    let raw: Vec<u8> = (0..bytes.div_ceil(16))
        .flat_map(|_| uuid::Uuid::new_v4().into_bytes())
        .take(bytes)
        .collect();
    base64url(&raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_like_vscode_1_141() {
        let offer = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            negotiate(&offer(&["1.0.0", "0.10.0", "0.9.0"]), HOST_PROTOCOL_VERSION).as_deref(),
            Some("0.10.0")
        );
        assert_eq!(negotiate(&offer(&["1.0.0"]), HOST_PROTOCOL_VERSION), None);
        assert_eq!(
            negotiate(&offer(&["0.9.0", "0.11.0"]), HOST_PROTOCOL_VERSION),
            None
        );
        assert_eq!(
            negotiate(&offer(&["1.0.0", "0.10.0"]), "1.1.0").as_deref(),
            Some("1.0.0")
        );
    }

    #[test]
    fn base64url_is_unpadded() {
        assert_eq!(base64url(b"copilotcli:/a"), "Y29waWxvdGNsaTovYQ");
        assert_eq!(base64url(b"ab"), "YWI");
    }
}
