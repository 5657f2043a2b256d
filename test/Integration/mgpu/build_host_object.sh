#!/usr/bin/env bash
# Compiles host code here (where LLVM/MLIR is) into one object file for the
# mgpu integration test: merge_state.mlir, the shipped two-level cascade
# examples (examples/cascade_two_level_decode.mlir and its planned form
# cascade_two_level_planned.mlir, unchanged but for llvm.emit_c_interface,
# which gives their functions a C entry point) and planned_graph.mlir (the
# planned cascade in CUDA-graph mode, a plan and a run function), and the
# automatic-cascade example (examples/cascade_auto_decode.mlir):
#   cascade IR -> cascade-to-ptx (kernels as PTX in a gpu.binary)
#   -> gpu-to-llvm + LLVM lowering of the host function -> LLVM IR -> object.
# Usage: build_host_object.sh CASCADE_OPT OUT_DIR
set -euo pipefail
OPT=$1; OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
# mlir-translate and llc of the LLVM that cascade-opt was built with.
LLVM=${LLVM_TOOLS_DIR:-$(dirname "$(command -v mlir-translate || echo /usr/lib/llvm-22/bin/mlir-translate)")}
mkdir -p "$OUT"
sed 's/-> (tensor<?x64x128xf16>, tensor<?x64xf32>) {/-> (tensor<?x64x128xf16>, tensor<?x64xf32>) attributes {llvm.emit_c_interface} {/' \
  "$ROOT/examples/cascade_two_level_decode.mlir" > "$OUT/two_level.mlir"
grep -q llvm.emit_c_interface "$OUT/two_level.mlir"
sed 's/-> (tensor<?x64x128xf16>, tensor<?x64xf32>) {/-> (tensor<?x64x128xf16>, tensor<?x64xf32>) attributes {llvm.emit_c_interface} {/' \
  "$ROOT/examples/cascade_two_level_planned.mlir" > "$OUT/two_level_planned.mlir"
grep -q llvm.emit_c_interface "$OUT/two_level_planned.mlir"
sed 's/-> (tensor<?x64x128xf16>, tensor<?x64xf32>) {/-> (tensor<?x64x128xf16>, tensor<?x64xf32>) attributes {llvm.emit_c_interface} {/' \
  "$ROOT/examples/cascade_auto_decode.mlir" > "$OUT/auto_decode.mlir"
grep -q llvm.emit_c_interface "$OUT/auto_decode.mlir"
for name in merge_state two_level two_level_planned planned_graph auto_decode; do
  src="$HERE/$name.mlir"
  [ -f "$src" ] || src="$OUT/$name.mlir"
  "$OPT" "$src" --cascade-to-ptx \
    --gpu-to-llvm --convert-func-to-llvm --finalize-memref-to-llvm \
    --convert-scf-to-cf --convert-arith-to-llvm --convert-index-to-llvm --convert-cf-to-llvm \
    --reconcile-unrealized-casts -o "$OUT/$name.llvm.mlir"
  "$LLVM/mlir-translate" --mlir-to-llvmir "$OUT/$name.llvm.mlir" -o "$OUT/$name.ll"
  "$LLVM/llc" -O2 -relocation-model=pic -filetype=obj "$OUT/$name.ll" -o "$OUT/$name.o"
done
ld -r "$OUT/merge_state.o" "$OUT/two_level.o" "$OUT/two_level_planned.o" \
  "$OUT/planned_graph.o" "$OUT/auto_decode.o" -o "$OUT/host.o"
echo "$OUT/host.o"
