//! The caller-context rules (docs/spec/cross-agent-mcp.md "What a spawned agent CLI inherits", "Reply address"), on
//! made-up environments: the baseline, every other name reported withheld, credential-bearing
//! proxies withheld whole, the `CROSS_AGENT_CHILD_ENV` opt-in, identity never inherited,
//! Codex's `_meta` passed raw.

use std::collections::BTreeMap;

use cross_agent_caller::{ChildEnv, PerCall, Snapshot, child_env, codex_turn_metadata, context};
use pretty_assertions::assert_eq;
use serde_json::json;

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn the_child_gets_the_baseline_and_nothing_else() {
    let env = vars(&[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("SHELL", "/bin/zsh"),
        ("USER", "u"),
        ("LOGNAME", "u"),
        ("LANG", "en_US.UTF-8"),
        ("LC_ALL", "C"),
        ("TERM", "xterm"),
        ("COLORTERM", "truecolor"),
        ("TZ", "UTC"),
        ("TMPDIR", "/tmp"),
        ("XDG_CONFIG_HOME", "/home/u/.config"),
        ("NO_PROXY", "localhost"),
        ("SSL_CERT_FILE", "/etc/ca.pem"),
        ("NODE_EXTRA_CA_CERTS", "/etc/ca.pem"),
        ("__CF_USER_TEXT_ENCODING", "0x1F5:0x0:0x0"),
        ("CLAUDE_CONFIG_DIR", "/home/u/.claude"),
        ("CODEX_HOME", "/home/u/.codex"),
        ("GROK_HOME", "/home/u/.grok"),
        ("CROSS_AGENT_MAX_HOPS", "3"),
        ("CROSS_AGENT_CODEX_SANDBOX", "read-only"),
        // Not in the baseline:
        ("EDITOR", "vim"),
        ("VSCODE_PID", "77"),
        ("ANTHROPIC_API_KEY", "sk-a"),
        ("GITHUB_TOKEN", "ghp"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
        ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
        ("XAI_API_KEY", "xai"),
        ("COPILOT_AGENT_SESSION_ID", "sdk-1"),
        ("CLAUDE_CODE_SESSION_ID", "c-1"),
        ("CROSS_AGENT_SELF", "claude"),
        ("CROSS_AGENT_SELF_SESSION", "claude:c-1"),
        ("CROSS_AGENT_CONVERSATION_ID", "conv_1"),
    ]);
    let ChildEnv {
        vars: child,
        withheld,
    } = child_env(&env);
    let passed: Vec<&str> = child.keys().map(String::as_str).collect();
    assert_eq!(
        passed,
        vec![
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
            "COLORTERM",
            "CROSS_AGENT_CODEX_SANDBOX",
            "CROSS_AGENT_MAX_HOPS",
            "GROK_HOME",
            "HOME",
            "LANG",
            "LC_ALL",
            "LOGNAME",
            "NODE_EXTRA_CA_CERTS",
            "NO_PROXY",
            "PATH",
            "SHELL",
            "SSL_CERT_FILE",
            "TERM",
            "TMPDIR",
            "TZ",
            "USER",
            "XDG_CONFIG_HOME",
            "__CF_USER_TEXT_ENCODING",
        ]
    );
    assert_eq!(
        withheld,
        vec![
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "EDITOR",
            "GITHUB_TOKEN",
            "SSH_AUTH_SOCK",
            "VSCODE_PID",
            "XAI_API_KEY",
        ],
        "every name outside the baseline, whatever it is called, so a failure naming one can \
         be told cross-agent withheld it; not who the caller is"
    );
}

#[test]
fn a_proxy_carrying_credentials_is_withheld_whole() {
    let env = vars(&[
        ("HTTPS_PROXY", "https://alice:s3cret@proxy.corp:3128"),
        ("http_proxy", "user:pass@host:8080"),
        ("HTTP_PROXY", "http://proxy.corp:3128"),
        ("ALL_PROXY", "socks5://proxy.corp:1080"),
        ("all_proxy", "socks5://bob:pw@proxy.corp:1080"),
    ]);
    let ChildEnv {
        vars: child,
        withheld,
    } = child_env(&env);
    assert_eq!(
        child,
        vars(&[
            ("ALL_PROXY", "socks5://proxy.corp:1080"),
            ("HTTP_PROXY", "http://proxy.corp:3128"),
        ]),
        "credential-free proxies pass unchanged; no rewritten copy of the others"
    );
    assert_eq!(withheld, vec!["HTTPS_PROXY", "all_proxy", "http_proxy"]);
}

#[test]
fn child_env_opts_names_in_knowingly() {
    let env = vars(&[
        (
            "CROSS_AGENT_CHILD_ENV",
            " XAI_API_KEY , HTTPS_PROXY,,SSH_AUTH_SOCK,NOT_SET ",
        ),
        ("XAI_API_KEY", "xai-1"),
        ("HTTPS_PROXY", "https://alice:s3cret@proxy.corp:3128"),
        ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
        ("GITHUB_TOKEN", "ghp"),
    ]);
    let ChildEnv {
        vars: child,
        withheld,
    } = child_env(&env);
    assert_eq!(child["XAI_API_KEY"], "xai-1");
    assert_eq!(child["HTTPS_PROXY"], "https://alice:s3cret@proxy.corp:3128");
    assert_eq!(child["SSH_AUTH_SOCK"], "/tmp/agent.sock");
    assert_eq!(
        child["CROSS_AGENT_CHILD_ENV"], " XAI_API_KEY , HTTPS_PROXY,,SSH_AUTH_SOCK,NOT_SET ",
        "the setting itself travels, so a child bridge is configured alike"
    );
    assert!(!child.contains_key("NOT_SET"));
    assert_eq!(withheld, vec!["GITHUB_TOKEN"]);
}

#[test]
fn the_copilot_sdk_binding_is_read_as_the_callers_and_never_reaches_a_peer_cli() {
    let snapshot = Snapshot {
        vars: vars(&[
            ("COPILOT_AGENT_SESSION_ID", "sdk-7"),
            // Named knowingly, it is still not passed: it would bind the peer to this session.
            ("CROSS_AGENT_CHILD_ENV", "COPILOT_AGENT_SESSION_ID"),
            ("PATH", "/usr/bin"),
        ]),
        cwd: Some("/p".into()),
        pid: 9,
        ancestry: vec![],
    };
    let ctx = context(&snapshot, PerCall::default());
    assert_eq!(ctx.copilot_agent_session_id.as_deref(), Some("sdk-7"));
    assert!(!ctx.child_env.contains_key("COPILOT_AGENT_SESSION_ID"));
    assert!(
        !ctx.withheld_env
            .contains(&"COPILOT_AGENT_SESSION_ID".to_owned()),
        "the caller's identity, never advice to pass it: {:?}",
        ctx.withheld_env
    );
}

#[test]
fn cross_agent_self_is_a_setting_but_never_inherited() {
    let snapshot = Snapshot {
        vars: vars(&[
            ("CROSS_AGENT_SELF", "grok"),
            ("CROSS_AGENT_SCOPE", "tree"),
            ("CROSS_AGENT_CHILD_ENV", "CROSS_AGENT_SELF_X"),
        ]),
        cwd: Some("/p".into()),
        pid: 9,
        ancestry: vec![],
    };
    let ctx = context(&snapshot, PerCall::default());
    assert_eq!(ctx.self_agent.as_deref(), Some("grok"));
    assert_eq!(ctx.settings["CROSS_AGENT_SELF"], "grok");
    assert!(!ctx.child_env.contains_key("CROSS_AGENT_SELF"));
    assert_eq!(ctx.child_env["CROSS_AGENT_SCOPE"], "tree");
}

#[test]
fn codex_turn_metadata_is_passed_through_raw() {
    let metadata = json!({
        "session_id": "01a2",
        "thread_id": "01a2",
        "turn_id": "01a3",
        "thread_source": "user",
        "unknown_future_field": {"nested": [1, 2, 3]},
    });
    let meta = json!({
        "x-codex-turn-metadata": metadata.clone(),
        "threadId": "01a2",
        "progressToken": 1,
    });
    let snapshot = Snapshot::default();
    let ctx = context(
        &snapshot,
        PerCall {
            client_name: Some("codex-mcp-client".into()),
            codex_turn_metadata: codex_turn_metadata(meta.as_object()),
            copilot_caller_session: None,
        },
    );
    assert_eq!(ctx.codex_turn_metadata, Some(metadata));
    assert_eq!(ctx.client_name.as_deref(), Some("codex-mcp-client"));

    // A string holding JSON, or something malformed, is passed as it came: the daemon parses
    // it defensively.
    let odd = json!({"x-codex-turn-metadata": "not { json"});
    assert_eq!(
        codex_turn_metadata(odd.as_object()),
        Some(json!("not { json"))
    );
}
