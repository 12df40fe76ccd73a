#!/usr/bin/env bash
# Installs what keyroute's build, tests, benchmarks and examples need, from Debian 12's packages.
# Idempotent: does nothing when every package is already installed. Needs root (or sudo).
#   scripts/deps.sh        everything (scripts/test.sh)
#   scripts/deps.sh demo   what the skew demo alone needs: a compiler, CMake, xxHash
set -euo pipefail

if [ $# -gt 1 ] || { [ $# -eq 1 ] && [ "$1" != demo ]; }; then
  echo "usage: scripts/deps.sh [demo]" >&2
  exit 2
fi
if [ "${1:-}" = demo ]; then
  packages=(build-essential cmake libxxhash-dev)
else
  packages=(
    build-essential cmake pkg-config g++ clang libclang-rt-14-dev clang-format clang-tidy
    libxxhash-dev catch2 libbenchmark-dev librdkafka-dev libssl-dev
    # The skew tool's HTML report is checked in a headless browser (test_skew_html); zlib reads
    # its screenshot.
    chromium zlib1g-dev
  )
  # A JDK, for the live check of java_string_hash against Java's own String.hashCode
  # (test_java_string_hash_live): any javac will do, Debian's default only when there is none.
  command -v javac >/dev/null && command -v java >/dev/null || packages+=(default-jdk-headless)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "scripts/deps.sh: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
