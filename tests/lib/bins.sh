# Sourced by tests/soak.sh, tests/crash.sh, tests/disk-full.sh and tests/conformance/run.sh:
# finds (or builds) the `evolve` and `fake-llm` binaries and checks what the scripts need.
#
#   NAME=soak; . tests/lib/bins.sh
#
# Sets ROOT, TARGET, EVOLVE_BIN, FAKE_LLM_BIN and `say` (prints "NAME: …"). EVOLVE_BIN and
# FAKE_LLM_BIN given in the environment are used as they are; otherwise the debug builds
# are made with cargo. A missing binary or python3 ends the script with
# `NAME: 0 passed, 1 failed` and exit 1, the line CI counts.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
say() { echo "$NAME: $*"; }
fail_setup() { say "$1"; echo "$NAME: 0 passed, 1 failed"; exit 1; }

if [ -z "${EVOLVE_BIN:-}" ] || [ -z "${FAKE_LLM_BIN:-}" ]; then
    say "building evolve and fake-llm (debug)"
    (cd "$ROOT" && cargo build -q -p evolve-mini -p evolve-fake-llm)
fi
EVOLVE_BIN="${EVOLVE_BIN:-$TARGET/debug/evolve}"
FAKE_LLM_BIN="${FAKE_LLM_BIN:-$TARGET/debug/fake-llm}"
for bin in "$EVOLVE_BIN" "$FAKE_LLM_BIN"; do
    [ -x "$bin" ] || fail_setup "no executable $bin"
done
command -v python3 >/dev/null || fail_setup "python3 is needed"

# The checks' tally: `pass TEXT` / `fail TEXT` print "NAME: ok …" / "NAME: FAIL …";
# `finish` prints the closing line and returns non-zero when a check failed.
PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); say "ok   $*"; }
fail() { FAILED=$((FAILED + 1)); say "FAIL $*"; }
finish() {
    echo "$NAME: $PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ]
}

wait_for() { # wait_for FILE PATTERN: the first matching line of FILE (20 s at most)
    local line
    for _ in $(seq 200); do
        line="$(grep -m1 -E "$2" "$1" 2>/dev/null)" && { echo "$line"; return 0; }
        sleep 0.1
    done
    return 1
}
