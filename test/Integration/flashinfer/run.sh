#!/usr/bin/env bash
# FlashInfer v0.5.3's own attention tests (test_shared_prefix_kernels.py,
# test_batch_decode_kernels.py, test_batch_prefill_kernels.py, unmodified)
# against cascade_mlir, on the GPU machine, from the repository root:
#   [FILES="test_batch_decode_kernels ..."] bash test/Integration/flashinfer/run.sh [PYTEST_ARGS...]
# Needs .carry/python (python_bindings/tests/gpu/prepare_carry.sh) and
# .carry/flashinfer (test/Integration/flashinfer/prepare.sh). `import
# flashinfer` resolves to a shim over cascade_mlir made at run time
# (make_shim.py); a test that needs what the package does not implement is
# reported as skipped with the limitation's name (docs/python.md, FlashInfer
# parity). Writes $OUT/flashinfer/<file>.log and .xml and summary.txt (pass /
# fail / skip counts per file, skip reasons); exit status 1 if any failed.
set -uo pipefail
C=${CARRY:-.carry}
mkdir -p "${OUT:-out}/flashinfer"
O=$(cd "${OUT:-out}/flashinfer" && pwd)
export PYTHONUNBUFFERED=1
CARRY=$C/python OUT=$O bash python_bindings/tests/gpu/run_h200.sh install || exit 1
SITE=${SITE:-/tmp/cascade-site}
K=/tmp/cascade-fi-kernels
rm -rf "$K" && mkdir -p "$K" && tar -C "$K" -xJf "$C/flashinfer/kernels.tar.xz" || exit 1
export CASCADE_MLIR_KERNEL_PATH=$K/kernels${CASCADE_MLIR_KERNEL_PATH:+:$CASCADE_MLIR_KERNEL_PATH}
W=/tmp/cascade-fi-conformance
rm -rf "$W" && mkdir -p "$W" && cp -r "$C/flashinfer/tests" "$W/tests" || exit 1
python3 test/Integration/flashinfer/make_shim.py "$W" || exit 1
rc=0
# FILES picks some of the three (a device call has 10 minutes: split the
# run over calls, e.g. FILES=test_batch_prefill_kernels), and
# CASCADE_FI_SHARD=i/n runs every n-th test of each file from the i-th (the
# prefill file's 13,104 tests over n calls); outputs then end in .shard<i>of<n>.
# CASCADE_FI_JOBS=n instead runs all n shards of each file at once, one
# pytest process each, on the one GPU (the tests are small: a process is
# bound by its host time, not by the GPU), so that the prefill file fits in
# one call. Pytest arguments (e.g. -k) pass through.
run_file() { # FILE SHARD (i/n or empty)
  local suffix=""
  [ -n "$2" ] && suffix=".shard${2%/*}of${2#*/}"
  ( cd "$W" && CASCADE_FI_SHARD=$2 PYTHONPATH=$W/shim:$W:$SITE python3 -m pytest \
      -p no:cacheprovider -q -rfs --junitxml="$O/$1$suffix.xml" "tests/attention/$1.py" \
      "${@:3}" ) > "$O/$1$suffix.log" 2>&1
  local r=$?
  echo "== $1$suffix: $(tail -1 "$O/$1$suffix.log")"
  return $r
}
jobs=${CASCADE_FI_JOBS:-1}
for f in ${FILES:-test_shared_prefix_kernels test_batch_decode_kernels test_batch_prefill_kernels}; do
  if (( jobs > 1 )); then
    pids=()
    for ((i = 0; i < jobs; i++)); do
      run_file "$f" "$i/$jobs" "$@" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
  else
    run_file "$f" "${CASCADE_FI_SHARD:-}" "$@" || rc=1
  fi
done
python3 test/Integration/flashinfer/summary.py "$O" | tee "$O/summary.txt"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
exit $rc
