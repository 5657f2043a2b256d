#!/usr/bin/env bash
# Runs every fuzz target of a CASCADE_ENABLE_FUZZERS build for a bounded
# time: first over its committed regression inputs (test/Fuzz/regressions/
# TARGET, each must run clean), then mutating from its seed corpus.
#
#   test/Fuzz/run-fuzzers.sh FUZZ_BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]
#
# Prints one line per target, "PASS TARGET (N executions)" or "FAIL TARGET
# (...)", and ends with "fuzz: N passed, N failed". A failing target leaves
# its reproducer and log in FUZZ_BUILD_DIR/fuzz-work/TARGET. Environment:
# FUZZ_RUNS (stop after that many executions instead of the time limit),
# CASCADE_OPT (a cascade-opt that emits bundles for the manifest seeds;
# default FUZZ_BUILD_DIR/bin/cascade-opt).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:?usage: run-fuzzers.sh FUZZ_BUILD_DIR [SECONDS] [TARGET...]}
BUILD=$(cd "$BUILD" && pwd)
SECONDS_PER_TARGET=${2:-45}
shift $(($# >= 2 ? 2 : $#))
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] ||
  TARGETS=(plan_json_fuzzer capi_plan_fuzzer manifest_fuzzer mlir_passes_fuzzer)
WORK=$BUILD/fuzz-work
CASCADE_OPT=${CASCADE_OPT:-$BUILD/bin/cascade-opt}

# Writes the chunks of an MLIR file (split at "// -----") as seeds.
split_mlir() {
  local file=$1 dir=$2 base
  base=$(basename "$file" .mlir)
  awk -v out="$dir/$base" '
    BEGIN { n = 0; f = sprintf("%s.%d.mlir", out, n) }
    /^\/\/ -----/ { close(f); n++; f = sprintf("%s.%d.mlir", out, n); next }
    { print > f }' "$file"
}

# Writes the "//--- NAME.json" parts of split-file tests as seeds.
split_json_parts() {
  local file=$1 dir=$2 base
  base=$(basename "$file" .test)
  awk -v out="$dir/$base" '
    /^\/\/--- .*\.json$/ { if (f) close(f); f = sprintf("%s.%s", out, $2); next }
    /^\/\/--- / { f = ""; next }
    f { print > f }' "$file"
}

seed() {
  local target=$1 dir=$2
  rm -rf "$dir" && mkdir -p "$dir"
  case $target in
  plan_json_fuzzer)
    cp "$ROOT"/test/Unit/Runtime/Inputs/*.json "$dir"/
    cp "$ROOT"/test/Tools/cascade-plan/*.json "$dir"/ 2>/dev/null
    for t in "$ROOT"/test/Tools/cascade-plan/*.test; do split_json_parts "$t" "$dir"; done
    ;;
  manifest_fuzzer)
    cp "$ROOT"/test/Unit/Runtime/Inputs/bundle/manifest.json "$dir"/handwritten.json
    if [ -x "$CASCADE_OPT" ]; then
      # fp8-kv.mlir: fp8 KV kernels (f8e4m3 / f8e5m2 dtypes, f32 k_scale /
      # v_scale params).
      for f in "$ROOT"/examples/*.mlir "$ROOT"/test/Conversion/CascadeToGPU/fp8-kv.mlir; do
        local b
        b=$(basename "$f" .mlir)
        "$CASCADE_OPT" "$f" "--cascade-to-ptx=bundle-dir=$dir/.bundle-$b" \
          -o /dev/null 2>/dev/null &&
          cp "$dir/.bundle-$b/manifest.json" "$dir/$b.json"
        rm -rf "$dir/.bundle-$b"
      done
    fi
    ;;
  mlir_passes_fuzzer)
    for f in "$ROOT"/examples/*.mlir "$ROOT"/test/Dialect/Cascade/*.mlir \
             "$ROOT"/test/Conversion/CascadeToGPU/*.mlir; do
      [ -f "$f" ] && split_mlir "$f" "$dir"
    done
    ;;
  capi_plan_fuzzer) ;; # bytes, not text: starts from nothing
  esac
}

passed=0 failed=0
for target in "${TARGETS[@]}"; do
  bin=$BUILD/bin/$target
  if [ ! -x "$bin" ]; then
    echo "FAIL $target (not built: $bin)"; failed=$((failed + 1)); continue
  fi
  dir=$WORK/$target
  rm -rf "$dir" && mkdir -p "$dir/corpus"
  seed "$target" "$dir/seeds"
  log=$dir/log
  # Leak checks stay on (ASan's default); -timeout catches hangs.
  common=(-timeout=10 -rss_limit_mb=4096 -artifact_prefix="$dir/")
  regressions=$ROOT/test/Fuzz/regressions/$target
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    if ! "$bin" "${common[@]}" "$regressions"/* >"$dir/regressions.log" 2>&1; then
      echo "FAIL $target (a regression input fails: $dir/regressions.log)"
      failed=$((failed + 1)); continue
    fi
  fi
  limit=(-max_total_time="$SECONDS_PER_TARGET")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  if "$bin" "${common[@]}" "${limit[@]}" -print_final_stats=1 \
       "$dir/corpus" "$dir/seeds" >"$log" 2>&1; then
    runs=$(grep -oP 'stat::number_of_executed_units:\s*\K\d+' "$log" || echo '?')
    echo "PASS $target ($runs executions)"; passed=$((passed + 1))
  else
    echo "FAIL $target (see $log; reproducer in $dir/)"
    grep -m3 -E 'ERROR|SUMMARY|runtime error|check failed' "$log" | sed 's/^/  /'
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
