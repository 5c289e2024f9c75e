#!/usr/bin/env bash
# The fused Gaussian's harness run as gauss3 left it (harness only, no build, ~10 s + ncu ~6 s):
# every variant's correctness against the float64 model, the USC-SIPI fp32 MAPE of the default
# per radius, 4096^2 timings of the default and its rivals (bit-compared with the generic
# kernel), then ncu of the r = 11 default (v10: one block per tile, 64 rows) and of r = 5 (v3).
# From the worktree root (benchmarks/usc3_gauss.bin: python benchmarks/harness/gaussian_usc_dump.py):
#   OUT=$OUT bash scripts/gauss3_device.sh
set -u
OUT=${OUT:-/tmp/gauss3_out}
mkdir -p "$OUT"
SEPB_VARIANTS=${SEPB_VARIANTS:-0,1,3,5,10,11} SEPB_TH=${SEPB_TH:-0,32,64} \
  SEPB_USC=${SEPB_USC:-benchmarks/usc3_gauss.bin} HARNESS_S=${HARNESS_S:-60} OUT=$OUT \
  bash scripts/gauss2_variants.sh
t0=$(date +%s)
timeout "${NCU_S:-30}" ncu --kernel-name regex:fixed_kernel --section SpeedOfLight \
  --section WarpStateStats --section SchedulerStats --section Occupancy \
  --section ComputeWorkloadAnalysis \
  benchmarks/separable_boundary_check.bin one 11 10 64 5 3 64 > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^one:|fixed_kernel|Duration|Throughput|Issue Slots|Eligible|Warp Cycles|Occupancy" \
  "$OUT/ncu.txt" | head -40
