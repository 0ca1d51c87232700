#!/usr/bin/env bash
# Crash safety: kill -9 in the middle of write bursts, CRASH_ROUNDS times; after each
# kill the store must open and hold every memory and message whose write was
# acknowledged before the kill.
#
#   tests/crash.sh                        # builds the debug binaries first
#   EVOLVE_BIN=target/debug/evolve FAKE_LLM_BIN=target/debug/fake-llm CRASH_ROUNDS=20 tests/crash.sh
#
# Needs bash and python3 (standard library only); installs nothing. One store (a fresh
# EVOLVE_HOME) lives through all rounds, against tests/fake-llm --echo on 127.0.0.1.
# Rounds alternate:
#   - serve rounds: `evolve serve` takes memory adds (POST /v1/memory) and chats (POST
#     /v1/chat/completions) from a python3 client and `evolve ask` (which goes through
#     serve) in a loop; serve is killed with SIGKILL after a random 0.2–1.6 s;
#   - command rounds: `evolve memory add` and `evolve ask` (which writes the session
#     itself) in two loops on the same store; whichever of each is running is killed
#     with SIGKILL after a random 0.2–1.6 s.
# An item counts as acknowledged when its command exited 0 or its HTTP request answered
# 2xx; it is written to a file right then, before the kill can happen. After each round:
# `evolve memory list --json` and `evolve sessions list --json` exit 0, every
# acknowledged memory is listed with its text (and id, for the API's), every
# acknowledged question is in its session (`evolve sessions show ID --json`).
# Prints one line per round and ends with `crash: N passed, M failed` (one check per
# round); exits non-zero when one failed. CRASH_SEED picks the random points
# (printed; default: a new one); CRASH_KEEP=1 keeps the temporary directory.
set -euo pipefail

NAME=crash
# shellcheck source=tests/lib/bins.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bins.sh"
ROUNDS="${CRASH_ROUNDS:-20}"
SEED="${CRASH_SEED:-$((RANDOM * 32768 + RANDOM))}"
RANDOM="$SEED"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/evolve-crash.XXXXXX")"
FAKE_PID=""
PIDS=() # everything a round started: loops, clients, serve
stop_round() {
    local pid f
    touch "$WORK/stop"
    # The loops' children too: each loop writes the pid of the command it runs.
    for f in "$WORK"/*.pid; do
        if [ -f "$f" ]; then kill -KILL "$(cat "$f")" 2>/dev/null || true; fi
    done
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
}
cleanup() {
    stop_round
    if [ -n "$FAKE_PID" ]; then kill -TERM "$FAKE_PID" 2>/dev/null || true; wait "$FAKE_PID" 2>/dev/null || true; fi
    if [ "${CRASH_KEEP:-}" = "1" ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM


mkdir -p "$WORK/home" "$WORK/acked"
"$FAKE_LLM_BIN" --port 0 --echo --chunk-delay-ms 1 >"$WORK/fake.out" 2>"$WORK/fake.err" </dev/null &
FAKE_PID=$!
BASE_URL="$(wait_for "$WORK/fake.out" '^http://')" || { cat "$WORK/fake.err"; say "fake-llm did not start"; echo "crash: 0 passed, 1 failed"; exit 1; }
ENVIRONMENT=(PATH="$PATH" HOME="$WORK/home" EVOLVE_HOME="$WORK/home" OPENAI_BASE_URL="$BASE_URL"
    EVOLVE_MODEL=fake-main EVOLVE_CHEAP_MODEL=fake-cheap EVOLVE_LOG=warn)
evolve() { env -i "${ENVIRONMENT[@]}" "$EVOLVE_BIN" "$@"; }

# The API client of serve rounds: memory adds and chats until $WORK/stop exists; each
# 2xx is appended (and flushed) to the acked files at once.
cat >"$WORK/client.py" <<'PY'
import http.client, json, os, sys, threading, time
url, work, tag = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = url.split("//")[1].split(":")
stop = os.path.join(work, "stop")
AUTH = {"Authorization": "Bearer " + os.environ["EVOLVE_TOKEN"]}

def loop(kind):
    i = 0
    with open(os.path.join(work, "acked", f"{tag}-api-{kind}"), "a") as out:
        while not os.path.exists(stop):
            i += 1
            # Words of their own (no tag or counter as a word): no memory merges with another.
            words = f"{tag}a{i}x {os.urandom(6).hex()}q {os.urandom(6).hex()}q"
            text = words if kind == "memory" else f"{tag} api chat {i} {words}"
            try:
                c = http.client.HTTPConnection(host, int(port), timeout=30)
                if kind == "memory":
                    c.request("POST", "/v1/memory", json.dumps({"content": text}),
                              {"Content-Type": "application/json", **AUTH})
                    r = c.getresponse()
                    body = r.read()
                    if r.status == 201:
                        out.write(f"mem\t{json.loads(body)['id']}\t{text}\n")
                else:
                    c.request("POST", "/v1/chat/completions",
                              json.dumps({"model": "fake-main",
                                          "messages": [{"role": "user", "content": text}]}),
                              {"Content-Type": "application/json", **AUTH})
                    r = c.getresponse()
                    r.read()
                    if r.status == 200:
                        out.write(f"ask\t{r.getheader('X-Evolve-Session')}\t{text}\n")
                out.flush()
                c.close()
            except OSError:
                time.sleep(0.05)

threads = [threading.Thread(target=loop, args=(k,)) for k in ("memory", "chat")]
for t in threads:
    t.start()
for t in threads:
    t.join()
PY

# memory_loop TAG: `evolve memory add` until $WORK/stop exists.
memory_loop() {
    local i=0 text
    while [ ! -e "$WORK/stop" ]; do
        i=$((i + 1))
        # Words of their own (no tag or counter as a word): no memory merges with another.
        text="${1}m${i}x $RANDOM${RANDOM}q $RANDOM${RANDOM}z k$RANDOM$RANDOM"
        env -i "${ENVIRONMENT[@]}" "$EVOLVE_BIN" memory add "$text" >/dev/null 2>>"$WORK/errors.log" </dev/null &
        echo $! >"$WORK/memory.pid"
        if wait $!; then printf 'mem\t-\t%s\n' "$text" >>"$WORK/acked/$1-cli-memory"; fi
    done
}
# ask_loop TAG: `evolve ask --json` until $WORK/stop exists.
ask_loop() {
    local i=0 text session
    while [ ! -e "$WORK/stop" ]; do
        i=$((i + 1))
        text="$1 ask $i $RANDOM$RANDOM"
        env -i "${ENVIRONMENT[@]}" "$EVOLVE_BIN" ask --json "$text" >"$WORK/ask.out" 2>>"$WORK/errors.log" </dev/null &
        echo $! >"$WORK/ask.pid"
        if wait $!; then
            session="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["session"])' "$WORK/ask.out")"
            printf 'ask\t%s\t%s\n' "$session" "$text" >>"$WORK/acked/$1-cli-ask"
        fi
    done
}

# The check after a round: the store opens, everything acknowledged so far is there.
cat >"$WORK/check.py" <<'PY'
import glob, json, os, subprocess, sys
evolve, work, tag = sys.argv[1], sys.argv[2], sys.argv[3]
def run(*args):
    p = subprocess.run([evolve, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(f"`evolve {' '.join(args)}` exited {p.returncode}: {p.stderr.strip()[:300]}")
        sys.exit(1)
    return json.loads(p.stdout)
memories = run("memory", "list", "--json")
by_id = {m["id"]: m["content"] for m in memories}
texts = set(by_id.values())
sessions = {s["id"] for s in run("sessions", "list", "--json")}
acked = [l.rstrip("\n").split("\t", 2) for f in sorted(glob.glob(f"{work}/acked/*"))
         for l in open(f) if l.endswith("\n")]
problems, mems, asks, this_round = [], 0, 0, 0
for kind, ident, text in acked:
    if kind == "mem":
        mems += 1
        if ident != "-" and by_id.get(int(ident)) != text:
            problems.append(f"memory #{ident} {text!r} is {by_id.get(int(ident))!r}")
        elif text not in texts:
            problems.append(f"memory {text!r} is missing")
    else:
        asks += 1
        if ident not in sessions:
            problems.append(f"session {ident} ({text!r}) is missing")
        elif text.startswith(tag + " "):
            # This round's questions: read back from the session itself.
            this_round += 1
            export = run("sessions", "show", ident, "--json")
            said = [m["message"].get("content") for m in export["messages"]]
            if text not in said or ("echo: " + text) not in said:
                problems.append(f"session {ident} lacks {text!r} or its answer")
print(f"store opens; {mems} acknowledged memories and {asks} acknowledged questions so far "
      f"({this_round} this round) all there" if not problems else "; ".join(problems[:5]))
sys.exit(1 if problems else 0)
PY

say "$ROUNDS rounds, seed $SEED, store $WORK/home"
for round in $(seq "$ROUNDS"); do
    tag="r$round"
    rm -f "$WORK/stop" "$WORK"/*.pid
    delay="$(printf '0.%03d' $((RANDOM % 1000)))"
    delay="$(python3 -c "print(round(0.2 + 1.4 * $delay, 3))")"
    if [ $((round % 2)) -eq 1 ]; then
        mode=serve
        # In a subshell of its own, so that the shell's "Killed" notice goes nowhere.
        (
            env -i "${ENVIRONMENT[@]}" "$EVOLVE_BIN" serve --port 0 >/dev/null 2>"$WORK/serve.err" </dev/null &
            echo $! >"$WORK/serve.pid"
            wait
        ) 2>/dev/null &
        PIDS+=($!)
        for _ in $(seq 100); do [ -s "$WORK/serve.pid" ] && break; sleep 0.05; done
        serve_pid="$(cat "$WORK/serve.pid")"
        banner="$(wait_for "$WORK/serve.err" ' serving on http://[^ ]+ ')" || { cat "$WORK/serve.err"; fail "$tag: serve did not start"; break; }
        url="$(sed -E 's#.* serving on (http://[^ ]+).*#\1#' <<<"$banner")"
        # Every request but /health carries serve's token, as the CLI sends it.
        EVOLVE_TOKEN="$(cat "$WORK/home/serve.token")" \
            python3 "$WORK/client.py" "$url" "$WORK" "$tag" 2>>"$WORK/errors.log" &
        PIDS+=($!)
        ask_loop "$tag" 2>/dev/null &
        PIDS+=($!)
        sleep "$delay"
        kill -KILL "$serve_pid" 2>/dev/null || true
        killed="serve"
    else
        mode=commands
        memory_loop "$tag" 2>/dev/null &
        PIDS+=($!)
        ask_loop "$tag" 2>/dev/null &
        PIDS+=($!)
        sleep "$delay"
        killed=""
        for f in "$WORK/ask.pid" "$WORK/memory.pid"; do
            if [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; then killed="${killed:+$killed and }$(basename "$f" .pid)"; fi
        done
    fi
    # Let the loops end on their own (a command started after the kill finishes and
    # counts only if it succeeded), then kill what is left.
    touch "$WORK/stop"
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    stop_round
    if out="$(env -i "${ENVIRONMENT[@]}" python3 "$WORK/check.py" "$EVOLVE_BIN" "$WORK" "$tag" 2>&1)"; then
        pass "$tag ($mode, kill -9${killed:+ $killed} after ${delay}s): $out"
    else
        fail "$tag ($mode, kill -9${killed:+ $killed} after ${delay}s): $out"
    fi
done
if grep -q panicked "$WORK/errors.log" 2>/dev/null; then
    fail "a command panicked:"
    grep -A5 panicked "$WORK/errors.log" | head -20
fi
finish
