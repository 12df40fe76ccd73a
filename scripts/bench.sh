#!/usr/bin/env bash
# Builds keyroute's throughput benchmarks (Release, no -march flags) and prints the tables of
# bench/README.md: every partitioner against XXH3 alone and librdkafka, the salting router against
# XXH3 alone and the seed's router, 1 and 2 threads; medians of 5 repetitions.
#
#   scripts/bench.sh [min_time_seconds]      (default 0.12; about 7 minutes in all)
#
# Environment: BUILD_DIR (default build-bench), JOBS (parallel compile jobs, default 1),
# FILTER (a --benchmark_filter regex for both programs, default all), REPS (repetitions,
# default 5: the medians of more, shorter repetitions resist this VM's changes of speed).
# Raw results: $BUILD_DIR/bench-results/{partitioners,router}.{json,txt}.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build-bench}
min_time=${1:-0.12}
reps=${REPS:-5}
jobs=${JOBS:-1}
filter=${FILTER:-.}
out="$build/bench-results"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target bench_partitioners bench_router bench_summary -j "$jobs" >/dev/null
mkdir -p "$out"

# Repetitions are interleaved in random order, so a change of clock speed or load during the run
# (common on shared VMs) spreads over every benchmark instead of biasing the later ones.
args=(--benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true
      --benchmark_report_aggregates_only=true
      --benchmark_min_time="$min_time" --benchmark_filter="$filter" --benchmark_out_format=json)
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
echo "scripts/bench.sh: bench_partitioners (about 2 minutes)..." >&2
"$build/bench/bench_partitioners" "${args[@]}" --benchmark_out="$out/partitioners.json" >"$out/partitioners.txt"
echo "scripts/bench.sh: bench_router (about 3 minutes)..." >&2
"$build/bench/bench_router" "${args[@]}" --benchmark_out="$out/router.json" >"$out/router.txt"
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")

cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
flags=$(sed -n 's/^CMAKE_CXX_FLAGS_RELEASE:[A-Z]*=//p' "$build/CMakeCache.txt")
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
echo "## Results"
echo
echo "- machine: ${cpu:-unknown CPU}, $(nproc) cores ($(uname -sr))"
echo "- compiler: $("$cxx" --version | head -1), flags: Release ($flags)"
echo "- Google Benchmark: $(dpkg-query -W -f='${Version}' libbenchmark-dev 2>/dev/null || echo '?')"
echo "- command: scripts/bench.sh $min_time (--benchmark_repetitions=$reps interleaved, medians, --benchmark_min_time=$min_time)"
echo "- load average before / after: $load_before / $load_after (other jobs share the cores)"
echo
"$build/bench/bench_summary" "$out/partitioners.json" "$out/router.json"
