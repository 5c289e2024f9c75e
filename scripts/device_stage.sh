# Sourced by scripts/*_device_run.sh on the lent GPU machine: results go to $OUT; `stage LIMIT
# NAME CMD...` runs CMD under its own time limit (one slow stage cannot eat the others' time),
# its output in $OUT/NAME.txt and one line in $OUT/summary.txt, which starts with the clocks.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
stage() { local t=$1; shift; local name=$1; shift; local s=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1; local r=$?
  echo "== $name: exit $r in $(( $(date +%s) - s )) s" | tee -a "$OUT/summary.txt"; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv >> "$OUT/summary.txt"
