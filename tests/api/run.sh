#!/usr/bin/env bash
# The HTTP API of `evolve serve` against real clients from PyPI:
#   1. tests/api/openai_client.py — the official `openai` client (streamed and not,
#      sessions, models, errors, the `evolve` extension field);
#   2. Schemathesis against the served /openapi.json — no 5xx for any input, and every
#      status, content type and body as the document says.
#
#   EVOLVE_BIN=target/debug/evolve FAKE_LLM_BIN=target/debug/fake-llm tests/api/run.sh
#
# Builds nothing: give it the binaries (default: $CARGO_TARGET_DIR or target/, debug/).
# Starts tests/fake-llm (--echo) and `evolve serve` on free loopback ports with a fresh
# EVOLVE_HOME, runs both suites, stops both servers, prints a one-line summary and exits
# non-zero when anything failed. The clients live in a venv at $EVOLVE_API_VENV (default
# ~/.cache/evolve/api-venv), installed from tests/api/requirements.txt (every version
# pinned) and reinstalled only when that file changes.
#
# Knobs: EVOLVE_API_MAX_EXAMPLES (Schemathesis cases per operation and phase, default
# 40), EVOLVE_API_MAX_TIME (give it a time budget in seconds instead: it then keeps
# fuzzing until the budget is spent), EVOLVE_API_SEED (default 5; "random" for a new one
# each run), EVOLVE_API_KEEP=1 keeps the temporary home and the reports.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/api"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
EVOLVE_BIN="${EVOLVE_BIN:-$TARGET/debug/evolve}"
FAKE_LLM_BIN="${FAKE_LLM_BIN:-$TARGET/debug/fake-llm}"
VENV="${EVOLVE_API_VENV:-$HOME/.cache/evolve/api-venv}"
MAX_EXAMPLES="${EVOLVE_API_MAX_EXAMPLES:-40}"
MAX_TIME="${EVOLVE_API_MAX_TIME:-}"
SEED="${EVOLVE_API_SEED:-5}"
STAMP=".evolve-pins"
STARTED=$SECONDS

say() { echo "api: $*" >&2; }
die() {
    say "$*"
    echo "api: FAILED — $*"
    exit 1
}

for bin in "$EVOLVE_BIN" "$FAKE_LLM_BIN"; do
    [ -x "$bin" ] || die "no executable $bin: build it first (cargo build -p evolve-mini -p evolve-fake-llm) or set EVOLVE_BIN / FAKE_LLM_BIN"
done

# ---- the venv -------------------------------------------------------------------
install_venv() {
    local want
    want="$(sha256sum <"$HERE/requirements.txt" | cut -d' ' -f1)"
    if [ -x "$VENV/bin/st" ] && [ "$(cat "$VENV/$STAMP" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        say "python3 has no venv/ensurepip; installing Debian's python3-venv"
        command -v apt-get >/dev/null || return 1
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2 || return 1
    fi
    say "installing openai and schemathesis into $VENV"
    rm -rf "$VENV" && mkdir -p "$(dirname "$VENV")" && python3 -m venv "$VENV" &&
        "$VENV/bin/pip" install -q --disable-pip-version-check --no-input -r "$HERE/requirements.txt" >&2 &&
        echo "$want" >"$VENV/$STAMP"
}
install_venv || die "cannot install the Python clients into $VENV (see above)"

# ---- the servers ----------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/evolve-api.XXXXXX")"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null
    done
    if [ "${EVOLVE_API_KEEP:-}" = "1" ]; then
        say "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for FILE PATTERN: the first line of FILE matching PATTERN (20 s at most).
wait_for() {
    local i line
    for i in $(seq 200); do
        line="$(grep -m1 -E "$2" "$1" 2>/dev/null)" && { echo "$line"; return 0; }
        sleep 0.1
    done
    return 1
}

"$FAKE_LLM_BIN" --port 0 --echo >"$WORK/fake.out" 2>"$WORK/fake.err" </dev/null &
PIDS+=($!)
BASE_URL="$(wait_for "$WORK/fake.out" '^http://')" || die "fake-llm did not start: $(cat "$WORK/fake.err")"

mkdir -p "$WORK/home"
# A clean environment: nothing from the caller's own Evolve or OpenAI settings.
env -i PATH="$PATH" HOME="$WORK/home" EVOLVE_HOME="$WORK/home" \
    OPENAI_BASE_URL="$BASE_URL" EVOLVE_MODEL=fake-main EVOLVE_CHEAP_MODEL=fake-cheap EVOLVE_LOG=info \
    "$EVOLVE_BIN" serve --port 0 >"$WORK/serve.out" 2>"$WORK/serve.err" </dev/null &
PIDS+=($!)
BANNER="$(wait_for "$WORK/serve.err" ' serving on http://[^ ]+ ')" || die "evolve serve did not start: $(cat "$WORK/serve.err")"
URL="$(sed -E 's#.* serving on (http://[^ ]+).*#\1#' <<<"$BANNER")"
# Every request but /health and the login page carries the token, as the CLI sends it.
TOKEN="$(cat "$WORK/home/serve.token")"
say "evolve serve at $URL, fake model at $BASE_URL"

# ---- 1. the OpenAI client ----------------------------------------------------------
FAILED=""
if EVOLVE_URL="$URL" EVOLVE_TOKEN="$TOKEN" "$VENV/bin/python" "$HERE/openai_client.py" >"$WORK/openai.log" 2>&1; then
    OPENAI_RESULT="$(tail -n1 "$WORK/openai.log")"
else
    cat "$WORK/openai.log" >&2
    OPENAI_RESULT="$(tail -n1 "$WORK/openai.log")"
    FAILED="$FAILED openai"
fi
say "$OPENAI_RESULT"

# ---- 2. Schemathesis -------------------------------------------------------------
# Every check but two (ignored_auth included: without the token every operation that
# declares the bearer scheme must answer 401): positive_data_acceptance (the server checks more than a schema can say, e.g. that the
# last user message has text) and object_level_authorization (one user). The chat
# endpoint is fuzzed too: against the echoing fake model a turn takes milliseconds.
# Adding and reconnecting MCP servers is left out: the request names a program to run,
# and a fuzzer must not choose programs to start on this machine (mini/tests/serve.rs
# covers them).
ST_ARGS=(--checks all --exclude-checks positive_data_acceptance,object_level_authorization
    -H "Authorization: Bearer $TOKEN"
    --exclude-path-regex '^/v1/mcp/servers(/[^/]+/reconnect)?$'
    --max-examples "$MAX_EXAMPLES" --workers 1 --request-timeout 30 --no-color --warnings off
    --report junit --report-dir "$WORK/st/report")
[ -n "$MAX_TIME" ] && ST_ARGS+=(--max-time "$MAX_TIME")
[ "$SEED" != "random" ] && ST_ARGS+=(--seed "$SEED")
mkdir -p "$WORK/st"
# Run from the work folder: Schemathesis writes its cache (.hypothesis/) where it runs.
(cd "$WORK/st" && timeout 900 "$VENV/bin/st" run "$URL/openapi.json" "${ST_ARGS[@]}") >"$WORK/st.log" 2>&1
ST=$?
if [ "$ST" -ne 0 ]; then
    cat "$WORK/st.log" >&2
    FAILED="$FAILED schemathesis"
fi
# "Tested: 30" and "7014 generated, 7014 passed" from its summary.
ST_RESULT="$(grep -E '^ +(Tested: [0-9]+|[0-9]+ generated.*)$' "$WORK/st.log" | sed -E 's/^ +//' | paste -sd ',' - | sed 's/Tested: \([0-9]*\)/\1 operations/')"
say "schemathesis: ${ST_RESULT:-see above}"

# The server must have stayed up and kept answering.
if ! "$VENV/bin/python" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + '/health', timeout=10)" "$URL"; then
    FAILED="$FAILED health"
fi
if grep -q "panicked" "$WORK/serve.err"; then
    grep -B2 -A8 "panicked" "$WORK/serve.err" >&2
    FAILED="$FAILED panic"
fi

ELAPSED=$((SECONDS - STARTED))
if [ -n "$FAILED" ]; then
    echo "api: FAILED:$FAILED (${ELAPSED}s; $OPENAI_RESULT; schemathesis: ${ST_RESULT:-no summary})"
    exit 1
fi
echo "api: ok (${ELAPSED}s; $OPENAI_RESULT; schemathesis: $ST_RESULT)"
# For .ci/run's closing count: each openai check, and the Schemathesis run as one.
OPENAI_PASSED="$(printf '%s' "$OPENAI_RESULT" | grep -oE '[0-9]+/' | head -1 | tr -d /)"
echo "api: $((${OPENAI_PASSED:-0} + 1)) passed, 0 failed"
