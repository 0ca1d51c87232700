#!/usr/bin/env bash
# Browser tests of the web UI (static/) against a real `evolve serve`, in headless Chromium.
#
#   tests/browser/run.sh
#
# Installs what is missing (idempotent, quiet): Debian's chromium, node and npm, and npm
# `playwright-core` and `axe-core` (the accessibility checks) pinned in tests/browser/package-lock.json, into $EVOLVE_BROWSER_CACHE
# (default ~/.cache/evolve/browser-npm). Builds `evolve`, `fake-llm` and
# `evolve-mcp-test-server` unless EVOLVE_BIN, FAKE_LLM_BIN and MCP_TEST_SERVER_BIN name
# them. Then, in temporary homes: starts the scripted fake model (its replies come from
# `node ui.test.mjs --script`), `evolve serve` on a free loopback port pointed at it, a
# second one bound beyond loopback (its login form with the token pasted; only
# 127.0.0.1 is connected to), runs tests/browser/ui.test.mjs — which signs in to the
# first with the link serve printed, as a user does — and stops them all. Exits non-zero when a case
# fails.
# BROWSER_SHOTS=DIR keeps a screenshot of each case there; BROWSER_ONLY=REGEX runs only the
# cases whose name matches (those that open a page of their own).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/browser"
NPM_DIR="${EVOLVE_BROWSER_CACHE:-$HOME/.cache/evolve/browser-npm}"
say() { echo "browser: $*" >&2; }

APT_UPDATED=""
apt_install() {
    command -v apt-get >/dev/null || { say "no apt-get: install $* by hand"; return 1; }
    if [ -z "$APT_UPDATED" ]; then apt-get update -qq >&2; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
    say "installing Debian's chromium"
    apt_install chromium
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    say "installing Debian's nodejs and npm"
    apt_install nodejs npm
fi

# playwright-core at the pinned version; a changed pin reinstalls.
want="$(cd "$HERE" && sha256sum package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [ ! -f "$NPM_DIR/node_modules/playwright-core/package.json" ] ||
    [ "$(cat "$NPM_DIR/.evolve-pins" 2>/dev/null)" != "$want" ]; then
    say "installing playwright-core into $NPM_DIR"
    rm -rf "$NPM_DIR" && mkdir -p "$NPM_DIR"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$NPM_DIR/"
    npm ci --prefix "$NPM_DIR" --omit=dev --no-audit --no-fund --loglevel=error >/dev/null
    echo "$want" >"$NPM_DIR/.evolve-pins"
fi

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${EVOLVE_BIN:-}" ] || [ -z "${FAKE_LLM_BIN:-}" ] || [ -z "${MCP_TEST_SERVER_BIN:-}" ]; then
    say "building evolve, fake-llm and evolve-mcp-test-server"
    (cd "$ROOT" && cargo build -q -p evolve-mini -p evolve-fake-llm -p evolve-mcp-test-server)
fi
EVOLVE_BIN="${EVOLVE_BIN:-$TARGET/debug/evolve}"
FAKE_LLM_BIN="${FAKE_LLM_BIN:-$TARGET/debug/fake-llm}"
MCP_TEST_SERVER_BIN="${MCP_TEST_SERVER_BIN:-$TARGET/debug/evolve-mcp-test-server}"
# The UI test adds it as a server of its own too (Tools → Add an MCP server).
export MCP_TEST_SERVER_BIN

WORK="$(mktemp -d)"
FAKE_PID=""
SERVE_PID=""
TOKEN_PID=""
DEAD_PID=""
cleanup() {
    for pid in $DEAD_PID $TOKEN_PID $SERVE_PID $FAKE_PID; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

export EVOLVE_HOME="$WORK/home"
mkdir -p "$EVOLVE_HOME" "$WORK/notes"
cat >"$EVOLVE_HOME/config.toml" <<EOF
[model]
# One scripted failure is one failure (no retries with backoff).
max_retries = 0

[permission]
# The shell asks twice (L4) instead of being refused: the UI's two-step dialog.
shell_level = "L4"

# A second profile for the profile switch (the same settings; the model comes from the
# environment, which wins over profiles).
[profiles.alt.agent]
max_steps = 8

[mcp.servers.peer]
command = "$MCP_TEST_SERVER_BIN"
args = ["--notes", "$WORK/notes"]

# The progress and elicitation case runs these without a permission question.
[tools.levels]
peer__progress = "L1"
peer__ask_user = "L1"
EOF

node "$HERE/ui.test.mjs" --script >"$WORK/script.json"
"$FAKE_LLM_BIN" --script "$WORK/script.json" --chunk-delay-ms 15 >"$WORK/fake.url" 2>"$WORK/fake.log" &
FAKE_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/fake.url" ] && break; sleep 0.1; done
[ -s "$WORK/fake.url" ] || { say "fake-llm did not start:"; cat "$WORK/fake.log" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
healthy() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1/health" >/dev/null 2>&1; }
# serve LOG PID_VAR URL ARGS...: starts `evolve serve ARGS` and waits until URL answers.
# The model server is the fake one, or MODEL_URL (empty: none in the environment); the
# model names are fake-main and fake-cheap, or (NO_MODEL_NAMES=1) what config.toml says.
serve() {
    local log="$1" var="$2" url="$3"
    shift 3
    local names=(EVOLVE_MODEL=fake-main EVOLVE_CHEAP_MODEL=fake-cheap)
    if [ -n "${NO_MODEL_NAMES:-}" ]; then names=(); fi
    env OPENAI_BASE_URL="${MODEL_URL-$(head -n1 "$WORK/fake.url")}" "${names[@]}" \
        EVOLVE_LOG=info HOME="$WORK" "$EVOLVE_BIN" serve "$@" >"$log" 2>&1 &
    printf -v "$var" '%s' "$!"
    for _ in $(seq 1 150); do
        healthy "$url" && return 0
        kill -0 "${!var}" 2>/dev/null || break
        sleep 0.1
    done
    say "evolve serve $* did not answer on $url:"
    cat "$log" >&2
    exit 1
}

PORT="$(free_port)"
URL="http://127.0.0.1:$PORT"
serve "$WORK/serve.log" SERVE_PID "$URL" --port "$PORT"
# A second server bound beyond loopback, in its own home: it needs the token (login form).
# Only 127.0.0.1 is ever connected to.
TOKEN_PORT="$(free_port)"
TOKEN_URL="http://127.0.0.1:$TOKEN_PORT"
mkdir -p "$WORK/home2"
EVOLVE_HOME="$WORK/home2" serve "$WORK/serve2.log" TOKEN_PID "$TOKEN_URL" --host 0.0.0.0 --port "$TOKEN_PORT"

# A third one whose model server is not there (a port nothing listens on): what a
# newcomer without Ollama sees. Its address is in config.toml, not in the environment,
# so the settings panel can change it; no model is named (the built-in default), so the
# panel's Test has to offer one the server lists.
DEAD_PORT="$(free_port)"
DEAD_URL="http://127.0.0.1:$DEAD_PORT"
mkdir -p "$WORK/home3"
cat >"$WORK/home3/config.toml" <<EOF
# The browser test's server without a model.
[model]
base_url = "http://127.0.0.1:$(free_port)/v1" # nothing listens here
max_retries = 0
EOF
EVOLVE_HOME="$WORK/home3" MODEL_URL="" NO_MODEL_NAMES=1 \
    serve "$WORK/serve3.log" DEAD_PID "$DEAD_URL" --port "$DEAD_PORT"

# The sign-in link each server printed (the browser logs in with it, as a user does).
login_link() { grep -o -m1 'http://[^ ]*/login#token=[0-9a-f]*' "$1"; }
LOGIN="$(login_link "$WORK/serve.log")" || { say "no sign-in link in the log:"; cat "$WORK/serve.log" >&2; exit 1; }
DEAD_LOGIN="$(login_link "$WORK/serve3.log")" || { say "no sign-in link in the log:"; cat "$WORK/serve3.log" >&2; exit 1; }

status=0
EVOLVE_URL="$URL" EVOLVE_LOGIN="$LOGIN" EVOLVE_DEAD_LOGIN="$DEAD_LOGIN" EVOLVE_TOKEN_URL="$TOKEN_URL" EVOLVE_DEAD_MODEL_URL="$DEAD_URL" EVOLVE_TOKEN_FILE="$WORK/home2/serve.token" \
    EVOLVE_DEAD_HOME="$WORK/home3" EVOLVE_FAKE_MODEL_URL="$(head -n1 "$WORK/fake.url")" \
    EVOLVE_BROWSER_NPM="$NPM_DIR" CHROMIUM="$CHROMIUM" \
    node "$HERE/ui.test.mjs" || status=$?
if [ "$status" -ne 0 ]; then
    say "the server's log (last 60 lines):"
    tail -n 60 "$WORK/serve.log" >&2
fi
exit "$status"
