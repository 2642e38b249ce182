#!/usr/bin/env bash
# The op suite on aarch64, as far as an x86-64 machine allows: cross-compiles libtg and the test suite (tg_tests)
# with Debian's aarch64 toolchain (cmake/aarch64-linux-gnu.cmake, Release, build-aarch64/) and runs the op suite
# (TG_OP_SUITE of tests/CMakeLists.txt), the CPU_ISA tests, the C renderer's vector exp2 and run tests on the CPU
# device under qemu-user. The kernels are the C renderer's, compiled for armv8-a (NEON; CPU_ISA=generic, since
# -mcpu=native means nothing to a cross compiler) by the x86-64 cross compiler aarch64-linux-gnu-gcc, which the
# emulated test process starts like any compiler (qemu-user runs a host program natively: its execve is the
# host's), and then loaded into the emulated process with dlopen. A fresh compile cache, so every kernel is
# compiled. The LLVM device is built in where LLVM 14's development files are installed (llvm-14-dev: only its C
# headers are used; libLLVM is opened at run time): `--llvm` runs the op suite again on it (DEV=LLVM, kernels as LLVM
# IR compiled in the emulated process for the generic armv8-a CPU) with Debian's arm64 libLLVM-14 and the libraries
# it needs, fetched and unpacked the way zlib is (build-aarch64/llvm-root, about 40 MB).
# Installs when missing (apt-get): gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, qemu-user-static and googletest
# (the sources). The arm64 libraries the build links come from the cross toolchain (C library, libstdc++, pthread,
# dl, libm) and from build-aarch64/deps: zlib's arm64 .debs, downloaded with private package lists for arm64 (no
# `dpkg --add-architecture`, nothing installed or upgraded on this machine) and unpacked, linked statically; and
# GoogleTest, built from /usr/src/googletest with the cross compiler. SQLite (optional: BEAM's cache) is off.
# Usage: scripts/run-arm-tests.sh [--quick] [--llvm] [gtest filter]
#   --quick  a smaller filter for CI (a few suites of each kind of op, the CPU_ISA and renderer tests)
#   --llvm   then the same filter again on the LLVM device (DEV=LLVM), with the LLVM device's own tests
#   a filter replaces the default one. TG_JOBS sets the build's parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-aarch64
deps="$PWD/$build/deps"
triple=aarch64-linux-gnu
cross_libc=/usr/$triple/lib  # the cross toolchain's arm64 C library, libstdc++ and dynamic loader
jobs="${TG_JOBS:-$(nproc)}"

have() { command -v "$1" >/dev/null 2>&1; }
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
need=()
have $triple-gcc || need+=(gcc-$triple)
have $triple-g++ || need+=(g++-$triple)
have qemu-aarch64-static || need+=(qemu-user-static)
[ -f /usr/src/googletest/CMakeLists.txt ] || need+=(googletest)
have cmake || need+=(cmake)
have dpkg-deb || { echo "run-arm-tests: needs dpkg-deb and apt-get (Debian/Ubuntu)" >&2; exit 1; }
if [ ${#need[@]} -gt 0 ]; then
  have apt-get || { echo "run-arm-tests: missing ${need[*]}; install them and run again" >&2; exit 1; }
  echo "run-arm-tests: installing ${need[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

mkdir -p "$deps"
# Debian's arm64 packages $2... unpacked into $1, with package lists of our own (see zlib below).
fetch_arm64() {
  local root="$1" apt_dir="$PWD/$build/apt"
  shift
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs" "$root"
  local apt_opts=(-o APT::Architecture=arm64 -o APT::Architectures=arm64 -o Dir::State::Lists="$apt_dir/lists"
                  -o Dir::Cache="$apt_dir/cache" -o APT::Sandbox::User=root -qq)
  echo "run-arm-tests: fetching $* for arm64 into $root"
  apt-get "${apt_opts[@]}" update
  (cd "$apt_dir/debs" && rm -f ./*.deb && apt-get "${apt_opts[@]}" download "$@")
  for deb in "$apt_dir"/debs/*_arm64.deb; do dpkg-deb -x "$deb" "$root"; done
}
# zlib for arm64: the archive's .debs, fetched with package lists of our own (in build-aarch64/apt) that know only
# arm64, so this machine's apt configuration and installed packages stay as they are (multiarch would add arm64 to
# dpkg, and zlib1g-dev:arm64 pulls libc6-dev:arm64 with a dozen others and upgrades their amd64 twins to match).
if [ ! -f "$deps/usr/include/zlib.h" ] || [ ! -f "$deps/usr/lib/$triple/libz.a" ]; then
  fetch_arm64 "$deps" zlib1g zlib1g-dev
fi
# GoogleTest for arm64, built once from Debian's sources with the same cross compiler as the tests.
if [ ! -f "$deps/usr/lib/cmake/GTest/GTestConfig.cmake" ]; then
  echo "run-arm-tests: building GoogleTest for aarch64 from /usr/src/googletest"
  cmake -S /usr/src/googletest -B "$build/googletest" --toolchain "$PWD/cmake/aarch64-linux-gnu.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF -DINSTALL_GTEST=ON -DCMAKE_INSTALL_PREFIX="$deps/usr" \
    -DCMAKE_INSTALL_LIBDIR=lib >/dev/null
  cmake --build "$build/googletest" --parallel "$jobs" >/dev/null
  cmake --install "$build/googletest" >/dev/null
fi

# g++ 12 for aarch64 predefines __FLT16_MAX__ (the type exists in C) but has no _Float16 in C++ (GCC 13 adds it; g++ 12
# for x86-64 has it), so C++ guarded by __FLT16_MAX__ alone (tests/uop/test_exec_alu.cpp) does not compile. Until
# those guards ask for C++ support, the tests' C++ reads _Float16 as __fp16 there: AArch64's IEEE half, whose
# conversions round to nearest even as _Float16's do.
cxx_flags=""
printf '_Float16 x;\n' | $triple-g++ -x c++ -fsyntax-only - 2>/dev/null || cxx_flags="-D_Float16=__fp16"
# The test program names the cross toolchain's dynamic loader and libraries itself (PT_INTERP and RUNPATH), so qemu
# runs it with -L / below: no path prefix. With a prefix (-L /usr/aarch64-linux-gnu, QEMU_LD_PREFIX, or qemu's
# default /etc/qemu-binfmt/aarch64) qemu 7.2 looks every path of a system call up under a mutex (util/path.c) that
# its fork does not take: when one thread forks (posix_spawn of the kernel compiler; qemu turns its vfork into a
# fork) while another (the compile pool's) is inside such a lookup, the child inherits the mutex locked and hangs in
# its first open(), and the test with it. (Seen here: a child of tg_tests asleep for minutes on that mutex.)
link_flags="-Wl,--dynamic-linker=$cross_libc/ld-linux-aarch64.so.1 -Wl,-rpath,$cross_libc"
# The LLVM device: LLVM 14's C headers (architecture-independent) from the build machine's llvm-14-dev; the path of
# its x86-64 libLLVM baked in as the default is replaced at run time (LLVM_LIBRARY) by the arm64 one.
llvm_dir=/usr/lib/llvm-14/lib/cmake/llvm
llvm_opts=(-DTG_LLVM=OFF)
[ -f "$llvm_dir/LLVMConfig.cmake" ] && llvm_opts=(-DTG_LLVM=ON -DLLVM_DIR="$llvm_dir")

t0=$(date +%s)
cmake -S . -B "$build" --toolchain "$PWD/cmake/aarch64-linux-gnu.cmake" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$cxx_flags" -DCMAKE_EXE_LINKER_FLAGS="$link_flags" \
  -DTG_AARCH64_ROOT="$deps" -DZLIB_USE_STATIC_LIBS=ON "${llvm_opts[@]}" -DTG_SQLITE=OFF \
  -DTG_BUILD_EXAMPLES=OFF -DTG_BUILD_BENCH=OFF -DTG_INSTALL=OFF
cmake --build "$build" --target tg_tests --parallel "$jobs"
t1=$(date +%s)
echo "run-arm-tests: build took $((t1 - t0)) s"

suite=$(sed -n 's/^set(TG_OP_SUITE "\(.*\)")$/\1/p' tests/CMakeLists.txt)
[[ -n "$suite" ]] || { echo "run-arm-tests: no TG_OP_SUITE in tests/CMakeLists.txt" >&2; exit 1; }
filter="$suite:CpuIsa*:CVectorExp2*:RenderRun*"
llvm=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) filter="Activation*:DtypeOps*:Math*:Movement*:NNConv*:Reduce*:CpuIsa*:CVectorExp2*:RenderRun*" ;;
    --llvm) llvm=1 ;;
    *) filter="$1" ;;
  esac
  shift
done

# Some tests name the system compilers themselves (gcc and clang: both must accept the C renderer's vector types).
# On an aarch64 machine those compile for aarch64; here they are x86-64 compilers, which reject -march=armv8-a. So the
# tests see gcc and clang that compile for aarch64 first on their PATH: the cross gcc, and clang with
# --target=aarch64-linux-gnu (it finds the cross gcc's libraries and aarch64-linux-gnu-ld) where clang is installed.
cross_bin="$PWD/$build/cross-bin"
mkdir -p "$cross_bin"
rm -f "$cross_bin/gcc" "$cross_bin/clang"  # (before looking them up: the wrappers must call the real compilers)
printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v $triple-gcc)" >"$cross_bin/gcc"
if have clang; then printf '#!/bin/sh\nexec %s --target=%s "$@"\n' "$(command -v clang)" $triple >"$cross_bin/clang"; fi
chmod +x "$cross_bin"/*

cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
echo "run-arm-tests: tg_tests --gtest_filter=$filter under qemu-aarch64-static"
t0=$(date +%s)
rc=0
env -u QEMU_LD_PREFIX PATH="$cross_bin:$PATH" CPU_ISA=generic CC=$triple-gcc DEV=CPU CACHEDB_DIR="$cache" \
  qemu-aarch64-static -L / "$build/tests/tg_tests" --gtest_filter="$filter" --gtest_brief=1 || rc=$?
t1=$(date +%s)
echo "run-arm-tests: the run under qemu took $((t1 - t0)) s (exit $rc)"
[ $llvm -eq 1 ] || exit $rc

[ "${llvm_opts[0]}" = -DTG_LLVM=ON ] || { echo "run-arm-tests: --llvm needs llvm-14-dev (LLVM 14's headers)" >&2; exit 1; }
llvm_root="$PWD/$build/llvm-root"
llvm_lib="$llvm_root/usr/lib/$triple/libLLVM-14.so.1"
# libLLVM-14 and what it links, less what the cross toolchain has (libc6, libstdc++6, libgcc-s1)
[ -f "$llvm_lib" ] || fetch_arm64 "$llvm_root" libllvm14 libedit2 libffi8 libtinfo6 libxml2 libz3-4 zlib1g libicu72 \
  liblzma5 libbsd0 libmd0
llvm_filter="$filter:LLVMJit*:LLVMRender*"
echo "run-arm-tests: tg_tests --gtest_filter=$llvm_filter under qemu-aarch64-static, DEV=LLVM"
t0=$(date +%s)
rc2=0
env -u QEMU_LD_PREFIX PATH="$cross_bin:$PATH" CPU_ISA=generic CC=$triple-gcc DEV=LLVM CACHEDB_DIR="$cache" \
  LLVM_LIBRARY="$llvm_lib" LD_LIBRARY_PATH="$llvm_root/usr/lib/$triple:$llvm_root/lib/$triple" \
  qemu-aarch64-static -L / "$build/tests/tg_tests" --gtest_filter="$llvm_filter" --gtest_brief=1 || rc2=$?
t1=$(date +%s)
echo "run-arm-tests: the LLVM run under qemu took $((t1 - t0)) s (exit $rc2)"
[ $rc -ne 0 ] && exit $rc
exit $rc2
