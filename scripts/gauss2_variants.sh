#!/usr/bin/env bash
# One device run of the fused separable filter's variant table (issue #15, helper gauss2): the
# standalone harness benchmarks/harness/separable_boundary_check.cu checks every kernel variant against
# the float64 model of scipy and times each variant x tile height at 4096^2 fp32, sigma = r/2,
# r = 1, 2, 3, 5, 7, 9, 11, beside a D2D copy. No package build. From the worktree root:
#   OUT=$OUT bash scripts/gauss2_variants.sh
# Uses benchmarks/separable_boundary_check.bin when it is newer than every source (built on the
# dev machine with the command below, carried), else compiles (~45 s on the device's cores).
# SEPB_VARIANTS=0,1,3,5 (say) times only those variants; SEPB_USC=benchmarks/usc3_gauss.bin
# (benchmarks/harness/gaussian_usc_dump.py) adds the USC-SIPI fp32 MAPE per radius (gauss3).
set -u
OUT=${OUT:-/tmp/gauss2_out}
mkdir -p "$OUT"
BIN=benchmarks/separable_boundary_check.bin
SRCS="benchmarks/harness/separable_boundary_check.cu csrc/cuda/methods/filters/separable_boundary.cu csrc/cuda/methods/filters/separable_boundary_fixed.cu"
DEPS="$SRCS csrc/cuda/methods/filters/separable_boundary.cuh csrc/cuda/methods/filters/separable_boundary.hpp csrc/cuda/runtime/common.cuh csrc/cuda/runtime/sliding.cuh csrc/cuda/runtime/precision.cuh"
t0=$(date +%s)
if [ ! -x "$BIN" ] || [ -n "$(find $DEPS -newer "$BIN" 2>/dev/null)" ]; then
  NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  FL="-std=c++17 -O3 -arch=sm_90a -Icsrc --expt-relaxed-constexpr"
  BIN=/tmp/separable_boundary_check
  pids=""
  for f in $SRCS; do
    "$NVCC" $FL -c "$f" -o "/tmp/$(basename "$f").o" > "$OUT/compile_$(basename "$f").txt" 2>&1 &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p" || { cat "$OUT"/compile_*.txt | tail -30; exit 1; }; done
  "$NVCC" $FL /tmp/separable_boundary_check.cu.o /tmp/separable_boundary.cu.o \
    /tmp/separable_boundary_fixed.cu.o -o "$BIN" || exit 1
  echo "compiled in $(( $(date +%s) - t0 )) s"
fi
t1=$(date +%s)
timeout "${HARNESS_S:-120}" "$BIN" > "$OUT/variants.txt" 2>&1
rc=$?
echo "harness rc=$rc in $(( $(date +%s) - t1 )) s"
# The summary: per-variant correctness, the copy floor, the best per radius, the default table.
sed -n '/^correctness/,/^supported/p' "$OUT/variants.txt" | grep -v '^supported'
grep -E "^FAIL|d2d copy|error|^USC-SIPI|^  image" "$OUT/variants.txt" | head -30
sed -n '/^best per radius/,$p' "$OUT/variants.txt"
exit $rc
