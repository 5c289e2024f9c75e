#!/usr/bin/env bash
# One device round of tensorconv.astropy (issue #20), from a carried copy of the tree after
# `source .shared/tools/device-setup.sh`: GPU tests, compute-sanitizer memcheck of its kernels,
# the GPU benchmark (the goal's point first; rows also printed to bench.txt as they come).
set -u
timeout 100 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_astropy.py > $OUT/pytest.txt 2>&1
tail -3 $OUT/pytest.txt
timeout 60 compute-sanitizer --tool memcheck python3 scripts/astropy_sanitize.py \
  > $OUT/sanitize.txt 2>&1; echo "sanitizer rc=$?"; tail -4 $OUT/sanitize.txt
timeout 100 tensorconv-bench --preset astropy --timing kernel --no-progress --out $OUT/bench \
  > $OUT/bench.txt 2>&1; echo "bench rc=$?"; tail -3 $OUT/bench.txt
