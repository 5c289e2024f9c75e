#!/usr/bin/env bash
# One call on the lent GPU machine: build, im2tensor tests, benchmarks, sanitizer, ncu.
# Run from the repository root after `source .shared/tools/device-setup.sh`; results in $OUT.
# Stages have their own time limits so one slow stage cannot eat the others' time.
. "$(dirname "$0")/device_stage.sh"
stage ${T_TEST:-150} tests python3 -m pytest -q --maxfail=8 -p no:cacheprovider tests/test_im2tensor.py \
  -m "not slow" ${PYTEST_EXTRA:-}
tail -3 "$OUT/tests.txt" >> "$OUT/summary.txt"
stage ${T_BENCH:-240} bench python3 -m tensorconv.bench --preset im2tensor --out "$OUT" --no-progress \
  ${BENCH_ARGS:-}
stage ${T_SAN:-150} sanitize env I2T_SAN_TIMEOUT=70 scripts/im2tensor_sanitize.sh "$OUT"
cat "$OUT/sanitize.txt" >> "$OUT/summary.txt"
if [ -n "${NCU:-}" ]; then
  stage 90 ncu ncu --kernel-name regex:pblock_kernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis python3 -m tensorconv.bench --sizes 4096 --kernels 15,55 \
    --precisions fp16fp32 --methods im2tensor --peers none --runs 3 --out /tmp/ncu_bench --no-progress
fi
grep -A12 "table3 · kernel · 4096x4096 · fp16fp32" "$OUT"/im2tensor_*.md >> "$OUT/summary.txt"
