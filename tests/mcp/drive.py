#!/usr/bin/env python3
"""Drives `pipeline mcp` with the official MCP Python SDK (`mcp` on PyPI), as an agent would.

    python3 tests/mcp/drive.py [--http] [--env ENV_JSON] CALLS_JSON -- COMMAND [ARGS...]

Starts COMMAND as an MCP server over stdio (with --http: starts `COMMAND ARGS --http
127.0.0.1:0`, reads the URL it prints on stderr, and connects with the SDK's streamable HTTP
client; the server is stopped at the end, and its peak resident memory reported as
`server_peak_rss_kb`), initializes (client name `pipeline-tests`, version
`1.0`), lists the tools, then makes each call of CALLS_JSON (a JSON list of
`{"tool": NAME, "arguments": {...}}`) in order. Prints one JSON object on stdout:
`{"server": {...}, "instructions": ..., "tools": [{"name", "read_only", "destructive"}],
"calls": [{"tool", "is_error", "text"} or {"tool", "protocol_error"}]}`. The server's stderr
(its call log) goes to this process's stderr. ENV_JSON (an object of names and values) is
added to the server's environment, as an agent's `env` setting would (over stdio the SDK
otherwise passes only a few safe variables such as PATH and HOME).
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import threading

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client


async def session_calls(read, write, calls):
    async with ClientSession(
        read, write, client_info=types.Implementation(name="pipeline-tests", version="1.0")
    ) as session:
        init = await session.initialize()
        listed = await session.list_tools()
        out = {
            "server": {"name": init.server_info.name, "version": init.server_info.version},
            "instructions": init.instructions,
            "tools": [
                {
                    "name": t.name,
                    "read_only": bool(t.annotations and t.annotations.read_only_hint),
                    "destructive": bool(t.annotations and t.annotations.destructive_hint),
                }
                for t in listed.tools
            ],
            "calls": [],
        }
        for call in calls:
            try:
                result = await session.call_tool(call["tool"], call.get("arguments", {}))
            except Exception as e:  # a JSON-RPC error, as the SDK raises it
                out["calls"].append({"tool": call["tool"], "protocol_error": str(e)})
                continue
            text = "".join(c.text for c in result.content if c.type == "text")
            out["calls"].append(
                {"tool": call["tool"], "is_error": bool(result.is_error), "text": text}
            )
        return out


async def over_stdio(calls, command, args, env):
    params = StdioServerParameters(
        command=command, args=args, env={**get_default_environment(), **env}
    )
    async with stdio_client(params) as (read, write):
        return await session_calls(read, write, calls)


async def over_http(calls, command, args, env):
    server = subprocess.Popen(
        [command, *args, "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    try:
        url = None
        for line in server.stderr:
            sys.stderr.write(line)
            found = re.search(r"serving MCP at (http://\S+)", line)
            if found:
                url = found.group(1)
                break
        if url is None:
            sys.exit(f"the server did not start: exit code {server.wait()}")
        # Keep relaying the server's log (its call log) to this process's stderr.
        threading.Thread(
            target=lambda: [sys.stderr.write(l) for l in server.stderr], daemon=True
        ).start()
        async with streamable_http_client(url) as (read, write, *_):
            result = await session_calls(read, write, calls)
        result["url"] = url
        result["server_peak_rss_kb"] = peak_rss_kb(server.pid)
        return result
    finally:
        server.terminate()
        server.wait(timeout=10)


def peak_rss_kb(pid):
    """The most resident memory process `pid` held so far (Linux's VmHWM), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def main():
    argv = sys.argv[1:]
    http = argv[:1] == ["--http"]
    if http:
        argv = argv[1:]
    env = {}
    if argv[:1] == ["--env"]:
        env = json.loads(argv[1])
        argv = argv[2:]
    if len(argv) < 3 or argv[1] != "--":
        sys.exit(__doc__)
    calls = json.loads(argv[0])
    transport = over_http if http else over_stdio
    result = asyncio.run(transport(calls, argv[2], argv[3:], env))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
