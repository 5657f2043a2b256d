#!/usr/bin/env bash
# Builds the MLIR-free runtime on the GPU machine and runs the GPU checks.
#
#   test/Integration/runtime/run_gpu_checks.sh [BUNDLE_DIR]
#
# Without BUNDLE_DIR: driver loader, memory, streams and CUDA-graph capture /
# replay only (no kernels), then a clean skip message for the kernel checks.
# With BUNDLE_DIR (a cascade-opt kernel bundle: manifest.json + PTX): every
# supported kernel against the CPU reference on fresh random inputs, eager and
# under graph capture with a replan, printing the max relative error per case.
# Full output is also written to $OUT/gpu-check.txt when $OUT is set.
# The runtime needs nlohmann-json (headers only); on a machine without it set
# CMAKE_PREFIX_PATH to a prefix that has it (test/Integration/prepare_carry.sh
# puts one in .carry/deps). test/Integration/run_h200.sh runs this check and
# every other GPU check in one go.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build-rt-gpu}"
GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
cmake -S "$ROOT" -B "$BUILD" $GEN -DCASCADE_ENABLE_COMPILER=OFF \
  -DCASCADE_ENABLE_TESTS=OFF -DCASCADE_ENABLE_GPU_CHECKS=ON \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target cascade-gpu-check -j"$(nproc)" >/dev/null
LOG="${OUT:-$BUILD}/gpu-check.txt"
"$BUILD/test/Integration/runtime/cascade-gpu-check" "$@" 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
