#!/usr/bin/env bash
# Fuzzes the parsers that read what others wrote, each for a bounded time:
#   json_repair  damaged model JSON (evolve_core::json: repair, strict, extract)
#   tool_plan    tool calls written as text (evolve_core::tool_plan: parse, the stream gate)
#   skill_md     SKILL.md (evolve_core::skill::parse_skill_md)
#   config       config.toml (mini/src/config/file.rs, evolve_core::CoreConfig)
#   sse          a model's event stream in arbitrary reads (mini/src/llm/sse.rs)
#   mcp_message  an MCP server's stdout (mini/src/mcp/lines.rs, jsonrpc.rs)
#
# Run:   fuzz/run.sh [SECONDS]     (seconds per target, default 60; CI passes e.g. 15)
# Needs: rustup with the nightly toolchain (FUZZ_TOOLCHAIN, default `nightly`; not
#        installed here: without it the run is skipped), a C++ compiler for libFuzzer
#        (g++ is installed with apt-get when missing and run as root), cargo-fuzz
#        (installed with `cargo install cargo-fuzz --locked` when missing).
#        Honours CARGO_TARGET_DIR; builds with at most 2 jobs unless CARGO_BUILD_JOBS says.
# Corpus: the seeds in fuzz/corpus/<target>/ are read, never written; the inputs
#        libFuzzer adds go to fuzz/grown/<target>/ (not in git, kept between runs).
#        A crash leaves its input in fuzz/artifacts/<target>/; replay it with
#        `cargo +nightly fuzz run -a <target> fuzz/artifacts/<target>/<file>`.
# Prints: per target the runs executed, the corpus size in files and the crashes, then
#        `fuzz: N passed, M failed` (a failed target is one that crashed, hung or did
#        not run); exits 1 when M > 0. When nightly or cargo-fuzz cannot work here it
#        says why and ends `fuzz: 0 passed, 0 failed (skipped: REASON)`, exit 0.
set -euo pipefail

duration="${1:-60}"
if ! [[ "$duration" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: fuzz/run.sh [SECONDS per target, default 60]" >&2
    exit 2
fi
toolchain="${FUZZ_TOOLCHAIN:-nightly}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
targets=(json_repair tool_plan skill_md config sse mcp_message)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

skip() {
    echo "fuzz: skipped: $1"
    echo "fuzz: 0 passed, 0 failed (skipped: $1)"
    exit 0
}

work="$(mktemp -d)"
fuzzer_pid=""
cleanup() {
    if [[ -n "$fuzzer_pid" ]] && kill -0 "$fuzzer_pid" 2>/dev/null; then
        kill -- "-$fuzzer_pid" 2>/dev/null || true
        wait "$fuzzer_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The toolchain: libFuzzer needs nightly's -Zsanitizer and sancov flags.
command -v rustup >/dev/null || skip "rustup is not installed (cargo-fuzz needs a nightly toolchain)"
rustup run "$toolchain" rustc --version >/dev/null 2>&1 \
    || skip "no $toolchain toolchain (rustup toolchain install $toolchain)"

# libFuzzer itself is C++, built by libfuzzer-sys.
if ! command -v c++ >/dev/null && ! command -v clang++ >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null 2>&1 \
            || skip "no C++ compiler for libFuzzer and apt-get install g++ failed"
    else
        skip "no C++ compiler for libFuzzer (install g++)"
    fi
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    started=$(date +%s)
    cargo install cargo-fuzz --locked --quiet >"$work/install.log" 2>&1 || {
        tail -n 20 "$work/install.log" >&2
        skip "cargo install cargo-fuzz failed"
    }
    echo "fuzz: cargo-fuzz installed in $(($(date +%s) - started)) s"
fi

# -a: debug assertions and overflow checks on, so an overflow is a crash too.
fuzz=(cargo "+$toolchain" fuzz)
started=$(date +%s)
if ! "${fuzz[@]}" build -a >"$work/build.log" 2>&1; then
    tail -n 40 "$work/build.log" >&2
    echo "fuzz: the targets did not build"
    echo "fuzz: 0 passed, ${#targets[@]} failed"
    exit 1
fi
echo "fuzz: targets built in $(($(date +%s) - started)) s"

count_files() {
    find "$1" -maxdepth 1 -type f 2>/dev/null | wc -l
}

passed=0
failed=0
for target in "${targets[@]}"; do
    seeds="corpus/$target"
    grown="grown/$target"
    artifacts="artifacts/$target"
    mkdir -p "$grown" "$artifacts"
    log="$work/$target.log"
    rc=0
    # Its own process group, so that the cleanup stops the fuzzer under cargo too.
    # -timeout: one input running 30 s is a hang, reported like a crash.
    setsid "${fuzz[@]}" run -a "$target" "$grown" "$seeds" -- \
        -max_total_time="$duration" -timeout=30 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1 &
    fuzzer_pid=$!
    wait "$fuzzer_pid" || rc=$?
    fuzzer_pid=""

    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    if [[ -z "$runs" ]]; then
        runs="$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#' || true)"
    fi
    crashes="$(grep -c 'Test unit written to' "$log" || true)"
    n_seeds="$(count_files "$seeds")"
    n_grown="$(count_files "$grown")"
    summary="${runs:-0} runs, corpus $((n_seeds + n_grown)) files ($n_seeds seeds + $n_grown new), $crashes crashes"
    if [[ "$rc" == 0 ]]; then
        passed=$((passed + 1))
        echo "fuzz: $target: ok: $summary"
    else
        failed=$((failed + 1))
        echo "fuzz: $target: FAILED (exit $rc): $summary"
        grep -E "panicked at|ERROR: libFuzzer|SUMMARY|Test unit written to" "$log" | head -n 8 | sed 's/^/    /'
        [[ "$crashes" != 0 ]] || tail -n 20 "$log" | sed 's/^/    /'
    fi
done

echo "fuzz: $passed passed, $failed failed"
[[ "$failed" == 0 ]]
