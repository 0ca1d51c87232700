#!/usr/bin/env bash
# Runs a cross-built `evolve` under qemu user-mode emulation: `--version`, one
# `evolve ask` against the in-repo fake model (tests/fake-llm, --echo) on 127.0.0.1 in a
# temporary EVOLVE_HOME, and `evolve serve` answering GET /health. Prints each step's time.
#
#   cross/qemu-smoke.sh BINARY        e.g. target/debian/aarch64-unknown-linux-musl/release/evolve
#
# The emulator is chosen from the binary's architecture (`file`): qemu-aarch64-static or
# qemu-arm-static (armv7; QEMU_CPU=arm1176 emulates the Pi Zero/1's armv6, so an armv7
# instruction in an armv6 build fails), qemu-riscv64-static. Needs: apt's qemu-user-static, file and curl (installed quietly
# when missing), and the fake model built natively: $FAKE_LLM_BIN if set, else
# `cargo build -p evolve-fake-llm` (target/debug/fake-llm). Loopback only.
# Prints "qemu-smoke: N passed, M failed" last; exits 1 when a check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:?usage: cross/qemu-smoke.sh BINARY}"
[ -f "$BIN" ] || { echo "qemu-smoke: no binary at $BIN" >&2; exit 2; }
BIN="$(realpath "$BIN")"
export DEBIAN_FRONTEND=noninteractive

missing=()
command -v file >/dev/null || missing+=(file)
command -v curl >/dev/null || missing+=(curl)
command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
case "$(file -b "$BIN")" in
    *aarch64*) QEMU=qemu-aarch64-static ;;
    *ARM*) QEMU=qemu-arm-static ;;
    *RISC-V*) QEMU=qemu-riscv64-static ;;
    *x86-64*) QEMU=qemu-x86_64-static ;;
    *) echo "qemu-smoke: unknown architecture: $(file -b "$BIN")" >&2; exit 2 ;;
esac

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }

T=$(now)
if [ -n "${FAKE_LLM_BIN:-}" ]; then
    FAKE="$FAKE_LLM_BIN"
else
    cargo build -q -p evolve-fake-llm
    FAKE="${CARGO_TARGET_DIR:-target}/debug/fake-llm"
fi
echo "qemu-smoke: fake model ready ($(since "$T"))"

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for FILE PATTERN: the first line of FILE matching PATTERN (60 s at most: qemu).
wait_for() {
    local line
    for _ in $(seq 600); do
        line="$(grep -m1 -E "$2" "$1" 2>/dev/null)" && { echo "$line"; return 0; }
        sleep 0.1
    done
    return 1
}

"$FAKE" --port 0 --echo >"$WORK/fake.out" 2>"$WORK/fake.err" </dev/null &
PIDS+=($!)
BASE_URL="$(wait_for "$WORK/fake.out" '^http://')" || { echo "fake-llm did not start: $(cat "$WORK/fake.err")" >&2; exit 1; }
echo "qemu-smoke: $QEMU $BIN, fake model at $BASE_URL"

mkdir -p "$WORK/home"
# A clean environment: nothing from the caller's own Evolve or OpenAI settings.
run() {
    env -i PATH="$PATH" HOME="$WORK/home" EVOLVE_HOME="$WORK/home" \
        OPENAI_BASE_URL="$BASE_URL" EVOLVE_MODEL=fake-main EVOLVE_CHEAP_MODEL=fake-cheap \
        "$QEMU" "$BIN" "$@"
}

passed=0
failed=0
check() { # name, command...
    local name="$1" t code=0
    shift
    t=$(now)
    "$@" || code=$?
    if [ "$code" -eq 0 ]; then
        echo "ok    $name ($(since "$t"))"; passed=$((passed + 1))
    else
        echo "FAIL  $name ($(since "$t"))"; failed=$((failed + 1))
    fi
}

version() {
    local out
    out="$(run --version </dev/null)" || return 1
    echo "      $out"
    [[ "$out" == evolve\ * ]]
}

ask() {
    local out code=0
    out="$(run ask "hello from qemu" </dev/null 2>"$WORK/ask.err")" || code=$?
    [ "$code" -eq 0 ] || { echo "exit $code"; cat "$WORK/ask.err"; return 1; }
    echo "      $out"
    grep -qF "echo: hello from qemu" <<<"$out" || { cat "$WORK/ask.err"; return 1; }
}

health() {
    local banner url body
    run serve --port 0 >"$WORK/serve.out" 2>"$WORK/serve.err" </dev/null &
    PIDS+=($!)
    banner="$(wait_for "$WORK/serve.err" ' serving on http://[^ ]+ ')" || { cat "$WORK/serve.err"; return 1; }
    url="$(sed -E 's#.* serving on (http://[^ ]+).*#\1#' <<<"$banner")"
    body="$(curl -fsS --max-time 20 "$url/health")" || { cat "$WORK/serve.err"; return 1; }
    echo "      $url/health: $body"
    kill "${PIDS[-1]}" 2>/dev/null || true
}

check "evolve --version under $QEMU" version
check "evolve ask against the fake model under $QEMU" ask
check "evolve serve answers /health under $QEMU" health
echo "qemu-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
