#!/usr/bin/env bash
# Installs what building and testing tinygrad.cpp needs, from the system's packages (apt-get, Debian/Ubuntu):
# cmake >= 3.25, a C++20 compiler, make, GoogleTest, pkg-config and zlib. Installs nothing when all are present;
# uses sudo only when not root. run-main.sh and run-tests.sh call it first.
# --with-data also installs the data the main job trains on: Debian's dataset-fashion-mnist (the idx .gz
# files under /usr/share/datasets/fashion-mnist).
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
if [ "${1:-}" = --with-data ]; then
  [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || need+=(dataset-fashion-mnist)
fi
[ ${#need[@]} -eq 0 ] && exit 0

if ! have apt-get; then
  echo "install-deps: missing ${need[*]}; install them with your package manager and run again" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  have sudo || { echo "install-deps: missing ${need[*]}; not root and no sudo to install them" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${need[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
cmake_ok || { echo "install-deps: cmake >= 3.25 is needed, this system has $(cmake --version | head -n1)" \
                   "(try: python3 -m pip install 'cmake>=3.25')" >&2; exit 1; }
