#!/usr/bin/env bash
# The GPU core's checks on a lent GPU machine, in one go (scripts/README.md):
#   bash scripts/gpu_core_device_run.sh "tests sanitize bench"   (from the repo root copy)
#   BENCH_ARGS="--sizes 4096 --methods separable --no-e2e" bash scripts/gpu_core_device_run.sh \
#     "tests bench ncu_mix"                                       (separable only; ncu_sep: stalls)
# Results under $OUT: tests.txt, memcheck.txt, racecheck.txt, bench.txt, gpu_core.json,
# accuracy.txt, report/accuracy.{json,md} (ncu.txt with the ncu phase).
set -u
PHASES=${1:-"tests sanitize bench"}
OUT=${OUT:-/tmp/out}
[ -e .shared ] || ln -sfn ../../.shared .shared
t0=$(date +%s)
source .shared/tools/device-setup.sh > /tmp/build.txt 2>&1 || { tail -40 /tmp/build.txt; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"; tail -1 /tmp/build.txt  # ($OUT returns at most 8 files)
export TENSORCONV_REPORT_DIR=$OUT/report TENSORCONV_CACHE=/tmp/tc-cache PYTHONUNBUFFERED=1
# TIFF -> FITS once, outside pytest (the machine's newer NumPy makes tifffile warn, and the
# tests treat warnings as errors); the tests then read the FITS files.
python3 -W ignore -m tensorconv.datasets convert "$TENSORCONV_DATA/usc-sipi-misc" \
  /tmp/tc-fits/usc-sipi-misc > /dev/null && export TENSORCONV_DATA=/tmp/tc-fits/usc-sipi-misc
for ph in $PHASES; do
  case $ph in
    tests)
      timeout ${TESTS_S:-240} python3 -m pytest -q -rs -p no:cacheprovider tests/test_gpu_core.py \
        tests/test_methods.py -k "${TESTS_K:-naive or separable or fft or gpu_core}" > "$OUT/tests.txt" 2>&1
      echo "tests rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "passed|failed|error" "$OUT/tests.txt" | tail -3
      grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | head -30 ;;
    accuracy)
      timeout ${ACC_S:-300} python3 -m pytest -q -rs -p no:cacheprovider tests/test_accuracy.py \
        -k "naive or separable or fft" > "$OUT/accuracy.txt" 2>&1
      echo "accuracy rc=$? ($(( $(date +%s) - t0 )) s)"; tail -3 "$OUT/accuracy.txt" ;;
    sanitize)
      for tool in memcheck racecheck; do
        timeout ${SAN_S:-150} compute-sanitizer --tool $tool python3 tests/sanitize_gpu.py \
          > "$OUT/$tool.txt" 2>&1
        echo "$tool rc=$? ($(( $(date +%s) - t0 )) s)"; tail -2 "$OUT/$tool.txt"
      done ;;
    ncu)
      timeout ${NCU_S:-90} ncu --section SpeedOfLight --section WarpStateStats \
        --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
        -c 3 -k regex:"shmem_kernel|row_pass|column_pass" python3 benchmarks/harness/ncu_gpu_core.py \
        > "$OUT/ncu.txt" 2>&1
      echo "ncu rc=$? ($(( $(date +%s) - t0 )) s)" ;;
    ncu_mix)  # instruction mix of separable's fused pass (fp32 Gaussian k=55 and k=3)
      timeout ${NCU_S:-120} ncu --metrics sass__inst_executed_per_opcode,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active \
        --print-metric-instances details -k regex:fused_pass -c 2 python3 benchmarks/harness/ncu_gpu_core.py \
        > "$OUT/ncu_mix.txt" 2>&1
      echo "ncu_mix rc=$? ($(( $(date +%s) - t0 )) s)" ;;
    ncu_sep)  # separable's fused pass, fp32 Gaussian k=55: where the time goes
      timeout ${NCU_S:-120} ncu --section SpeedOfLight --section WarpStateStats \
        --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
        --metrics sass__inst_executed_per_opcode,smsp__issue_active.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
        -k regex:fused_pass -c 1 python3 benchmarks/harness/ncu_gpu_core.py > "$OUT/ncu_sep.txt" 2>&1
      echo "ncu_sep rc=$? ($(( $(date +%s) - t0 )) s)" ;;
    bench)
      timeout ${BENCH_S:-240} tensorconv-bench --preset gpu-core --no-progress --out "$OUT/bench" \
        --budget-s ${BENCH_BUDGET:-180} ${BENCH_ARGS:-} > "$OUT/bench.txt" 2>&1
      echo "bench rc=$? ($(( $(date +%s) - t0 )) s)"; tail -3 "$OUT/bench.txt" ;;
  esac
done
