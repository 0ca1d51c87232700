#!/usr/bin/env bash
# Builds the release `evolve` for one musl target, checks that it is statically linked and
# stripped and within the 5 MiB budget (5 242 880 bytes), and prints its size.
#
#   cross/build.sh [TARGET]        (default x86_64-unknown-linux-musl)
#
# TARGET: x86_64-unknown-linux-musl, aarch64-unknown-linux-musl (Raspberry Pi 3/4/5 with a
# 64-bit OS), armv7-unknown-linux-musleabihf (Raspberry Pi 2/3 with a 32-bit OS),
# arm-unknown-linux-musleabihf (armv6: Pi Zero, Zero W, Pi 1), riscv64gc-unknown-linux-musl
# (LicheeRV Nano, Milk-V Duo 256M, VisionFive 2).
#
# Two routes (cross/README.md):
# - default, the Debian route: Debian's rustc-web/cargo-web with the standard library built
#   from rust-web-src (`-Zbuild-std`, std's `optimize_for_size`, panic locations left out),
#   linked with musl-gcc (x86_64) or Debian's cross gcc with musl's specs (aarch64, armv7),
#   and LLVM's libunwind.a for the target plus a two-line `__fprintf_chk` shim. Needs only
#   Debian's package registry; installs (apt, quiet, once): rustc-web cargo-web
#   rust-web-src musl-tools libunwind-16-dev, and for aarch64/armv7 the foreign
#   architecture, gcc-<arch>-linux-gnu* and musl-dev:<arch> (libunwind-16-dev:<arch> is
#   fetched with `apt-get download` and unpacked into the target dir: it cannot be
#   installed next to the host's). The smallest binary: std is optimized for size.
# - EVOLVE_CROSS_ROUTE=rustup, the ordinary user route: `rustup target add TARGET` and
#   `cargo zigbuild` (cargo-zigbuild and zig from PyPI's `cargo-zigbuild` and `ziglang`,
#   installed with pip when missing). rustup's prebuilt std is bigger (not built for
#   size, with unwind tables, which are taken out after the link when an objcopy for the
#   target is at hand): x86_64 4.92 MiB. EVOLVE_RUSTUP_ROUTE=1, the older name, means the same; when rustup
#   cannot add the target, the Debian route is taken (and said).
# - armv6 and riscv64, the zig route: Debian 12 has no musl (nor an armv6 C library) for
#   them, so Debian's rustc-web builds std from rust-web-src as above and zig (PyPI's
#   `ziglang`, installed with pip when missing) is the C compiler and linker: it builds
#   musl and LLVM's libunwind from its own sources for the exact CPU (arm1176jzf-s for
#   armv6, so no armv7 instruction gets in — ZeroClaw's armv6 build dies with "Illegal
#   instruction" that way).
#
# Target dir: $CARGO_TARGET_DIR if set, else ./target; the Debian route builds in
# <dir>/debian (two compilers' artefacts must not mix), the rustup route in <dir>.
# Prints: the route, `file`'s line, the binary's path, `evolve --version` when the host can
# run it, and "evolve TARGET release binary: N bytes (M MiB; budget …)". Exits 1 when the
# binary is not static, not stripped, or over budget.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${1:-x86_64-unknown-linux-musl}"
BUDGET=5242880
ROUTE="${EVOLVE_CROSS_ROUTE:-debian}"
[ -n "${EVOLVE_RUSTUP_ROUTE:-}" ] && ROUTE=rustup
export DEBIAN_FRONTEND=noninteractive
TOP="${CARGO_TARGET_DIR:-target}"

case "$TARGET" in
    x86_64-unknown-linux-musl) DEB_ARCH=amd64 GNU=x86_64-linux-gnu MUSL=x86_64-linux-musl FILE_ARCH=x86-64 ;;
    aarch64-unknown-linux-musl) DEB_ARCH=arm64 GNU=aarch64-linux-gnu MUSL=aarch64-linux-musl FILE_ARCH=aarch64 ;;
    armv7-unknown-linux-musleabihf) DEB_ARCH=armhf GNU=arm-linux-gnueabihf MUSL=arm-linux-musleabihf FILE_ARCH=ARM ;;
    arm-unknown-linux-musleabihf) DEB_ARCH=armv6 ZIG_TARGET=arm-linux-musleabihf ZIG_CPU=arm1176jzf_s FILE_ARCH=ARM ROUTE=zig ;;
    riscv64gc-unknown-linux-musl) DEB_ARCH=riscv64 ZIG_TARGET=riscv64-linux-musl ZIG_CPU=baseline FILE_ARCH=RISC-V ROUTE=zig ;;
    *) echo "cross/build.sh: unsupported target $TARGET" >&2; exit 2 ;;
esac

APT_UPDATED=""
apt_update() {
    # A foreign architecture's index may fail to download (a mirror in sync); what is
    # needed is checked by the install that follows.
    [ -n "$APT_UPDATED" ] || apt-get update -qq >/dev/null 2>&1 || true
    APT_UPDATED=1
}
need_file() { command -v file >/dev/null || { apt_update; apt-get install -y -qq --no-install-recommends file >/dev/null; }; }

if [ "$ROUTE" = rustup ] && ! { rustup target list --installed 2>/dev/null | grep -qx "$TARGET" \
    || rustup target add "$TARGET"; }; then
    echo "rustup cannot add $TARGET: taking the Debian route"
    ROUTE=debian
fi
if [ "$ROUTE" = zig ]; then
    echo "building with Debian's rustc-web, -Zbuild-std and zig as the C compiler and linker"
    if [ ! -x /usr/bin/rustc ] || [ ! -d /usr/lib/rustlib/src/rust/library ]; then
        apt_update
        apt-get install -y -qq --no-install-recommends rustc-web cargo-web rust-web-src >/dev/null
    fi
    # zig from PyPI: the Python that has it, else a venv of its own (a fresh Debian's
    # system Python refuses pip installs, PEP 668). EVOLVE_ZIG_VENV names the venv
    # (default ~/.cache/evolve/zig-venv) and, when set, is always used.
    ZIGPY="$(command -v python3)"
    if [ -n "${EVOLVE_ZIG_VENV:-}" ] || ! "$ZIGPY" -m ziglang version >/dev/null 2>&1; then
        ZIGVENV="${EVOLVE_ZIG_VENV:-$HOME/.cache/evolve/zig-venv}"
        if ! "$ZIGVENV/bin/python" -m ziglang version >/dev/null 2>&1; then
            echo "installing zig (PyPI ziglang) into $ZIGVENV"
            if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
                apt_update
                apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
            fi
            rm -rf "$ZIGVENV" && mkdir -p "$(dirname "$ZIGVENV")" && python3 -m venv "$ZIGVENV"
            "$ZIGVENV/bin/pip" install -q --disable-pip-version-check --no-input ziglang
        fi
        ZIGPY="$ZIGVENV/bin/python"
    fi
    export CARGO_TARGET_DIR="$TOP/debian"
    [ "${CARGO_TARGET_DIR:0:1}" = / ] || CARGO_TARGET_DIR="$PWD/$CARGO_TARGET_DIR"
    BIN="$CARGO_TARGET_DIR/$TARGET/release/evolve"
    ZIGDIR="$CARGO_TARGET_DIR/zig-$TARGET"
    mkdir -p "$ZIGDIR"
    # rustc's link line names glibc-isms zig's linker does not take (libgcc_s: zig
    # brings compiler-rt; its own --eh-frame-hdr).
    cat >"$ZIGDIR/cc" <<PY
#!$ZIGPY
import subprocess, sys
drop = {"-lgcc_s", "-Wl,--eh-frame-hdr"}
args = [a for a in sys.argv[1:] if a not in drop and not a.startswith(("--target=", "-march=", "-mfpu="))]
sys.exit(subprocess.call([sys.executable, "-m", "ziglang", "cc", "-target", "$ZIG_TARGET", "-mcpu=$ZIG_CPU"] + args))
PY
    printf '#!/bin/sh\nexec %s -m ziglang ar "$@"\n' "$ZIGPY" >"$ZIGDIR/ar"
    chmod +x "$ZIGDIR/cc" "$ZIGDIR/ar"
    export "CC_${TARGET//-/_}=$ZIGDIR/cc" "AR_${TARGET//-/_}=$ZIGDIR/ar"
    RUSTFLAGS="-C linker=$ZIGDIR/cc -C target-feature=+crt-static -C link-self-contained=no -C relocation-model=static -C force-unwind-tables=no -Zlocation-detail=none" \
        RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 /usr/bin/cargo build --release --locked \
        -p evolve-mini --target "$TARGET" -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size
elif [ "$ROUTE" = rustup ]; then
    echo "building with rustup's $TARGET standard library and cargo-zigbuild"
    # PyPI's cargo-zigbuild wheel brings the binary; its dependency ziglang brings zig.
    command -v cargo-zigbuild >/dev/null || pip3 install -q cargo-zigbuild ziglang
    BIN="$TOP/$TARGET/release/evolve"
    # As close to the Debian route as a prebuilt std allows: no unwind tables and no panic
    # locations in our crates (RUSTC_BOOTSTRAP lets stable rustc take that one -Z flag, as
    # the Debian route does), a non-PIE static executable.
    RUSTC_BOOTSTRAP=1 RUSTFLAGS="${RUSTFLAGS:-} -C force-unwind-tables=no -C relocation-model=static -Zlocation-detail=none" \
        cargo zigbuild --release --locked -p evolve-mini --target "$TARGET"
    # rustup's std brings its unwind tables (.eh_frame, about 0.7 MB on x86_64) though
    # nothing unwinds (panic = "abort"): a panic still prints its message and aborts, only
    # a RUST_BACKTRACE listing is empty (it has no symbols in a stripped binary anyway).
    # Taken out with GNU objcopy for the target (the host's `objcopy` for x86_64,
    # binutils-aarch64-linux-gnu's for aarch64, …), which lays the file out again;
    # llvm-objcopy only blanks the sections of a linked program, so it saves nothing.
    unwind_sections=(-R .eh_frame -R .eh_frame_hdr -R .gcc_except_table)
    case "$TARGET" in
        x86_64-*) objcopy=objcopy ;;
        aarch64-*) objcopy=aarch64-linux-gnu-objcopy ;;
        arm*) objcopy=arm-linux-gnueabihf-objcopy ;;
        riscv64*) objcopy=riscv64-linux-gnu-objcopy ;;
        *) objcopy="" ;;
    esac
    if [ -n "$objcopy" ] && command -v "$objcopy" >/dev/null \
        && "$objcopy" "${unwind_sections[@]}" "$BIN" "$BIN.noeh" 2>/dev/null \
        && [ "$(stat -c %s "$BIN.noeh")" -lt "$(stat -c %s "$BIN")" ]; then
        echo "unwind tables taken out with $objcopy: $(stat -c %s "$BIN") -> $(stat -c %s "$BIN.noeh") bytes"
        mv "$BIN.noeh" "$BIN"
    else
        rm -f "$BIN.noeh"
        echo "unwind tables kept (no ${objcopy:-objcopy} for $TARGET here)"
    fi
else
    echo "building with Debian's rustc-web and -Zbuild-std (std optimized for size)"
    if [ ! -x /usr/bin/rustc ] || [ ! -d /usr/lib/rustlib/src/rust/library ] \
        || [ ! -f /usr/lib/llvm-16/lib/libunwind.a ] || ! command -v musl-gcc >/dev/null; then
        apt_update
        apt-get install -y -qq --no-install-recommends \
            rustc-web cargo-web rust-web-src musl-tools libunwind-16-dev >/dev/null
    fi
    # A separate target dir: artefacts of two compilers must not mix.
    export CARGO_TARGET_DIR="$TOP/debian"
    BIN="$CARGO_TARGET_DIR/$TARGET/release/evolve"
    LINKDIR="$CARGO_TARGET_DIR/musl-link"
    [ "${LINKDIR:0:1}" = / ] || LINKDIR="$PWD/$LINKDIR"
    [ "$DEB_ARCH" = amd64 ] || LINKDIR="$LINKDIR/$TARGET"
    mkdir -p "$LINKDIR"
    if [ "$DEB_ARCH" = amd64 ]; then
        CC=musl-gcc
        AR="ar"
        cp /usr/lib/llvm-16/lib/libunwind.a "$LINKDIR/libunwind.a"
    else
        # Debian's cross gcc with musl's specs file is the target's musl-gcc.
        if ! command -v "$GNU-gcc" >/dev/null || [ ! -f "/usr/lib/$MUSL/musl-gcc.specs" ]; then
            dpkg --print-foreign-architectures | grep -qx "$DEB_ARCH" || dpkg --add-architecture "$DEB_ARCH"
            APT_UPDATED=""
            apt_update
            apt-get install -y -qq --no-install-recommends "gcc-$GNU" "musl-dev:$DEB_ARCH" >/dev/null
        fi
        CC="$LINKDIR/musl-gcc"
        AR="$GNU-ar"
        printf '#!/bin/sh\nexec %s "$@" -specs /usr/lib/%s/musl-gcc.specs\n' "$GNU-gcc" "$MUSL" >"$CC"
        chmod +x "$CC"
        # LLVM's libunwind for the target: its -dev package shares its paths with the
        # host's, so it is unpacked here rather than installed.
        if [ ! -f "$LINKDIR/deb/usr/lib/llvm-16/lib/libunwind.a" ]; then
            dpkg --print-foreign-architectures | grep -qx "$DEB_ARCH" || { dpkg --add-architecture "$DEB_ARCH"; APT_UPDATED=""; }
            apt_update
            (cd "$LINKDIR" && rm -f libunwind-16-dev_*.deb && apt-get download -qq -o APT::Sandbox::User=root "libunwind-16-dev:$DEB_ARCH" >/dev/null)
            dpkg-deb -x "$LINKDIR"/libunwind-16-dev_*.deb "$LINKDIR/deb"
        fi
        cp "$LINKDIR/deb/usr/lib/llvm-16/lib/libunwind.a" "$LINKDIR/libunwind.a"
    fi
    # std for musl links libunwind statically. Debian's LLVM libunwind.a was built against
    # glibc and calls its fortified __fprintf_chk, which musl lacks: add a two-line shim
    # (compiled with the target's musl gcc) to a copy of the archive.
    cat > "$LINKDIR/fprintf_chk.c" <<'C'
#include <stdarg.h>
#include <stdio.h>
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...) {
    va_list ap;
    (void)flag;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}
C
    "$CC" -O2 -fPIC -c "$LINKDIR/fprintf_chk.c" -o "$LINKDIR/fprintf_chk.o"
    "$AR" rs "$LINKDIR/libunwind.a" "$LINKDIR/fprintf_chk.o" 2>/dev/null
    # ring's C and assembly go through the same compiler.
    export "CC_${TARGET//-/_}=$CC" "AR_${TARGET//-/_}=$AR"
    # Debian's sysroot is /usr and has no self-contained musl objects: musl-gcc brings
    # the C runtime; a non-PIE static executable is what musl-gcc links right.
    # No unwind tables: with panic = "abort" nothing unwinds, and .eh_frame was 12% of
    # the binary (584 KB + 75 KB of .eh_frame_hdr on x86_64; 11 KB left, from C and asm).
    RUSTFLAGS="-C linker=$CC -C link-self-contained=no -C relocation-model=static -C force-unwind-tables=no -Zlocation-detail=none -L native=$LINKDIR" \
        RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 /usr/bin/cargo build --release --locked \
        -p evolve-mini --target "$TARGET" -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size
fi

need_file
FILE_LINE="$(file "$BIN")"
echo "$FILE_LINE"
if ! grep -Eq 'statically linked|static-pie linked' <<<"$FILE_LINE"; then
    echo "FAIL: $BIN is not statically linked" >&2
    exit 1
fi
if ! grep -q ', stripped' <<<"$FILE_LINE"; then
    echo "FAIL: $BIN is not stripped" >&2
    exit 1
fi
if ! grep -q "$FILE_ARCH" <<<"$FILE_LINE"; then
    echo "FAIL: $BIN is not a $FILE_ARCH executable" >&2
    exit 1
fi
if [ "$DEB_ARCH" = amd64 ] && [ "$(uname -m)" = x86_64 ]; then
    VERSION_LINE=$("$BIN" --version)
    echo "$VERSION_LINE"
    case "$VERSION_LINE" in evolve\ *) ;; *) echo "FAIL: $BIN --version printed: $VERSION_LINE" >&2; exit 1 ;; esac
else
    echo "binary: $BIN (run it with cross/qemu-smoke.sh)"
fi
SIZE=$(stat -c %s "$BIN")
awk -v t="$TARGET" -v s="$SIZE" -v b="$BUDGET" \
    'BEGIN { printf "evolve %s release binary: %d bytes (%.2f MiB; budget %d bytes = 5 MiB)\n", t, s, s / 1048576, b }'
if [ "$SIZE" -gt "$BUDGET" ]; then
    echo "FAIL: the binary is over the 5 MiB budget" >&2
    exit 1
fi
