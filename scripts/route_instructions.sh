#!/usr/bin/env bash
# Instructions per event of salting_router<>::route(key, now) and of XXH3 alone on
# bench_router's three traces, counted by callgrind: repeatable where wall-clock time on a
# shared machine is not. Each count is (run of 3 * 2^20 events - run of 2^20 events) / 2^21,
# so trace generation and setup cancel out. The last column replays the trace with every other
# event 30 s older (route_instructions' `lagged`): late events for half of each window.
# Build first (Release, without -march=native):
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
per_event() {  # instructions per event of one trace and scheme
  echo $(( ($(count "$1" "$2" $large) - $(count "$1" "$2" $small)) / (large - small) ))
}
echo "| trace | route(key, now) | XXH3 alone | ratio | every other event 30 s late |"
echo "|---|---|---|---|---|"
for trace in zipf tenant90 uniform; do
  r=$(per_event "$trace" router)
  x=$(per_event "$trace" xxh3)
  l=$(per_event "$trace" lagged)
  echo "| $trace | $r | $x | $(awk -v r="$r" -v x="$x" 'BEGIN { printf "%.1fx", r / x }') | $l |"
done
