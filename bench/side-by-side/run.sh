#!/usr/bin/env bash
# Side-by-side benchmark of Evolve against tea-agent 0.17.6 (the Python product Evolve
# succeeds), both measured in this one run on this machine, on the same data.
#
#   bench/side-by-side/run.sh            (from anywhere in a clone; no stdin needed)
#
# Measures, for each product: memory selection at 1 000 / 10 000 / 100 000 memories
# (Evolve: evolve_core::memory::select, scoring every memory; tea-agent:
# MemoryManager.select_memories on its own SQLite store, which looks at the top 500 rows
# only), history build of a 2 000-message session for a 32k window (Evolve:
# evolve_core::history::build; tea-agent: session.history_builder.build_api_messages),
# server start to the first 200 on /health (release `evolve serve` vs
# `python -m tea_agent.server`, both on a free loopback port, no model reachable) and
# idle RSS of the server's process tree a few seconds after that answer.
#
# Needs: cargo (rustc), python3 with venv and pip, network access to PyPI (first run).
# Installs (idempotent, quiet): python3-venv via apt if `python3 -m venv` is missing;
# tea-agent[web]==0.17.6 into ~/.cache/evolve/tea-venv (override: TEA_VENV=DIR).
# Builds: `cargo build --release -p evolve-mini` and the evolve-core bench `sidebyside`.
# Knobs: SBS_ITERS (tea-agent selection/history iterations at 1k/10k, default 21),
# SBS_ITERS_100K (at 100k, default 11), SBS_STARTS (server starts, default 5),
# SBS_IDLE (seconds idle before reading RSS, default 3), SBS_EVOLVE_SECONDS (time budget
# per Evolve measure, default 3).
#
# Prints: the machine line, then one table (measure, Evolve median, tea-agent median,
# ratio tea-agent/Evolve, samples per side, notes). Figures are printed, never asserted.
# Everything runs on loopback; every process and temp dir it starts is cleaned up.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${TEA_VENV:-$HOME/.cache/evolve/tea-venv}"
iters="${SBS_ITERS:-21}"
iters_100k="${SBS_ITERS_100K:-11}"
starts="${SBS_STARTS:-5}"
idle="${SBS_IDLE:-3}"
export EVOLVE_SIDE_SECONDS="${SBS_EVOLVE_SECONDS:-3}"
export CI="${CI:-true}" DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1

work="$(mktemp -d -t evolve-sbs.XXXXXX)"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT INT TERM

say() { printf '%s\n' "$*" >&2; }

# --- tea-agent 0.17.6 in a cached venv ------------------------------------------------
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
  say "installing python3-venv (apt)…"
  apt-get update -qq >/dev/null
  apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
fi
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("tea-agent") != "0.17.6")' >/dev/null 2>&1; then
  say "installing tea-agent[web]==0.17.6 into $venv (first run only)…"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'tea-agent[web]==0.17.6' </dev/null
fi
teapy="$venv/bin/python"

# --- Evolve release binary and the core bench ------------------------------------------
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
say "building evolve (release) and the evolve-core sidebyside bench…"
cargo build --quiet --release -p evolve-mini
bench_bin="$(cargo bench --quiet -p evolve-core --bench sidebyside --no-run --message-format=json |
  "$teapy" -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "sidebyside" and m.get("executable"): print(m["executable"])' | tail -n1)"
[ -x "$bench_bin" ] || { say "cannot find the sidebyside bench executable"; exit 1; }
evolve_bin="$target/release/evolve"
[ -x "$evolve_bin" ] || { say "cannot find $evolve_bin"; exit 1; }

# --- the same data for both -------------------------------------------------------------
data="$work/data"
"$teapy" "$here/gen_data.py" "$data"

# tea-agent keeps its files under ~/.tea_agent and ./.tea_agent_run: give its runs a
# home and a working directory of their own.
teahome="$work/tea-home"
mkdir -p "$teahome"
tea() { (cd "$work" && HOME="$teahome" TMPDIR="$work" "$teapy" "$here/tea_bench.py" "$@" </dev/null 2>>"$work/tea-stderr.log"); }

out="$work/side.txt"
say "Evolve: selection and history build (evolve-core, release)…"
EVOLVE_SIDE_DATA="$data" "$bench_bin" </dev/null | grep '^SIDE ' >>"$out"
for n in 1000 10000 100000; do
  it="$iters"
  [ "$n" -ge 100000 ] && it="$iters_100k"
  say "tea-agent: selection at $n memories ($it iterations)…"
  tea select "$data" "$n" "$it" | grep '^SIDE ' >>"$out"
done
say "tea-agent: history build ($iters iterations)…"
tea history "$data" "$iters" | grep '^SIDE ' >>"$out"
say "tea-agent: history build with max_history off ($iters iterations)…"
tea history-whole "$data" "$iters" | grep '^SIDE ' >>"$out"
say "both servers: $starts starts each…"
tea serve "$evolve_bin" "$starts" "$idle" | grep '^SIDE ' >>"$out"

# --- the machine and the table ----------------------------------------------------------
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
[ -n "$cpu" ] || cpu="$(uname -m)"
machine="machine: ${cpu}, $(nproc) cores, kernel $(uname -r), $(rustc --version | cut -d' ' -f1-2), $("$teapy" --version 2>&1), tea-agent 0.17.6, $(date -u +%Y-%m-%d)"
"$teapy" "$here/table.py" "$out" "$machine"
