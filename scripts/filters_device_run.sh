#!/usr/bin/env bash
# One device round for tensorconv.filters (issue #15): build + install (device-setup.sh), the
# filter tests (+ the API/auto tests the registry rows touch), tensorconv-bench --preset filters, and an ncu
# pipe profile of the three bilateral kernels at one radius. Run from the worktree root on the
# GPU machine:  bash scripts/filters_device_run.sh   (logs and JSON under $OUT)
set -u
OUT=${OUT:-/tmp/filters_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
ln -sfn ../../.shared .shared
ln -sfn ../../.whl .whl
source .shared/tools/device-setup.sh > "$OUT/build.txt" 2>&1 || { tail -40 "$OUT/build.txt"; exit 1; }
python3 -c 'import tensorconv; print(tensorconv.__file__)'
t0=$(date +%s)
timeout "${TEST_S:-150}" python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_filters.py \
  tests/test_api.py tests/test_auto.py tests/test_errors.py > "$OUT/pytest.txt" 2>&1
tail -4 "$OUT/pytest.txt"; echo "tests $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout "${BENCH_S:-200}" python3 -m tensorconv.bench --preset filters --out "$OUT" \
  --no-progress > "$OUT/bench.txt" 2>&1
grep -E "^\[|Error|error" "$OUT/bench.txt" | tail -8; echo "bench $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout "${NCU_S:-60}" ncu --kernel-name regex:bilateral --metrics \
gpu__time_duration.sum,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,\
sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,\
sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,\
sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,\
smsp__issue_active.avg.pct_of_peak_sustained_active,\
smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
  python3 benchmarks/harness/ncu_bilateral.py "${NCU_SIZE:-1024}" "${NCU_R:-7}" > "$OUT/ncu.txt" 2>&1
grep -E "bilateral_|pct|duration|inst_executed.sum" "$OUT/ncu.txt" | head -40
echo "ncu $(( $(date +%s) - t0 )) s"
