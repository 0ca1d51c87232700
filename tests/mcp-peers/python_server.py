"""A small MCP server on the official Python SDK (mcp 2.x), for Evolve's interop tests.

    python python_server.py stdio
    python python_server.py http PORT      # streamable HTTP on 127.0.0.1:PORT/mcp
    python python_server.py http PORT sessions

Its tools: `echo(text)`, `add(a, b)`, `notes.read(name)` (a name with a dot, as the
spec allows), `slow(seconds)`, `pid()` (the server process's id), `log_error(text)`
(sends `text` to the client as a log message at level error, then answers "logged")
and `add_tool()`, which adds `extra()` and says so with
`notifications/tools/list_changed` (on the session's GET stream, apart from the call). The SDK speaks revision 2026-07-28 (no
`initialize`, `server/discover`) beside the older ones with the handshake; with
`sessions` it answers `server/discover` "method not found", as a server of the older
revisions does, so a client starts a session with `initialize`.

With EVOLVE_PY_LOG=FILE, what the server saw goes to FILE a line each, in order: each
HTTP request as `METHOD rpc-method` (`POST tools/call`, `DELETE`), and how each `slow`
ended (`slow finished`, `slow cancelled`). The SDK's own transport does the rest; the
log only watches it.

With EVOLVE_PY_PIDS=FILE, the process appends `pid=PID` to FILE when it starts (how
often a client started it).
"""

import json
import os
import sys
import warnings

import anyio
from mcp.server.mcpserver import Context, MCPServer

LOG = os.environ.get("EVOLVE_PY_LOG")


def note(line: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(line + "\n")

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
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        note("slow cancelled")
        raise
    note("slow finished")
    return f"slept {seconds} s"


@server.tool()
def pid() -> str:
    """The server process's id."""
    return str(os.getpid())


@server.tool()
async def log_error(text: str, ctx: Context) -> str:
    """Logs the text at level error (a `notifications/message`), then answers."""
    with warnings.catch_warnings():
        # The SDK marks logging deprecated as of revision 2026-07-28; older ones have it.
        warnings.simplefilter("ignore")
        await ctx.error(text)
    return "logged"


def extra() -> str:
    """A tool added while the server runs."""
    return "extra here"


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Adds the tool `extra` and tells the client its tool list changed."""
    server.add_tool(extra, name="extra")
    await ctx.session.send_tool_list_changed()
    return "added extra"


class Watched:
    """ASGI middleware: notes each HTTP request (see EVOLVE_PY_LOG) and, with
    `sessions`, refuses `server/discover`. The body is read here and handed on whole;
    later messages (the client's disconnect) come from the server as before."""

    def __init__(self, app, sessions: bool):
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            rpc = json.loads(body) if body else {}
        except ValueError:
            rpc = {}
        method = rpc.get("method", "") if isinstance(rpc, dict) else ""
        note(f"{scope['method']} {method}".strip())
        if self.sessions and method == "server/discover":
            refusal = json.dumps({"jsonrpc": "2.0", "id": rpc.get("id"),
                                  "error": {"code": -32601, "message": "Method not found"}})
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": refusal.encode()})
            return
        given = False

        async def replay():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


if __name__ == "__main__":
    if os.environ.get("EVOLVE_PY_PIDS"):
        with open(os.environ["EVOLVE_PY_PIDS"], "a", encoding="utf-8") as f:
            f.write(f"pid={os.getpid()}\n")
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import uvicorn

        app = Watched(server.streamable_http_app(), "sessions" in sys.argv[3:])
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
