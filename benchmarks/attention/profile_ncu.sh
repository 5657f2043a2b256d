#!/usr/bin/env bash
# Nsight Compute profile of one kernel of benchmarks/attention/bench.py, on
# the GPU machine, from the repository root, with the runtime's Python module
# importable (run_h200.sh install):
#   [ROWS=cascade] [SKIP=n] bash benchmarks/attention/profile_ncu.sh BUNDLE KERNEL_NAME_REGEX [OUT]
# ROWS: the bench rows that launch it (default prefill: causal B8 L4096 32/8
# D128 f16, only the kernels matching the regex; cascade: the two-level
# decode cascade, e.g. its unique level's accumulating decode
# 'decode_acc_rows_f16_f16_d128_g4'); SKIP: launches of it to skip first.
# Writes OUT/profile.ncu-rep (--set full: sections and the sampled warp
# stalls per instruction), OUT/details.txt (the sections) and
# OUT/source-sass.csv (per SASS instruction: executed count and stall
# samples by reason).
set -uo pipefail
B=$1
K=$2
O=${3:-${OUT:-out}}
mkdir -p "$O"
ncu --clock-control none --set full --import-source no \
  --kernel-name "regex:$K" --launch-skip "${SKIP:-0}" --launch-count 1 \
  -o "$O/profile" -f \
  python3 -m benchmarks.attention.bench "$B" --rows "${ROWS:-prefill}" --quick \
  --kernels "$K" > "$O/ncu-run.log" 2>&1
ncu --import "$O/profile.ncu-rep" --page details > "$O/details.txt" 2>&1
ncu --import "$O/profile.ncu-rep" --page source --print-source sass --csv \
  > "$O/source-sass.csv" 2>&1
wc -l "$O/details.txt" "$O/source-sass.csv"
