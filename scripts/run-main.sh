#!/usr/bin/env bash
# The main job: install the build tools and Debian's dataset-fashion-mnist, build tinygrad.cpp (Release,
# build/) and train examples/beautiful_mnist on Fashion-MNIST with a progress bar until the test accuracy
# reaches 90% (evaluated every 50 steps, at most 1000 steps). The example's knobs (STEPS, BS, LR,
# EVAL_EVERY, TARGET_EVAL_ACC_PCT, SEED) pass through the environment; an empty TARGET_EVAL_ACC_PCT trains
# STEPS steps with no target. Arguments go to the program (a data directory); TG_JOBS sets the build
# parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-data
cmake --preset default
cmake --build --preset default --target beautiful_mnist --parallel "${TG_JOBS:-$(nproc)}"
export STEPS="${STEPS:-1000}" EVAL_EVERY="${EVAL_EVERY:-50}" TARGET_EVAL_ACC_PCT="${TARGET_EVAL_ACC_PCT-90}"
exec build/examples/beautiful_mnist "$@"
