#!/bin/bash
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_EXAMPLES=OFF -DTG_BUILD_TESTS=OFF > $OUT/cfg.log 2>&1
cmake --build build-gpu -j16 --target bench_gpu_kernels > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
B=$(find build-gpu -name gpu_kernels -type f | head -1)
TORCH=0 timeout 300 ncu --kernel-name regex:r_ -c 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis_Tables --section SourceCounters --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__pcsamp_warps_issue_stalled_gmma.sum $B 1 "matmul fp16 4096" > $OUT/ncu.txt 2>&1
grep -E "Duration|Throughput|gmma|Stall|stall_|Wavefronts|Sectors Global|Achieved Occ|Block Limit|Warp Cycles" $OUT/ncu.txt | head -60
