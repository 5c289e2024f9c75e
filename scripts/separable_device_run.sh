#!/usr/bin/env bash
# The separable method on a lent GPU machine in one call: build, its tests, its 4096^2 benchmark
# rows (peers in the same run) and, with NCU=1, an instruction mix of the fused kernel.
#   bash scripts/separable_device_run.sh      (repo root; carry .shared and .whl; results in $OUT)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source .shared/tools/device-setup.sh > /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
export TENSORCONV_CACHE=/tmp/tc-cache PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -q -x -p no:cacheprovider -p no:benchmark tests/test_gpu_core.py \
  tests/test_methods.py -k separable > "$OUT/tests.txt" 2>&1
echo "tests rc=$?"; tail -2 "$OUT/tests.txt"
timeout 200 python3 benchmarks/gpu_core.py --out "$OUT/separable.json" --sizes 4096 \
  --methods separable --no-e2e --budget-s 150 > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"; grep -E "separable|goal" "$OUT/bench.txt" | tail -10
if [ -n "${NCU:-}" ]; then
  timeout 120 ncu --metrics sass__inst_executed_per_opcode,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active \
    --print-metric-instances details -k regex:fused_pass -c 2 python3 benchmarks/ncu_gpu_core.py \
    > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$?"; grep -E "fused_pass|duration|issue_active|sass__inst" "$OUT/ncu.txt" | cut -c1-1200
fi
