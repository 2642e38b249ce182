#!/usr/bin/env bash
# The op suite (the tensor ops, autograd, nn and the backends-agree checks), the C renderer's run tests and
# the index-dtype tests on the CPU device with CC=gcc and a fresh compile cache, so that every kernel is
# compiled by gcc. GCC differs from clang in what it accepts and honours (it ignored aligned() before
# vector_size, which crashed unaligned float4 loads). Uses the tests built by scripts/run-tests.sh (build/).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v gcc >/dev/null || { echo "run-op-suite-gcc: gcc is not installed" >&2; exit 1; }
[[ -x build/tests/tg_tests ]] || { cmake --preset default && cmake --build --preset default --target tg_tests \
  --parallel "${TG_JOBS:-$(nproc)}"; }
filter=$(sed -n 's/^set(TG_OP_SUITE "\(.*\)")$/\1/p' tests/CMakeLists.txt)
[[ -n "$filter" ]] || { echo "run-op-suite-gcc: no TG_OP_SUITE in tests/CMakeLists.txt" >&2; exit 1; }
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
CC=gcc CACHEDB_DIR="$cache" DEV=CPU build/tests/tg_tests --gtest_filter="$filter:RenderRun*:IndexDtype*" --gtest_brief=1
