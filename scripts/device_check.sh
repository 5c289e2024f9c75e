#!/usr/bin/env bash
# The whole package on a lent GPU machine in one call: build for sm_90a, then the full pytest
# suite (unit, GPU and the USC-SIPI accuracy suite for every method x precision); with
# SANITIZE=1 also compute-sanitizer memcheck + racecheck over every GPU kernel (SKIP_I2T_SAN=1:
# the GPU core's only); BENCH_ARGS="..." then runs `tensorconv-bench --preset gpu-core` with them.
#   rm -rf .shared && cp -a ../shared .shared     # here, once; carry .shared and .whl
#   bash scripts/device_check.sh                   # there; results under $OUT
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
t0=$(date +%s)
source .shared/tools/device-setup.sh > "$OUT/build.txt" 2>&1 || { tail -n 40 "$OUT/build.txt"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export TENSORCONV_REPORT_DIR=$OUT/report TENSORCONV_CACHE=/tmp/tc-cache TENSORCONV_REQUIRE_DATA=1
export PYTHONUNBUFFERED=1
python3 -c "import tensorconv as tc; print(tc.methods_table())"
workers=""
python3 -c "import xdist" 2>/dev/null && workers="-n 8"
timeout ${TESTS_S:-420} python3 -m pytest -q -rs -p no:cacheprovider -p no:benchmark $workers > "$OUT/pytest.txt" 2>&1
echo "pytest rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "^(FAILED|ERROR)" "$OUT/pytest.txt" | head -40
tail -n 4 "$OUT/pytest.txt"
if [ -n "${SANITIZE:-}" ]; then
  for tool in memcheck racecheck; do
    timeout ${SAN_S:-150} compute-sanitizer --tool $tool --error-exitcode 3 python3 tests/sanitize_gpu.py \
      > "$OUT/gpu_core_$tool.txt" 2>&1
    echo "gpu core $tool rc=$? ($(( $(date +%s) - t0 )) s): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|ALL OK|SOME FAILED' "$OUT/gpu_core_$tool.txt" | tr '\n' ' ')"
  done
  if [ -z "${SKIP_I2T_SAN:-}" ]; then  # SKIP_I2T_SAN=1: the GPU core's kernels only
    mkdir -p "$OUT/san"
    I2T_SAN_TIMEOUT=${SAN_S:-150} bash scripts/im2tensor_sanitize.sh "$OUT/san"
    echo "im2tensor sanitize rc=$? ($(( $(date +%s) - t0 )) s)"
  fi
fi
if [ -n "${BENCH_ARGS:-}" ]; then  # e.g. BENCH_ARGS="--sizes 4096 --methods separable --timing kernel"
  timeout ${BENCH_S:-240} tensorconv-bench --preset gpu-core --no-progress --out "$OUT/bench" \
    --budget-s ${BENCH_BUDGET:-180} $BENCH_ARGS > "$OUT/bench.txt" 2>&1
  echo "bench rc=$? ($(( $(date +%s) - t0 )) s)"; tail -3 "$OUT/bench.txt"
fi
