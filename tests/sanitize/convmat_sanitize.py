"""One call of each convmat / convmat_rows kernel instantiation on small shapes, for
compute-sanitizer (memcheck, racecheck); exits non-zero when a result is wrong.

    compute-sanitizer --tool memcheck python3 tests/sanitize/convmat_sanitize.py"""
import sys

import numpy as np
import scipy.signal

import tensorconv as tc
from tensorconv.metrics import relative_l2

BOUND = {"fp16": 3e-2, "fp16fp32": 5e-3, "bf16": 3e-2}
# first form, second form (tall kernel), kernel as large as the image, ragged multi-CTA tiles
SHAPES = [((37, 71), (5, 4)), ((70, 40), (9, 3)), ((20, 19), (20, 19)), ((270, 290), (17, 40))]


def main():
    rng = np.random.default_rng(0)
    ok = True
    for method in ("convmat", "convmat_rows"):
        for p in ("fp16", "fp16fp32", "bf16"):
            for ishape, kshape in SHAPES:
                image, kernel = rng.standard_normal(ishape), rng.standard_normal(kshape)
                out = tc.correlate2d(image, kernel, "valid", method=method, precision=p)
                err = relative_l2(out, scipy.signal.correlate2d(image, kernel, "valid"))
                good = err <= BOUND[p]
                ok &= good
                print(f"{method:12s} {p:9s} {ishape} {kshape}: rel_l2 {err:.2e} "
                      f"{'ok' if good else 'FAIL'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
