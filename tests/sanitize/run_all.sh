#!/usr/bin/env bash
# compute-sanitizer over the GPU code: memcheck, racecheck, initcheck and synccheck, each over
# every driver of tests/sanitize/drivers.py (every GPU method x precision on odd shapes, the
# filters, the host-array staging pipeline, the Dask gather, the astropy NaN kernels). Each
# driver checks its results, so a fault without a report fails too. "memory" (no sanitizer)
# runs each driver three times and fails if device memory grows after the first round: the leak
# check (memcheck's own, at exit, also lists what the CUDA libraries keep for the process's
# life, so memcheck runs without it).
#
#   tests/sanitize/run_all.sh [tool ...]     (default: all four tools, then memory)
#   STAGE_TIMEOUT=1800 (seconds per tool x driver), DRIVERS="methods filters ..." to narrow
#
# Prints one line per tool x driver: its sanitizer error count and the driver's status; exits
# non-zero if any stage reported an error, failed a check, or timed out.
set -uo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
STAGE_TIMEOUT=${STAGE_TIMEOUT:-1800}
DRIVERS=${DRIVERS:-"methods filters staging dask astropy"}
TOOLS=("$@")
[ ${#TOOLS[@]} -eq 0 ] && TOOLS=(memcheck racecheck initcheck synccheck memory)
LOGDIR=${LOGDIR:-$(mktemp -d /tmp/tc-sanitize.XXXXXX)}
mkdir -p "$LOGDIR"
bad=0
for tool in "${TOOLS[@]}"; do
  extra=()
  case $tool in
    racecheck) extra=(--racecheck-report analysis) ;;
  esac
  for d in $DRIVERS; do
    log="$LOGDIR/$tool-$d.log"
    if [ "$tool" = memory ]; then
      timeout "$STAGE_TIMEOUT" "$PYTHON" tests/sanitize/drivers.py "$d" --memory > "$log" 2>&1
      rc=$?
      echo "ERROR SUMMARY: $(grep -c "growth.*FAIL" "$log") errors" >> "$log"
    else
      timeout "$STAGE_TIMEOUT" compute-sanitizer --tool "$tool" "${extra[@]}" \
        --target-processes all --error-exitcode 99 \
        "$PYTHON" tests/sanitize/drivers.py "$d" > "$log" 2>&1
      rc=$?
    fi
    # racecheck sums up in its own line: "RACECHECK SUMMARY: N hazards displayed (E errors, ...)"
    errors=$(grep -Eo "ERROR SUMMARY: [0-9]+|hazards displayed \([0-9]+ errors" "$log" | tail -1 \
             | grep -Eo "[0-9]+" | tail -1 || echo "?")
    [ -n "$errors" ] || errors="?"
    hazards=$(grep -Eo "RACECHECK SUMMARY: [0-9]+ hazard" "$log" | grep -Eo "[0-9]+" | tail -1)
    failed=$(grep -Eo "^[0-9]+ failed checks" "$log" | grep -Eo "^[0-9]+" || echo "?")
    status=ok
    if [ $rc -eq 124 ]; then status="TIMEOUT after ${STAGE_TIMEOUT}s"; fi
    if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then status="FAIL (exit $rc)"; fi
    [ "$errors" != "0" ] && [ "$status" = ok ] && status="FAIL"
    printf '%-10s %-8s errors %-4s %s failed checks %-3s %s  (%s)\n' "$tool" "$d" "$errors" \
      "${hazards:+hazards $hazards}" "$failed" "$status" "$log"
    [ "$status" = ok ] || bad=1
  done
done
exit $bad
