# CMake toolchain file: cross-compile for aarch64 Linux with Debian's cross toolchain (gcc-aarch64-linux-gnu,
# g++-aarch64-linux-gnu: GCC 12, its C library and libstdc++ under /usr/aarch64-linux-gnu), and run what it builds
# (try_run, ctest, gtest_discover_tests) under qemu-user (qemu-user-static). scripts/run-arm-tests.sh uses it:
#   cmake -S . -B build-aarch64 --toolchain cmake/aarch64-linux-gnu.cmake -DTG_AARCH64_ROOT=<dir> ...
# TG_AARCH64_ROOT (optional, a list): more roots holding arm64 libraries in a Debian layout (<root>/usr/include,
# <root>/usr/lib/aarch64-linux-gnu, <root>/usr/lib/cmake); the script puts zlib's arm64 .debs (extracted) and a
# GoogleTest cross-built from /usr/src/googletest there. (With Debian multiarch instead, dpkg --add-architecture arm64
# and zlib1g-dev:arm64 libgtest-dev:arm64 installed, -DTG_AARCH64_ROOT=/ should do; not what the script does.)
# No CMAKE_SYSROOT: Debian's cross gcc already knows /usr/aarch64-linux-gnu, whose layout (lib/, include/ at its top)
# is not a sysroot's (usr/lib, usr/include), so --sysroot would hide the C library from it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)  # find_library looks in <root>/usr/lib/aarch64-linux-gnu

set(TG_AARCH64_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${TG_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${TG_AARCH64_TRIPLE}-g++)

# (try_compile projects read this file again: pass the extra roots on to them)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TG_AARCH64_ROOT)
set(CMAKE_FIND_ROOT_PATH /usr/${TG_AARCH64_TRIPLE} ${TG_AARCH64_ROOT})
# Headers, libraries and CMake packages come only from the arm64 roots (never the build machine's x86-64 ones);
# programs (pkg-config, the compilers) from the build machine.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Runs the aarch64 programs: qemu-user with the cross toolchain's C library as the guest's root for the dynamic
# loader and shared libraries (-L). A path under it that does not exist falls through to the host's file system.
# Enough for discovering tests and for programs that do not start others from several threads: with a prefix, qemu
# 7.2 looks paths up under a mutex its fork does not take, so a child forked (posix_spawn) while another thread is
# in such a lookup can hang. scripts/run-arm-tests.sh links the test program with the cross toolchain's loader and
# library folder (--dynamic-linker, -rpath) and runs it with -L / (no prefix, no mutex) instead.
find_program(TG_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(TG_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TG_QEMU_AARCH64} -L /usr/${TG_AARCH64_TRIPLE})
endif()
