#!/usr/bin/env bash
# The main job: build tinygrad.cpp (Release, build/) and run examples/seeds, which prints the results of
# the foundation examples. Arguments go to the program; TG_JOBS sets the build parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default
cmake --build --preset default --target seeds --parallel "${TG_JOBS:-$(nproc)}"
exec build/examples/seeds "$@"
