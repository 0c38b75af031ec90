#!/usr/bin/env bash
# Issue 30's figures at three load levels, on this 2-core machine: nothing else running
# (load under 1 at the start where it could be had), then nproc and 4 x nproc busy
# processes started here (each a `while True: pass`, killed at the end of its level).
# Each bench prints its own load at the start and the end; the ratios are the figures.
# Usage: bash bench/results/2026-12-06-loads/run.sh OUTDIR [LEVEL...]   (LEVEL: 0, 1, 4 x nproc)
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:?OUTDIR}; shift
levels=("${@:-0 1 4}")
mkdir -p "$out"
for mult in ${levels[@]}; do
  n=$(( mult * $(nproc) ))
  pids=()
  for _ in $(seq 1 "$n"); do python3 -c 'while True: pass' & pids+=($!); done
  [ "$n" -gt 0 ] && sleep 60  # let the load average climb to the burners
  log="$out/busy-$n.txt"
  { echo "# $n busy processes; $(date -u +%FT%TZ); uptime: $(uptime)"; } > "$log"
  for bench in "bench/bench_hooks.py" "bench/bench_mcp_lean.py" "bench/bench_board.py --only paint --runs 5"; do
    echo "## .venv/bin/python $bench" >> "$log"
    start=$(date +%s)
    timeout 600 .venv/bin/python $bench >> "$log" 2>&1
    echo "## exit $? after $(( $(date +%s) - start )) s" >> "$log"
  done
  [ "${#pids[@]}" -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null
done
