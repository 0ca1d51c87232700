#!/usr/bin/env bash
# Release checklist: builds the static `evolve` for every shipped target with
# cross/build.sh (one after the other), then prints a size table: target, bytes, MiB,
# static?, and the build's time. Exits 1 when a target failed to build or its check failed
# (static, stripped, ≤ 5 MiB); the table still lists every target.
#
#   cross/release.sh [TARGET...]    (default: x86_64, aarch64, armv7, armv6 and riscv64 musl)
#
# Needs what cross/build.sh needs (it installs it); EVOLVE_CROSS_ROUTE picks the route as
# there. Each build's log: <target dir>/release-<target>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf arm-unknown-linux-musleabihf riscv64gc-unknown-linux-musl)
TOP="${CARGO_TARGET_DIR:-target}"
mkdir -p "$TOP"

ROWS=()
FAILED=0
for t in "${TARGETS[@]}"; do
    echo "==> $t"
    LOG="$TOP/release-$t.log"
    start=$(date +%s)
    code=0
    bash cross/build.sh "$t" >"$LOG" 2>&1 || code=$?
    secs=$(($(date +%s) - start))
    # The binary's path is in `file`'s line ("PATH: ELF …").
    BIN="$(sed -nE 's#^([^ ]*/evolve): ELF .*#\1#p' "$LOG" | head -n1)"
    grep -E '^(evolve |FAIL)' "$LOG" || true
    if [ "$code" -ne 0 ] || [ -z "$BIN" ] || [ ! -f "$BIN" ]; then
        FAILED=1
        tail -n 15 "$LOG"
        ROWS+=("$(printf '%-32s %10s %7s %-8s %6ss  FAILED (%s)' "$t" - - - "$secs" "$LOG")")
        continue
    fi
    size=$(stat -c %s "$BIN")
    static=no
    file "$BIN" | grep -Eq 'statically linked|static-pie linked' && static=yes
    ROWS+=("$(awk -v t="$t" -v s="$size" -v st="$static" -v d="$secs" \
        'BEGIN { printf "%-32s %10d %7.2f %-8s %6ds", t, s, s / 1048576, st, d }')")
done

echo
printf '%-32s %10s %7s %-8s %7s\n' target bytes MiB static? build
printf '%s\n' "${ROWS[@]}"
echo "budget: 5242880 bytes (5 MiB) per binary"
exit "$FAILED"
