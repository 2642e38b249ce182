#!/usr/bin/env bash
# Build tinygrad.cpp and run the whole test suite with ctest (GoogleTest tests + install_consumer).
# TG_PRESET picks the preset (default: `default`, Release in build/; `asan`: ASan+UBSan in build-asan/);
# TG_JOBS sets the parallelism (default: nproc); arguments go to ctest (e.g. -R Symbolic).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
preset="${TG_PRESET:-default}"
jobs="${TG_JOBS:-$(nproc)}"
cmake --preset "$preset"
cmake --build --preset "$preset" --parallel "$jobs"
ctest --preset "$preset" --parallel "$jobs" "$@"
