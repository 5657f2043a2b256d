#!/usr/bin/env bash
# Compiles merge_state.mlir to a host object file here (where LLVM/MLIR is):
#   cascade IR -> cascade-to-ptx (kernels as PTX in a gpu.binary)
#   -> gpu-to-llvm + LLVM lowering of the host function -> LLVM IR -> object.
# Usage: build_host_object.sh CASCADE_OPT OUT_DIR
set -euo pipefail
OPT=$1; OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
LLVM=/usr/lib/llvm-22/bin
mkdir -p "$OUT"
"$OPT" "$HERE/merge_state.mlir" --cascade-to-ptx \
  --gpu-to-llvm --convert-func-to-llvm --finalize-memref-to-llvm \
  --convert-scf-to-cf --convert-arith-to-llvm --convert-index-to-llvm --convert-cf-to-llvm \
  --reconcile-unrealized-casts -o "$OUT/merge_state.llvm.mlir"
"$LLVM/mlir-translate" --mlir-to-llvmir "$OUT/merge_state.llvm.mlir" -o "$OUT/merge_state.ll"
"$LLVM/llc" -O2 -relocation-model=pic -filetype=obj "$OUT/merge_state.ll" -o "$OUT/merge_state_host.o"
echo "$OUT/merge_state_host.o"
