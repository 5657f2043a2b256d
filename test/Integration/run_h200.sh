#!/usr/bin/env bash
# One GPU-machine session for the runtime side: builds the MLIR-free runtime
# there, then runs (1) the launcher/graph-capture check against a kernel
# bundle made here by cascade-opt and (2) the mgpu integration test (host code
# compiled here from cascade IR, linked there with libcascade_mlir_cuda_runtime).
#   test/Integration/run_h200.sh BUNDLE_DIR HOST_OBJECT
# Logs go to $OUT (when set) or to the build directory.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUNDLE=$1; HOST_OBJ=$2
BUILD="${BUILD_DIR:-/tmp/cascade-rt}"
LOGS="${OUT:-$BUILD}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCASCADE_ENABLE_COMPILER=OFF -DCASCADE_ENABLE_TESTS=OFF \
  -DCASCADE_ENABLE_GPU_CHECKS=ON -DCASCADE_MGPU_HOST_OBJECT="$(realpath "$HOST_OBJ")" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target cascade-gpu-check cascade-mgpu-test >/dev/null || exit 1
rc=0
echo "== runtime launcher + graph capture against $BUNDLE"
"$BUILD/test/Integration/runtime/cascade-gpu-check" "$BUNDLE" 2>&1 | tee "$LOGS/gpu-check.log" || rc=1
echo "== mgpu integration (cascade IR -> host object -> mgpu shim)"
"$BUILD/test/Integration/mgpu/cascade-mgpu-test" 2>&1 | tee "$LOGS/mgpu.log" || rc=1
exit $rc
