#!/usr/bin/env bash
# The skew tool on its built-in workload: one tenant sends 90% of the events, 1000 others share
# the rest, 100 partitions. Shows per-partition load, max/mean, the hottest keys' fan-out and the
# ordering each scheme gives up, for static hashing, a naive per-minute router and keyroute's
# salting router. Builds the tool first (Release, in build-demo); on a fresh Debian 12 machine,
# run it as root (or with sudo available): `scripts/deps.sh demo` installs a compiler, CMake and
# xxHash, nothing the tests alone need.
#
#   scripts/demo.sh                 the built-in workload
#   scripts/demo.sh keys.txt        your keys, one per line (any skew option works: --help)
#   scripts/demo.sh --html out.html the same, and the report as a page with charts
#
# Environment: BUILD_DIR (default build-demo), JOBS (compile jobs, default: the core count).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh demo
build=${BUILD_DIR:-build-demo}
echo "scripts/demo.sh: building the skew tool in $build" >&2
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKEYROUTE_BUILD_TESTS=OFF \
  -DKEYROUTE_BUILD_BENCHMARKS=OFF -DKEYROUTE_BUILD_EXAMPLES=ON >/dev/null
cmake --build "$build" --target skew -j "${JOBS:-$(nproc)}" >/dev/null
exec "$build/examples/skew" "$@"
