#!/usr/bin/env bash
# One device round for filters.gaussian's fused path (separable_boundary, issue #15): the
# standalone kernel check + timings (no package needed), build + install (device-setup.sh), the
# filter GPU tests, and the gaussian benchmark (cupyx, cuDNN, kornia in the same run). Run from
# the worktree root on the GPU machine:  bash scripts/gauss_device_run.sh   (logs, JSON under $OUT)
#   SKIP_BUILD=1: tensorconv already installed (after `source .shared/tools/device-setup.sh` in
#   the same command, so that TENSORCONV_DATA and PYTHONPATH are set), e.g.
#     OUT=$OUT/gauss SKIP_BUILD=1 bash scripts/gauss_device_run.sh
#   GAUSS_TAR=1: the logs and JSON as one $OUT/gauss.tgz (the device tool returns few files).
# The bench writes filters_<device>.json/.md (the Gaussian table)/_peers.png; redraw here with
# tensorconv-bench --report <filters_<device>.json>.
set -u
OUT=${OUT:-/tmp/gauss_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
t0=$(date +%s)
# The kernel check + variant timings (scripts/gauss2_variants.sh: carried binary or compiled).
OUT="$OUT" bash scripts/gauss2_variants.sh > "$OUT/harness.txt" 2>&1
cat "$OUT/harness.txt"
echo "harness $(( $(date +%s) - t0 )) s"
if [ -z "${SKIP_BUILD:-}" ]; then
  ln -sfn ../../.shared .shared
  ln -sfn ../../.whl .whl
  source .shared/tools/device-setup.sh > "$OUT/build.txt" 2>&1 || { tail -40 "$OUT/build.txt"; exit 1; }
fi
python3 -c 'import tensorconv; print(tensorconv.__file__)'
t0=$(date +%s)
timeout "${TEST_S:-200}" python3 -m pytest -q -p no:cacheprovider -n 16 -m gpu \
  tests/test_gaussian_fused.py tests/test_filters.py > "$OUT/pytest.txt" 2>&1
tail -4 "$OUT/pytest.txt"; echo "tests $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout "${BENCH_S:-200}" python3 -m tensorconv.bench --preset filters --parts gaussian \
  --rs 1,2,3,5,7,9,11,15,19,23 --cv2-rs "" --out "$OUT" --no-progress > "$OUT/bench.txt" 2>&1
grep -E "^\[|Error|error" "$OUT/bench.txt" | tail -8; echo "bench $(( $(date +%s) - t0 )) s"
if [ -n "${GAUSS_TAR:-}" ]; then
  (cd "$OUT" && tar czf gauss.tgz harness.txt variants.txt pytest.txt bench.txt filters_* \
     $( [ -f build.txt ] && echo build.txt ) && rm -f harness.txt variants.txt pytest.txt bench.txt \
     filters_* build.txt)
fi
