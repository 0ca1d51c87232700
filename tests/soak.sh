#!/usr/bin/env bash
# Soak: `evolve serve` under mixed load for a bounded time, then checks that
#   1. every request was answered with an expected status (a 5xx, a dropped connection or
#      a stream that ends without `[DONE]` is a failure);
#   2. with SOAK_STEADY=1 (below), the server's RSS is flat: sampled every second, the
#      largest sample of the second half stays within 25 % + 2 MB of the largest sample
#      just after the warm-up (the window from 20 % to 50 % of the run). Without it the
#      data keeps growing (every chat and memory is kept) and RSS grows with it, so the
#      samples are printed but not checked: a leak shows in the steady run;
#   3. the store is consistent afterwards: serve is stopped, then `evolve memory list
#      --json` and `evolve sessions list --json` open the store and hold exactly the
#      memories the API acknowledged (same ids, same text), every acknowledged chat's
#      session (with at least its acknowledged turns) and none of the deleted sessions.
#
#   tests/soak.sh                         # builds the debug binaries first
#   EVOLVE_BIN=target/debug/evolve FAKE_LLM_BIN=target/debug/fake-llm SOAK_SECONDS=60 tests/soak.sh
#
# Needs bash, python3 (standard library only) and the two binaries; installs nothing.
# The load, from parallel clients on 127.0.0.1 (python3 threads): SOAK_STREAMS (default
# 4) clients in a loop of streamed chats (`stream: true`; every third continues its last
# session), 2 readers (/health, /v1/sessions, /v1/memory, /v1/models, a session and its
# messages, /v1/search, /v1/tools, /v1/config) and 1 writer (memory adds through the API,
# session deletes). The fake model (tests/fake-llm --echo) streams in chunks 2 ms apart.
# Prints one line per check and ends with `soak: N passed, M failed`; exits non-zero when
# a check failed. SOAK_KEEP=1 keeps the temporary directory.
# SOAK_STEADY=1 keeps the data from growing, to show where RSS settles when nothing new is
# kept: every chat's session is deleted once no streamer continues it, and the writer
# holds at most 200 memories (it deletes the oldest before adding one). The checks then
# compare the store with what was acknowledged and not deleted, and RSS must be flat.
# `.ci/run` runs both modes.
set -euo pipefail

NAME=soak
# shellcheck source=tests/lib/bins.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bins.sh"
SECONDS_BUDGET="${SOAK_SECONDS:-60}"
STREAMS="${SOAK_STREAMS:-4}"
STEADY="${SOAK_STEADY:-0}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/evolve-soak.XXXXXX")"
FAKE_PID=""
SERVE_PID=""
cleanup() {
    for pid in $SERVE_PID $FAKE_PID; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [ "${SOAK_KEEP:-}" = "1" ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

check() { # check NAME COMMAND...: runs COMMAND, prints ok/FAIL NAME with its output
    local name="$1" out
    shift
    if out="$("$@" 2>&1)"; then
        pass "$name${out:+ — $out}"
    else
        fail "$name${out:+ — $out}"
    fi
}

mkdir -p "$WORK/home"
"$FAKE_LLM_BIN" --port 0 --echo --chunk-delay-ms 2 >"$WORK/fake.out" 2>"$WORK/fake.err" </dev/null &
FAKE_PID=$!
BASE_URL="$(wait_for "$WORK/fake.out" '^http://')" || { cat "$WORK/fake.err"; fail "fake-llm did not start"; finish; }

# A clean environment: nothing from the caller's own Evolve or OpenAI settings.
ENVIRONMENT=(PATH="$PATH" HOME="$WORK/home" EVOLVE_HOME="$WORK/home" OPENAI_BASE_URL="$BASE_URL"
    EVOLVE_MODEL=fake-main EVOLVE_CHEAP_MODEL=fake-cheap)
run_evolve() { env -i "${ENVIRONMENT[@]}" EVOLVE_LOG=warn "$EVOLVE_BIN" "$@"; }
# Started without a shell function in between: $! is serve itself (its RSS is sampled).
env -i "${ENVIRONMENT[@]}" EVOLVE_LOG=info "$EVOLVE_BIN" serve --port 0 >"$WORK/serve.out" 2>"$WORK/serve.err" </dev/null &
SERVE_PID=$!
BANNER="$(wait_for "$WORK/serve.err" ' serving on http://[^ ]+ ')" || { cat "$WORK/serve.err"; fail "serve did not start"; finish; }
URL="$(sed -E 's#.* serving on (http://[^ ]+).*#\1#' <<<"$BANNER")"
# Every request but /health carries serve's token, as the CLI sends it.
TOKEN="$(cat "$WORK/home/serve.token")"
say "serve (pid $SERVE_PID) at $URL, fake model at $BASE_URL; ${SECONDS_BUDGET}s of load with $STREAMS streams"

# ---- the load -------------------------------------------------------------------------
EVOLVE_TOKEN="$TOKEN" python3 - "$URL" "$SECONDS_BUDGET" "$STREAMS" "$SERVE_PID" "$WORK" "$STEADY" >"$WORK/load.out" 2>&1 <<'PY' || true
import http.client, json, os, random, sys, threading, time, urllib.parse

url, budget, streams, pid, work = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
steady = sys.argv[6] == "1"
STEADY_MEMORIES = 200  # the most the writer keeps at once in steady mode
host = urllib.parse.urlparse(url)
lock = threading.Lock()
counts = {}            # kind -> [ok, failed]
failures = []          # first 20 failures, described
acked_memories = {}    # id -> text
acked_chats = {}       # session -> acknowledged turns
deleted = set()
deleted_memories = set()
deletable = []         # sessions no streamer continues any more
rss = []               # (seconds since start, kB)
start = time.monotonic()
stop_at = start + budget

def note(kind, ok, what=""):
    with lock:
        c = counts.setdefault(kind, [0, 0])
        c[0 if ok else 1] += 1
        if not ok and len(failures) < 20:
            failures.append(f"{kind}: {what}")

def conn():
    return http.client.HTTPConnection(host.hostname, host.port, timeout=60)

def request(c, method, path, body=None, headers=None):
    h = {"Content-Type": "application/json"} if body is not None else {}
    h["Authorization"] = "Bearer " + os.environ["EVOLVE_TOKEN"]
    h.update(headers or {})
    c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
    return c.getresponse()

def streamer(n):
    c = conn()
    last = None
    i = 0
    while time.monotonic() < stop_at:
        i += 1
        text = f"soak stream {n} turn {i} {random.randrange(1 << 30):x}"
        headers = {}
        if last and i % 3 == 0:
            headers["X-Evolve-Session"] = last
        try:
            r = request(c, "POST", "/v1/chat/completions",
                        {"model": "fake-main", "stream": True,
                         "messages": [{"role": "user", "content": text}]}, headers)
            session = r.getheader("X-Evolve-Session")
            body = r.read().decode("utf-8", "replace")
            reply = ""
            for line in body.splitlines():
                if line.startswith("data: {"):
                    for ch in json.loads(line[6:]).get("choices", []):
                        reply += ch.get("delta", {}).get("content") or ""
            done = body.rstrip().endswith("data: [DONE]") and reply == "echo: " + text
            if r.status == 200 and done and session:
                note("chat", True)
                with lock:
                    acked_chats[session] = acked_chats.get(session, 0) + 1
                if steady and (headers or last):
                    # Steady data: a session is deleted as soon as nobody continues it.
                    with lock:
                        deletable.append(session if headers else last)
                    last = None if headers else session
                elif headers and random.random() < 0.5:
                    with lock:
                        deletable.append(session)
                    last = None
                else:
                    last = session
            else:
                note("chat", False, f"{r.status} done={done} {body[-200:]!r}")
        except Exception as e:
            note("chat", False, repr(e))
            c.close()
            c = conn()

def reader(n):
    c = conn()
    paths = ["/health", "/v1/sessions", "/v1/memory", "/v1/models", "/v1/search?q=soak",
             "/v1/tools", "/v1/config", "/v1/memory?q=soak", "/v1/sessions?limit=5"]
    i = n
    while time.monotonic() < stop_at:
        i += 1
        path = paths[i % len(paths)]
        expected = {200}
        if i % 4 == 0:
            with lock:
                ids = list(acked_chats)
            if ids:
                s = random.choice(ids)
                path = random.choice([f"/v1/sessions/{s}", f"/v1/sessions/{s}/messages"])
                expected = {200, 404}  # the writer may have deleted it
        try:
            r = request(c, "GET", path)
            r.read()
            note("read", r.status in expected, f"GET {path} -> {r.status}")
        except Exception as e:
            note("read", False, f"GET {path}: {e!r}")
            c.close()
            c = conn()

def writer():
    c = conn()
    i = 0
    live = []  # memory ids in the order they were added (steady mode)
    while time.monotonic() < stop_at:
        i += 1
        try:
            if deletable and (steady or i % 5 == 0):
                # Every fifth write deletes a session nobody continues any more; with
                # steady data each one is deleted at once.
                with lock:
                    s = deletable.pop(0)
                r = request(c, "DELETE", f"/v1/sessions/{s}")
                r.read()
                ok = r.status == 200
                note("delete", ok, f"DELETE {s} -> {r.status}")
                if ok:
                    with lock:
                        deleted.add(s)
                if steady:
                    continue
            else:
                if steady and len(live) >= STEADY_MEMORIES:
                    m = live.pop(0)
                    r = request(c, "DELETE", f"/v1/memory/{m}")
                    r.read()
                    ok = r.status in (200, 204)
                    note("memory delete", ok, f"DELETE /v1/memory/{m} -> {r.status}")
                    if ok:
                        with lock:
                            deleted_memories.add(str(m))
                # Words of their own: nothing merges with another memory.
                words = " ".join(f"{random.randrange(1 << 40):x}q" for _ in range(4))
                text = f"soakmem{i} {words}"
                r = request(c, "POST", "/v1/memory", {"content": text})
                body = r.read()
                ok = r.status == 201
                note("memory", ok, f"POST /v1/memory -> {r.status} {body[:200]!r}")
                if ok:
                    v = json.loads(body)
                    with lock:
                        acked_memories[v["id"]] = v["content"]
                    live.append(v["id"])
            time.sleep(0.02)
        except Exception as e:
            note("write", False, repr(e))
            c.close()
            c = conn()

def sampler():
    while time.monotonic() < stop_at:
        try:
            with open(f"/proc/{pid}/status") as f:
                kb = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            rss.append((round(time.monotonic() - start, 1), kb))
        except Exception as e:
            note("rss", False, repr(e))
        time.sleep(1)

threads = [threading.Thread(target=streamer, args=(n,)) for n in range(streams)]
threads += [threading.Thread(target=reader, args=(n,)) for n in range(2)]
threads += [threading.Thread(target=writer), threading.Thread(target=sampler)]
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.monotonic() - start
out = {"elapsed": elapsed, "counts": counts, "failures": failures, "rss": rss,
       "memories": {str(k): v for k, v in acked_memories.items()},
       "chats": acked_chats, "deleted": sorted(deleted),
       "deleted_memories": sorted(deleted_memories)}
with open(f"{work}/load.json", "w") as f:
    json.dump(out, f)
print(f"{sum(c[0] + c[1] for c in counts.values())} requests in {elapsed:.0f}s")
PY
[ -s "$WORK/load.json" ] || { cat "$WORK/load.out"; fail "the load script failed"; finish; }
say "$(cat "$WORK/load.out")"

# ---- the checks -----------------------------------------------------------------------
# py CODE: runs a check in python3 over load.json ($WORK/load.json as `load`).
py() { python3 -c "import json, sys; load = json.load(open('$WORK/load.json'))
$1" "${@:2}"; }

requests_answered() {
    py '
c = load["counts"]
print(", ".join(f"{k} {v[0]} ok/{v[1]} failed" for k, v in sorted(c.items())))
for f in load["failures"]:
    print("  " + f)
sys.exit(1 if any(v[1] for v in c.values()) or not c.get("chat", [0])[0] or not c.get("memory", [0])[0] else 0)'
}
check "every request answered with an expected status" requests_answered

rss_flat() {
    py '
s = load["rss"]
t = load["elapsed"]
print("RSS kB: " + " ".join(f"{at:g}s={kb}" for at, kb in s))
base = [kb for at, kb in s if 0.2 * t <= at < 0.5 * t]
late = [kb for at, kb in s if at >= 0.5 * t]
if not base or not late:
    print("too few samples"); sys.exit(1)
b, l = max(base), max(late)
limit = b * 1.25 + 2048
print(f"after warm-up max {b} kB, second half max {l} kB (limit {limit:.0f} kB, growth {100 * (l - b) / b:+.1f} %)")
sys.exit(0 if l <= limit else 1)'
}
if [ "$STEADY" = 1 ]; then
    check "RSS flat" rss_flat
else
    say "RSS, growing with the data (checked with SOAK_STEADY=1): $(rss_flat | tr '\n' ' ')"
fi

check "serve still answers /health" python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/health', timeout=10)" "$URL"
check "no panic in serve's log" bash -c "! grep -A8 panicked '$WORK/serve.err'"

kill -TERM "$SERVE_PID"
STOPPED=0
for _ in $(seq 300); do kill -0 "$SERVE_PID" 2>/dev/null || { STOPPED=1; break; }; sleep 0.1; done
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=""
check "serve stops on SIGTERM within 30 s" test "$STOPPED" = 1

memories_consistent() {
    run_evolve memory list --json >"$WORK/memories.json" || { echo "evolve memory list --json failed"; return 1; }
    py '
stored = {str(m["id"]): m["content"] for m in json.load(open(sys.argv[1]))}
gone = set(load["deleted_memories"])
acked = {i: t for i, t in load["memories"].items() if i not in gone}
missing = [i for i in acked if i not in stored]
changed = [i for i in acked if i in stored and stored[i] != acked[i]]
extra = [i for i in stored if i not in acked]
print(f"{len(acked)} acknowledged and kept ({len(gone)} deleted), {len(stored)} stored, missing {missing[:5]}, changed {changed[:5]}, unacknowledged {extra[:5]}")
sys.exit(1 if missing or changed or extra else 0)' "$WORK/memories.json"
}
check "the store holds exactly the acknowledged memories" memories_consistent

sessions_consistent() {
    run_evolve sessions list --json >"$WORK/sessions.json" || { echo "evolve sessions list --json failed"; return 1; }
    py '
stored = {s["id"]: s for s in json.load(open(sys.argv[1]))}
chats, deleted = load["chats"], set(load["deleted"])
missing = [s for s in chats if s not in deleted and s not in stored]
short = [s for s in chats if s in stored and stored[s]["turns"] < chats[s]]
back = [s for s in deleted if s in stored]
print(f"{len(chats)} acknowledged sessions ({sum(chats.values())} turns), {len(deleted)} deleted, {len(stored)} stored; missing {missing[:5]}, fewer turns {short[:5]}, deleted but present {back[:5]}")
sys.exit(1 if missing or short or back else 0)' "$WORK/sessions.json"
}
check "every acknowledged chat's session is stored, no deleted one" sessions_consistent

finish
