#!/usr/bin/env bash
# Builds, here (where cascade-opt is), the PTX of the Hopper building-block
# test kernels (-test-cascade-hopper-codegen: wgmma f16/bf16, mbarrier, 2-D
# and 3-D TMA loads) for sm_90a, for check.py and tma_check.py on the GPU
# machine; ptxas must accept them.
#   test/Integration/hopper/prepare.sh [BUILD_DIR] [OUT]   (default .carry/hopper)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/.carry/hopper}
OPT=$BUILD/bin/cascade-opt
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
PIPE='builtin.module(nvvm-attach-target{chip=sm_90a features=+ptx80 O=3},gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,convert-nvvm-to-llvm,canonicalize,cse,reconcile-unrealized-casts),gpu-module-to-binary{format=isa})'
mkdir -p "$OUT"
for block in wgmma wgmma-bf16 mbarrier tma tma-3d; do
  echo 'module {}' | "$OPT" --test-cascade-hopper-codegen=block=$block |
    "$OPT" --pass-pipeline="$PIPE" -o "$OUT/$block.mlir"
  python3 "$ROOT/test/Conversion/GPUCodegen/Inputs/gpu-binary-ptx.py" \
    "$OUT/$block.mlir" "$OUT/$block.ptx"
  "$PTXAS" -arch=sm_90a "$OUT/$block.ptx" -o "$OUT/$block.cubin"
  rm "$OUT/$block.mlir"
done
ls "$OUT"
