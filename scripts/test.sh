#!/usr/bin/env bash
# Runs every test of keyroute: installs the Debian packages it needs, then builds and tests
#   gcc-cxx17    g++ 12,  C++17, Release, warnings as errors: every test but the two below,
#                benchmarks, examples, the docs' code (docs_snippets) and the HTML report in
#                headless Chromium (skew_html_*)
#   clang-cxx20  clang 14, C++20, Release, warnings as errors: the same, and the layout and
#                static checks (clang-format, clang-tidy: test_format, test_tidy), run once
#   asan         clang 14, C++20, AddressSanitizer + UndefinedBehaviorSanitizer (clang: the same
#                build took 453 s with g++ 12 -O1, 261 s with clang, on 2 cores)
#   tsan         clang 14, C++17, ThreadSanitizer (without the librdkafka tests)
#   fuzz         clang 14, libFuzzer + ASan + UBSan: each fuzz target for 15 s
# Usage: scripts/test.sh [preset...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc)}"

presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(gcc-cxx17 clang-cxx20 asan tsan fuzz)
for preset in "${presets[@]}"; do
  echo "==== ${preset}"
  start=$SECONDS
  cmake --workflow --preset "${preset}"
  echo "==== ${preset}: passed in $((SECONDS - start)) s"
done
