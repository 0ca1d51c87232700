#!/usr/bin/env bash
# Third-party MCP servers for Evolve's MCP tests, installed into cached locations from npm
# and PyPI alone, each checked with a stdio handshake (tests/mcp-peers/handshake.py):
#
#   eval "$(tests/mcp-peers.sh)"
#
# Prints `export VAR=...` lines on stdout (progress and problems go to stderr):
#   EVOLVE_TEST_MCP_NODE        node, to run the npm servers
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
#   EVOLVE_TEST_MCP_MEMORY      @modelcontextprotocol/server-memory's dist/index.js:
#                               `MEMORY_FILE_PATH=FILE node $IT` (stdio; the graph's file)
#   EVOLVE_TEST_MCP_THINKING    @modelcontextprotocol/server-sequential-thinking's
#                               dist/index.js: `node $IT` (stdio)
#   EVOLVE_TEST_MCP_FETCH       mcp-server-fetch in the venv: `$IT [--ignore-robots-txt]
#                               [--allow-private-ips]` (stdio; it refuses loopback without
#                               the latter)
#   EVOLVE_TEST_MCP_GIT         mcp-server-git in the venv: `$IT [--repository DIR]` (stdio;
#                               needs git on PATH)
# A server that fails to install or to answer is left out (its variable is not printed):
# tests that need it skip and say so. With CI=true any failure exits 1 instead.
#
# Versions are pinned in tests/mcp-peers/ (package.json + package-lock.json for npm,
# requirements.txt for PyPI) and, for the servers of mini/tests/mcp_more_peers.rs, in
# tests/mcp-peers/more/ (the same files; its PyPI ones go into the same venv, constrained
# by ../requirements.txt); a changed pin reinstalls. The cache is
# $EVOLVE_MCP_PEERS_CACHE (default ~/.cache/evolve): mcp-npm/, mcp-npm-more/ and mcp-venv/.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PINS="$ROOT/tests/mcp-peers"
CACHE="${EVOLVE_MCP_PEERS_CACHE:-$HOME/.cache/evolve}"
NPM_DIR="$CACHE/mcp-npm"
VENV="$CACHE/mcp-venv"
EVERYTHING="$NPM_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM="$NPM_DIR/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
TIME_SERVER="$VENV/bin/mcp-server-time"
NPM_MORE="$CACHE/mcp-npm-more"
MEMORY="$NPM_MORE/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
THINKING="$NPM_MORE/node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js"
FETCH_SERVER="$VENV/bin/mcp-server-fetch"
GIT_SERVER="$VENV/bin/mcp-server-git"
STAMP=".evolve-pins"
MORE_STAMP=".evolve-pins-more"

say() { echo "mcp-peers: $*" >&2; }
FAILED=""

# The pins' fingerprint: a cached install is reused only while it matches.
pins_hash() { (cd "$PINS" && sha256sum "$@") | sha256sum | cut -d' ' -f1; }
# How long the step begun at $1 (bash's SECONDS) took, for the log.
took() { echo "$((SECONDS - $1)) s"; }

apt_install() {
    command -v apt-get >/dev/null || return 1
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

# npm_pins WHAT DIR SUB ENTRY...: `npm ci` of the package.json and package-lock.json in
# $PINS/SUB (SUB: "" or "more/") into DIR, unless DIR holds that install and every ENTRY.
npm_pins() {
    local what="$1" dir="$2" sub="$3" want entry start have=1
    shift 3
    want="$(pins_hash "${sub}package.json" "${sub}package-lock.json")"
    for entry in "$@"; do [ -f "$entry" ] || have=""; done
    if [ -n "$have" ] && [ "$(cat "$dir/$STAMP" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        say "node/npm not found; installing Debian's nodejs and npm"
        apt_install nodejs npm || { say "cannot install node and npm"; return 1; }
    fi
    say "installing $what into $dir (node $(node --version))"
    start=$SECONDS
    rm -rf "$dir" && mkdir -p "$dir" &&
        cp "$PINS/${sub}package.json" "$PINS/${sub}package-lock.json" "$dir/" &&
        npm ci --prefix "$dir" --omit=dev --no-audit --no-fund >&2 &&
        echo "$want" >"$dir/$STAMP" &&
        say "installed $what in $(took "$start")"
}

install_npm() {
    npm_pins "server-everything and server-filesystem" "$NPM_DIR" "" \
        "$EVERYTHING" "$FILESYSTEM"
}

install_npm_more() {
    npm_pins "server-memory and server-sequential-thinking" "$NPM_MORE" more/ \
        "$MEMORY" "$THINKING"
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
    local start=$SECONDS
    rm -rf "$VENV" && python3 -m venv "$VENV" &&
        "$VENV/bin/pip" install -q --disable-pip-version-check -r "$PINS/requirements.txt" >&2 &&
        echo "$want" >"$VENV/$STAMP" &&
        say "installed mcp-server-time in $(took "$start")"
}

# mcp-server-fetch and mcp-server-git, into the venv install_venv made (they speak its
# `mcp`): its own pins must not change, so they are the constraints. A reinstalled venv
# has no $MORE_STAMP, so these follow it.
install_venv_more() {
    local want start
    want="$(pins_hash requirements.txt more/requirements.txt)"
    if [ -x "$FETCH_SERVER" ] && [ -x "$GIT_SERVER" ] &&
        [ "$(cat "$VENV/$MORE_STAMP" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    say "installing mcp-server-fetch and mcp-server-git into $VENV"
    start=$SECONDS
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$PINS/more/requirements.txt" \
        -c "$PINS/requirements.txt" >&2 &&
        echo "$want" >"$VENV/$MORE_STAMP" &&
        say "installed mcp-server-fetch and mcp-server-git in $(took "$start")"
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
VENV_OK=""
if install_npm; then
    printf 'export %s=%q\n' EVOLVE_TEST_MCP_NODE "$(command -v node)"
    printf 'export %s=%q\n' EVOLVE_TEST_MCP_LOOPBACK "$PINS/loopback.cjs"
    check server-everything EVOLVE_TEST_MCP_EVERYTHING "$EVERYTHING" node "$EVERYTHING"
    check server-filesystem EVOLVE_TEST_MCP_FILESYSTEM "$FILESYSTEM" node "$FILESYSTEM" "$CACHE"
else
    say "npm install failed: server-everything and server-filesystem are unavailable"
    FAILED="$FAILED server-everything server-filesystem"
fi
if install_npm_more; then
    # No tool is called here, but a memory server without MEMORY_FILE_PATH would keep its
    # graph inside node_modules.
    check server-memory EVOLVE_TEST_MCP_MEMORY "$MEMORY" \
        env MEMORY_FILE_PATH="$NPM_MORE/handshake-memory.jsonl" node "$MEMORY"
    check server-sequential-thinking EVOLVE_TEST_MCP_THINKING "$THINKING" node "$THINKING"
else
    say "npm install failed: server-memory and server-sequential-thinking are unavailable"
    FAILED="$FAILED server-memory server-sequential-thinking"
fi
if install_venv; then
    VENV_OK=1
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
if [ -n "$VENV_OK" ] && install_venv_more; then
    check mcp-server-fetch EVOLVE_TEST_MCP_FETCH "$FETCH_SERVER" "$FETCH_SERVER"
    # GitPython needs the git program (even to import).
    if command -v git >/dev/null || { say "git not found; installing Debian's git" && apt_install git; }; then
        check mcp-server-git EVOLVE_TEST_MCP_GIT "$GIT_SERVER" "$GIT_SERVER"
    else
        say "cannot install git: mcp-server-git is unavailable"
        FAILED="$FAILED mcp-server-git"
    fi
else
    say "no venv or pip install failed: mcp-server-fetch and mcp-server-git are unavailable"
    FAILED="$FAILED mcp-server-fetch mcp-server-git"
fi

if [ -n "$FAILED" ]; then
    if [ "${CI:-}" = "true" ]; then
        say "FAILED:$FAILED (CI=true: the MCP tests need every peer)"
        exit 1
    fi
    say "unavailable:$FAILED — the tests that need them will skip"
fi
exit 0
