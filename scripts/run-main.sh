#!/usr/bin/env bash
# The main job: install the build tools and Debian's dataset-fashion-mnist, build tinygrad.cpp (Release,
# build/) and train examples/beautiful_mnist on Fashion-MNIST with a progress bar until the test accuracy
# reaches 90%: Adam at learning rate 0.004 falling to 0 along a half cosine over 500 steps of batch 512,
# evaluated every 50 steps (about 15 minutes on 2 cores). The example's knobs (STEPS, BS, LR, LR_DECAY,
# EVAL_EVERY, TARGET_EVAL_ACC_PCT, SEED) pass through the environment; an empty TARGET_EVAL_ACC_PCT trains
# STEPS steps with no target. Arguments go to the program (a data directory); TG_JOBS sets the build
# parallelism (default: nproc).
# The 90% target belongs to the full run: a shorter STEPS (a smoke test) reports its accuracy and exits 0
# unless TARGET_EVAL_ACC_PCT is set explicitly. --print-config prints the resolved settings and exits.
set -euo pipefail
cd "$(dirname "$0")/.."
default_target=90
if [[ -n "${STEPS:-}" && "${STEPS}" =~ ^[0-9]+$ && "${STEPS}" -lt 500 ]]; then default_target=; fi
export STEPS="${STEPS:-500}" EVAL_EVERY="${EVAL_EVERY:-50}" TARGET_EVAL_ACC_PCT="${TARGET_EVAL_ACC_PCT-$default_target}" \
  LR="${LR:-0.004}" LR_DECAY="${LR_DECAY-cosine}"
if [[ "${1:-}" == --print-config ]]; then
  echo "STEPS=$STEPS EVAL_EVERY=$EVAL_EVERY TARGET_EVAL_ACC_PCT=$TARGET_EVAL_ACC_PCT LR=$LR LR_DECAY=$LR_DECAY"
  exit 0
fi
scripts/install-deps.sh --with-data
cmake --preset default
cmake --build --preset default --target beautiful_mnist --parallel "${TG_JOBS:-$(nproc)}"
exec build/examples/beautiful_mnist "$@"
