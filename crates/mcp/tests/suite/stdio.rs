//! `cross-agent mcp` over its real stdio: both protocol eras, the tool list, malformed input,
//! tool errors (bad arguments, no daemon), and the caller context the daemon receives.

use std::collections::BTreeSet;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{FakeDaemon, McpProcess, Scratch, modern_meta};

const TOOLS: [&str; 7] = [
    "send_to_claude",
    "send_to_codex",
    "send_to_grok",
    "send_to_copilot",
    "list_agent_sessions",
    "bridge_status",
    "pin_agent_session",
];

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn initialize_era_handshake_lists_the_seven_tools() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let mut server = McpProcess::spawn(&scratch, &scratch.env(), scratch.dir.path())?;

    let init = server.initialize("test-client")?;
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], json!("2025-06-18"));
    assert_eq!(result["serverInfo"]["name"], json!("cross-agent"));
    assert_eq!(
        result["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    let instructions = result["instructions"].as_str().expect("instructions");
    assert!(instructions.contains("exact name"), "{instructions}");
    assert!(instructions.contains("last resort"), "{instructions}");
    assert!(!instructions.contains("CROSS_AGENT_REQUIRE_EXPLICIT_TARGET"));

    let list = server.request("tools/list", json!({}))?;
    assert_eq!(tool_names(&list), TOOLS);
    let copilot = list["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "send_to_copilot"))
        .expect("send_to_copilot is listed");
    let description = copilot["description"].as_str().unwrap_or_default();
    assert!(description.contains("no CLI fallback"), "{description}");
    assert!(
        copilot["inputSchema"]["properties"]["session_id"]["description"]
            .as_str()
            .unwrap_or_default()
            .contains("session URI"),
        "{copilot}"
    );
    assert!(instructions.contains("send_to_copilot"), "{instructions}");

    let status = server.close()?;
    assert!(
        status.success(),
        "exits cleanly when stdin closes: {status}"
    );
    Ok(())
}

#[test]
fn discover_era_answers_without_initialize() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let daemon = FakeDaemon::start(&scratch.cross_agent_home())?;
    let mut server = McpProcess::spawn(&scratch, &scratch.env(), scratch.dir.path())?;

    let discover = server.request(
        "server/discover",
        json!({"_meta": modern_meta("modern-client")}),
    )?;
    let result = &discover["result"];
    let versions: BTreeSet<&str> = result["supportedVersions"]
        .as_array()
        .expect("supportedVersions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(versions.contains("2026-07-28"), "{versions:?}");
    assert!(versions.contains("2025-06-18"), "{versions:?}");
    assert_eq!(
        result["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        json!("cross-agent")
    );
    assert!(
        result["instructions"]
            .as_str()
            .unwrap()
            .contains("exact name")
    );

    let list = server.request("tools/list", json!({"_meta": modern_meta("modern-client")}))?;
    assert_eq!(tool_names(&list), TOOLS);

    let call = server.request(
        "tools/call",
        json!({"_meta": modern_meta("modern-client"), "name": "bridge_status", "arguments": {}}),
    )?;
    assert_eq!(call["result"]["isError"], json!(false), "{call}");
    assert_eq!(
        call["result"]["structuredContent"]["server_process"]["version"],
        json!("fake")
    );
    let forwarded = daemon.calls_of("bridge_status");
    assert_eq!(forwarded.len(), 1);
    assert_eq!(
        forwarded[0].params["caller"]["client_name"],
        json!("modern-client"),
        "the 2026 era's client name comes from the request _meta"
    );

    // A subscription stream is acknowledged with what it will carry (the tool list changing
    // after a daemon restart) and stays open while the session goes on.
    server.send(&json!({
        "jsonrpc": "2.0", "id": 900, "method": "subscriptions/listen",
        "params": {
            "_meta": modern_meta("modern-client"),
            "notifications": {"toolsListChanged": true, "promptsListChanged": true},
        },
    }))?;
    let ack = server.recv()?;
    assert_eq!(
        ack["method"],
        json!("notifications/subscriptions/acknowledged"),
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{ack}"
    );

    // A request of the 2026 era without its required _meta is an error, not a crash.
    let bare = server.request("tools/list", json!({}))?;
    assert!(
        bare.get("error").is_some() || bare.get("result").is_some(),
        "{bare}"
    );
    let again = server.request("tools/list", json!({"_meta": modern_meta("modern-client")}))?;
    assert_eq!(tool_names(&again), TOOLS);
    Ok(())
}

#[test]
fn malformed_input_gets_errors_and_the_server_keeps_serving() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let mut server = McpProcess::spawn(&scratch, &scratch.env(), scratch.dir.path())?;
    server.initialize("test-client")?;

    server.send_line("this is not json")?;
    let parse_error = server.recv()?;
    assert_eq!(parse_error["error"]["code"], json!(-32700), "{parse_error}");
    assert_eq!(parse_error["id"], Value::Null);

    server.send_line(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#)?;
    assert_eq!(
        server.recv()?["error"]["code"],
        json!(-32700),
        "truncated JSON"
    );

    server.send_line(r#"{"not":"json-rpc"}"#)?;
    let invalid = server.recv()?;
    assert_eq!(invalid["error"]["code"], json!(-32600), "{invalid}");

    let unknown = server.request("no/such/method", json!({}))?;
    assert_eq!(unknown["error"]["code"], json!(-32601), "{unknown}");

    let no_tool = server.request(
        "tools/call",
        json!({"name": "send_to_gemini", "arguments": {}}),
    )?;
    assert_eq!(no_tool["error"]["code"], json!(-32602), "{no_tool}");

    let list = server.request("tools/list", json!({}))?;
    assert_eq!(
        tool_names(&list),
        TOOLS,
        "still serving after the bad lines"
    );
    assert!(server.close()?.success());
    Ok(())
}

#[test]
fn bad_arguments_are_tool_errors_that_name_the_parameter() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let mut server = McpProcess::spawn(&scratch, &scratch.env(), scratch.dir.path())?;
    server.initialize("test-client")?;

    let codex_flag = server.request(
        "tools/call",
        json!({"name": "send_to_codex", "arguments": {"message": "hi", "allow_same_agent": true}}),
    )?;
    assert_eq!(codex_flag["result"]["isError"], json!(true));
    assert_eq!(
        codex_flag["result"]["structuredContent"]["error"],
        json!("invalid_arguments")
    );
    assert!(codex_flag.to_string().contains("session_id"));

    let no_message = server.request(
        "tools/call",
        json!({"name": "send_to_claude", "arguments": {}}),
    )?;
    assert!(
        no_message["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("`message` is required")
    );

    let bad_scope = server.request(
        "tools/call",
        json!({"name": "list_agent_sessions", "arguments": {"scope": "galaxy"}}),
    )?;
    assert!(bad_scope.to_string().contains("use cwd, tree or any"));
    Ok(())
}

/// The answers that bypass a tool's own reading: a tool that does not exist is a JSON-RPC error
/// listing the tools (not rmcp's bare "tool not found"), and a call with no `arguments` at all is
/// read as one with none, refused as a tool error of the spec's shape.
#[test]
fn an_unknown_tool_is_a_protocol_error_and_absent_arguments_are_none() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let mut server = McpProcess::spawn(&scratch, &scratch.env(), scratch.dir.path())?;
    server.initialize("test-client")?;

    let unknown = server.request("tools/call", json!({"name": "send_to_gemini"}))?;
    assert_eq!(
        unknown["error"],
        json!({
            "code": -32602,
            "message": "no tool named `send_to_gemini`; this server has send_to_claude, \
                send_to_codex, send_to_grok, send_to_copilot, list_agent_sessions, bridge_status, \
                pin_agent_session",
        })
    );

    let absent = server.request("tools/call", json!({"name": "pin_agent_session"}))?;
    let message = "pin_agent_session: `agent` is required";
    assert_eq!(
        absent["result"],
        json!({
            "content": [{"type": "text", "text": message}],
            "isError": true,
            "structuredContent": {
                "outcome": "error",
                "error": "invalid_arguments",
                "message": message,
            },
        })
    );
    Ok(())
}

#[test]
fn a_daemon_that_cannot_start_is_a_tool_error_naming_the_log() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let mut env = scratch.env();
    env.insert(
        "CROSS_AGENT_DAEMON_BIN".into(),
        "/nonexistent/cross-agent".into(),
    );
    let mut server = McpProcess::spawn(&scratch, &env, scratch.dir.path())?;
    server.initialize("test-client")?;

    let call = server.request(
        "tools/call",
        json!({"name": "bridge_status", "arguments": {}}),
    )?;
    assert_eq!(call["result"]["isError"], json!(true), "{call}");
    let text = call["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("could not reach its daemon"), "{text}");
    assert!(
        text.contains("daemon-console.log"),
        "names the log file: {text}"
    );
    assert_eq!(
        call["result"]["structuredContent"]["error"],
        json!("daemon_unreachable")
    );
    Ok(())
}

#[test]
fn strict_mode_and_ui_hook_require_add_their_sentences_to_the_instructions() -> anyhow::Result<()> {
    use cross_agent_mcp::server::{STRICT_SENTENCE, UI_HOOK_REQUIRE_SENTENCE};
    let scratch = Scratch::new()?;
    for (var, value, sentence, expected) in [
        (
            "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET",
            "1",
            STRICT_SENTENCE,
            true,
        ),
        (
            "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET",
            "on",
            STRICT_SENTENCE,
            true,
        ),
        (
            "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET",
            "off",
            STRICT_SENTENCE,
            false,
        ),
        (
            "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET",
            "0",
            STRICT_SENTENCE,
            false,
        ),
        (
            "CROSS_AGENT_UI_HOOK",
            "require",
            UI_HOOK_REQUIRE_SENTENCE,
            true,
        ),
        (
            "CROSS_AGENT_UI_HOOK",
            "REQUIRE ",
            UI_HOOK_REQUIRE_SENTENCE,
            true,
        ),
        (
            "CROSS_AGENT_UI_HOOK",
            "auto",
            UI_HOOK_REQUIRE_SENTENCE,
            false,
        ),
        (
            "CROSS_AGENT_UI_HOOK",
            "off",
            UI_HOOK_REQUIRE_SENTENCE,
            false,
        ),
    ] {
        let mut env = scratch.env();
        env.insert(var.into(), value.into());
        let mut server = McpProcess::spawn(&scratch, &env, scratch.dir.path())?;
        let init = server.initialize("test-client")?;
        let instructions = init["result"]["instructions"].as_str().unwrap();
        assert_eq!(instructions.contains(sentence), expected, "{var}={value}");
    }
    Ok(())
}

#[test]
fn the_daemon_receives_the_callers_context() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let daemon = FakeDaemon::start(&scratch.cross_agent_home())?;
    let mut env = scratch.env();
    for (key, value) in [
        (
            "CLAUDE_CODE_SESSION_ID",
            "5ff355ef-b2f2-4ab0-bb7b-c6ff4230de7d",
        ),
        ("GROK_SESSION_ID", "grok-7"),
        ("CROSS_AGENT_SELF_SESSION", "codex:t-9"),
        ("CROSS_AGENT_SELF", "claude"),
        ("CROSS_AGENT_CONVERSATION_ID", "conv_abc"),
        ("CROSS_AGENT_MAX_HOPS", "2"),
        ("CROSS_AGENT_CHILD_ENV", "ANTHROPIC_API_KEY"),
        ("ANTHROPIC_API_KEY", "sk-test"),
        ("OPENAI_API_KEY", "sk-other"),
        ("HTTPS_PROXY", "https://alice:s3cret@proxy:3128"),
        ("LANG", "C.UTF-8"),
        ("SECRET_STUFF", "stuff-value-9"),
    ] {
        env.insert(key.into(), value.into());
    }
    let project = scratch.dir.path().join("proj");
    std::fs::create_dir_all(&project)?;
    let mut server = McpProcess::spawn(&scratch, &env, &project)?;
    server.initialize("claude-code")?;

    let turn_metadata = json!({
        "session_id": "01a22980-8a35-77d0-987b-7dd833a35f14",
        "thread_id": "01a22980-8a35-77d0-987b-7dd833a35f14",
        "turn_id": "01a22980-8f98-7c01-9f26-0e1fec3dd4fd",
        "sandbox_mode": "read-only",
        "codex_version": "0.171.0"
    });
    let call = server.request(
        "tools/call",
        json!({
            "_meta": {"x-codex-turn-metadata": turn_metadata, "callId": "call_1", "progressToken": 1},
            "name": "send_to_codex",
            "arguments": {"message": "review this", "session_id": "billing-api", "timeout": "90"},
        }),
    )?;
    assert_eq!(call["result"]["isError"], json!(false), "{call}");
    assert_eq!(
        call["result"]["structuredContent"]["delivery_id"],
        json!("dlv_fake")
    );

    let sends = daemon.calls_of("send");
    assert_eq!(sends.len(), 1);
    let params = &sends[0].params;
    assert_eq!(params["agent"], json!("codex"));
    assert_eq!(params["message"], json!("review this"));
    assert_eq!(params["session_id"], json!("billing-api"));
    assert_eq!(params["timeout"], json!(90));
    assert_eq!(params["allow_same_agent"], json!(false));
    let caller = &params["caller"];
    assert_eq!(caller["client_name"], json!("claude-code"));
    assert_eq!(caller["cwd"], json!(project.to_string_lossy()));
    assert_eq!(
        caller["claude_code_session_id"],
        json!("5ff355ef-b2f2-4ab0-bb7b-c6ff4230de7d")
    );
    assert_eq!(caller["grok_session_id"], json!("grok-7"));
    assert_eq!(caller["self_session"], json!("codex:t-9"));
    assert_eq!(caller["self_agent"], json!("claude"));
    assert_eq!(caller["conversation_id"], json!("conv_abc"));
    assert_eq!(
        caller["codex_turn_metadata"], turn_metadata,
        "passed through raw"
    );
    assert!(caller["pid"].as_u64().unwrap() > 0);
    assert_eq!(
        caller["ancestry"][0]["pid"],
        json!(std::process::id()),
        "the test process is the server's parent"
    );
    assert_eq!(caller["settings"]["CROSS_AGENT_MAX_HOPS"], json!("2"));
    assert_eq!(caller["settings"]["CROSS_AGENT_SELF"], json!("claude"));

    let child = caller["child_env"].as_object().unwrap();
    assert_eq!(child["ANTHROPIC_API_KEY"], json!("sk-test"), "opted in");
    assert_eq!(child["LANG"], json!("C.UTF-8"));
    assert_eq!(child["CROSS_AGENT_MAX_HOPS"], json!("2"));
    for absent in [
        "CROSS_AGENT_SELF",
        "CROSS_AGENT_SELF_SESSION",
        "CROSS_AGENT_CONVERSATION_ID",
        "CLAUDE_CODE_SESSION_ID",
        "GROK_SESSION_ID",
        "OPENAI_API_KEY",
        "HTTPS_PROXY",
        "SECRET_STUFF",
    ] {
        assert!(
            !child.contains_key(absent),
            "{absent} must not reach a child"
        );
    }
    assert_eq!(
        caller["withheld_env"],
        json!(["HTTPS_PROXY", "OPENAI_API_KEY", "SECRET_STUFF"]),
        "every withheld name, whatever it is called; not who the caller is"
    );
    let forwarded = serde_json::to_string(caller)?;
    for value in ["sk-other", "s3cret", "stuff-value-9"] {
        assert!(
            !forwarded.contains(value),
            "a withheld value never leaves: {value}"
        );
    }
    Ok(())
}

/// `send_to_copilot` over the real stdio server: the daemon gets a send to Copilot with the
/// session as named (a URI here), `allow_same_agent`, and the Copilot SDK's binding as the
/// caller's, which no peer CLI inherits.
#[test]
fn send_to_copilot_reaches_the_daemon_with_the_sdk_binding_as_the_caller() -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let daemon = FakeDaemon::start(&scratch.cross_agent_home())?;
    let mut env = scratch.env();
    env.insert("COPILOT_AGENT_SESSION_ID".into(), "sdk-42".into());
    let mut server = McpProcess::spawn(&scratch, &env, scratch.dir.path())?;
    server.initialize("Visual Studio Code")?;
    let call = server.request(
        "tools/call",
        json!({
            "name": "send_to_copilot",
            "arguments": {
                "message": "review this",
                "session_id": "copilotcli:/6f1e1b9c-1111-4c3e-9a55-3b8f2b1c0d42",
                "allow_same_agent": true,
            },
        }),
    )?;
    assert_eq!(call["result"]["isError"], json!(false), "{call}");
    assert_eq!(
        call["result"]["structuredContent"]["transport"],
        json!("agent-host")
    );
    let sends = daemon.calls_of("send");
    assert_eq!(sends.len(), 1);
    let params = &sends[0].params;
    assert_eq!(params["agent"], json!("copilot"));
    assert_eq!(
        params["session_id"],
        json!("copilotcli:/6f1e1b9c-1111-4c3e-9a55-3b8f2b1c0d42")
    );
    assert_eq!(params["allow_same_agent"], json!(true));
    assert_eq!(
        params["caller"]["copilot_agent_session_id"],
        json!("sdk-42")
    );
    assert!(
        !params["caller"]["child_env"]
            .as_object()
            .unwrap()
            .contains_key("COPILOT_AGENT_SESSION_ID")
    );
    Ok(())
}
