#!/usr/bin/env bash
# Builds evolve-core — the agent's sans-IO brain: memory ranking, the history budget,
# permissions, skills, JSON repair — for a bare-metal target with no std at all:
#
#   cross/core.sh TARGET      e.g. thumbv7em-none-eabihf (Cortex-M4/M7),
#                             riscv32imac-unknown-none-elf (ESP32-C3/C6 class)
#
# The Debian route, like cross/build.sh: Debian's rustc-web/cargo-web with core and alloc
# built from rust-web-src (-Zbuild-std=core,alloc), so nothing but Debian's package
# registry is needed. The crate is `#![no_std]` with `alloc`; the firmware brings its
# allocator and panic handler, and its own IO (a UART, a radio) calls the same rules
# `evolve` does. What a firmware pays in flash depends on which rules it calls (the
# linker keeps only those), so no size is printed for the library itself.
set -euo pipefail
TARGET="${1:?usage: cross/core.sh TARGET (thumbv7em-none-eabihf, riscv32imac-unknown-none-elf)}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

if [ ! -x /usr/bin/cargo ] || [ ! -d /usr/lib/rustlib/src/rust/library/core ]; then
    echo "installing Debian's Rust toolchain and its standard library sources"
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        rustc-web cargo-web rust-web-src >/dev/null
fi
if ! /usr/bin/rustc --print target-list | grep -qx "$TARGET"; then
    echo "FAIL: Debian's rustc does not know $TARGET" >&2
    exit 1
fi

TOP="${CARGO_TARGET_DIR:-$ROOT/target}/debian"
CARGO_TARGET_DIR="$TOP" RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zlocation-detail=none" \
    /usr/bin/cargo build --release --locked -p evolve-core --no-default-features \
    --target "$TARGET" -Zbuild-std=core,alloc
LIB="$TOP/$TARGET/release/libevolve_core.rlib"
[ -f "$LIB" ] || { echo "FAIL: $LIB was not built" >&2; exit 1; }
echo "evolve-core for $TARGET (no std): $LIB"
