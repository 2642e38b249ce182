#!/usr/bin/env bash
# The CPU's kernels again at lower instruction set levels (CPU_ISA, src/renderer/cpu_isa.h), so one machine checks the
# paths of CPUs it is not: by default `avx2` (32-byte vectors, FMA, no VNNI: most laptops and servers) and `generic`
# (x86-64's SSE2 baseline, 16-byte vectors, no FMA), or the levels given as arguments. At each level: the CPU op suite
# (without its GPU-lowering tests, which the INTERP suites cover) and the CPU-specific tests (register-tiled gemm and
# conv, reductions, byte kernels, DOT4 at every width, vector exp2, block quants, SmolLM2's logits and greedy decode),
# then the op suite on the LLVM device at that level (its target CPU is the level's), each level on a fresh compile
# cache, the levels side by side (compiling the kernels is most of the time, one core each). Uses the tests built by
# scripts/run-tests.sh (build/).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/tests/tg_tests ]] || { cmake --preset default && cmake --build --preset default --target tg_tests \
  --parallel "${TG_JOBS:-$(nproc)}"; }
levels=("$@")
[[ ${#levels[@]} -gt 0 ]] || levels=(avx2 generic)
suite=$(sed -n 's/^set(TG_OP_SUITE "\(.*\)")$/\1/p' tests/CMakeLists.txt)
[[ -n "$suite" ]] || { echo "run-isa-tests: no TG_OP_SUITE in tests/CMakeLists.txt" >&2; exit 1; }
filter="$suite:CpuGemm*:CpuReduce*:CpuBytes*:CpuIsa*:CVectorExp2*:RenderRun*:TensorNarrowLoads*:Opts*"
filter+=":LLVMRender*:SmolLM2*:LlamaSmolLM2*"
filter+="-Staging*:ConvFlat*:TensorCores*:TmaCopies*:TcPrecision*"
TG_SMOLLM2_GGUF="${TG_SMOLLM2_GGUF:-$(scripts/fetch-smollm2.sh)}"
export TG_SMOLLM2_GGUF
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pids=()
for level in "${levels[@]}"; do
  mkdir -p "$work/$level/cache"
  (
    export CPU_ISA="$level" CACHEDB_DIR="$work/$level/cache"
    echo "--- DEV=CPU"
    DEV=CPU build/tests/tg_tests --gtest_filter="$filter" --gtest_brief=1
    echo "--- DEV=LLVM"
    rc=0
    DEV=LLVM TG_SKIP_UNLESS_DEVICE=1 build/tests/tg_tests --gtest_filter="$suite" --gtest_brief=1 || rc=$?
    [[ $rc -eq 77 ]] && echo "(no LLVM device in this build: skipped)" && rc=0
    exit $rc
  ) >"$work/$level/log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!levels[@]}"; do
  rc=0
  wait "${pids[$i]}" || rc=$?
  echo "=== CPU_ISA=${levels[$i]}: exit $rc"
  cat "$work/${levels[$i]}/log"
  [[ $rc -eq 0 ]] || failed=1
done
exit $failed
