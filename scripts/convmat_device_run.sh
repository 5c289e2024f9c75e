#!/usr/bin/env bash
# One call on the lent GPU machine for convmat / convmat_rows (issue #16): tests, the Table 3
# benchmark beside the peers, sanitizer, ncu. Run from the repository root after
# `source .shared/tools/device-setup.sh`; results in $OUT. Each stage has its own time limit.
. "$(dirname "$0")/device_stage.sh"
# the accuracy suite's scipy references, in parallel, while the unit tests run on the GPU
[ -n "${ACC:-}" ] && { python3 scripts/warm_scipy_refs.py 12 > /tmp/warm_refs.txt 2>&1 & WARM=$!; }
stage ${T_TEST:-120} tests python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_convmat.py
tail -4 "$OUT/tests.txt" >> "$OUT/summary.txt"
[ -n "${WARM:-}" ] && wait $WARM  # the benchmark runs on a quiet host
stage ${T_BENCH:-150} bench tensorconv-bench --sizes 4096 --kernels 3,15,25,35,55 \
  --methods convmat,convmat_rows,im2tensor_fused,fft --precisions fp16,fp16fp32,bf16,fp32 \
  --peers torch_conv2d,torch_fft --budget-s 130 --no-progress --out "$OUT/bench"
tail -14 "$OUT/bench.txt" >> "$OUT/summary.txt"
stage ${T_SAN:-60} sanitize compute-sanitizer --tool memcheck --error-exitcode 3 --print-limit 10 \
  python3 scripts/convmat_sanitize.py
tail -2 "$OUT/sanitize.txt" >> "$OUT/summary.txt"
if [ -n "${NCU:-}" ]; then
  stage 60 ncu ncu --kernel-name "regex:convmat(_rows)?_kernel" --launch-count 4 --section SpeedOfLight \
    --section Occupancy --section ComputeWorkloadAnalysis python3 benchmarks/harness/convmat_ncu.py
fi
if [ -n "${ACC:-}" ]; then
  stage ${T_ACC:-150} accuracy env TENSORCONV_REPORT_DIR="$OUT/acc" python3 -m pytest -q \
    -p no:cacheprovider -n 12 tests/test_accuracy.py -k convmat
  tail -3 "$OUT/accuracy.txt" >> "$OUT/summary.txt"
fi
