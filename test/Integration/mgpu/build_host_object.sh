#!/usr/bin/env bash
# Compiles host code here (where LLVM/MLIR is) into one object file for the
# mgpu integration test: merge_state.mlir, the shipped two-level cascade
# examples (examples/cascade_two_level_decode.mlir and its planned form
# cascade_two_level_planned.mlir, unchanged but for llvm.emit_c_interface,
# which gives their functions a C entry point) and planned_graph.mlir (the
# planned cascade in CUDA-graph mode, a plan and a run function), and the
# automatic-cascade example (examples/cascade_auto_decode.mlir), and the
# key cascade of the timings at 32/8 and 32/32 heads (the planned and the
# automatic examples with their head counts changed and their functions
# renamed, and key_graph.mlir.in, the CUDA-graph plan/run pair at B = 128):
#   cascade IR -> cascade-to-ptx (kernels as PTX in a gpu.binary)
#   -> gpu-to-llvm + LLVM lowering of the host function -> (PTX replaced by
#   its cubin, when ptxas is found) -> LLVM IR -> object.
# Usage: build_host_object.sh CASCADE_OPT OUT_DIR
# KEY_CHIP (optional, e.g. sm_90a): the chip the key cascade's kernels are
# lowered for (cascade-to-ptx chip=; default: cascade-to-ptx's own), to
# compare with a Python package that runs that chip's kernels.
set -euo pipefail
OPT=$1; OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
# mlir-translate and llc of the LLVM that cascade-opt was built with.
LLVM=${LLVM_TOOLS_DIR:-$(dirname "$(command -v mlir-translate || echo /usr/lib/llvm-22/bin/mlir-translate)")}
# ptxas, when found, compiles each function's kernels to a cubin embedded in
# the object (embed_cubin.py), so that the GPU machine does not JIT ~4 MB of
# PTX at program start; without it the objects carry the PTX.
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
[[ -x $PTXAS ]] || echo "no ptxas: the host object carries PTX (JIT at start)" >&2
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
# The key cascade: heads HQ/HKV, functions suffixed _hHQxHKV.
key_heads() {
  sed "s|heads = 64 / 8|heads = $1 / $2|; s|x64x128xf16|x$1x128xf16|g; s|x64xf32|x$1xf32|g;
       s|x16x8x128xf16|x16x$2x128xf16|g; s|@\(cascade_[a-z_]*\)(|@\1_h$1x$2(|"
}
KEYS=()
for heads in "32 8" "32 32"; do
  set -- $heads
  key_heads "$1" "$2" < "$OUT/two_level_planned.mlir" > "$OUT/planned_h$1x$2.mlir"
  key_heads "$1" "$2" < "$OUT/auto_decode.mlir" > "$OUT/auto_h$1x$2.mlir"
  sed "s/@HQ@/$1/g; s/@HKV@/$2/g; s/@NAME@/h$1x$2/g" "$HERE/key_graph.mlir.in" \
    > "$OUT/graph_h$1x$2.mlir"
  grep -q "@cascade_two_level_planned_h$1x$2(" "$OUT/planned_h$1x$2.mlir"
  grep -q "@cascade_auto_decode_h$1x$2(" "$OUT/auto_h$1x$2.mlir"
  KEYS+=("planned_h$1x$2" "auto_h$1x$2" "graph_h$1x$2")
done
for name in merge_state two_level two_level_planned planned_graph auto_decode "${KEYS[@]}"; do
  src="$HERE/$name.mlir"
  [ -f "$src" ] || src="$OUT/$name.mlir"
  chip=""
  [[ $name == *_h32x* && -n ${KEY_CHIP:-} ]] && chip="=chip=$KEY_CHIP"
  "$OPT" "$src" --cascade-to-ptx$chip \
    --gpu-to-llvm --convert-func-to-llvm --finalize-memref-to-llvm \
    --convert-scf-to-cf --convert-arith-to-llvm --convert-index-to-llvm --convert-cf-to-llvm \
    --reconcile-unrealized-casts -o "$OUT/$name.llvm.mlir"
  host=$OUT/$name.llvm.mlir
  if [[ -x $PTXAS ]]; then
    python3 "$HERE/embed_cubin.py" "$PTXAS" "$host" "$OUT/$name.cubin.mlir"
    host=$OUT/$name.cubin.mlir
  fi
  "$LLVM/mlir-translate" --mlir-to-llvmir "$host" -o "$OUT/$name.ll"
  "$LLVM/llc" -O2 -relocation-model=pic -filetype=obj "$OUT/$name.ll" -o "$OUT/$name.o"
done
OBJS=()
for name in merge_state two_level two_level_planned planned_graph auto_decode "${KEYS[@]}"; do
  OBJS+=("$OUT/$name.o")
done
ld -r "${OBJS[@]}" -o "$OUT/host.o"
echo "$OUT/host.o"
