"""The official Python MCP SDK (mcp 2.x) sending bad arguments to `cross-agent mcp`.

Usage: arguments_test.py <path to the cross-agent binary> <an existing directory>

CROSS_AGENT_HOME must name a home whose daemon the server may start (the real one: the `cwd`
check is the daemon's). Checks, in both protocol eras, that:
- `tools/call` with `arguments` that are not an object, or with no params, is invalid params
  (-32602), not "method not found";
- an unknown argument is refused, naming it and the tool's parameters, and nothing is sent;
- a timeout of -5 or 0 is refused, naming `timeout`;
- a message over 8 MiB is refused before it leaves the server, naming its size and the limit,
  and the send tools' descriptions state the limit; one under it that outgrows the daemon's
  frame once escaped is refused as too long, not reported as a lost daemon;
- a `cwd` that does not exist is refused at send, naming the path.
Prints ALL CHECKS PASSED at the end.
"""

import asyncio
import os
import sys

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

BIN = sys.argv[1]
WORKDIR = sys.argv[2]
LIMIT = 8 * 1024 * 1024

failures = []


def check(condition, what):
    if condition:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}")
        failures.append(what)


def text_of(result):
    return " ".join(block.text for block in result.content if getattr(block, "text", None))


async def raw_error(session, params):
    """Sends `tools/call` with `params` as given, bypassing the SDK's typed call_tool."""
    try:
        await session._dispatcher.send_raw_request("tools/call", params, {})
    except MCPError as error:
        return error.code, error.message
    return None, "answered without an error"


async def refused(session, name, arguments):
    result = await session.call_tool(name, arguments)
    return result.is_error is True, (result.structured_content or {}), text_of(result)


async def session_run(era):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ["HOME"],
        "CROSS_AGENT_HOME": os.environ["CROSS_AGENT_HOME"],
    }
    params = StdioServerParameters(command=BIN, args=["mcp"], env=env, cwd=WORKDIR)
    async with stdio_client(params) as (read, write):
        info = types.Implementation(name="python-sdk-arguments", version="1.0")
        async with ClientSession(read, write, client_info=info) as session:
            if era == "initialize":
                await session.initialize()
            else:
                await session.discover()

            listed = await session.list_tools()
            for tool in listed.tools:
                if tool.name.startswith("send_to_"):
                    check("8 MiB" in (tool.description or ""), f"[{era}] {tool.name} states the 8 MiB limit")
                    check(tool.input_schema.get("additionalProperties") is False,
                          f"[{era}] {tool.name} admits no unknown argument")

            code, message = await raw_error(session, {"name": "bridge_status", "arguments": "{}"})
            check(code == -32602 and "arguments" in message,
                  f"[{era}] string arguments are invalid params: {code} {message}")
            code, message = await raw_error(session, None)
            check(code == -32602, f"[{era}] tools/call without params is invalid params: {code} {message}")

            is_error, structured, text = await refused(
                session, "send_to_codex", {"message": "x", "timeout_seconds": -5})
            check(is_error and structured.get("error") == "invalid_arguments"
                  and "timeout_seconds" in text and "`timeout`" in text and "`session_id`" in text,
                  f"[{era}] an unknown argument is refused naming it and the parameters: {text}")
            is_error, structured, text = await refused(
                session, "list_agent_sessions", {"limitt": 3})
            check(is_error and "limitt" in text and "`limit`" in text,
                  f"[{era}] list_agent_sessions refuses an unknown argument: {text}")
            for timeout in (-5, 0):
                is_error, structured, text = await refused(
                    session, "send_to_claude", {"message": "x", "timeout": timeout})
                check(is_error and structured.get("error") == "invalid_arguments"
                      and "`timeout`" in text and "positive" in text,
                      f"[{era}] timeout {timeout} is refused: {text}")

            is_error, structured, text = await refused(
                session, "send_to_claude", {"message": "x" * (LIMIT + 1)})
            check(is_error and structured.get("error") == "invalid_arguments"
                  and str(LIMIT + 1) in text and str(LIMIT) in text,
                  f"[{era}] a message over 8 MiB is refused with its size: {text[:300]}")

            # Under the limit, but twice as long once its quotes are escaped as JSON.
            is_error, structured, text = await refused(
                session, "send_to_claude", {"message": '"' * (LIMIT // 2 + 16)})
            check(is_error and structured.get("error") == "request_too_large"
                  and str(LIMIT) in text and "lost its daemon" not in text,
                  f"[{era}] a message that outgrows the frame once escaped is named so: {text[:300]}")

            is_error, structured, text = await refused(
                session, "send_to_claude", {"message": "x", "cwd": "/nonexistent"})
            check(is_error and structured.get("reason") == "invalid_arguments"
                  and "/nonexistent" in text and "does not exist" in text,
                  f"[{era}] a cwd that does not exist is refused at send: {text[:300]}")

            # A relative cwd would scope to nothing, silently: refused, naming the field.
            for tool, extra in (("list_agent_sessions", {}), ("bridge_status", {}),
                                ("pin_agent_session", {"agent": "codex"})):
                is_error, structured, text = await refused(
                    session, tool, {"cwd": "work/api", **extra})
                check(is_error and structured.get("error") == "invalid_arguments"
                      and "`cwd`" in text and "work/api" in text and "absolute" in text,
                      f"[{era}] {tool} refuses a relative cwd: {text[:300]}")
                result = await session.call_tool(tool, {"cwd": WORKDIR, **extra})
                check(result.is_error is not True,
                      f"[{era}] {tool} takes an absolute cwd: {text_of(result)[:300]}")


async def main():
    for era in ["initialize", "discover"]:
        await session_run(era)
    if failures:
        print(f"{len(failures)} CHECKS FAILED")
        sys.exit(1)
    print("ALL CHECKS PASSED")


asyncio.run(main())
