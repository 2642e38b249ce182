#!/usr/bin/env bash
# Proves tinygrad.cpp needs no CUDA: after scripts/run-tests.sh has built the `default` preset, checks that
# no built binary depends on a CUDA library at link time, then runs the whole ctest suite again with every
# CUDA library and header on this machine hidden (empty tmpfs mounts over their folders, in a private mount
# namespace), as on a machine without CUDA: the CUDA device is absent, its tests skip with the reason, and
# everything else passes. Arguments go to ctest. Needs root (or user namespaces) for the mounts; where they are
# not allowed it says so and runs the link-time check only.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
[ -x "$build/tests/tg_tests" ] || { echo "run-tests-no-cuda: build the default preset first (scripts/run-tests.sh)" >&2; exit 1; }

# 1. Link time: no NEEDED entry names libcuda, libnvrtc or libcudart.
for bin in "$build"/tests/tg_tests "$build"/tests/tg_cuda_tests "$build"/examples/*; do
  [ -f "$bin" ] && [ -x "$bin" ] || continue
  if readelf -d "$bin" 2>/dev/null | grep -E "NEEDED.*(libcuda|libnvrtc|libcudart)"; then
    echo "run-tests-no-cuda: $bin links a CUDA library" >&2
    exit 1
  fi
done
echo "run-tests-no-cuda: no binary links a CUDA library"

# 2. Run time: the folders that hold CUDA libraries or headers on this machine.
hide=()
add() { local d; d=$(readlink -f "$1") || return 0; [ -d "$d" ] || return 0; for h in "${hide[@]}"; do [ "$h" = "$d" ] && return 0; done; hide+=("$d"); }
for d in /usr/local/cuda /usr/local/cuda-*; do [ -e "$d" ] && add "$d"; done
while read -r lib; do add "$(dirname "$lib")"; done < <(ldconfig -p | grep -E "lib(cuda|nvrtc)\.so" | sed 's/.*=> //')
for d in "${CUDA_PATH:-}" "${CUDA_HOME:-}"; do [ -n "$d" ] && add "$d"; done
if [ ${#hide[@]} -eq 0 ]; then
  echo "run-tests-no-cuda: this machine has no CUDA: the normal test run already shows it"
  exec ctest --preset default --parallel "${TG_JOBS:-$(nproc)}" "$@"
fi
# a folder inside another hidden one is hidden with it (and could not be mounted on once its parent is)
top=()
for d in "${hide[@]}"; do
  inside=0
  for p in "${hide[@]}"; do [ "$p" != "$d" ] && [[ "$d" == "$p"/* ]] && inside=1; done
  [ $inside -eq 0 ] && top+=("$d")
done
hide=("${top[@]}")
echo "run-tests-no-cuda: hiding ${hide[*]}"
mounts=""
for d in "${hide[@]}"; do mounts+="mount -t tmpfs -o size=1m tg-no-cuda '$d' && "; done
if ! unshare -m true 2>/dev/null; then
  echo "run-tests-no-cuda: mount namespaces are not allowed here; only the link-time check ran" >&2
  exit 0
fi
args=$(printf " %q" "$@")
unshare -m sh -c "$mounts ! ls /usr/local/cuda*/lib*/libnvrtc* >/dev/null 2>&1 && \
  CUDA_PATH= CUDA_HOME= ctest --preset default --parallel ${TG_JOBS:-$(nproc)} --output-on-failure$args"
