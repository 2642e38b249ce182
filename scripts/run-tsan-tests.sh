#!/usr/bin/env bash
# The thread tests (tests/engine/test_threads.cpp) under ThreadSanitizer: the `tsan` preset builds only libtg
# and tg_thread_tests (build-tsan/), then runs them; any data race fails the run. TG_JOBS sets the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs="${TG_JOBS:-$(nproc)}"
cmake --preset tsan
cmake --build --preset tsan --parallel "$jobs"
# The compile cache stays inside the build tree, as for the other tests.
CACHEDB_DIR="$PWD/build-tsan/test-cache" TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  build-tsan/tests/tg_thread_tests "$@"
