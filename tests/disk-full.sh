#!/usr/bin/env bash
# The store on a full filesystem: a clear error, no panic, no corruption, and writes work
# again once there is space.
#
#   tests/disk-full.sh                    # builds the debug binaries first
#   EVOLVE_BIN=target/debug/evolve FAKE_LLM_BIN=target/debug/fake-llm tests/disk-full.sh
#
# Needs root (it mounts a 4 MB tmpfs as EVOLVE_HOME), bash and python3 (standard
# library only); installs nothing. Where `mount -t tmpfs` is not permitted (an
# unprivileged container) it prints `disk-full: SKIP …` and `disk-full: 0 passed, 0
# failed`: nothing else emulates a full disk honestly (`ulimit -f` is a signal, not
# ENOSPC). Against tests/fake-llm --echo on 127.0.0.1:
#   1. commands: memories and a question are stored; the disk is filled with a file;
#      `evolve memory add` (until the store file can grow no more) and `evolve ask` fail
#      with "No space left on device" and no panic; the store still opens;
#   2. space is freed: the store opens, everything acknowledged is there, new writes work;
#   3. serve: started with space, then the disk is filled under it; POST /v1/memory (until
#      it fails) and chats answer a 5xx with an error JSON naming the cause, /health still
#      answers; space is freed and the same server takes writes again; after it stops,
#      every acknowledged memory and chat is in the store.
# Prints one line per check and ends with `disk-full: N passed, M failed`; exits non-zero
# when a check failed. DISK_FULL_KEEP=1 keeps the temporary directory (unmounted).
set -euo pipefail

NAME=disk-full
# shellcheck source=tests/lib/bins.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/bins.sh"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/evolve-disk-full.XXXXXX")"
HOME_DIR="$WORK/home"
MOUNTED=""
FAKE_PID=""
SERVE_PID=""
cleanup() {
    for pid in $SERVE_PID $FAKE_PID; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [ -n "$MOUNTED" ]; then umount "$HOME_DIR" 2>/dev/null || umount -l "$HOME_DIR" || true; fi
    if [ "${DISK_FULL_KEEP:-}" = "1" ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$HOME_DIR"
if ! mount -t tmpfs -o size=4m,mode=0700 evolve-disk-full "$HOME_DIR" 2>"$WORK/mount.err"; then
    say "SKIP cannot mount a tmpfs here ($(head -n1 "$WORK/mount.err" | head -c 200)): run as root outside an unprivileged container"
    echo "disk-full: 0 passed, 0 failed"
    exit 0
fi
MOUNTED=1


"$FAKE_LLM_BIN" --port 0 --echo >"$WORK/fake.out" 2>"$WORK/fake.err" </dev/null &
FAKE_PID=$!
BASE_URL="$(wait_for "$WORK/fake.out" '^http://')" || { cat "$WORK/fake.err"; fail "fake-llm did not start"; finish; }
ENVIRONMENT=(PATH="$PATH" HOME="$HOME_DIR" EVOLVE_HOME="$HOME_DIR" OPENAI_BASE_URL="$BASE_URL"
    EVOLVE_MODEL=fake-main EVOLVE_CHEAP_MODEL=fake-cheap EVOLVE_LOG=warn)
evolve() { env -i "${ENVIRONMENT[@]}" "$EVOLVE_BIN" "$@" </dev/null; }

: >"$WORK/acked-memories"
: >"$WORK/acked-questions"
# remember TEXT: `evolve memory add`; on success the text is acknowledged.
remember() {
    if evolve memory add "$1" >/dev/null 2>"$WORK/last.err"; then echo "$1" >>"$WORK/acked-memories"; return 0; fi
    return 1
}
# ask TEXT: `evolve ask`; on success the question is acknowledged.
ask() {
    if evolve ask "$1" >/dev/null 2>"$WORK/last.err"; then echo "$1" >>"$WORK/acked-questions"; return 0; fi
    return 1
}
# A unique text of about 1 KB (no word shared with another: nothing merges).
text_of() { python3 -c 'import os, sys; print(sys.argv[1], " ".join(os.urandom(5).hex() + "q" for _ in range(90)))' "$1"; }
fill() { dd if=/dev/zero of="$HOME_DIR/filler" bs=4k 2>/dev/null || true; sync; }
free_space() { rm -f "$HOME_DIR/filler"; }
# clear_error WHAT: the last command's stderr names the cause and holds no panic.
clear_error() {
    if grep -q "panicked" "$WORK/last.err"; then
        fail "$1 panicked: $(head -c 600 "$WORK/last.err")"
    elif grep -q "No space left on device" "$WORK/last.err"; then
        pass "$1 fails with a clear error: $(head -c 300 "$WORK/last.err" | tr '\n' ' ')"
    else
        fail "$1 fails without naming the cause: $(head -c 600 "$WORK/last.err")"
    fi
}
# intact: the store opens and holds every acknowledged memory and question.
intact() {
    local report
    if report="$(env -i "${ENVIRONMENT[@]}" python3 - "$EVOLVE_BIN" "$WORK" <<'PY' 2>&1
import json, subprocess, sys
evolve, work = sys.argv[1], sys.argv[2]
def run(*args):
    p = subprocess.run([evolve, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or "panicked" in p.stderr:
        sys.exit(f"`evolve {' '.join(args)}` exited {p.returncode}: {p.stderr.strip()[:300]}")
    return json.loads(p.stdout)
stored = {m["content"] for m in run("memory", "list", "--json")}
missing = [t[:20] for t in open(f"{work}/acked-memories").read().splitlines() if t not in stored]
said = set()
for s in run("sessions", "list", "--json"):
    for m in run("sessions", "show", s["id"], "--json")["messages"]:
        said.add(m["message"].get("content"))
questions = open(f"{work}/acked-questions").read().splitlines()
lost = [q for q in questions if q not in said or "echo: " + q not in said]
print(f"{len(stored)} memories stored, {len(questions)} acknowledged questions; missing memories {missing[:3]}, missing questions {lost[:3]}")
sys.exit(1 if missing or lost else 0)
PY
)"; then
        pass "$1: $report"
    else
        fail "$1: $report"
    fi
}

# ---- 1. commands on a full disk ---------------------------------------------------------
for i in 1 2 3; do remember "$(text_of "before$i")" || fail "memory add with space: $(cat "$WORK/last.err")"; done
ask "a question with space" || fail "ask with space: $(cat "$WORK/last.err")"
fill
say "filled: $(df -k "$HOME_DIR" | awk 'NR == 2 { print $3 " kB used, " $4 " kB free" }'), store file $(stat -c %s "$HOME_DIR/evolve.redb") bytes"
# until_full remember|ask WHAT TAG: runs the command (acknowledging each success: the
# store file may still have free pages inside) until it fails, which must be clear.
until_full() {
    local n=0 arg
    while [ "$n" -lt 100 ]; do
        if [ "$1" = remember ]; then arg="$(text_of "full-$3-$n")"; else arg="a question $3 $n"; fi
        "$1" "$arg" || break
        n=$((n + 1))
    done
    if [ "$n" -lt 100 ]; then
        say "$2: succeeded $n times (room inside the store file), then failed"
        clear_error "$2"
    else
        fail "$2: never failed ($n times)"
    fi
}
until_full remember "evolve memory add on a full disk" cli
until_full ask "evolve ask on a full disk" cli
intact "the store opens on the full disk"

# ---- 2. space again -----------------------------------------------------------------
free_space
intact "after freeing space the store opens with everything acknowledged"
if remember "$(text_of after-free)" && ask "a question after freeing space"; then
    pass "memory add and ask work again"
else
    fail "writes after freeing space: $(cat "$WORK/last.err")"
fi

# ---- 3. serve under a filling disk -----------------------------------------------------
env -i "${ENVIRONMENT[@]}" EVOLVE_LOG=info "$EVOLVE_BIN" serve --port 0 >"$WORK/serve.out" 2>"$WORK/serve.err" </dev/null &
SERVE_PID=$!
BANNER="$(wait_for "$WORK/serve.err" ' serving on http://[^ ]+ ')" || { cat "$WORK/serve.err"; fail "serve did not start"; finish; }
URL="$(sed -E 's#.* serving on (http://[^ ]+).*#\1#' <<<"$BANNER")"
# api ACTION: one step of the API client below; prints its verdict, exits 1 on failure.
api() {
    # Every request but /health carries serve's token, as the CLI sends it.
    EVOLVE_TOKEN="$(cat "$HOME_DIR/serve.token")" python3 - "$URL" "$WORK" "$1" <<'PY'
import http.client, json, os, sys
url, work, action = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = url.split("//")[1].split(":")
def call(method, path, body=None):
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Authorization": "Bearer " + os.environ["EVOLVE_TOKEN"]}
    if body is not None:
        headers["Content-Type"] = "application/json"
    c.request(method, path, None if body is None else json.dumps(body), headers)
    r = c.getresponse()
    data = r.read()
    return r.status, data, r.getheader("X-Evolve-Session")
def text(tag):
    return tag + " " + " ".join(os.urandom(5).hex() + "q" for _ in range(90))
def ack_memory(t):
    with open(f"{work}/acked-memories", "a") as f:
        f.write(t + "\n")
def ack_question(q):
    with open(f"{work}/acked-questions", "a") as f:
        f.write(q + "\n")
def clear(status, data):
    try:
        message = json.loads(data)["error"]["message"]
    except Exception:
        return f"{status} without an error JSON: {data[:200]!r}"
    if status < 500:
        return f"{status} (not a server error): {message}"
    if "No space left on device" not in message:
        return f"{status} without the cause: {message}"
    return None
if action == "writes":  # with space: one memory and one chat
    t = text("served")
    status, data, _ = call("POST", "/v1/memory", {"content": t})
    if status != 201:
        sys.exit(f"POST /v1/memory -> {status} {data[:300]!r}")
    ack_memory(t)
    q = "a served question " + os.urandom(4).hex()
    status, data, _ = call("POST", "/v1/chat/completions",
                           {"model": "fake-main", "messages": [{"role": "user", "content": q}]})
    if status != 200:
        sys.exit(f"POST /v1/chat/completions -> {status} {data[:300]!r}")
    ack_question(q)
    print("a memory (201) and a chat (200)")
elif action.startswith("full-"):  # on a full disk: writes until one fails, clearly
    kind = action[5:]
    for n in range(100):
        if kind == "memory":
            t = text(f"served-full{n}")
            status, data, _ = call("POST", "/v1/memory", {"content": t})
            if status == 201:
                ack_memory(t)
                continue
        else:
            stream = kind == "stream"
            q = f"a served question on a full disk {n} {os.urandom(4).hex()}"
            status, data, _ = call("POST", "/v1/chat/completions",
                                   {"model": "fake-main", "stream": stream,
                                    "messages": [{"role": "user", "content": q}]})
            body = data.decode("utf-8", "replace")
            if status == 200 and not stream:
                ack_question(q)
                continue
            if status == 200 and body.rstrip().endswith("data: [DONE]") and '"error"' not in body:
                ack_question(q)
                continue
            if status == 200:  # the stream began: its end must carry the error
                if "No space left on device" not in body:
                    sys.exit(f"after {n} chats: the stream ended without the cause: {body[-300:]!r}")
                print(f"after {n} streamed chats: the stream ends with {body.strip().splitlines()[-1][:200]}")
                break
        problem = clear(status, data)
        if problem:
            sys.exit(f"after {n} {kind} writes: {problem}")
        print(f"after {n} {kind} writes: {status} {json.loads(data)['error']['message'][:160]}")
        break
    else:
        sys.exit(f"100 {kind} writes on a full disk, none failed")
elif action == "health":
    status, data, _ = call("GET", "/health")
    if status != 200:
        sys.exit(f"/health -> {status}")
    print("/health answers 200")
PY
}
step() { # step NAME ACTION
    local out
    if out="$(api "$2" 2>&1)"; then pass "$1: $out"; else fail "$1: $out"; fi
}
step "serve takes writes with space" writes
fill
step "serve: memory adds on a full disk end in a clear 5xx" full-memory
step "serve: chats on a full disk end in a clear 5xx" full-chat
step "serve: streamed chats on a full disk end in a clear error" full-stream
until_full ask "evolve ask through serve on a full disk" "through serve on a full disk"
step "serve still answers /health on a full disk" health
free_space
step "after freeing space, the same serve takes writes again" writes
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=""
if grep -q panicked "$WORK/serve.err"; then fail "serve panicked: $(grep -A5 panicked "$WORK/serve.err" | head -c 600)"; else pass "no panic in serve's log"; fi
intact "after serve, the store holds everything acknowledged"

finish
