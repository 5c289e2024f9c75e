#!/usr/bin/env bash
# One device round for stacks / host staging (issue #23): GPU tests, a memcheck of the host
# pipeline on a small case, then tensorconv-bench --preset stacks. Run from the repository root after
# `source .shared/tools/device-setup.sh`; logs and results under $OUT.
set -u
python3 -c 'import tensorconv; print(tensorconv.__file__)'
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 tests/test_stacks.py > $OUT/pytest.txt 2>&1
tail -5 $OUT/pytest.txt
grep -E "^(FAILED|ERROR)" $OUT/pytest.txt | head -20
# (the lead's short form: python3 -m tensorconv.bench --preset stacks --host-only --out $OUT, ~10 s)
timeout 240 python3 -m tensorconv.bench --preset stacks --quick --out $OUT --no-progress > $OUT/bench.txt 2>&1
echo "bench rc=$?"; cat $OUT/bench.txt | tail -45
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 python3 -c "
import numpy as np, tensorconv as tc
rng = np.random.default_rng(0)
img = rng.random((3200, 2048))  # 3 row bands of ~8 MB.astype(np.float32)
p = tc.plan(rng.random((5, 5)), img.shape, mode='same', boundary='symm', method='naive_shmem', precision='fp32')
a = p(img); b = p(np.stack([img[:, :], img[::-1].copy()]))
assert np.array_equal(a, b[0]); print('memcheck case ok')
" > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"; tail -3 $OUT/memcheck.txt
