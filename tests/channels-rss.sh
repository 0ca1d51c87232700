#!/usr/bin/env bash
# Idle RSS of `evolve serve` with the three chat channels connected (Telegram long
# polling, Feishu and DingTalk long connections, each against its loopback fake from
# mini/tests/support), compared with the same server without channels. Prints
#   channels-rss: idle VmRSS of evolve serve: alone A KiB, with … connected B KiB (+D KiB)
# and fails when the channels add more than the test's budget.
#
#   tests/channels-rss.sh                           # the release binary (built if missing)
#   EVOLVE_BIN=target/debug/evolve tests/channels-rss.sh
#
# The measurement is mini/tests/channels_idle_rss.rs; EVOLVE_BIN picks the binary it runs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${EVOLVE_BIN:-}" ]; then
    EVOLVE_BIN="$TARGET/release/evolve"
    [ -x "$EVOLVE_BIN" ] || (cd "$ROOT" && cargo build -q --release -p evolve-mini)
fi
echo "channels-rss: measuring $EVOLVE_BIN"
cd "$ROOT"
out="$(EVOLVE_BIN="$EVOLVE_BIN" cargo test -q -p evolve-mini --test channels_idle_rss -- --nocapture 2>&1)" &&
    ok=1 || ok=0
grep -E "^channels-rss:|panicked|budget" <<<"$out" || true
if [ "$ok" = 1 ]; then
    echo "channels-rss: 1 passed, 0 failed"
else
    echo "$out" | tail -20
    echo "channels-rss: 0 passed, 1 failed"
    exit 1
fi
