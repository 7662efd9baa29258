"""A FastMCP server (the Python SDK's, from PyPI) for hermes' MCP tests.

Usage: server.py            stdio
       server.py http PORT  Streamable HTTP on 127.0.0.1:PORT at /mcp
"""
import asyncio
import os
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
mcp = FastMCP("hermes-test", host="127.0.0.1", port=port)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return f"sum={a + b}"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def whoami() -> str:
    """The server's process id and what it was given."""
    token = os.environ.get("TELEGRAM_BOT_TOKEN", "none")
    return f"pid={os.getpid()} token={token} greeting={os.environ.get('GREETING', 'none')}"


@mcp.tool(annotations=ToolAnnotations(destructiveHint=True))
def wipe(target: str) -> str:
    """Delete everything under a target (it only says so)."""
    return f"wiped {target}"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def hang() -> str:
    """Never answers (the server stays free for other calls)."""
    await asyncio.sleep(3600)
    return "late"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def fail() -> str:
    """Always fails."""
    raise ValueError("the city is unknown")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def grow(ctx: Context) -> str:
    """Offer one more tool (`extra`) and tell the client the list changed."""

    def extra() -> str:
        """A tool that appeared later."""
        return "extra here"

    mcp.add_tool(extra, name="extra", annotations=ToolAnnotations(readOnlyHint=True))
    await ctx.session.send_tool_list_changed()
    return "grown"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        mcp.run(transport="streamable-http")
    else:
        mcp.run()
