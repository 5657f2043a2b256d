#!/bin/bash
# Runs on the GPU machine from the repo root:
#   bash test/Integration/gpu/run_all.sh BUNDLE_DIR [check|sanitize|bench|attention|all]
#   bash test/Integration/gpu/run_all.sh FP8_BUNDLE_DIR fp8   (fp8 KV check + sanitizers,
#     FP8_BUNDLE_DIR built from fp8_kernels.mlir: prepare_carry.sh's fp8-bundle/;
#     fp8-check and fp8-sanitize run one half each)
# SANITIZE_TIMEOUT (default 240): seconds each compute-sanitizer run may take.
# with the runtime's Python module (cascade_mlir) importable: PYTHONPATH
# holds it and the repository root (test/Integration/run_h200.sh sets both).
# Writes logs under $OUT (or ./out). With FlashInfer importable (for example
# after `. .fi/env.sh`), the attention benchmark measures it in the same run.
set -u
B=${1:-.carry/bundle}
WHAT=${2:-all}
O=${OUT:-out}
mkdir -p "$O"
export PYTHONUNBUFFERED=1
G=test/Integration/gpu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/gpu.txt" 2>&1
rc=0
if [[ $WHAT == all || $WHAT == check ]]; then
  python3 $G/check.py "$B" 2>&1 | tee "$O/check.log" | tail -45
  rc=$((rc + ${PIPESTATUS[0]}))
fi
if [[ $WHAT == all || $WHAT == sanitize ]]; then
  for tool in memcheck racecheck; do
    CASCADE_HANG_TIMEOUT_S=600 timeout "${SANITIZE_TIMEOUT:-240}" compute-sanitizer --tool $tool python3 $G/check.py "$B" --small \
      > "$O/sanitizer-$tool.log" 2>&1
    echo "== $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/sanitizer-$tool.log" | tail -1)"
    grep -E "^(PASS|FAIL)" "$O/sanitizer-$tool.log" | head -8
  done
fi
if [[ $WHAT == fp8 || $WHAT == fp8-check ]]; then
  python3 $G/check.py "$B" --fp8 2>&1 | tee "$O/fp8-check.log" | tail -30
  rc=$((rc + ${PIPESTATUS[0]}))
fi
if [[ $WHAT == fp8 || $WHAT == fp8-sanitize ]]; then
  for tool in memcheck racecheck; do
    CASCADE_HANG_TIMEOUT_S=600 timeout "${SANITIZE_TIMEOUT:-240}" compute-sanitizer --tool $tool python3 $G/check.py "$B" --fp8 --small \
      > "$O/fp8-sanitizer-$tool.log" 2>&1
    echo "== fp8 $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/fp8-sanitizer-$tool.log" | tail -1)"
    grep -E "^(PASS|FAIL)" "$O/fp8-sanitizer-$tool.log" | head -8
  done
fi
if [[ $WHAT == all || $WHAT == bench ]]; then
  python3 -m benchmarks.decode_merge.bench "$B" 2>&1 | tee "$O/bench.log" | tail -16
fi
if [[ $WHAT == all || $WHAT == attention ]]; then
  python3 -m benchmarks.attention.bench "$B" 2>&1 | tee "$O/attention.log" | tail -24
  rc=$((rc + ${PIPESTATUS[0]}))
fi
exit $rc
