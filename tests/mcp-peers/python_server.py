"""A small MCP server on the official Python SDK (mcp 2.x), for Evolve's interop tests.

    python python_server.py stdio
    python python_server.py http PORT      # streamable HTTP on 127.0.0.1:PORT/mcp

Its tools: `echo(text)`, `add(a, b)`, `notes.read(name)` (a name with a dot, as the
spec allows) and `slow(seconds)`. The SDK speaks revision 2026-07-28 (no
`initialize`, `server/discover`) beside the older ones with the handshake.
"""

import sys

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("evolve-python-test")


@server.tool()
def echo(text: str) -> str:
    """Returns the text unchanged."""
    return text


@server.tool()
def add(a: float, b: float) -> float:
    """Returns the sum of a and b."""
    return a + b


@server.tool(name="notes.read")
def notes_read(name: str) -> str:
    """Reads a note (pretend)."""
    return "read: " + name


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    await anyio.sleep(seconds)
    return f"slept {seconds} s"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
