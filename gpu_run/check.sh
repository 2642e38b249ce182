#!/bin/bash
# build, then CUDA correctness of this session's work and the JIT step figure
set -x
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_EXAMPLES=OFF > $OUT/cfg.log 2>&1
cmake --build build-gpu -j16 --target tg_tests tg_cuda_tests bench_jit_step > $OUT/build.log 2>&1 || { tail -50 $OUT/build.log; exit 1; }
export CACHEDB_DIR=/tmp/tgcache
DEV=CUDA build-gpu/tests/tg_tests --gtest_filter='TensorVariable.*:TinyJit.*' 2>&1 | tail -25 > $OUT/jit_cuda.txt
cat $OUT/jit_cuda.txt
build-gpu/tests/tg_cuda_tests --gtest_filter='*Jit*:*Graph*' 2>&1 | tail -8
for i in 1 2 3; do DEV=CUDA build-gpu/bench/jit_step 2>&1 | tail -6; done > $OUT/jit_step.txt
cat $OUT/jit_step.txt
(cd build-gpu && ctest -L cuda -j4 --timeout 600 2>&1 | tail -15) > $OUT/ctest_cuda.txt
cat $OUT/ctest_cuda.txt
