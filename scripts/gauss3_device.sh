#!/usr/bin/env bash
# gauss3's second device run (harness only, no build): the one-block-per-tile variants (18-21)
# beside the defaults, then an ncu profile of the r = 11 default (v5, 64 rows: 0.096 ms) and of
# r = 5 (v3, 64 rows: 0.064 ms) for contrast: pipes, issue, stalls, DRAM. From the worktree root:
#   OUT=$OUT bash scripts/gauss3_device.sh
set -u
OUT=${OUT:-/tmp/gauss3_out}
mkdir -p "$OUT"
SEPB_VARIANTS=${SEPB_VARIANTS:-0,1,3,5,15,18,19,20,21} SEPB_USC=${SEPB_USC:-benchmarks/usc3_gauss.bin} \
  HARNESS_S=${HARNESS_S:-90} OUT=$OUT bash scripts/gauss2_variants.sh
t0=$(date +%s)
timeout "${NCU_S:-60}" ncu --kernel-name regex:fixed_kernel --section SpeedOfLight \
  --section WarpStateStats --section SchedulerStats --section Occupancy --metrics \
gpu__time_duration.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,\
smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__thread_inst_executed_per_inst_executed.ratio \
  benchmarks/separable_boundary_check.bin one 11 5 64 5 3 64 > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^one:|fixed_kernel|Duration|Throughput|pct|Stall|stall|Issue|Eligible|Active Warps|inst_executed|wavefronts|ratio|Warp Cycles" "$OUT/ncu.txt" | head -80
