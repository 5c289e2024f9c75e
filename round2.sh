#!/usr/bin/env bash
# gauss3's round 2 in the lead's combined device call (harness only, prebuilt binary, <= 25 s):
# the one-block-per-tile variants 18-21 beside v3/v5/v15 at 32/64-row tiles (correctness of the
# selected variants against the float64 model + 4096^2 timings, bit-compared with the generic
# kernel), then ncu of the r = 11 default (v5, 64 rows) and of r = 5 (v3, 64 rows): pipes,
# issue, stall reasons, DRAM. Run from this tree's root; writes only under $OUT/gauss3/.
set -u
O="$OUT/gauss3"
mkdir -p "$O"
t0=$(date +%s)
SEPB_VARIANTS=1,3,5,15,18,19,20,21 SEPB_TH=32,64 HARNESS_S=12 OUT="$O" \
  timeout 13 bash scripts/gauss2_variants.sh > "$O/summary.txt" 2>&1
echo "harness rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^  r=|goal|^  \{|FAIL|DIFF" "$O/summary.txt" | head -20
t0=$(date +%s)
timeout 7 ncu --kernel-name regex:fixed_kernel --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section Occupancy --section ComputeWorkloadAnalysis \
  benchmarks/separable_boundary_check.bin one 11 5 64 5 3 64 > "$O/ncu.txt" 2>&1
echo "ncu sections rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 5 ncu --kernel-name regex:fixed_kernel --metrics \
'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio',sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
  benchmarks/separable_boundary_check.bin one 11 5 64 5 3 64 > "$O/ncu_stalls.txt" 2>&1
echo "ncu stalls rc=$? $(( $(date +%s) - t0 )) s"
exit 0
