#!/usr/bin/env bash
# Evolve as the client of the official MCP conformance suite (npm
# @modelcontextprotocol/conformance). In client mode the suite starts a scenario's server
# and runs
#
#   evolve-client.sh SERVER_URL        (MCP_CONFORMANCE_SCENARIO names the scenario)
#
# then judges what the client did from the server's side. This script does what a user
# would, in a fresh EVOLVE_HOME with the scripted fake model (tests/fake-llm) as the model:
# `evolve mcp add conf --url SERVER_URL`, then per scenario
#
#   initialize                           `evolve mcp tools conf` (handshake and listing)
#   tools_call                           `evolve ask` whose model calls add_numbers(2, 3)
#   elicitation-sep1034-client-defaults  `evolve chat` whose model calls the scenario's tool;
#                                        the person answers "yes" to the server's form and
#                                        presses Enter at each field, taking its default
#                                        (a headless `ask` declines, which the scenario
#                                        counts as a failure)
#   sse-retry                            `evolve ask` whose model calls test_reconnection:
#                                        the server ends the call's event stream early and
#                                        answers on the GET stream the client resumes
#   auth/* and anything else             `evolve mcp tools conf`, then `evolve ask` whose
#                                        model calls the auth scenarios' `test-tool`;
#                                        whenever evolve says to run `evolve mcp login
#                                        conf`, it is run, and the "browser" (curl) opens
#                                        the printed URL and follows the redirect back —
#                                        at most three logins
#
# and checks the client's side too: the listing names the tool, the tool's answer reached
# the model, the reply was printed. Exit 0 when evolve did its part, 1 (with what went
# wrong on stderr) when not — the suite then fails the scenario even if its own checks pass.
#
# Needs EVOLVE_BIN and FAKE_LLM_BIN (tests/conformance/run.sh sets them).
set -uo pipefail

URL="${!#}"
SCENARIO="${MCP_CONFORMANCE_SCENARIO:?the conformance suite sets MCP_CONFORMANCE_SCENARIO}"
EVOLVE="${EVOLVE_BIN:?set EVOLVE_BIN to the evolve binary}"
FAKE="${FAKE_LLM_BIN:?set FAKE_LLM_BIN to the fake-llm binary}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/evolve-conformance.XXXXXX")"
say() { echo "evolve-client: $*" >&2; }
fail() {
    say "FAIL ($SCENARIO): $*"
    exit 1
}

FAKE_PID=""
cleanup() {
    if [ -n "$FAKE_PID" ]; then
        kill "$FAKE_PID" 2>/dev/null
        wait "$FAKE_PID" 2>/dev/null
    fi
    if [ "${EVOLVE_CONFORMANCE_KEEP:-}" = "1" ]; then
        say "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
# The suite's timeout sends TERM: clean up all the same.
trap 'exit 143' TERM INT

# Nothing of the machine's own setup: a fresh home, the fake model, no profile or key.
unset OPENAI_API_KEY EVOLVE_PROFILE EVOLVE_CONFIG
export EVOLVE_HOME="$WORK/home" HOME="$WORK" EVOLVE_LOG="${EVOLVE_LOG:-info}"
mkdir -p "$EVOLVE_HOME"

# model [TOOL ARGUMENTS REPLY]: starts the fake model; it calls conf__TOOL once, then
# answers REPLY (without TOOL: "ok" to everything, as to the background prompts always).
# The user sets the tool's level to L1 (`evolve mcp level`), so it runs without a
# permission question: a server's tool without a read-only hint is L3 or more otherwise.
model() {
    if [ $# -gt 0 ]; then
        "$EVOLVE" mcp level "conf__$1" L1 >&2 || fail "evolve mcp level conf__$1 L1 failed"
    fi
    python3 - "$@" >"$WORK/script.json" <<'EOF'
import json, sys
script = {"fallback": "ok"}
if len(sys.argv) > 1:
    tool, arguments, reply = sys.argv[1:4]
    call = {"name": "conf__" + tool, "arguments": json.loads(arguments)}
    # Four times: a call refused for a login is asked again after it.
    script["replies"] = [{"tool_calls": [call]}, reply] * 4
print(json.dumps(script))
EOF
    "$FAKE" --script "$WORK/script.json" >"$WORK/fake.url" 2>"$WORK/fake.log" &
    FAKE_PID=$!
    for _ in $(seq 100); do
        [ -s "$WORK/fake.url" ] && break
        sleep 0.05
    done
    [ -s "$WORK/fake.url" ] || fail "fake-llm did not start: $(cat "$WORK/fake.log")"
    export OPENAI_BASE_URL="$(head -n1 "$WORK/fake.url")" EVOLVE_MODEL=fake-main EVOLVE_CHEAP_MODEL=fake-cheap
}

# tools TOOL: `evolve mcp tools conf` lists conf__TOOL (or, with no TOOL, succeeds).
tools() {
    "$EVOLVE" mcp tools conf >"$WORK/tools.out" 2>"$WORK/tools.err"
    local code=$?
    cat "$WORK/tools.out" "$WORK/tools.err" >&2
    [ "$code" -eq 0 ] || fail "evolve mcp tools conf exited $code"
    if [ -n "${1:-}" ]; then
        grep -q "conf__$1" "$WORK/tools.out" || fail "evolve mcp tools conf does not list conf__$1"
    fi
}

# answered TEXT...: one tool message of the newest session (what the model got back from
# the call) holds every TEXT.
answered() {
    local session
    session="$("$EVOLVE" sessions list 2>/dev/null | awk 'NR == 2 { print $1 }')"
    [ -n "$session" ] || fail "no session was stored"
    "$EVOLVE" sessions show --json "$session" >"$WORK/session.json" ||
        fail "evolve sessions show $session failed"
    python3 - "$WORK/session.json" "$@" <<'EOF' || fail "the tool's answer did not reach the model"
import json, sys
messages = [m["message"] for m in json.load(open(sys.argv[1]))["messages"]]
answers = [m.get("content", "") for m in messages if m.get("role") == "tool"]
if not any(all(t in a for t in sys.argv[2:]) for a in answers):
    sys.exit(f"evolve-client: expected {sys.argv[2:]!r} in a tool message, got {answers!r}")
EOF
}

# ask QUESTION REPLY: `evolve ask` exits 0 and prints the scripted REPLY.
ask() {
    "$EVOLVE" ask "$1" >"$WORK/ask.out" 2>"$WORK/ask.err"
    local code=$?
    cat "$WORK/ask.err" "$WORK/ask.out" >&2
    [ "$code" -eq 0 ] || fail "evolve ask exited $code"
    grep -qF "$2" "$WORK/ask.out" || fail "evolve ask did not print the reply: $2"
}

# What a user sets for OAuth: the client ID metadata document is the suite's fixed one
# (it stands for a document the user hosts for evolve: a local binary has no https URL of
# its own); a pre-registered client's id and secret come from the scenario's context.
ADD=(mcp add conf --url "$URL" --oauth-client-metadata-url https://conformance-test.local/client-metadata.json)
if [ -n "${MCP_CONFORMANCE_CONTEXT:-}" ]; then
    ID="$(python3 -c 'import json,os; print(json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"]).get("client_id",""))')"
    export CONF_SECRET="$(python3 -c 'import json,os; print(json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"]).get("client_secret",""))')"
    [ -n "$ID" ] && ADD+=(--oauth-client-id "$ID")
    [ -n "$ID" ] && [ -n "$CONF_SECRET" ] && ADD+=(--oauth-client-secret-env CONF_SECRET)
fi
"$EVOLVE" "${ADD[@]}" >&2 || fail "evolve mcp add conf --url $URL failed"

# login: `evolve mcp login conf`, with curl as the browser (at most three times).
LOGINS=0
login() {
    LOGINS=$((LOGINS + 1))
    [ "$LOGINS" -le 3 ] || fail "still refused after 3 logins"
    "$EVOLVE" mcp login conf --no-browser --timeout 20 >"$WORK/login.out" 2>"$WORK/login.err" &
    local pid=$! url=""
    for _ in $(seq 100); do
        url="$(grep -o 'http://[^ ]*/authorize[^ ]*\|http[^ ]*[?&]response_type=code[^ ]*' "$WORK/login.out" | head -n1)"
        [ -n "$url" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$url" ] && curl -s -L -o /dev/null --max-time 20 "$url"
    wait "$pid"
    local code=$?
    cat "$WORK/login.out" "$WORK/login.err" >&2
    return $code
}

case "$SCENARIO" in
initialize)
    model
    tools
    ;;
tools_call)
    model add_numbers '{"a": 2, "b": 3}' "2 + 3 = 5."
    ask "What is 2 + 3?" "2 + 3 = 5."
    answered "The sum of 2 and 3 is 5"
    ;;
elicitation-sep1034-client-defaults)
    model test_client_elicitation_defaults '{}' "The defaults were sent."
    # The question, "yes" to the form, Enter at each of its five fields, then /quit.
    printf 'Run the defaults test.\nyes\n\n\n\n\n\n/quit\n' |
        "$EVOLVE" chat >"$WORK/chat.out" 2>"$WORK/chat.err"
    code=$?
    cat "$WORK/chat.out" "$WORK/chat.err" >&2
    [ "$code" -eq 0 ] || fail "evolve chat exited $code"
    grep -qF "The defaults were sent." "$WORK/chat.out" || fail "chat did not print the reply"
    answered "Elicitation completed:" '"name":"John Doe"' '"age":30,' '"score":95.5' \
        '"status":"active"' '"verified":true'
    ;;
sse-retry)
    model test_reconnection '{}' "Reconnected."
    ask "Test the reconnection." "Reconnected."
    answered "Reconnection test completed successfully"
    ;;
*)
    # The auth scenarios' servers offer `test-tool` once the client is authorized: evolve
    # says to log in, and the user does.
    model test-tool '{}' "Called."
    for _ in 1 2 3 4; do
        "$EVOLVE" mcp tools conf >"$WORK/tools.out" 2>"$WORK/tools.err" && break
        cat "$WORK/tools.err" >&2
        grep -q 'evolve mcp login conf' "$WORK/tools.err" || fail "evolve mcp tools conf failed"
        login || fail "evolve mcp login conf failed"
    done
    cat "$WORK/tools.out" >&2
    grep -q "conf__test-tool" "$WORK/tools.out" || fail "evolve mcp tools conf does not list conf__test-tool"
    for _ in 1 2 3 4; do
        "$EVOLVE" ask "Call the test tool." >"$WORK/ask.out" 2>"$WORK/ask.err"
        cat "$WORK/ask.err" "$WORK/ask.out" >&2
        if grep -q 'evolve mcp login conf' "$WORK/ask.out" "$WORK/ask.err"; then
            login || fail "evolve mcp login conf failed"
            continue
        fi
        break
    done
    grep -qF "Called." "$WORK/ask.out" || fail "evolve ask did not print the reply: Called."
    ;;
esac
say "ok ($SCENARIO)"
exit 0
