#!/usr/bin/env bash
# The golden corpus of generated source (tests/codegen/codegen_corpus.cpp): every kernel of a fixed set of tensor
# programs rendered for C, LLVM IR, CUDA (sm_80, sm_90), OpenCL and Metal, with and without opts, one file each.
# A codegen change that should not change code must leave it byte-identical (issue 48's guard):
#
#   scripts/codegen-corpus.sh /tmp/before             # on the old commit
#   scripts/codegen-corpus.sh /tmp/after /tmp/before  # on the new one: writes /tmp/after, then diffs the two
#
# The C kernels are for CPU_ISA=avx2 and 2 threads whatever this machine is, so corpora from two machines compare.
# Uses the build of scripts/run-tests.sh (build/); exits 1 when the corpora differ.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 <out folder> [folder to compare with]" >&2; exit 2; }
[[ -d build ]] || cmake --preset default
cmake --build build --target tg_codegen_corpus --parallel "${TG_JOBS:-$(nproc)}" > /dev/null
rm -rf "$1"
CPU_ISA=avx2 THREADS=2 NOOPT=0 BEAM=0 build/tests/tg_codegen_corpus "$1"
if [[ $# -eq 2 ]]; then
  if diff -r -q "$2" "$1"; then
    echo "codegen corpus: identical to $2"
  else
    echo "codegen corpus: differs from $2 (diff -r $2 $1)"
    exit 1
  fi
fi
