#!/usr/bin/env bash
# Every GPU check and benchmark, on the GPU machine (no LLVM/MLIR there),
# from the repository root, with the folder test/Integration/prepare_carry.sh
# made here carried to .carry:
#   bash test/Integration/run_h200.sh [checks|bench|fp8|fp8-hopper|hopper|kvsplit|consumers3|mgpu|all]
# First, the runtime's Python module (cascade_mlir, runtime-only, no kernels:
# the check and the benchmarks plan through it) is installed into SITE
# (default /tmp/cascade-site-runtime) by python_bindings/tests/gpu/run_h200.sh
# install, while the C++ runtime of the launcher and mgpu checks builds.
# checks: the float64 GPU check of every kernel family (test/Integration/gpu),
#   compute-sanitizer memcheck + racecheck on its small cases, the MLIR-free
#   runtime built there and its launcher / CUDA-graph check
#   (test/Integration/runtime), the mgpu integration test (host code compiled
#   by cascade-to-ptx + gpu-to-llvm, linked with the runtime's mgpu shim).
# mgpu: only the mgpu integration test (plain, planned, graph-mode and
#   automatic cascades compiled from IR, and the key cascade of issue 17
#   timed; needs .carry/mgpu and .carry/deps), then
#   test/Integration/mgpu/compare.py: the Python wrapper (installed from
#   .carry/mgpu/python, else .carry/python, while the runtime builds) and
#   FlashInfer (when `. .fi/env.sh` makes it importable) on the same shapes,
#   PASS / FAIL per target of issue 17, rows appended to
#   benchmarks/RESULTS.md (copied to $OUT). About 3 minutes.
# bench: python3 -m benchmarks.decode_merge.bench and benchmarks.attention.bench,
#   with FlashInfer 0.5.3 in the same process when `. .fi/env.sh` makes it
#   importable.
# fp8: the fp8 KV cache's float64 GPU check (check.py --fp8 on fp8-bundle,
#   e4m3 and e5m2), the decode benchmark's fp8 rows (every kernel
#   configuration fp8-bundle has for its shape) next to the f16 ones and
#   FlashInfer's fp8 decode, the two-level decode cascade over f16 and fp8
#   caches, then the check's memcheck / racecheck in the time left (about 8
#   minutes in all; needs .carry/bundle, .carry/fp8-bundle and .carry/deps).
#   `all` includes the check, `bench` the rows, when fp8-bundle was carried.
# fp8-hopper: the fp8 KV cache on sm_90a, where prefill and shared-prefix
#   levels run on the wgmma family: check.py --fp8 on fp8-bundle-sm90a
#   (float64, e4m3 and e5m2), the two-level decode cascade over f16
#   (bundle-sm90a) and fp8 (fp8-bundle-sm90a, the fastest of its prefix
#   kernels: wgmma defaults, wgmma_fp8_tune.mlir's variants and mma_sync),
#   then compute-sanitizer on the check's small fp8 cases in the time left
#   (logs under $OUT/fp8-sm90a; about 8 minutes; needs .carry/bundle-sm90a,
#   .carry/fp8-bundle-sm90a and .carry/deps).
# hopper: the float64 GPU check and compute-sanitizer on bundle-sm90a (the
#   same ops lowered for sm_90a: prefill on the wgmma family), then the
#   attention benchmark on it (logs under $OUT/sm90a).
# kvsplit: the wgmma kernels with split K/V barriers (wgmma-split-kv-barriers):
#   the tensor-core float64 check and compute-sanitizer on
#   bundle-sm90a-kvsplit (every wgmma kernel the split variant), then the
#   quick causal prefill rows of bundle-sm90a, whose tuning variants
#   (wgmma_tune.mlir) hold joint and split kernels side by side (the A/B;
#   logs under $OUT/kvsplit).
# consumers3: the wgmma kernels with three consumer warpgroups (192 query
#   rows a block, wgmma-consumers=3): the tensor-core float64 check and
#   compute-sanitizer on bundle-sm90a-c3, then the causal prefill A/B of
#   bundle-sm90a's default (three consumers, q192 kv64 s4) against its tuning
#   variants (two consumers kv128 s3, the default before; three with kv64
#   s3) and the two-level decode cascade with every shared-prefix kernel of
#   bundle-sm90a (logs under $OUT/c3).
# Logs go to $OUT (or ./out). Exit status: non-zero if any check failed.
set -uo pipefail
WHAT=${1:-all}
C=.carry
O=${OUT:-out}
mkdir -p "$O"
export PYTHONUNBUFFERED=1
export CMAKE_PREFIX_PATH=$PWD/$C/deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
BUILD=${BUILD_DIR:-/tmp/cascade-rt}
export SITE=${SITE:-/tmp/cascade-site-runtime}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/gpu.txt" 2>&1
rc=0
if [[ $WHAT == mgpu ]]; then
  t0=$SECONDS
  # The Python package with the key cascade's bundles (compare.py's Python
  # wrapper row), installed while the runtime builds.
  PYC=$C/mgpu/python
  [[ -f $PYC/kernels.tar.xz ]] || PYC=$C/python
  PYSITE=${MGPU_SITE:-/tmp/cascade-site-mgpu}
  pyinst=""
  if [[ -f $PYC/kernels.tar.xz ]]; then
    CARRY=$PYC SITE=$PYSITE OUT=$O bash python_bindings/tests/gpu/run_h200.sh install \
      > "$O/mgpu-python-install.log" 2>&1 &
    pyinst=$!
  fi
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCASCADE_ENABLE_COMPILER=OFF -DCASCADE_ENABLE_TESTS=OFF \
      -DCASCADE_ENABLE_GPU_CHECKS=ON \
      -DCASCADE_MGPU_HOST_OBJECT="$PWD/$C/mgpu/host.o" > "$O/rt-build.log" 2>&1 &&
    cmake --build "$BUILD" -j"$(nproc)" --target cascade-mgpu-test >> "$O/rt-build.log" 2>&1 ||
    { echo "runtime build FAILED (see $O/rt-build.log)"; exit 1; }
  echo "mgpu step runtime build                          $((SECONDS - t0)) s"
  echo "== mgpu integration (test/Integration/mgpu)"
  t1=$SECONDS
  timeout "${MGPU_TIMEOUT:-420}" "$BUILD/test/Integration/mgpu/cascade-mgpu-test" \
    > "$O/mgpu.log" 2>&1 || rc=1
  grep -E "FAIL|SKIP|^mgpu (key|step|seed)|passed" "$O/mgpu.log" | cut -c1-200
  echo "mgpu step cascade-mgpu-test (module loads + main)  $((SECONDS - t1)) s"
  echo "== Done-when comparisons (test/Integration/mgpu/compare.py)"
  t1=$SECONDS
  if [[ -n $pyinst ]]; then
    wait "$pyinst" || echo "Python package install FAILED (see $O/mgpu-python-install.log)"
  else
    echo "(no $C/mgpu/python or $C/python kernels: the Python wrapper is not measured;" \
         "prepare_carry.sh makes $C/mgpu/python from a build with the Python package)"
  fi
  PYTHONPATH=$PYSITE:$PWD${PYTHONPATH:+:$PYTHONPATH} python3 test/Integration/mgpu/compare.py \
    "$O/mgpu.log" --results benchmarks/RESULTS.md > "$O/mgpu-compare.log" 2>&1 || rc=1
  cat "$O/mgpu-compare.log"
  cp benchmarks/RESULTS.md "$O/RESULTS.md"
  echo "mgpu step compare.py (Python wrapper, FlashInfer)  $((SECONDS - t1)) s"
  echo "mgpu total $((SECONDS - t0)) s"
  exit $rc
fi
if [[ $WHAT == all || $WHAT == checks ]]; then
  ( cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCASCADE_ENABLE_COMPILER=OFF -DCASCADE_ENABLE_TESTS=OFF \
      -DCASCADE_ENABLE_GPU_CHECKS=ON \
      -DCASCADE_MGPU_HOST_OBJECT="$PWD/$C/mgpu/host.o" &&
    cmake --build "$BUILD" -j"$(nproc)" --target cascade-gpu-check cascade-mgpu-test
  ) > "$O/rt-build.log" 2>&1 &
  build=$!
fi
# The runtime's Python module (plans) for the check and the benchmarks.
if ! CARRY=$C OUT=$O bash python_bindings/tests/gpu/run_h200.sh install; then
  echo "runtime Python module: install FAILED"; exit 1
fi
export PYTHONPATH=$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
if [[ $WHAT == all || $WHAT == checks ]]; then
  echo "== float64 GPU check (test/Integration/gpu/check.py)"
  bash test/Integration/gpu/run_all.sh "$C/bundle" check > /dev/null
  grep -E "^FAIL|cases passed" "$O/check.log" || rc=1
  grep -q "cases passed" "$O/check.log" && ! grep -q "^FAIL" "$O/check.log" || rc=1
  if wait $build; then
    echo "== runtime launcher + CUDA graphs (test/Integration/runtime)"
    "$BUILD/test/Integration/runtime/cascade-gpu-check" "$C/rt-bundle" > "$O/gpu-check.log" 2>&1 || rc=1
    grep -E "^(FAIL|SKIP)|PASSED|FAILED" "$O/gpu-check.log"
    echo "== mgpu integration (test/Integration/mgpu)"
    "$BUILD/test/Integration/mgpu/cascade-mgpu-test" > "$O/mgpu.log" 2>&1 || rc=1
    tail -1 "$O/mgpu.log"
  else
    echo "runtime build FAILED (see $O/rt-build.log)"; rc=1
  fi
  echo "== compute-sanitizer"
  bash test/Integration/gpu/run_all.sh "$C/bundle" sanitize | grep "^=="
  grep -q "ERROR SUMMARY: 0 errors" "$O/sanitizer-memcheck.log" || rc=1
  grep -q "RACECHECK SUMMARY: 0 hazards" "$O/sanitizer-racecheck.log" || rc=1
fi
FP8=()
[[ -d $C/fp8-bundle ]] && FP8=(--fp8-bundle "$C/fp8-bundle")
if [[ -d $C/fp8-bundle && ( $WHAT == all || $WHAT == checks ) ]]; then
  echo "== fp8 KV: float64 GPU check and sanitizers (check.py --fp8)"
  bash test/Integration/gpu/run_all.sh "$C/fp8-bundle" fp8 | grep "^=="
  grep -E "^FAIL|cases passed" "$O/fp8-check.log" || rc=1
  grep -q "cases passed" "$O/fp8-check.log" && ! grep -q "^FAIL" "$O/fp8-check.log" || rc=1
  grep -q "ERROR SUMMARY: 0 errors" "$O/fp8-sanitizer-memcheck.log" || rc=1
  grep -q "RACECHECK SUMMARY: 0 hazards" "$O/fp8-sanitizer-racecheck.log" || rc=1
fi
# The fp8 float64 check of bundle $1, its log under $2 (fp8-check.log).
fp8_check() {
  OUT=$2 bash test/Integration/gpu/run_all.sh "$1" fp8-check > /dev/null
  grep -E "^FAIL|HANG|cases passed" "$2/fp8-check.log" || rc=1
  grep -q "cases passed" "$2/fp8-check.log" && ! grep -q "^FAIL" "$2/fp8-check.log" || rc=1
}
# compute-sanitizer on bundle $1's small fp8 cases (logs under $2) in what
# is left of ~8 minutes (FP8_BUDGET_S) since $SECONDS was $3; $4 names the
# run in the messages.
fp8_sanitize() {
  local left=$((${FP8_BUDGET_S:-480} - (SECONDS - $3)))
  if (( left > 60 )); then
    echo "== $4: compute-sanitizer (check.py --fp8 --small, ${left} s)"
    OUT=$2 SANITIZE_TIMEOUT=$((left / 2)) bash test/Integration/gpu/run_all.sh "$1" \
      fp8-sanitize | grep "^=="
    grep -q "ERROR SUMMARY: 0 errors" "$2/fp8-sanitizer-memcheck.log" || rc=1
    grep -q "RACECHECK SUMMARY: 0 hazards" "$2/fp8-sanitizer-racecheck.log" || rc=1
  else
    echo "== $4: compute-sanitizer skipped (${left} s left of the run's ~8 minutes)"
  fi
}
if [[ $WHAT == fp8 ]]; then
  [[ -d $C/fp8-bundle ]] || { echo "no $C/fp8-bundle (test/Integration/prepare_carry.sh)"; exit 1; }
  t0=$SECONDS
  echo "== fp8 KV: float64 GPU check (check.py --fp8)"
  fp8_check "$C/fp8-bundle" "$O"
  echo "fp8 step check $((SECONDS - t0)) s"
  echo "== fp8 decode benchmark"
  t1=$SECONDS
  python3 -m benchmarks.decode_merge.bench "$C/bundle" --only decode "${FP8[@]}" \
    > "$O/bench-fp8.log" 2>&1 || rc=1
  grep -E "^\| decode|copy|fp8 summary|not importable|Error" "$O/bench-fp8.log"
  echo "fp8 step decode benchmark $((SECONDS - t1)) s"
  echo "== two-level decode cascade, f16 and fp8 caches"
  t1=$SECONDS
  python3 -m benchmarks.attention.bench "$C/bundle" --rows cascade "${FP8[@]}" \
    > "$O/attention-fp8.log" 2>&1 || rc=1
  grep -E "^\| cascade 2|^FlashInfer cascade|Error" "$O/attention-fp8.log" | cut -c1-260
  echo "fp8 step cascade benchmark $((SECONDS - t1)) s"
  # The sanitizers on the check's small cases in what is left of ~8 minutes.
  fp8_sanitize "$C/fp8-bundle" "$O" "$t0" "fp8 KV"
  echo "fp8 total $((SECONDS - t0)) s"
fi
if [[ $WHAT == fp8-hopper ]]; then
  F=$C/fp8-bundle-sm90a
  [[ -d $F && -d $C/bundle-sm90a ]] ||
    { echo "no $F or $C/bundle-sm90a (test/Integration/prepare_carry.sh)"; exit 1; }
  t0=$SECONDS
  mkdir -p "$O/fp8-sm90a"
  echo "== fp8 KV on sm_90a (wgmma prefill): float64 GPU check (check.py --fp8)"
  fp8_check "$F" "$O/fp8-sm90a"
  echo "fp8-hopper step check $((SECONDS - t0)) s"
  echo "== two-level decode cascade, f16 (bundle-sm90a) and fp8 (fp8-bundle-sm90a) caches"
  t1=$SECONDS
  python3 -m benchmarks.attention.bench "$C/bundle-sm90a" --rows cascade --fp8-bundle "$F" \
    > "$O/fp8-sm90a/attention.log" 2>&1 || rc=1
  grep -E "^\| cascade 2|^FlashInfer cascade|HANG|Error" "$O/fp8-sm90a/attention.log" | cut -c1-260
  echo "fp8-hopper step cascade benchmark $((SECONDS - t1)) s"
  fp8_sanitize "$F" "$O/fp8-sm90a" "$t0" "fp8 KV on sm_90a"
  echo "fp8-hopper total $((SECONDS - t0)) s"
fi
if [[ $WHAT == all || $WHAT == hopper ]]; then
  echo "== float64 GPU check, sm_90a bundle (wgmma prefill)"
  mkdir -p "$O/sm90a"
  OUT=$O/sm90a bash test/Integration/gpu/run_all.sh "$C/bundle-sm90a" check > /dev/null
  grep -E "^FAIL|cases passed" "$O/sm90a/check.log" || rc=1
  grep -q "cases passed" "$O/sm90a/check.log" && ! grep -q "^FAIL" "$O/sm90a/check.log" || rc=1
  OUT=$O/sm90a bash test/Integration/gpu/run_all.sh "$C/bundle-sm90a" sanitize | grep "^=="
  grep -q "ERROR SUMMARY: 0 errors" "$O/sm90a/sanitizer-memcheck.log" || rc=1
  grep -q "RACECHECK SUMMARY: 0 hazards" "$O/sm90a/sanitizer-racecheck.log" || rc=1
  python3 -m benchmarks.attention.bench "$C/bundle-sm90a" > "$O/sm90a/attention.log" 2>&1 || rc=1
  grep -E "^\| (prefill|cascade|torch|FlashInfer)" "$O/sm90a/attention.log" | cut -c1-220
fi
# The float64 check of bundle $1's tensor-core ops (logs under $2), then
# compute-sanitizer memcheck and racecheck on its small cases, each within
# $3 seconds; rc=1 unless all pass.
tc_check_and_sanitize() {
  python3 test/Integration/gpu/check.py "$1" --tensor-core > "$2/check.log" 2>&1 || rc=1
  grep -E "^FAIL|HANG|cases passed" "$2/check.log" || rc=1
  grep -q "cases passed" "$2/check.log" && ! grep -q "^FAIL" "$2/check.log" || rc=1
  local tool
  for tool in memcheck racecheck; do
    CASCADE_HANG_TIMEOUT_S=600 timeout "$3" compute-sanitizer --tool $tool python3 \
      test/Integration/gpu/check.py "$1" --tensor-core --small > "$2/sanitizer-$tool.log" 2>&1
    echo "== $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$2/sanitizer-$tool.log" | tail -1)"
  done
  grep -q "ERROR SUMMARY: 0 errors" "$2/sanitizer-memcheck.log" || rc=1
  grep -q "RACECHECK SUMMARY: 0 hazards" "$2/sanitizer-racecheck.log" || rc=1
}
if [[ $WHAT == kvsplit ]]; then
  echo "== wgmma split K/V barriers: float64 check (bundle-sm90a-kvsplit), A/B prefill (bundle-sm90a)"
  mkdir -p "$O/kvsplit"
  tc_check_and_sanitize "$C/bundle-sm90a-kvsplit" "$O/kvsplit" 240
  python3 -m benchmarks.attention.bench "$C/bundle-sm90a" --rows prefill --quick \
    > "$O/kvsplit/attention.log" 2>&1 || rc=1
  grep -E "^\| (prefill|torch|FlashInfer)" "$O/kvsplit/attention.log" | cut -c1-220
fi
if [[ $WHAT == consumers3 ]]; then
  echo "== wgmma, three consumer warpgroups: float64 check (bundle-sm90a-c3), A/B (bundle-sm90a)"
  mkdir -p "$O/c3"
  tc_check_and_sanitize "$C/bundle-sm90a-c3" "$O/c3" "${C3_SANITIZE_S:-120}"
  python3 -m benchmarks.attention.bench "$C/bundle-sm90a" --rows prefill --quick --family wgmma \
    --kernels '(q128_kv128_s3|q192_kv64_s[34])$' > "$O/c3/prefill.log" 2>&1 || rc=1
  grep -E "^\| (prefill|torch|FlashInfer)" "$O/c3/prefill.log" | cut -c1-220
  python3 -m benchmarks.attention.bench "$C/bundle-sm90a" --rows cascade \
    > "$O/c3/cascade.log" 2>&1 || rc=1
  grep -E "^\| cascade 2|^FlashInfer cascade|HANG|Error" "$O/c3/cascade.log" | cut -c1-260
fi
if [[ $WHAT == all || $WHAT == bench ]]; then
  echo "== benchmarks"
  python3 -m benchmarks.decode_merge.bench "$C/bundle" "${FP8[@]}" > "$O/bench.log" 2>&1 || rc=1
  tail -18 "$O/bench.log"
  python3 -m benchmarks.attention.bench "$C/bundle" "${FP8[@]}" > "$O/attention.log" 2>&1 || rc=1
  grep -E "^\| (prefill|cascade|torch|FlashInfer)" "$O/attention.log" | cut -c1-220
fi
exit $rc
