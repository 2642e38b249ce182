#!/usr/bin/env bash
# Build the Python module tinygrad_cpp and run its tests (tests/python, pytest): every op's forward and
# gradient checked against PyTorch on the CPU, plus the API, nn, optim and state tests.
#
# Installs what it needs first, only when missing: the C++ build deps (scripts/install-deps.sh), then Debian's
# python3 with dev headers, venv, numpy, pytest, CPU PyTorch (python3-torch) and Chromium (the VIZ viewer's
# test), and nanobind from PyPI into a
# venv (build-py/venv, which sees Debian's packages). Then builds libtg with the preset TG_PRESET (default:
# `default`, in build/; incremental after scripts/run-tests.sh), installs it into build-py/tg, builds only
# the module against it (build-py/module) and runs pytest with that on PYTHONPATH. Arguments go to pytest
# (e.g. -k conv -x). TG_JOBS sets the build parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh
preset="${TG_PRESET:-default}"
jobs="${TG_JOBS:-$(nproc)}"
case "$preset" in
  default) libdir=build ;;
  debug) libdir=build-debug ;;
  *) echo "run-python-tests: TG_PRESET=$preset: use default or debug (a sanitized libtg cannot load into python)" >&2
     exit 1 ;;
esac

# ---- system packages (Debian's python3, so that Debian's python3-torch fits it) ----
py=/usr/bin/python3
has() { [ -x "$py" ] && "$py" -c "$1" >/dev/null 2>&1; }
need=()
has 'import sys' || need+=(python3)
has 'import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' ||
  need+=(python3-dev)
has 'import ensurepip, venv' || need+=(python3-venv)
has 'import numpy' || need+=(python3-numpy)
has 'import pytest' || need+=(python3-pytest)
has 'import torch' || need+=(python3-torch)
# the VIZ viewer's test loads its page in headless Chromium (fonts for its screenshot)
command -v chromium >/dev/null 2>&1 || need+=(chromium fonts-liberation)
if [ ${#need[@]} -gt 0 ]; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "run-python-tests: installing ${need[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# ---- a venv over Debian's packages, with nanobind from PyPI ----
venv=build-py/venv
[ -x "$venv/bin/python" ] || "$py" -m venv --system-site-packages "$venv"
"$venv/bin/python" -c 'import nanobind' 2>/dev/null || "$venv/bin/python" -m pip install -q nanobind

# ---- libtg (incremental), installed into a prefix; then the module alone against it ----
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target tg --parallel "$jobs"
cmake --install "$libdir" --prefix "$root/build-py/tg" >/dev/null
cmake -S python -B build-py/module -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$root/build-py/tg" \
  -DPython_EXECUTABLE="$root/$venv/bin/python" >/dev/null
cmake --build build-py/module --parallel "$jobs"

# ---- the tests ----
cd tests/python
PYTHONPATH="$root/build-py/module" exec "$root/$venv/bin/python" -m pytest -q "$@"
