#!/usr/bin/env bash
# The Python package's GPU session, on the GPU machine (CUDA, cmake, torch,
# pybind11, scikit-build-core; no LLVM/MLIR), from the repository root:
#   bash python_bindings/tests/gpu/run_h200.sh [install|tests|parity|frameworks|bench|all]
# Needs the folder python_bindings/tests/gpu/prepare_carry.sh made here
# (where the compiler is), next to the checkout at .carry/python (or CARRY):
# the compiled kernel bundles and nlohmann-json for the runtime build.
#   install  (always, first; alone with `install`) `pip install .`
#            runtime-only (CASCADE_ENABLE_COMPILER=OFF) with the prebuilt
#            bundles (none if CARRY has no kernels.tar.xz: plans and the
#            CPU reference only, what test/Integration/run_h200.sh needs),
#            into a --target directory (SITE); if pip or scikit-build-core
#            is missing there, the CMake route instead (the build tree's
#            python_packages)
#   tests    pytest python_bindings/tests (GPU tests required to run:
#            CASCADE_REQUIRE_GPU=1), examples/python/multi_level_cascade.py,
#            python3 -m benchmarks.python.host_overhead (run() host time,
#            CUDA-graph replay after replans)
#   parity   (alone) FlashInfer parity beyond the cascade module: pytest of
#            test_gpu_parity.py, test_gpu_leak.py, test_gpu_custom_mask.py
#            and test_parity.py (GPU required), python3 -m
#            benchmarks.python.ragged (ragged and custom-mask vs paged
#            prefill TFLOP/s, appended to benchmarks/RESULTS.md, copied to
#            OUT), then, when .carry/flashinfer exists
#            (test/Integration/flashinfer/prepare.sh), FlashInfer v0.5.3's
#            own attention tests (test/Integration/flashinfer/run.sh; counts in
#            OUT/flashinfer/summary.txt)
#   frameworks  (one device call, <= ~9 min: FRAMEWORKS_BUDGET_S, default
#            520 s from the start) the torch custom ops and the transformers
#            backend: pytest of their CPU tests, gpu/test_gpu_frameworks.py
#            (opcheck on CUDA, fullgraph compile, reduce-overhead capture
#            replayed after a replan, generation vs sdpa) and
#            gpu/test_gpu_merge.py, with pytest's exit status printed (139:
#            a crash at exit); benchmarks.python.host_overhead (every
#            run()/merge entry point's host time, <= 10 us each);
#            benchmarks.python.generation --quick (tokens/s rows and the
#            plot, appended to benchmarks/RESULTS.md and copied to OUT as
#            frameworks-artifacts.tgz; then the greedy/logits correctness at
#            batch 64, an 8192-token prompt, planted-bigram and plain random
#            weights, fp16 and bf16, as far as the budget goes); then, if
#            time is left, examples/python/shared_prompt_generation.py
#            --compare-sdpa (the done-when summary table)
#   bench    python3 -m benchmarks.python.bench with FlashInfer when
#            `. .fi/env.sh` made it importable: appends to
#            benchmarks/RESULTS.md, plots in benchmarks/python/plots (both
#            copied to OUT)
# CASCADE_PLAN (optional): a cascade-plan binary for the GPU machine (e.g. a
# static build of tools/cascade-plan) lets the tests that compare with it run
# there too; without it they skip, saying so (they run in CI).
# Logs go to $OUT (or ./out). Exit status: non-zero if anything failed.
set -uo pipefail
WHAT=${1:-all}
C=${CARRY:-.carry/python}
O=${OUT:-out}
SITE=${SITE:-/tmp/cascade-site}
mkdir -p "$O"
export PYTHONUNBUFFERED=1
rc=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/env.txt" 2>&1
python3 -c 'import sys, torch, numpy; print("python", sys.version.split()[0], "torch",
torch.__version__, "cuda", torch.version.cuda, "numpy", numpy.__version__)' | tee -a "$O/env.txt"

install() {
  [ -f "$SITE/cascade_mlir/__init__.py" ] && return 0
  local k=/tmp/cascade-kernels kernels="" what="no kernels"
  rm -rf "$k" && mkdir -p "$k"
  if [ -f "$C/kernels.tar.xz" ]; then
    tar -C "$k" -xJf "$C/kernels.tar.xz" || return 1
    kernels=$k/kernels what="$(ls "$k/kernels/sm_90" | wc -l) prebuilt bundles"
  fi
  echo "== pip install . (runtime only, $what) into $SITE"
  local t0=$SECONDS
  if python3 -c 'import pip, scikit_build_core, pybind11' 2>/dev/null &&
     python3 -m pip install --no-build-isolation --no-deps --target "$SITE" \
       -C cmake.define.CASCADE_ENABLE_COMPILER=OFF \
       -C cmake.define.CASCADE_PYTHON_PREBUILT_KERNELS="$kernels" \
       -C cmake.define.CMAKE_PREFIX_PATH="$PWD/$C/deps" \
       -C build-dir="$SITE-build" . > "$O/pip-install.log" 2>&1; then
    echo "installed into $SITE in $((SECONDS - t0)) s"; tail -1 "$O/pip-install.log"
    return 0
  fi
  echo "pip install failed or unavailable (see $O/pip-install.log): CMake route"
  local b=$SITE-cmake
  cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCASCADE_ENABLE_COMPILER=OFF \
    -DCASCADE_ENABLE_TESTS=OFF -DCASCADE_ENABLE_PYTHON=ON \
    -DCASCADE_PYTHON_PREBUILT_KERNELS="$kernels" \
    -DCMAKE_PREFIX_PATH="$PWD/$C/deps" > "$O/cmake-build.log" 2>&1 &&
    cmake --build "$b" -j"$(nproc)" >> "$O/cmake-build.log" 2>&1 || return 1
  rm -rf "$SITE" && cp -r "$b/python_packages" "$SITE"
  echo "built with CMake in $((SECONDS - t0)) s"
}

if ! install; then
  echo "install FAILED"; tail -30 "$O/pip-install.log" "$O/cmake-build.log" 2>/dev/null
  exit 1
fi
[[ $WHAT == install ]] && exit 0
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}

if [[ $WHAT == all || $WHAT == tests ]]; then
  export CASCADE_TEST_SEED=${CASCADE_TEST_SEED:-$((RANDOM * 32768 + RANDOM))}
  echo "== pytest python_bindings/tests (GPU tests required, CASCADE_TEST_SEED=$CASCADE_TEST_SEED)"
  CASCADE_REQUIRE_GPU=1 python3 -m pytest -q -p no:cacheprovider -rfEs \
    python_bindings/tests > "$O/pytest.log" 2>&1 || rc=1
  grep -E "passed|failed|^FAILED|^ERROR" "$O/pytest.log" | tail -25
  echo "== examples/python/multi_level_cascade.py"
  python3 examples/python/multi_level_cascade.py 2>&1 | tee "$O/example.log"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  echo "== python3 -m benchmarks.python.host_overhead"
  python3 -m benchmarks.python.host_overhead --flashinfer 2>&1 | tee "$O/host_overhead.log"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
fi
if [[ $WHAT == parity ]]; then
  echo "== pytest: FlashInfer parity (GPU tests required)"
  CASCADE_REQUIRE_GPU=1 python3 -m pytest -q -p no:cacheprovider -rfEs \
    python_bindings/tests/gpu/test_gpu_parity.py python_bindings/tests/gpu/test_gpu_leak.py \
    python_bindings/tests/gpu/test_gpu_custom_mask.py python_bindings/tests/test_parity.py > "$O/parity-pytest.log" 2>&1 || rc=1
  grep -E "passed|failed|^FAILED|^ERROR" "$O/parity-pytest.log" | tail -25
  echo "== python3 -m benchmarks.python.ragged"
  python3 -m benchmarks.python.ragged --results benchmarks/RESULTS.md 2>&1 |
    tee "$O/ragged-bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  cp benchmarks/RESULTS.md "$O/RESULTS.md"
  if [ -f "$(dirname "$C")/flashinfer/kernels.tar.xz" ]; then
    echo "== FlashInfer v0.5.3 attention tests (test/Integration/flashinfer/run.sh)"
    CARRY=$(dirname "$C") OUT=$O bash test/Integration/flashinfer/run.sh || rc=1
  else
    echo "(no $(dirname "$C")/flashinfer: FlashInfer's tests not run;" \
         "test/Integration/flashinfer/prepare.sh makes it)"
  fi
fi
if [[ $WHAT == frameworks ]]; then
  # One device call of at most ~9 minutes: every step checks the time left
  # (FRAMEWORKS_BUDGET_S from the start of this script) and the later ones
  # are skipped, saying so, rather than cut off mid-way.
  budget=${FRAMEWORKS_BUDGET_S:-520}
  left() { echo $((budget - SECONDS)); }
  python3 -c 'import transformers; print("transformers", transformers.__version__)' \
    | tee -a "$O/env.txt"
  echo "== pytest: torch ops (opcheck, fullgraph, reduce-overhead), transformers backend (CPU + GPU)"
  # -rA: every test's outcome by name (and the printed agreement reports).
  CASCADE_REQUIRE_GPU=1 timeout 240 python3 -m pytest -q -p no:cacheprovider -rA \
    python_bindings/tests/test_torch_ops.py python_bindings/tests/test_transformers_backend.py \
    python_bindings/tests/gpu/test_gpu_frameworks.py python_bindings/tests/gpu/test_gpu_merge.py \
    > "$O/pytest-frameworks.log" 2>&1
  prc=$?
  # 139 (SIGSEGV) after a passing summary is the interpreter crashing at
  # exit; 124: pytest ran past its 240 s.
  echo "pytest exit status $prc" | tee -a "$O/pytest-frameworks.log"
  [ "$prc" = 0 ] || rc=1
  grep -E "^(PASSED|FAILED|ERROR|SKIPPED).*(frameworks|torch_ops|transformers)|passed|failed" \
    "$O/pytest-frameworks.log" | tail -60
  echo "== python3 -m benchmarks.python.host_overhead (every run()/merge entry point)"
  timeout 150 python3 -m benchmarks.python.host_overhead 2>&1 | tee "$O/host_overhead.log"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  echo "== python3 -m benchmarks.python.generation --quick ($(left) s left)"
  # The correctness runs (planted bigram and plain random weights, fp16 and
  # bf16, ~40 s each) start only while 60 s of the budget remain.
  timeout $(( $(left) + 20 )) python3 -m benchmarks.python.generation --quick \
    --results benchmarks/RESULTS.md \
    --plots benchmarks/python/plots --budget-s $(( $(left) - 60 )) 2>&1 \
    | tee "$O/generation-bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  tar -czf "$O/frameworks-artifacts.tgz" benchmarks/RESULTS.md benchmarks/python/plots
  if [ "$(left)" -gt 75 ]; then
    echo "== examples/python/shared_prompt_generation.py --compare-sdpa ($(left) s left)"
    timeout $(( $(left) + 30 )) python3 examples/python/shared_prompt_generation.py \
      --compare-sdpa 2>&1 \
      | tr '\r' '\n' | grep -v "step/s\]$" | tee "$O/generation-example.log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  else
    echo "(examples/python/shared_prompt_generation.py skipped: $(left) s left)"
  fi
  echo "frameworks: $SECONDS s in all"
fi
if [[ $WHAT == all || $WHAT == bench ]]; then
  echo "== python3 -m benchmarks.python.bench"
  python3 -m benchmarks.python.bench --results benchmarks/RESULTS.md \
    --plots benchmarks/python/plots 2>&1 | tee "$O/bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  # One archive: the device tool brings back only a few files.
  tar -czf "$O/bench-artifacts.tgz" benchmarks/RESULTS.md benchmarks/python/plots
fi
exit $rc
