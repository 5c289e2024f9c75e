"""CPU emulation of filters.gaussian's fp32 GPU arithmetic on USC-SIPI images against
scipy.ndimage.gaussian_filter in float64 (MAPE, %), per path 'auto' takes on a CUDA array:

  fused    (2r + 1 <= 23 taps, csrc/cuda/methods/filters/separable_boundary*.cu): axis 0 then axis 1, each
           output one fp32 FMA per tap in tap order from 0 (every kernel variant: bit-identical),
           weights rounded to fp32 once, the intermediate rounded to fp32;
  separable (beyond 23 taps: the registry's `separable` plan, csrc/cuda/methods/separable/): the kernel's
           SVD factors (python/tensorconv/_factors.py) in fp32, the row pass one fp32 FMA per
           tap, T rounded to fp32, the column pass on fp64 MMAs from 25 taps (exact products,
           fp64 sums, one rounding);
  fft      (what 'auto' picked from 27 taps before gauss3, the cost model's choice): cuFFT's
           fp32 stand-in, scipy.fft in single precision (pocketfft), for the record.

  python benchmarks/harness/gaussian_fp32_emulate.py [--all] [--bound 7e-6]
(--all: every USC-SIPI image whole, radii 1, 3, 7, 11, 23; default: the test's three images,
cropped to 512^2, radii 1..23). Exits 1 if a 'auto' path passes the bound.
(Emulated fp32 FMA: the product and sum in float64, rounded once to fp32: equal to fmaf except
for double rounding, ~2^-29 of cases.)"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import scipy.fft as sfft
import scipy.ndimage as ndi

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from tensorconv._factors import rank_factors  # noqa: E402
from tensorconv.datasets import load_usc_sipi  # noqa: E402
from tensorconv.filters.gaussian import gaussian_kernel1d  # noqa: E402
from tensorconv.metrics import mape  # noqa: E402


def fma_pass(xp, w32, axis, n):
    """Valid 1-D correlation of the padded fp32 array along axis: one fp32 FMA per tap, taps in
    order from 0."""
    shape = list(xp.shape)
    shape[axis] = n
    acc = np.zeros(shape, np.float32)
    for t, c in enumerate(w32.astype(np.float64)):
        sl = [slice(None)] * 2
        sl[axis] = slice(t, t + n)
        acc = (acc + c * xp[tuple(sl)].astype(np.float64)).astype(np.float32)
    return acc


def fused(img, w, r):
    w32 = w.astype(np.float32)
    x = np.pad(img.astype(np.float32), ((r, r), (0, 0)), mode="symmetric")
    mid = fma_pass(x, w32, 0, img.shape[0])
    return fma_pass(np.pad(mid, ((0, 0), (r, r)), mode="symmetric"), w32, 1, img.shape[1])


def separable(img, w, r):
    col, row = rank_factors(np.outer(w, w), "fp32")
    assert col.shape[0] == 1
    a, b = col[0].astype(np.float32), row[0].astype(np.float32)
    xp = np.pad(img.astype(np.float32), r, mode="symmetric")
    t = fma_pass(xp, b, 1, img.shape[1])
    out = np.zeros(img.shape)
    if len(a) >= 25:  # DMMA column pass: exact products, fp64 sums, one rounding
        for u, c in enumerate(a.astype(np.float64)):
            out += c * t[u:u + img.shape[0]].astype(np.float64)
        return out.astype(np.float32)
    return fma_pass(t, a, 0, img.shape[0])


def fft32(img, w, r):
    xp = np.pad(img.astype(np.float32), r, mode="symmetric")
    k = np.outer(w, w)[::-1, ::-1].astype(np.float32)
    h, wd = xp.shape
    o = sfft.irfft2(sfft.rfft2(xp) * sfft.rfft2(k, s=(h, wd)), s=(h, wd))
    return o[2 * r:, 2 * r:][:img.shape[0], :img.shape[1]]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--bound", type=float, default=7e-6)
    args = ap.parse_args()
    imgs = list(load_usc_sipi())
    if args.all:
        radii = (1, 3, 7, 11, 23)
    else:
        imgs = [(n, i[:512, :512]) for n, i in imgs[:3]]
        radii = range(1, 24)
    worst = {}
    bad = 0
    for name, img in imgs:
        line = []
        for r in radii:
            w = gaussian_kernel1d(r / 2.0, 0, r)[::-1]
            ref = ndi.gaussian_filter(img, r / 2.0, radius=r)
            path = "fused" if 2 * r + 1 <= 23 else "separable"
            m = mape((fused if path == "fused" else separable)(img, w, r).astype(np.float64), ref)
            worst[path] = max(worst.get(path, 0.0), m)
            bad += m > args.bound
            s = f"r{r} {m:.2e}"
            if path == "separable":
                f = mape(fft32(img, w, r).astype(np.float64), ref)
                worst["fft"] = max(worst.get("fft", 0.0), f)
                s += f" (fft {f:.2e})"
            line.append(s)
        print(f"{name} {img.shape}: " + ", ".join(line), flush=True)
    print("worst MAPE % per path: " + ", ".join(f"{k} {v:.3g}" for k, v in worst.items()) +
          f"; bound {args.bound:g}: {'met' if not bad else f'{bad} cases above'}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
