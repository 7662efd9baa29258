"""An MCP client (the Python SDK's, from PyPI) that hermes' tests drive line by line.

Usage: client.py stdio COMMAND [ARGS...]   start COMMAND (e.g. `hermes mcp serve`) over stdio
       client.py http URL TOKEN            Streamable HTTP with `Authorization: Bearer TOKEN`

Prints one JSON line with the tools it was offered, then for each JSON line read from stdin,
{"tool": NAME, "args": {...}}, calls the tool and prints one JSON line: isError, the text, and
the structured content. Ends at the end of stdin.
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def say(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def drive(session):
    await session.initialize()
    tools = await session.list_tools()
    say({"tools": sorted(t.name for t in tools.tools)})
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        call = json.loads(line)
        result = await session.call_tool(call["tool"], call.get("args", {}))
        text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
        say({"isError": bool(result.isError), "text": text, "structured": result.structuredContent})


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await drive(session)
    elif mode == "http":
        url, token = sys.argv[2], sys.argv[3]
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client:
            async with streamable_http_client(url, http_client=client) as (read, write, _):
                async with ClientSession(read, write) as session:
                    await drive(session)
    else:
        sys.exit(f"unknown mode {mode}")


asyncio.run(main())
