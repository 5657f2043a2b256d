#!/usr/bin/env bash
# Prepares, here (where LLVM/MLIR is), everything the GPU machine needs for
# test/Integration/run_h200.sh, in one folder to carry there (default
# .carry, which .git/info/exclude should list):
#   bundle/     kernels of the float64 GPU check and the benchmarks
#               (test/Integration/gpu/kernels.mlir + mma_kernels.mlir), with
#               an sm_90 cubin so that the driver does not JIT 5 MB of PTX
#   fp8-bundle/ the fp8 KV kernels of the check (gpu/fp8_kernels.mlir) and
#               the fp8 decode benchmark, with its sm_90 cubin
#   fp8-bundle-sm90a/ the same fp8 ops lowered for sm_90a (prefill and the
#               shared-prefix levels on the wgmma family) and the fp8
#               cascade's prefix-level variants (gpu/wgmma_fp8_tune.mlir),
#               with its sm_90a cubin (run_h200.sh fp8-hopper)
#   bundle-sm90a/ the same ops lowered for sm_90a, where prefill runs on the
#               wgmma family (the Hopper GPU check and benchmarks)
#   bundle-sm90a-kvsplit/ the check's ops (kernels.mlir + mma_kernels.mlir)
#               for sm_90a with wgmma-split-kv-barriers (run_h200.sh kvsplit)
#   bundle-sm90a-c3/ the same ops for sm_90a with wgmma-consumers=3 (every
#               wgmma kernel with three consumer warpgroups; run_h200.sh
#               consumers3)
#   rt-bundle/  kernels of the launcher check (test/Integration/runtime)
#   mgpu/host.o host code of the mgpu integration test
#   mgpu/python/ the Python package's bundles of the key cascade (32/8 and
#               32/32 heads, from BUILD_DIR's package, when it was built)
#               and nlohmann-json, for the Python wrapper row of
#               test/Integration/mgpu/compare.py
#   deps/       nlohmann-json (headers + CMake package) for the builds there
#               (which has none): the runtime, and its runtime-only Python
#               module, which plans for the check and the benchmarks
#   test/Integration/prepare_carry.sh [BUILD_DIR] [OUT]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/.carry}
OPT=$BUILD/bin/cascade-opt
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
rm -rf "$OUT/bundle" "$OUT/fp8-bundle" "$OUT/fp8-bundle-sm90a" "$OUT/bundle-sm90a" "$OUT/bundle-sm90a-kvsplit" "$OUT/bundle-sm90a-c3" "$OUT/rt-bundle" "$OUT/mgpu" "$OUT/deps"
mkdir -p "$OUT"
cat "$ROOT/test/Integration/gpu/kernels.mlir" "$ROOT/test/Integration/gpu/mma_kernels.mlir" |
  "$OPT" --cascade-to-ptx="bundle-dir=$OUT/bundle" -o /dev/null
"$PTXAS" -arch=sm_90 "$OUT/bundle/kernels.ptx" -o "$OUT/bundle/kernels.sm_90.cubin"
"$OPT" "$ROOT/test/Integration/gpu/fp8_kernels.mlir" \
  --cascade-to-ptx="bundle-dir=$OUT/fp8-bundle" -o /dev/null
"$PTXAS" -arch=sm_90 "$OUT/fp8-bundle/kernels.ptx" -o "$OUT/fp8-bundle/kernels.sm_90.cubin"
cat "$ROOT/test/Integration/gpu/fp8_kernels.mlir" "$ROOT/test/Integration/gpu/wgmma_fp8_tune.mlir" |
  "$OPT" --cascade-to-ptx="chip=sm_90a bundle-dir=$OUT/fp8-bundle-sm90a" -o /dev/null
"$PTXAS" -arch=sm_90a "$OUT/fp8-bundle-sm90a/kernels.ptx" -o "$OUT/fp8-bundle-sm90a/kernels.sm_90a.cubin"
cat "$ROOT/test/Integration/gpu/kernels.mlir" "$ROOT/test/Integration/gpu/mma_kernels.mlir" \
  "$ROOT/test/Integration/gpu/wgmma_tune.mlir" |
  "$OPT" --cascade-to-ptx="chip=sm_90a bundle-dir=$OUT/bundle-sm90a" -o /dev/null
"$PTXAS" -arch=sm_90a "$OUT/bundle-sm90a/kernels.ptx" -o "$OUT/bundle-sm90a/kernels.sm_90a.cubin"
# The check's ops for sm_90a with selection options $2 (selection first;
# cascade-to-ptx keeps those configurations), into $OUT/$1.
selected_sm90a_bundle() {
  cat "$ROOT/test/Integration/gpu/kernels.mlir" "$ROOT/test/Integration/gpu/mma_kernels.mlir" |
    "$OPT" --cascade-select-kernel-config="chip=sm_90a $2" |
    "$OPT" --cascade-to-ptx="chip=sm_90a bundle-dir=$OUT/$1" -o /dev/null
  "$PTXAS" -arch=sm_90a "$OUT/$1/kernels.ptx" -o "$OUT/$1/kernels.sm_90a.cubin"
}
selected_sm90a_bundle bundle-sm90a-kvsplit wgmma-split-kv-barriers=true
selected_sm90a_bundle bundle-sm90a-c3 wgmma-consumers=3
"$OPT" "$ROOT/test/Integration/runtime/kernels.mlir" \
  --cascade-to-ptx="bundle-dir=$OUT/rt-bundle" -o /dev/null
work=$(mktemp -d)
# The key cascade compiled for sm_90a (KEY_CHIP=, empty: cascade-to-ptx's
# default sm_90), as the Python package runs it on an H200.
KEY_CHIP=${KEY_CHIP-sm_90a} bash "$ROOT/test/Integration/mgpu/build_host_object.sh" "$OPT" "$work" >/dev/null
mkdir -p "$OUT/mgpu" && cp "$work/host.o" "$OUT/mgpu/host.o" && rm -rf "$work"
pyb=$BUILD/python_packages/cascade_mlir/bundles
if [ -d "$pyb/sm_90" ]; then
  work=$(mktemp -d) && mkdir -p "$OUT/mgpu/python"
  for chip in sm_90 sm_90a; do
    [ -d "$pyb/$chip" ] || continue
    mkdir -p "$work/kernels/$chip"
    for h in 32x8 32x32; do
      for k in prefill prefill-acc decode decode-acc; do
        cp -r "$pyb/$chip/$k.f16-f16.d128.h$h.p16.nhd.pool" "$work/kernels/$chip/"
      done
    done
    cp -r "$pyb/$chip/merge.f16.d128" "$pyb/$chip/merge.f32.d128" "$work/kernels/$chip/"
  done
  tar -C "$work" -cJf "$OUT/mgpu/python/kernels.tar.xz" kernels && rm -rf "$work"
else
  echo "no $pyb/sm_90 (a build without the Python package): compare.py will not time the Python wrapper"
fi
inc=$(dirname "$(find /usr/include /usr/local/include -path '*/nlohmann/json.hpp' 2>/dev/null | head -1)")
cfg=$(dirname "$(find /usr/share/cmake /usr/lib/cmake /usr/local/share/cmake -name nlohmann_jsonConfig.cmake 2>/dev/null | head -1)")
mkdir -p "$OUT/deps/include" "$OUT/deps/share/cmake"
cp -r "$inc" "$OUT/deps/include/nlohmann"
cp -r "$cfg" "$OUT/deps/share/cmake/nlohmann_json"
[ -d "$OUT/mgpu/python" ] && cp -r "$OUT/deps" "$OUT/mgpu/python/deps"
du -sh "$OUT"
