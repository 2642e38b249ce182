#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz (the `fuzz` preset: clang, libtg instrumented, ASan + UBSan,
# in build-fuzz/; nothing else is built) and runs each one for FUZZ_SECONDS (default 20), TG_JOBS at a time
# (default: nproc), from seed corpora written by code (tg_fuzz_seeds) plus what earlier runs kept in
# build-fuzz/corpus/. Prints the inputs each harness executed; on a crash, sanitizer report, leak, timeout
# or out-of-memory it prints the report's end and the input's path (build-fuzz/crashes/) and exits 1.
# Arguments: the harnesses to run (default: all). Reproduce one: build-fuzz/tests/fuzz/<harness> <input>.
# FUZZ_BUILD=<dir>: take the harnesses of that TG_FUZZ build instead (CI's asan-fuzz preset, built with the
# tests by the sanitizer stage: one instrumented build of libtg serves both); its corpora and crashes go there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-fuzz
cxx=$(scripts/install-deps.sh --fuzz-clang)
seconds="${FUZZ_SECONDS:-20}"
jobs="${TG_JOBS:-$(nproc)}"
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_safetensors fuzz_gguf fuzz_torch fuzz_idx fuzz_compile_cache)

dir="${FUZZ_BUILD:-build-fuzz}"
if [ -n "${FUZZ_BUILD:-}" ]; then
  [ -f "$dir/CMakeCache.txt" ] && grep -q '^TG_FUZZ:[A-Z]*=ON$' "$dir/CMakeCache.txt" ||
    { echo "run-fuzzers: FUZZ_BUILD=$dir is not a configured TG_FUZZ build" >&2; exit 1; }
  cmake --build "$dir" --target tg_fuzzers --parallel "$jobs"
else
  compilers=(-DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="${cxx/clang++/clang}")
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # A build dir configured with another compiler is configured afresh.
  if [ -f build-fuzz/CMakeCache.txt ] && ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=.*$cxx\$" build-fuzz/CMakeCache.txt; then
    rm -rf build-fuzz/CMakeCache.txt build-fuzz/CMakeFiles
  fi
  cmake --preset fuzz "${compilers[@]}" "${launcher[@]}" >/dev/null
  cmake --build --preset fuzz --parallel "$jobs"
fi

bin=$dir/tests/fuzz
# Reports with function names and lines: the symbolizer of the same LLVM.
symbolizer=$("$cxx" -print-prog-name=llvm-symbolizer)
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
work=$dir/fuzz-run
rm -rf "$work/seeds" "$work/logs"
mkdir -p "$work/logs" "$dir/crashes"
"$bin/tg_fuzz_seeds" "$work/seeds"

run_one() {
  local name=$1
  mkdir -p "$dir/corpus/$name"
  # -timeout: one input over 10 s is a hang; -rss_limit_mb: also the per-allocation limit, so a forged
  # size that reaches malloc is reported.
  "$bin/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/crashes/$name-" "$dir/corpus/$name" "$work/seeds/$name" \
    >"$work/logs/$name.log" 2>&1
}

failed=()
pids=()
names=()
for name in "${harnesses[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$name" &
  pids+=($!)
  names+=("$name")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done

total=0
for name in "${harnesses[@]}"; do
  log="$work/logs/$name.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  corpus=$(find "$dir/corpus/$name" -type f | wc -l)
  total=$((total + ${runs:-0}))
  status=ok
  [[ " ${failed[*]} " == *" $name "* ]] && status=FAILED
  printf '%-20s %s: %s inputs in %ss, corpus %s files\n' "$name" "$status" "${runs:-?}" "$seconds" "$corpus"
done
echo "fuzzers: $total inputs in all"
for name in "${failed[@]}"; do
  echo "=== $name failed; end of $work/logs/$name.log:"
  tail -n 40 "$work/logs/$name.log"
  ls "$dir/crashes"/"$name"-* 2>/dev/null || true
done
[ ${#failed[@]} -eq 0 ]
