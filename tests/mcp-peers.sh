#!/usr/bin/env bash
# Third-party MCP servers for Evolve's MCP tests, installed into cached locations from npm
# and PyPI alone, each checked with a stdio handshake (tests/mcp-peers/handshake.py):
#
#   eval "$(tests/mcp-peers.sh)"
#
# Prints `export VAR=...` lines on stdout (progress and problems go to stderr):
#   EVOLVE_TEST_MCP_NODE        node, to run the two npm servers
#   EVOLVE_TEST_MCP_EVERYTHING  @modelcontextprotocol/server-everything's dist/index.js:
#                               `node $IT` (stdio), `node $IT streamableHttp` (HTTP at /mcp)
#   EVOLVE_TEST_MCP_FILESYSTEM  @modelcontextprotocol/server-filesystem's dist/index.js:
#                               `node $IT DIR...` (stdio; the allowed directories)
#   EVOLVE_TEST_MCP_TIME        mcp-server-time in its venv (stdio)
#   EVOLVE_TEST_MCP_PYTHON_OAUTH  that venv's python, to run tests/mcp-peers/oauth_server.py
#                               (the official SDK's OAuth authorization server + protected
#                               MCP endpoint on 127.0.0.1)
#   EVOLVE_TEST_MCP_LOOPBACK    tests/mcp-peers/loopback.cjs: server-everything's HTTP mode
#                               binds every interface and has no host setting, so run it as
#                               `PORT=0 node --require $LOOPBACK $EVERYTHING streamableHttp`;
#                               it then binds 127.0.0.1 only and prints
#                               `evolve-loopback: listening on 127.0.0.1:PORT` on stderr.
# A server that fails to install or to answer is left out (its variable is not printed):
# tests that need it skip and say so. With CI=true any failure exits 1 instead.
#
# Versions are pinned in tests/mcp-peers/ (package.json + package-lock.json for npm,
# requirements.txt for PyPI); a changed pin reinstalls. The cache is
# $EVOLVE_MCP_PEERS_CACHE (default ~/.cache/evolve): mcp-npm/ and mcp-venv/.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PINS="$ROOT/tests/mcp-peers"
CACHE="${EVOLVE_MCP_PEERS_CACHE:-$HOME/.cache/evolve}"
NPM_DIR="$CACHE/mcp-npm"
VENV="$CACHE/mcp-venv"
EVERYTHING="$NPM_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM="$NPM_DIR/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
TIME_SERVER="$VENV/bin/mcp-server-time"
STAMP=".evolve-pins"

say() { echo "mcp-peers: $*" >&2; }
FAILED=""

# The pins' fingerprint: a cached install is reused only while it matches.
pins_hash() { (cd "$PINS" && sha256sum "$@") | sha256sum | cut -d' ' -f1; }

apt_install() {
    command -v apt-get >/dev/null || return 1
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

install_npm() {
    local want
    want="$(pins_hash package.json package-lock.json)"
    if [ -f "$EVERYTHING" ] && [ -f "$FILESYSTEM" ] && [ "$(cat "$NPM_DIR/$STAMP" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        say "node/npm not found; installing Debian's nodejs and npm"
        apt_install nodejs npm || { say "cannot install node and npm"; return 1; }
    fi
    say "installing server-everything and server-filesystem into $NPM_DIR (node $(node --version))"
    rm -rf "$NPM_DIR" && mkdir -p "$NPM_DIR" &&
        cp "$PINS/package.json" "$PINS/package-lock.json" "$NPM_DIR/" &&
        npm ci --prefix "$NPM_DIR" --omit=dev --no-audit --no-fund >&2 &&
        echo "$want" >"$NPM_DIR/$STAMP"
}

install_venv() {
    local want
    want="$(pins_hash requirements.txt)"
    if [ -x "$TIME_SERVER" ] && [ "$(cat "$VENV/$STAMP" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        say "python3 has no venv/ensurepip; installing Debian's python3-venv"
        apt_install python3-venv || { say "cannot install python3-venv"; return 1; }
    fi
    say "installing mcp-server-time into $VENV"
    rm -rf "$VENV" && python3 -m venv "$VENV" &&
        "$VENV/bin/pip" install -q --disable-pip-version-check -r "$PINS/requirements.txt" >&2 &&
        echo "$want" >"$VENV/$STAMP"
}

# check NAME VAR VALUE COMMAND...: a stdio handshake, then the export line.
check() {
    local name="$1" var="$2" value="$3"
    shift 3
    local seen
    if seen="$(python3 "$PINS/handshake.py" "$@")"; then
        say "$name: $seen"
        printf 'export %s=%q\n' "$var" "$value"
    else
        say "$name does not answer an MCP handshake over stdio (see above)"
        FAILED="$FAILED $name"
    fi
}

mkdir -p "$CACHE"
if install_npm; then
    printf 'export %s=%q\n' EVOLVE_TEST_MCP_NODE "$(command -v node)"
    printf 'export %s=%q\n' EVOLVE_TEST_MCP_LOOPBACK "$PINS/loopback.cjs"
    check server-everything EVOLVE_TEST_MCP_EVERYTHING "$EVERYTHING" node "$EVERYTHING"
    check server-filesystem EVOLVE_TEST_MCP_FILESYSTEM "$FILESYSTEM" node "$FILESYSTEM" "$CACHE"
else
    say "npm install failed: server-everything and server-filesystem are unavailable"
    FAILED="$FAILED server-everything server-filesystem"
fi
if install_venv; then
    check mcp-server-time EVOLVE_TEST_MCP_TIME "$TIME_SERVER" "$TIME_SERVER"
    # The same venv's `mcp` runs tests/mcp-peers/oauth_server.py: the SDK's OAuth
    # authorization server and protected resource, for the login tests.
    if "$VENV/bin/python" -c 'import mcp.server.auth.routes, mcp.server.mcpserver, uvicorn' 2>/dev/null; then
        say "oauth_server.py: the Python SDK's auth support imports"
        printf 'export %s=%q\n' EVOLVE_TEST_MCP_PYTHON_OAUTH "$VENV/bin/python"
    else
        say "the venv's mcp has no auth support: the Python OAuth tests are unavailable"
        FAILED="$FAILED python-oauth"
    fi
else
    say "pip install failed: mcp-server-time is unavailable"
    FAILED="$FAILED mcp-server-time"
fi

if [ -n "$FAILED" ]; then
    if [ "${CI:-}" = "true" ]; then
        say "FAILED:$FAILED (CI=true: the MCP tests need every peer)"
        exit 1
    fi
    say "unavailable:$FAILED — the tests that need them will skip"
fi
exit 0
