#!/usr/bin/env bash
# Runs every test of keyroute: installs the Debian packages it needs, then builds and tests
#   gcc-cxx17    g++ 12,  C++17, Release, warnings as errors: every test but the format and tidy
#                checks, benchmarks, examples, the docs' code (docs_snippets) and the HTML report
#                in headless Chromium (skew_html_*)
#   asan         clang 14, C++20, warnings as errors, AddressSanitizer + UndefinedBehaviorSanitizer:
#                every test, and the layout and static checks (clang-format, clang-tidy: test_format,
#                test_tidy), run once
#   tsan         clang 14, C++17, ThreadSanitizer (without the librdkafka tests)
#   fuzz         clang 14, libFuzzer + ASan + UBSan: each fuzz target for 15 s
# The clang-cxx20 preset (clang 14, C++20, Release) is not in the default list: asan compiles the
# same code with the same compiler and standard, and runs the same tests; building it too took
# CI past 25 minutes on 2 cores. Run it by name: scripts/test.sh clang-cxx20.
# Usage: scripts/test.sh [preset...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc)}"

presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(gcc-cxx17 asan tsan fuzz)
for preset in "${presets[@]}"; do
  echo "==== ${preset}"
  start=$SECONDS
  cmake --workflow --preset "${preset}"
  echo "==== ${preset}: passed in $((SECONDS - start)) s"
done
