#!/usr/bin/env bash
# Instructions per event of salting_router<>::route(key, now) and of XXH3 alone on
# bench_router's three traces, counted by callgrind: repeatable where wall-clock time on a
# shared machine is not. Each count is (run of 3 * 2^20 events - run of 2^20 events) / 2^21,
# so trace generation and setup cancel out. Build first (Release, without -march=native):
#   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release && cmake --build build-bench --target route_instructions
# Usage: scripts/route_instructions.sh [path/to/route_instructions]
set -euo pipefail
bin="${1:-build-bench/bench/route_instructions}"
command -v valgrind >/dev/null || { echo "route_instructions.sh: valgrind is not installed" >&2; exit 1; }
[ -x "$bin" ] || { echo "route_instructions.sh: no executable at $bin (build it first)" >&2; exit 1; }
count() {  # instructions of one run
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 >/dev/null |
    awk '/Collected/ { print $NF }'
}
small=$((1 << 20))
large=$((3 << 20))
echo "| trace | route(key, now) | XXH3 alone | ratio |"
echo "|---|---|---|---|"
for trace in zipf tenant90 uniform; do
  r=$(( ($(count "$trace" router $large) - $(count "$trace" router $small)) / (large - small) ))
  x=$(( ($(count "$trace" xxh3 $large) - $(count "$trace" xxh3 $small)) / (large - small) ))
  echo "| $trace | $r | $x | $(awk -v r="$r" -v x="$x" 'BEGIN { printf "%.1fx", r / x }') |"
done
