#!/usr/bin/env bash
# Instructions per message on the producing thread of each bench_kafka_produce variant, counted
# by callgrind inside measured_events() (one window of 131072 events of each trace, the router in
# its second window): repeatable where wall-clock time on a shared machine is not.
# Build first: cmake --preset gcc-cxx17 && cmake --build build/gcc-cxx17 --target bench_kafka_produce
# Usage: scripts/produce_instructions.sh [path/to/bench_kafka_produce]
set -euo pipefail
bin="${1:-build/gcc-cxx17/bench/bench_kafka_produce}"
command -v valgrind >/dev/null || { echo "produce_instructions.sh: valgrind is not installed" >&2; exit 1; }
[ -x "$bin" ] || { echo "produce_instructions.sh: no executable at $bin (build it first)" >&2; exit 1; }
events=131072
count() {  # instructions per message of one trace and variant
  local c
  c=$(valgrind --tool=callgrind --toggle-collect='*measured_events*' --callgrind-out-file=/dev/null \
        "$bin" --instructions="$1/$2" 2>&1 | awk '/Collected/ { print $NF }')
  echo $((c / events))
}
echo "| trace | producev | produce (static) | produce (salting) | decide() | producev + 1 header | producev / produce (salting) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for trace in zipf tenant90; do
  a=$(count "$trace" producev); s=$(count "$trace" produce_static); r=$(count "$trace" produce_salting)
  d=$(count "$trace" decide_only); h=$(count "$trace" producev_header)
  echo "| $trace | $a | $s | $r | $d | $h | $(awk -v a="$a" -v r="$r" 'BEGIN { printf "%.2f", a / r }') |"
done
