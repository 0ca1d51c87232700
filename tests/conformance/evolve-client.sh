#!/usr/bin/env bash
# Evolve as the client of the official MCP conformance suite (npm
# @modelcontextprotocol/conformance): the suite starts a scenario's servers, runs
#
#   evolve-client.sh SERVER_URL
#
# with MCP_CONFORMANCE_SCENARIO (and, for pre-registration, MCP_CONFORMANCE_CONTEXT =
# {"client_id", "client_secret"}) set, and checks what evolve did. This does what a user
# does: `evolve mcp add conf --url SERVER_URL`, `evolve mcp tools conf`, and a tool call
# through `evolve ask` with a scripted model (tests/fake-llm) that calls `test-tool`;
# whenever evolve says to run `evolve mcp login conf`, it runs it, and the "browser"
# (curl) opens the printed URL and follows the redirect back to evolve — at most three
# logins, so a server that keeps refusing ends the run.
#
# Settings a user would make: the client ID metadata document is the suite's fixed one
# (https://conformance-test.local/client-metadata.json stands for a document the user
# hosts for evolve: a local binary has no https URL of its own); the context's client
# id and secret are given with --oauth-client-id / --oauth-client-secret-env.
#
# Needs EVOLVE_BIN and FAKE_LLM_BIN (target/debug/evolve, target/debug/fake-llm).
set -uo pipefail
URL="${!#}"
EVOLVE="${EVOLVE_BIN:?set EVOLVE_BIN}"
FAKE="${FAKE_LLM_BIN:?set FAKE_LLM_BIN}"
WORK="$(mktemp -d)"
export EVOLVE_HOME="$WORK/home" EVOLVE_LOG="${EVOLVE_LOG:-info}"
say() { echo "evolve-client: $*" >&2; }

# The model: each ask calls the test tool once, then answers.
cat >"$WORK/script.json" <<'EOF'
{"replies": [
  {"tool_calls": [{"name": "conf__test-tool", "arguments": {}}]}, "called",
  {"tool_calls": [{"name": "conf__test-tool", "arguments": {}}]}, "called",
  {"tool_calls": [{"name": "conf__test-tool", "arguments": {}}]}, "called",
  {"tool_calls": [{"name": "conf__test-tool", "arguments": {}}]}, "called"
 ],
 "routes": {"[evolve:classify]": [{"text": "{\"test-tool\": \"L1\"}"}]},
 "fallback": "ok"}
EOF
"$FAKE" --script "$WORK/script.json" >"$WORK/fake.url" 2>"$WORK/fake.err" &
FAKE_PID=$!
trap 'kill $FAKE_PID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do [ -s "$WORK/fake.url" ] && break; sleep 0.1; done
export OPENAI_BASE_URL="$(head -n1 "$WORK/fake.url")" EVOLVE_MODEL=fake EVOLVE_CHEAP_MODEL=fake

ADD=(mcp add conf --url "$URL" --oauth-client-metadata-url https://conformance-test.local/client-metadata.json)
if [ -n "${MCP_CONFORMANCE_CONTEXT:-}" ]; then
    ID="$(python3 -c 'import json,os; print(json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"]).get("client_id",""))')"
    export CONF_SECRET="$(python3 -c 'import json,os; print(json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"]).get("client_secret",""))')"
    [ -n "$ID" ] && ADD+=(--oauth-client-id "$ID")
    [ -n "$ID" ] && [ -n "$CONF_SECRET" ] && ADD+=(--oauth-client-secret-env CONF_SECRET)
fi
"$EVOLVE" "${ADD[@]}" >&2 || exit 1

LOGINS=0
login() {
    LOGINS=$((LOGINS + 1))
    if [ "$LOGINS" -gt 3 ]; then
        say "still refused after 3 logins: giving up"
        return 1
    fi
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

# List the tools, logging in when told to.
for _ in 1 2 3 4; do
    if "$EVOLVE" mcp tools conf >"$WORK/tools.out" 2>"$WORK/tools.err"; then
        cat "$WORK/tools.out" >&2
        break
    fi
    cat "$WORK/tools.err" >&2
    grep -q 'evolve mcp login conf' "$WORK/tools.err" || exit 1
    login || exit 1
done
grep -q 'conf__test-tool' "$WORK/tools.out" 2>/dev/null || { say "no test-tool listed"; exit 0; }

# Call it, logging in again when a call asks for more.
for _ in 1 2 3 4; do
    "$EVOLVE" ask --json --allow L3 "Call the test tool." >"$WORK/ask.json" 2>"$WORK/ask.err"
    cat "$WORK/ask.err" >&2
    if grep -q 'evolve mcp login conf' "$WORK/ask.json" "$WORK/ask.err"; then
        login || exit 1
        continue
    fi
    break
done
cat "$WORK/ask.json" >&2
exit 0
