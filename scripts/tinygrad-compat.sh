#!/usr/bin/env bash
# Compatibility run (a measurement, not a gate): upstream tinygrad's own test/test_ops.py, run with pytest
# against the tinygrad_cpp module through an import shim (tests/python/compat/shim: a `tinygrad` package that
# re-exports tinygrad_cpp's names; it is put first on PYTHONPATH for this run only, never installed).
#
# The test file comes from tinygrad's source distribution on PyPI, pinned below by version and sha256
# (0.12.0 is the newest sdist that ships test/test_ops.py; 0.13.0 and 0.14.0 ship only test/test_tiny.py).
# It is downloaded once with pip into build-py/compat/. Prints `N passed, M failed, E errors, S skipped`.
#
#   scripts/tinygrad-compat.sh                  # build (incremental, via run-python-tests.sh) and run
#   scripts/tinygrad-compat.sh -k conv          # arguments go to pytest
#   TG_COMPAT_BUILD=0 scripts/tinygrad-compat.sh  # skip the build step (use build-py/module as it is)
#
# Per-test timeout TG_COMPAT_TIMEOUT seconds (default 120, pytest-timeout, installed into the venv from PyPI),
# the whole run bounded by TG_COMPAT_TOTAL seconds (default 1500). Exit status 0 whatever the tests say;
# non-zero only when the run itself could not be made.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version="${TINYGRAD_VERSION:-0.12.0}"
sha256_0_12_0=299cd53d9452b8689b36c7026c866b73d1e4a862ec53a8ea5bc2a412358c1bbf
testfile=test/test_ops.py
py="$root/build-py/venv/bin/python"

# ---- the module: built and tested the usual way (an incremental build; --co collects only, runs nothing) ----
if [ "${TG_COMPAT_BUILD:-1}" != 0 ] || [ ! -x "$py" ]; then
  scripts/run-python-tests.sh --co -q >/dev/null
fi
"$py" -c 'import pytest_timeout' 2>/dev/null || "$py" -m pip install -q pytest-timeout

# ---- the pinned tinygrad sdist, and its test file alone in a clean directory ----
# (alone, so that pytest's rootdir insertion cannot put the sdist's real tinygrad/ package on sys.path)
dl="$root/build-py/compat"
sdist="$dl/tinygrad-$version.tar.gz"
mkdir -p "$dl"
[ -f "$sdist" ] || "$py" -m pip download -q --no-deps --no-binary :all: "tinygrad==$version" -d "$dl"
if [ "$version" = 0.12.0 ]; then
  echo "$sha256_0_12_0  $sdist" | sha256sum -c --quiet -
fi
run="$dl/run-$version"
rm -rf "$run"
mkdir -p "$run"
tar -xzf "$sdist" -O "tinygrad-$version/$testfile" >"$run/$(basename "$testfile")"

# ---- the run ----
log="$dl/test_ops-$version.log"
cd "$run"
set +e
PYTHONPATH="$root/tests/python/compat/shim:$root/build-py/module" timeout "${TG_COMPAT_TOTAL:-1500}" \
  "$py" -m pytest -q -p no:cacheprovider --timeout "${TG_COMPAT_TIMEOUT:-120}" -rfE "$(basename "$testfile")" "$@" \
  2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
summary=$(grep -E '^=* ?[0-9]+ (passed|failed|skipped|error)|^[0-9]+ (passed|failed|skipped|error)' "$log" | tail -1 |
  sed -E 's/^=+ //; s/ =+$//')
count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
echo
echo "tinygrad-compat: tinygrad $version $testfile against tinygrad_cpp (pytest rc $rc, log $log)"
echo "tinygrad-compat: $(count passed) passed, $(count failed) failed, $(count 'errors?') errors, $(count skipped) skipped"
[ "$rc" -le 1 ] || { echo "tinygrad-compat: the run did not complete (rc $rc)" >&2; exit "$rc"; }
