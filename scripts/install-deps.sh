#!/usr/bin/env bash
# Installs what building and testing tinygrad.cpp needs, from the system's packages (apt-get, Debian/Ubuntu):
# cmake >= 3.25, a C++20 compiler, make, GoogleTest, pkg-config, zlib, SQLite (the BEAM cache), graphviz
# (GRAPH=1's SVG), OpenCL's ICD loader with PoCL (the CL device on a CPU) and LLVM 14 (the LLVM device). Installs
# nothing when all are present; uses sudo only when not root. run-main.sh and run-tests.sh call it first.
# --with-data also installs the data the main job trains on: Debian's dataset-fashion-mnist (the idx .gz
# files under /usr/share/datasets/fashion-mnist).
# --with-fuzz also installs a clang >= 16 with its libFuzzer/sanitizer runtimes (scripts/run-fuzzers.sh).
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }
cmake_ok() {
  have cmake || return 1
  local v
  v=$(cmake --version | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p')
  [ "$(printf '%s\n' 3.25 "$v" | sort -V | head -n1)" = 3.25 ]
}

need=()
cmake_ok || need+=(cmake)
have c++ || have g++ || need+=(g++)
have cc || have gcc || have clang || need+=(gcc)  # the CPU device compiles its kernels at run time
have make || need+=(make)
have pkg-config || need+=(pkg-config)
[ -f /usr/include/gtest/gtest.h ] || [ -f /usr/local/include/gtest/gtest.h ] || need+=(libgtest-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
[ -f /usr/include/sqlite3.h ] || need+=(libsqlite3-dev)  # BEAM's cache (optional to the build, wanted in CI)
have dot || need+=(graphviz)  # GRAPH=1 draws its SVG with it (optional to the library, wanted by the tests)
# The CL device (loaded at run time, optional to the library): the ICD loader, and PoCL's CPU device so the OpenCL
# tests and op_suite_cl run without a GPU.
# (Files, not `ldconfig -p | grep -q`: under pipefail grep's early exit can read as "absent".)
compgen -G '/usr/lib/*/libOpenCL.so.1' >/dev/null || [ -e /usr/lib/libOpenCL.so.1 ] || need+=(ocl-icd-libopencl1)
compgen -G '/etc/OpenCL/vendors/pocl*.icd' >/dev/null || need+=(pocl-opencl-icd)
# The LLVM device (optional to the library): LLVM 14's C headers at build time, libLLVM-14.so.1 opened at run time.
[ -f /usr/lib/llvm-14/include/llvm-c/LLJIT.h ] || need+=(llvm-14-dev)
if [ "${1:-}" = --with-data ]; then
  [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || need+=(dataset-fashion-mnist)
fi
# The clang++ that builds the fuzz preset: new enough for the library (clang >= 16: C++20 lambdas capture
# structured bindings) and able to link a libFuzzer target with ASan and UBSan. `--fuzz-clang` prints it.
fuzz_clang() {
  local c
  for c in clang++ clang++-21 clang++-20 clang++-19 clang++-18 clang++-17 clang++-16; do
    have "$c" && [ "$("$c" -dumpversion | cut -d. -f1)" -ge 16 ] || continue
    echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
      "$c" -x c++ -fsanitize=fuzzer,address,undefined - -o /dev/null 2>/dev/null && { echo "$c"; return 0; }
  done
  return 1
}
if [ "${1:-}" = --fuzz-clang ]; then
  fuzz_clang || { echo "install-deps: no clang >= 16 with libFuzzer; run scripts/install-deps.sh --with-fuzz" >&2; exit 1; }
  exit 0
fi
fuzz_need=0
[ "${1:-}" = --with-fuzz ] && ! fuzz_clang >/dev/null && fuzz_need=1
[ ${#need[@]} -eq 0 ] && [ $fuzz_need -eq 0 ] && exit 0

if ! have apt-get; then
  echo "install-deps: missing ${need[*]}; install them with your package manager and run again" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  have sudo || { echo "install-deps: missing ${need[*]}; not root and no sudo to install them" >&2; exit 1; }
  sudo=(sudo)
fi
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# Debian 12's default clang is 14: take its clang-16 then. (Asked after the update: a fresh machine's package
# lists are empty. The policy is read whole first: `grep -q` in a pipe closes it early, and under pipefail the
# SIGPIPE apt-cache gets reads as "no clang-16".)
if [ $fuzz_need -eq 1 ]; then
  policy=$(apt-cache policy clang-16 2>/dev/null || true)
  if grep -q 'Candidate: [0-9]' <<<"$policy"; then need+=(clang-16 libclang-rt-16-dev)
  else need+=(clang libclang-rt-dev); fi
fi
echo "install-deps: installing ${need[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
if [ "${1:-}" = --with-fuzz ] && ! fuzz_clang >/dev/null; then
  echo "install-deps: no clang >= 16 that links a libFuzzer target (-fsanitize=fuzzer) after installing ${need[*]}" >&2
  exit 1
fi
cmake_ok || { echo "install-deps: cmake >= 3.25 is needed, this system has $(cmake --version | head -n1)" \
                   "(try: python3 -m pip install 'cmake>=3.25')" >&2; exit 1; }
