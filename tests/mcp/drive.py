#!/usr/bin/env python3
"""Drives `pipeline mcp` with the official MCP Python SDK (`mcp` on PyPI), as an agent would.

    python3 tests/mcp/drive.py CALLS_JSON -- COMMAND [ARGS...]

Starts COMMAND as an MCP server over stdio, initializes (client name `pipeline-tests`, version
`1.0`), lists the tools, then makes each call of CALLS_JSON (a JSON list of
`{"tool": NAME, "arguments": {...}}`) in order. Prints one JSON object on stdout:
`{"server": {...}, "instructions": ..., "tools": [{"name", "read_only", "destructive"}],
"calls": [{"tool", "is_error", "text"} or {"tool", "protocol_error"}]}`. The server's stderr
(its call log) goes to this process's stderr.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def drive(calls, command, args):
    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as (read, write):
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


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    calls = json.loads(sys.argv[1])
    result = asyncio.run(drive(calls, sys.argv[3], sys.argv[4:]))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
