#!/usr/bin/env bash
# Sharded cascades on the GPU machine (issue 20, docs/multi_gpu.md), from the
# repository root, with the carry of prepare_carry.sh at .carry/python:
#   bash python_bindings/tests/gpu/run_sharded.sh
# 1. installs the package as run_h200.sh does (runtime only, prebuilt kernels);
# 2. pytest of the sharded tests: the one-GPU NCCL group (eager and CUDA graph)
#    and the gloo groups of world sizes 1-4 (CPU reference);
# 3. benchmarks.python.sharded --check (B=64, 32/8 heads, D=128, a 1M-token
#    prefix, 256 own tokens) on 1 GPU, then under torchrun on 2, 4 and 8 GPUs
#    where the machine has them: step time, the all-gather's share, the
#    speedup over the single-GPU cascade and the difference from it.
# Logs and sharded-w<W>.json go to $OUT (or ./out). Non-zero exit if anything
# failed.
set -uo pipefail
O=${OUT:-out}
SITE=${SITE:-/tmp/cascade-site}
mkdir -p "$O"
export OUT=$O PYTHONUNBUFFERED=1
bash python_bindings/tests/gpu/run_h200.sh install || exit 1
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
rc=0
echo "== pytest: sharded cascades (GPU required)"
CASCADE_REQUIRE_GPU=1 python3 -m pytest -q -p no:cacheprovider -rfEs \
  python_bindings/tests/gpu/test_gpu_sharded.py python_bindings/tests/test_sharded.py \
  > "$O/sharded-pytest.log" 2>&1 || rc=1
grep -E "passed|failed|^FAILED|^ERROR" "$O/sharded-pytest.log" | tail -10
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
for w in 1 2 4 8; do
  [ "$w" -le "$gpus" ] || break
  echo "== benchmarks.python.sharded --check on $w GPU(s)"
  if [ "$w" = 1 ]; then
    python3 -m benchmarks.python.sharded --check 2>&1 | tee "$O/sharded-w1.log"
  else
    torchrun --standalone --nproc-per-node="$w" -m benchmarks.python.sharded --check \
      2>&1 | tee "$O/sharded-w$w.log"
  fi
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
done
exit $rc
