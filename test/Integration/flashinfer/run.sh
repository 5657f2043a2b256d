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
# Pytest arguments (e.g. -k) pass through.
suffix=""
[ -n "${CASCADE_FI_SHARD:-}" ] && suffix=".shard${CASCADE_FI_SHARD%/*}of${CASCADE_FI_SHARD#*/}"
for f in ${FILES:-test_shared_prefix_kernels test_batch_decode_kernels test_batch_prefill_kernels}; do
  echo "== $f$suffix"
  ( cd "$W" && PYTHONPATH=$W/shim:$W:$SITE python3 -m pytest -p no:cacheprovider -q -rfs \
      --junitxml="$O/$f$suffix.xml" "tests/attention/$f.py" "$@" ) > "$O/$f$suffix.log" 2>&1 || rc=1
  tail -1 "$O/$f$suffix.log"
done
python3 test/Integration/flashinfer/summary.py "$O" | tee "$O/summary.txt"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
exit $rc
