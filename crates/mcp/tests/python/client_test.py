"""The official Python MCP SDK (mcp 2.x) as a client of `cross-agent mcp`.

Usage: client_test.py <path to the cross-agent binary>

Runs the server twice per protocol era (the `initialize` handshake and the 2026-07-28
`server/discover` lifecycle), and checks what an agent would see: the handshake, the tool
list, every tool's input schema (names, types, required parameters, defaults;
`send_to_codex` without `allow_same_agent`), the annotations, the instructions (the
strict-mode sentence only when CROSS_AGENT_REQUIRE_EXPLICIT_TARGET is on), and calls to
`bridge_status` and `list_agent_sessions` that return structuredContent. CROSS_AGENT_HOME
must point at a daemon (the Rust test starts a fake one). Prints ALL CHECKS PASSED at the end.
"""

import asyncio
import os
import sys

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN = sys.argv[1]
STRICT = "CROSS_AGENT_REQUIRE_EXPLICIT_TARGET"

SEND_PARAMS = {
    "message": "string",
    "session_id": "string",
    "new_session": "boolean",
    "scope": "string",
    "cwd": "string",
    "timeout": "integer",
    "conversation_id": "string",
    "raw": "boolean",
    "host": "string",
}

EXPECTED_DEFAULTS = {
    "new_session": False,
    "scope": "cwd",
    "timeout": 600,
    "raw": False,
    "allow_same_agent": False,
}

failures = []


def check(condition, what):
    if condition:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}")
        failures.append(what)


def wire(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def session_run(era, extra_env):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ["HOME"],
        "CROSS_AGENT_HOME": os.environ["CROSS_AGENT_HOME"],
    }
    env.update(extra_env)
    params = StdioServerParameters(command=BIN, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write):
        info = types.Implementation(name="python-sdk-test", version="1.0")
        async with ClientSession(read, write, client_info=info) as session:
            if era == "initialize":
                result = await session.initialize()
                check(result.protocol_version.startswith("20"), f"[{era}] negotiated {result.protocol_version}")
            else:
                result = await session.discover()
                check("2026-07-28" in result.supported_versions, f"[{era}] 2026-07-28 among {result.supported_versions}")
            check(session.server_info is not None and session.server_info.name == "cross-agent",
                  f"[{era}] serverInfo.name is cross-agent")
            caps = session.server_capabilities if hasattr(session, "server_capabilities") else None
            instructions = session.instructions or ""
            listed = await session.list_tools()
            tools = {tool.name: wire(tool) for tool in listed.tools}
            status = await session.call_tool("bridge_status", {})
            sessions = await session.call_tool("list_agent_sessions", {"agent": "both", "limit": 5})
            bad = await session.call_tool("send_to_codex", {"message": "x", "allow_same_agent": True})
            return instructions, tools, wire(status), wire(sessions), wire(bad), caps


def check_tools(era, tools):
    names = list(tools)
    check(names == ["send_to_claude", "send_to_codex", "send_to_grok", "send_to_copilot",
                    "list_agent_sessions", "bridge_status", "pin_agent_session"],
          f"[{era}] the seven tools in order: {names}")
    for name in ["send_to_claude", "send_to_codex", "send_to_grok", "send_to_copilot"]:
        schema = tools[name]["inputSchema"]
        props = schema["properties"]
        check(schema.get("required") == ["message"], f"[{era}] {name} requires only message")
        for param, kind in SEND_PARAMS.items():
            check(props.get(param, {}).get("type") == kind, f"[{era}] {name}.{param} is {kind}")
        check(props["scope"].get("enum") == ["cwd", "tree", "any"], f"[{era}] {name}.scope enum")
        for param, default in EXPECTED_DEFAULTS.items():
            if param in props:
                check(props[param].get("default") == default, f"[{era}] {name}.{param} defaults to {default!r}")
        for param in props:
            check(bool(props[param].get("description")), f"[{era}] {name}.{param} is described")
        has_flag = "allow_same_agent" in props
        check(has_flag == (name != "send_to_codex"),
              f"[{era}] {name} {'has' if name != 'send_to_codex' else 'has no'} allow_same_agent")
        ann = tools[name].get("annotations", {})
        check(ann.get("readOnlyHint") is False and ann.get("destructiveHint") is False
              and ann.get("openWorldHint") is True, f"[{era}] {name} annotations {ann}")
    listing = tools["list_agent_sessions"]["inputSchema"]["properties"]
    check(set(listing) == {"agent", "scope", "cwd", "limit", "host"}, f"[{era}] list_agent_sessions params {set(listing)}")
    check(listing["agent"].get("enum") == ["claude", "codex", "grok", "copilot", "both", "all"]
          and listing["agent"].get("default") == "all", f"[{era}] list_agent_sessions.agent")
    check(listing["limit"].get("type") == "integer", f"[{era}] list_agent_sessions.limit is integer")
    status = tools["bridge_status"]["inputSchema"]["properties"]
    check(set(status) == {"cwd", "scope", "delivery_id", "host"}, f"[{era}] bridge_status params {set(status)}")
    check(not tools["bridge_status"]["inputSchema"].get("required"), f"[{era}] bridge_status requires nothing")
    pin = tools["pin_agent_session"]["inputSchema"]
    check(set(pin["properties"]) == {"agent", "session_id", "cwd", "host"}, f"[{era}] pin_agent_session params")
    check(pin.get("required") == ["agent"], f"[{era}] pin_agent_session requires agent")
    check(pin["properties"]["agent"].get("enum") == ["claude", "codex", "grok", "copilot"], f"[{era}] pin agents")
    for name in ["list_agent_sessions", "bridge_status"]:
        ann = tools[name].get("annotations", {})
        check(ann.get("readOnlyHint") is True and ann.get("openWorldHint") is False,
              f"[{era}] {name} is read-only: {ann}")
    ann = tools["pin_agent_session"].get("annotations", {})
    check(ann.get("readOnlyHint") is False and ann.get("idempotentHint") is True, f"[{era}] pin annotations {ann}")


async def main():
    for era in ["initialize", "discover"]:
        instructions, tools, status, sessions, bad, _ = await session_run(era, {})
        check("exact name" in instructions and "last resort" in instructions,
              f"[{era}] instructions say how to address sessions")
        check(STRICT not in instructions, f"[{era}] no strict-mode sentence when unset")
        check_tools(era, tools)
        check(status.get("isError") is False, f"[{era}] bridge_status succeeds")
        check(isinstance(status.get("structuredContent"), dict)
              and "server_process" in status["structuredContent"], f"[{era}] bridge_status structuredContent")
        check(status["content"][0]["type"] == "text" and "server_process" in status["content"][0]["text"],
              f"[{era}] bridge_status JSON text content")
        check(sessions.get("isError") is False and "sessions" in sessions.get("structuredContent", {}),
              f"[{era}] list_agent_sessions structuredContent")
        check(bad.get("isError") is True and bad["structuredContent"]["error"] == "invalid_arguments",
              f"[{era}] send_to_codex refuses allow_same_agent")

        instructions, _, _, _, _, _ = await session_run(era, {STRICT: "1"})
        check(STRICT in instructions and "refused" in instructions,
              f"[{era}] the strict-mode sentence when {STRICT}=1")

    if failures:
        print(f"{len(failures)} CHECKS FAILED")
        sys.exit(1)
    print("ALL CHECKS PASSED")


asyncio.run(main())
