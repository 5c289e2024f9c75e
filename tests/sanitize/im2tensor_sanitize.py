"""Driver for compute-sanitizer (scripts/gpu-check.sh with SANITIZE=1): every im2tensor variant x
precision once on small odd shapes that reach every kernel path (staged and global S reads,
several x-blocks, ragged blocks), checked against scipy so a silent fault also fails."""

import os
import sys

import numpy as np
import scipy.signal

import tensorconv as tc
from tensorconv.metrics import relative_l2

VARIANTS = ("im2tensor", "im2tensor_shmem", "im2tensor_fused", "im2tensor_atomic",
            "im2tensor_cublas")
PRECISIONS = tc.PRECISIONS
# the last two reach the mma.sync path's carries between passes and edges between strips
SHAPES = [((37, 75), (5, 7)), ((21, 160), (3, 70)), ((310, 23), (300, 3)),
          ((70, 600), (15, 15)), ((50, 530), (25, 57))]
TOL = {"fp16": 3e-2, "fp16fp32": 5e-3, "bf16": 3e-2, "tf32": 5e-3, "fp32": 1e-5, "fp64": 1e-12}


def main(argv):
    variants = argv[1:] or VARIANTS
    precisions = os.environ.get("I2T_PRECISIONS", ",".join(PRECISIONS)).split(",")
    rng = np.random.default_rng(1)
    bad = 0
    for m in variants:
        for p in precisions:
            for ishape, kshape in SHAPES:
                image, kernel = rng.standard_normal(ishape), rng.standard_normal(kshape)
                out = tc.correlate2d(image, kernel, "valid", method=m, precision=p)
                err = relative_l2(out, scipy.signal.correlate2d(image, kernel, "valid"))
                ok = err <= TOL[p]
                bad += not ok
                print(f"{m:18s} {p:9s} {str(ishape):11s} {str(kshape):9s} relL2={err:.2e}"
                      f"{'' if ok else '  FAIL'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
