#!/usr/bin/env bash
# Issue #17 items 1-3 on the GPU machine: build + install, the toeplitz_tc / auto tests and the
# USC-SIPI accuracy rows of toeplitz_tc, then `tensorconv-bench --preset tc-fp` (a plan's call on
# device arrays, peers in the same run). Run from the tree's root with .shared and .whl beside it;
# writes under $OUT.
set -u
source .shared/tools/device-setup.sh > "$OUT/build.txt" 2>&1 || { tail -40 "$OUT/build.txt"; exit 1; }
python3 -c 'import tensorconv; print(tensorconv.__file__)'
timeout 240 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_toeplitz_tc.py tests/test_auto.py \
  tests/test_api.py "tests/test_accuracy.py::test_mape_usc_sipi" -k "toeplitz or auto or api" \
  -rs > "$OUT/pytest.txt" 2>&1
tail -8 "$OUT/pytest.txt"
timeout ${BENCH_S:-240} tensorconv-bench --preset tc-fp --no-progress --out "$OUT/bench" \
  ${BENCH_ARGS:-} > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"
tail -3 "$OUT/bench.txt"
