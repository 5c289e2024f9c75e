"""Writes the input of benchmarks/harness/separable_boundary_check.cu's USC-SIPI check (SEPB_USC=FILE):
tests/test_gaussian_fused.py's images (the first three USC-SIPI images, at most 512^2) in float64
and filters.gaussian's weights for sigma = r / 2, r = 1..11 (the fused filter's radii in fp32),
so the harness measures on the GPU the MAPE that test asserts, per radius, without the package.

  python benchmarks/harness/gaussian_usc_dump.py [FILE]   (default benchmarks/harness/usc3_gauss.bin, untracked)

Layout (little-endian): int32 n_images; per image int32 h, w, float64 pixels; int32 n_radii; per
radius int32 r, k, float64 weights (k = 2r + 1)."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from tensorconv.datasets import load_usc_sipi  # noqa: E402
from tensorconv.filters.gaussian import gaussian_kernel1d  # noqa: E402


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                              "usc3_gauss.bin")
    imgs = [np.ascontiguousarray(img[:512, :512], np.float64) for _, img in
            list(load_usc_sipi())[:3]]
    with open(path, "wb") as f:
        f.write(np.int32(len(imgs)).tobytes())
        for img in imgs:
            f.write(np.array(img.shape, np.int32).tobytes())
            f.write(img.astype("<f8").tobytes())
        radii = range(1, 12)
        f.write(np.int32(len(radii)).tobytes())
        for r in radii:
            w = gaussian_kernel1d(r / 2.0, 0, r)[::-1]
            f.write(np.array([r, len(w)], np.int32).tobytes())
            f.write(np.ascontiguousarray(w, "<f8").tobytes())
    print(f"{path}: {len(imgs)} images, radii 1..11")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
