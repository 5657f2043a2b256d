#!/usr/bin/env bash
# Prepares, here (where the compiler is), what the FlashInfer conformance run
# (run.sh) needs on the GPU machine, in one folder carried next to the
# checkout (default .carry/flashinfer; .carry is an ignored path):
#   tests/           FlashInfer v0.5.3's tests/__init__.py, tests/test_helpers/
#                    and the three attention test files, unmodified (Apache-2.0,
#                    taken from a FlashInfer git checkout, not vendored here)
#   kernels.tar.xz   the bundles those tests use (keys.py reads them from the
#                    files' parametrize lists), PTX + cubins for sm_90 and
#                    sm_90a (the wgmma kernels an H200 runs; FI_CHIPS=sm_90
#                    for the mma_sync kernels alone)
#   bash test/Integration/flashinfer/prepare.sh FLASHINFER_GIT [BUILD_DIR] [OUT]
# FLASHINFER_GIT: a clone of github.com/flashinfer-ai/flashinfer that has the
# tag v0.5.3 (git clone --branch v0.5.3 --depth 1 ... works). BUILD_DIR: a
# build with the compiler (default build). The package's own carry comes from
# python_bindings/tests/gpu/prepare_carry.sh (.carry/python); run.sh needs both.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
SRC=${1:?usage: prepare.sh FLASHINFER_GIT [BUILD_DIR] [OUT]}
BUILD=${2:-$ROOT/build}
OUT=${3:-$ROOT/.carry/flashinfer}
TAG=${FLASHINFER_TAG:-v0.5.3}
PYTHON=${PYTHON:-/usr/bin/python3}
mkdir -p "$OUT/tests/attention"
rm -rf "$OUT/tests/test_helpers"
show() { git -C "$SRC" show "$TAG:$1" > "$OUT/$1"; }
show tests/__init__.py
for f in test_batch_decode_kernels test_batch_prefill_kernels test_shared_prefix_kernels; do
  show "tests/attention/$f.py"
done
mkdir -p "$OUT/tests/test_helpers"
for f in $(git -C "$SRC" ls-tree --name-only "$TAG" tests/test_helpers/); do show "$f"; done
git -C "$SRC" show "$TAG:LICENSE" > "$OUT/tests/LICENSE"
# Bundles of an earlier run are kept per compiler build (its id names the
# folder, as in the package's own kernel cache).
id=$(PYTHONPATH=$BUILD/python_packages "$PYTHON" -c \
  'from cascade_mlir import kernels; print(kernels.compiler_id())')
work=$BUILD/flashinfer-conformance-kernels/$id
PYTHONPATH=$BUILD/python_packages "$PYTHON" "$ROOT/test/Integration/flashinfer/keys.py" \
  "$OUT/tests/attention" --build "$work/kernels" --jobs "${JOBS:-2}" \
  --chip "${FI_CHIPS:-sm_90,sm_90a}" | tail -1
tar -C "$work" -cJf "$OUT/kernels.tar.xz" kernels
du -sh "$OUT"
