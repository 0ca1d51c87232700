#!/usr/bin/env python3
"""Checks that an MCP server answers over stdio: initialize, notifications/initialized,
tools/list. Prints the negotiated protocol version, any notifications the server sent
before the tools/list reply, and the tool names; exits 1 (saying why) otherwise.

    python3 tests/mcp-peers/handshake.py COMMAND [ARG...]

Used by tests/mcp-peers.sh after installing each third-party server, so a server that
does not run on this machine's node or python fails the install, not a test later.
"""
import json
import select
import subprocess
import sys
import time

# The first start of a node server compiles its sources: generous, it is a one-off check.
TIMEOUT_S = 60
ASKED_VERSION = "2025-06-18"


def main(cmd):
    if not cmd:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    except OSError as e:
        print(f"cannot start {cmd[0]}: {e}", file=sys.stderr)
        return 1
    deadline = time.monotonic() + TIMEOUT_S
    notifications = []

    def send(message):
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def reply(want_id):
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                raise RuntimeError(f"no reply to request {want_id} within {TIMEOUT_S} s")
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed stdout before replying to {want_id}")
            try:
                message = json.loads(line)
            except ValueError:
                raise RuntimeError(f"not JSON on stdout: {line.strip()[:200]!r}")
            if message.get("id") == want_id:
                if "error" in message:
                    raise RuntimeError(f"request {want_id} failed: {message['error']}")
                return message["result"]
            notifications.append(message.get("method", "?"))

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": ASKED_VERSION, "capabilities": {},
                         "clientInfo": {"name": "evolve-mcp-peers", "version": "0"}}})
        init = reply(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = [t["name"] for t in reply(2)["tools"]]
    except (RuntimeError, KeyError, TypeError, BrokenPipeError) as e:
        print(f"{' '.join(cmd)}: {e}", file=sys.stderr)
        return 1
    finally:
        proc.kill()
        proc.wait()
    if not tools:
        print(f"{' '.join(cmd)}: tools/list is empty", file=sys.stderr)
        return 1
    print(f"protocol {init.get('protocolVersion')} (asked {ASKED_VERSION}); "
          f"notifications before tools/list: {notifications or 'none'}; "
          f"tools: {', '.join(tools)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
