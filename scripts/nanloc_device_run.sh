#!/usr/bin/env bash
# Issue #17 items 4-6 on a lent GPU machine in one call: build, the NaN/inf and workspace tests
# with the suites they touch, memcheck of the repair pass, then the timings and workspace table
# (`tensorconv-bench --preset workspace-nonfinite`). Results under $OUT.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"; start=$SECONDS
if ! source .shared/tools/device-setup.sh > "$out/build.txt" 2>&1; then tail -n 40 "$out/build.txt"; exit 1; fi
echo "build: $((SECONDS - start)) s"; export TENSORCONV_CACHE=/tmp/tc-cache PYTHONUNBUFFERED=1
python3 -c "import tensorconv as tc; print(tc.__file__)"
timeout ${TESTS_S:-170} python3 -m pytest -q -rs -p no:cacheprovider -p no:benchmark -n 8 -m "not slow" \
  tests/test_nonfinite.py tests/test_workspace.py tests/test_im2tensor.py tests/test_fir.py \
  tests/test_gpu_core.py \
  > "$out/pytest.txt" 2>&1
echo "pytest rc=$? ($((SECONDS - start)) s)"
grep -E "^(FAILED|ERROR)" "$out/pytest.txt" | head -30
tail -n 3 "$out/pytest.txt"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 python3 tests/sanitize_gpu.py nonfinite \
  > "$out/memcheck_nonfinite.txt" 2>&1
echo "memcheck rc=$? ($((SECONDS - start)) s): $(grep -E 'ERROR SUMMARY|ALL OK|SOME FAILED' "$out/memcheck_nonfinite.txt" | tr '\n' ' ')"
timeout ${BENCH_S:-240} tensorconv-bench --preset workspace-nonfinite --no-progress \
  --out "$out/results" > "$out/bench.txt" 2>&1
echo "bench rc=$? ($((SECONDS - start)) s)"
tail -n 5 "$out/bench.txt"
