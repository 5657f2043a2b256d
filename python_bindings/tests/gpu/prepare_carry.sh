#!/usr/bin/env bash
# Prepares, here (where LLVM/MLIR and the package's compiler are), what the
# GPU machine needs for python_bindings/tests/gpu/run_h200.sh, in one folder
# to carry there next to the checkout (default .carry/python; .carry is an
# ignored path):
#   kernels.tar.xz  the 'gpu-tests' kernel set (the default set plus what the
#                   GPU tests, examples/python and benchmarks/python use),
#                   for sm_90 and sm_90a (the Hopper kernels), PTX + cubins,
#                   compressed
#   deps/           nlohmann-json (headers + CMake package) for the runtime
#                   build there, which has no nlohmann-json
#   python_bindings/tests/gpu/prepare_carry.sh [BUILD_DIR] [OUT]
# BUILD_DIR is a build with the compiler (tools/cascade-dev build), whose
# package in BUILD_DIR/python_packages compiles the kernels.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/.carry/python}
PYTHON=${PYTHON:-/usr/bin/python3}
JOBS=${JOBS:-2}
mkdir -p "$OUT"
# Bundles already present from an earlier run of the same compiler build are
# kept: the keys name everything a bundle depends on except the compiler,
# whose build id (cascade_mlir.kernels.compiler_id(), as the package's own
# kernel cache) names the folder, so a rebuilt compiler starts afresh.
id=$(PYTHONPATH=$BUILD/python_packages "$PYTHON" -c \
  'from cascade_mlir import kernels; print(kernels.compiler_id())')
work=$BUILD/python-gpu-kernels/$id
PYTHONPATH=$BUILD/python_packages "$PYTHON" -m cascade_mlir.aot --set gpu-tests \
  --chip sm_90,sm_90a --out "$work/kernels" --jobs "$JOBS" | grep "bundle(s) built"
tar -C "$work" -cJf "$OUT/kernels.tar.xz" kernels
inc=$(dirname "$(find /usr/include /usr/local/include -path '*/nlohmann/json.hpp' 2>/dev/null | head -1)")
cfg=$(dirname "$(find /usr/share/cmake /usr/lib/cmake /usr/local/share/cmake -name nlohmann_jsonConfig.cmake 2>/dev/null | head -1)")
rm -rf "$OUT/deps"
mkdir -p "$OUT/deps/include" "$OUT/deps/share/cmake"
cp -r "$inc" "$OUT/deps/include/nlohmann"
cp -r "$cfg" "$OUT/deps/share/cmake/nlohmann_json"
du -sh "$OUT/kernels.tar.xz" "$OUT/deps"
