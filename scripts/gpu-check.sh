#!/usr/bin/env bash
# GPU check of an installed tensorconv on any CUDA machine, from the repository root:
#   bash scripts/gpu-check.sh [OUTDIR]
# Stages (each under its own time limit, its output in OUTDIR/<stage>.txt, one summary line in
# OUTDIR/summary.txt and on stdout):
#   tests     pytest -m gpu (PYTEST_WORKERS=N: pytest -n N, needs pytest-xdist; PYTEST_ARGS: more)
#   sanitize  SANITIZE=1: compute-sanitizer's memcheck, racecheck, initcheck and synccheck, and a
#             device-memory growth check (memory), over
#             the drivers of tests/sanitize/drivers.py (tests/sanitize/run_all.sh)
#   bench     BENCH_PRESETS="gpu-core tc-fp ...": tensorconv-bench --preset P --out OUTDIR/bench
#             (BENCH_ARGS: more arguments for every preset)
# OUTDIR: the argument, else $GPU_CHECK_OUT, else ./gpu-check-out.
# Time limits in seconds: TESTS_S (1800), SAN_S (600 per driver and tool), BENCH_S (1200 per preset).
# WARM_REFS=N first fills the accuracy suite's scipy reference cache with N processes.
# Exit status: 0 when every stage that ran passed.
set -u
out=${1:-${GPU_CHECK_OUT:-./gpu-check-out}}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
summary="$out/summary.txt"
: > "$summary"
t0=$(date +%s)
failed=0

# stage NAME LIMIT CMD...: runs CMD under `timeout LIMIT`, output in $out/NAME.txt.
stage() {
  local name=$1 limit=$2
  shift 2
  local s rc
  s=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1
  rc=$?
  local last
  last=$(grep -E 'passed|failed|ERROR SUMMARY|RACECHECK SUMMARY|ALL OK|SOME FAILED|wrote' \
           "$out/$name.txt" | tail -n 1 | cut -c1-160)
  local what="rc=$rc"
  [ "$rc" -eq 124 ] && what="timed out after ${limit} s"
  printf '%-28s %-22s %5d s  %s\n' "$name" "$what" "$(( $(date +%s) - s ))" "$last" | tee -a "$summary"
  [ "$rc" -ne 0 ] && failed=1
  return 0
}

{ date -u +"start %Y-%m-%dT%H:%M:%SZ"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; } \
  | tee -a "$summary"
"$py" -c "import tensorconv as tc; print(tc.methods_table())" > "$out/methods.txt" 2>&1 \
  || { echo "tensorconv does not import: see $out/methods.txt" | tee -a "$summary"; exit 1; }

if [ -n "${WARM_REFS:-}" ]; then
  stage warm_refs "${TESTS_S:-1800}" "$py" scripts/warm_scipy_refs.py "$WARM_REFS"
fi

workers=()
[ -n "${PYTEST_WORKERS:-}" ] && workers=(-n "$PYTEST_WORKERS")
# shellcheck disable=SC2086
stage tests "${TESTS_S:-1800}" "$py" -m pytest -q -rfEs -m gpu -p no:cacheprovider "${workers[@]}" \
  ${PYTEST_ARGS:-} tests

if [ -n "${SANITIZE:-}" ]; then
  if command -v compute-sanitizer > /dev/null; then
    # tests/sanitize/run_all.sh: every driver (methods, filters, staging, dask, astropy) under
    # one tool, a line per driver; its logs under OUTDIR/sanitize
    for tool in memcheck racecheck initcheck synccheck memory; do
      stage "sanitize_$tool" "$(( 5 * ${SAN_S:-600} ))" env LOGDIR="$out/sanitize" \
        STAGE_TIMEOUT="${SAN_S:-600}" PYTHON="$py" bash tests/sanitize/run_all.sh "$tool"
    done
  else
    echo "sanitize: compute-sanitizer not on PATH, skipped" | tee -a "$summary"
  fi
fi

for preset in ${BENCH_PRESETS:-}; do
  # shellcheck disable=SC2086
  stage "bench_$preset" "${BENCH_S:-1200}" tensorconv-bench --preset "$preset" --no-progress \
    --out "$out/bench" ${BENCH_ARGS:-}
done

echo "total $(( $(date +%s) - t0 )) s; $([ $failed -eq 0 ] && echo 'all stages passed' || echo 'some stage failed')" \
  | tee -a "$summary"
exit $failed
