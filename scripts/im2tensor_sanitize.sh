#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck over every im2tensor variant x precision
# (scripts/im2tensor_sanitize.py). Exit status non-zero on any reported error.
# Usage: scripts/im2tensor_sanitize.sh [logdir]
set -u
dir=${1:-.}
here=$(cd "$(dirname "$0")" && pwd)
rc=0
for tool in memcheck racecheck; do
  vars=""; [ $tool = racecheck ] && vars="im2tensor im2tensor_shmem im2tensor_fused im2tensor_atomic"  # cuBLAS internals are not ours
  timeout ${I2T_SAN_TIMEOUT:-300} compute-sanitizer --tool $tool --error-exitcode 3 --print-limit 20 \
    python3 "$here/im2tensor_sanitize.py" $vars > "$dir/sanitize_$tool.txt" 2>&1
  r=$?
  echo "$tool: exit $r; $(grep -c 'FAIL' "$dir/sanitize_$tool.txt") accuracy failures;" \
       "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$dir/sanitize_$tool.txt" | tail -1)"
  [ $r -ne 0 ] && rc=1
done
exit $rc
