"""When method='auto' may answer with `fft_cpu` on the CPU: the accuracy rule behind the choice,
so that an 'auto' result keeps scipy's per-output accuracy whatever a machine's calibration
(tensorconv.calibrate_cpu()) says about speed.

Error model. A product of spectra rounds every output by about C eps max_i L_i, where
L_i = sum |x| |k| over output i's window (measured C <= 10 on random data, signed or not,
image sides 64..2048, kernel sides 5..63, fp32 and fp64); a direct sum rounds output i by about
eps L_i. Where some L_i is far below the largest, the transform's error there is that many times
the direct sum's: an impulse image with a kernel whose taps span 1e-36..1 (scipy's
Testfirwin_2d), regions of exact zeros (an exact 0 from the direct sum, ~1e-17 from the
transform), zero-padded corners in 'full' mode. And where image and kernel hold integers only,
the direct sum is exact (below 2**53 in fp64, 2**24 in fp32), the transform is not.

The rule, given that the cost model predicted fft_cpu faster:
  1. at plan time (choose_method): fft_cpu only where its predicted time, including the check
     below, is at most 1 / MIN_GAIN of direct's (borderline choices, which differ between
     machines and calibrations, stay with the direct sum);
  2. per call (FftGuard, on the padded image): an image with NaN/inf, or integer values only
     with a kernel of integers only, runs direct (before any transform);
  3. after the transform: L = |x| correlated with |k| (the result itself when image and kernel
     are each of one sign, else one more transform of |x|); where min L < max L / MAX_RANGE the
     call runs direct instead. MAX_RANGE = 1 / (10 sqrt(eps)) of the transform's precision
     (fp64 6.7e6, fp32 and fp16fp32 290) keeps every output's transform error below sqrt(eps)
     of its own scale L_i (half the digits: within the default rtol of scipy's tests,
     4 sqrt(eps)).
A stack is checked image by image; an image that fails runs direct alone.
"""

from __future__ import annotations

import math

import numpy as np

MIN_GAIN = 2.0
_C = 10.0  # measured transform error / (eps max L), with headroom
_EPS = {"fp64": float(np.finfo(np.float64).eps), "fp32": float(np.finfo(np.float32).eps),
        "fp16fp32": float(np.finfo(np.float32).eps)}
MAX_RANGE = {p: 1.0 / (_C * math.sqrt(e)) for p, e in _EPS.items()}
_SAMPLE = 4096  # values tested first for integrality (a float image fails at once)


def one_signed(a: np.ndarray) -> int:
    """+1 where every value is >= 0, -1 where every value is <= 0, else 0."""
    if a.size == 0:
        return 1
    lo, hi = a.min(), a.max()
    return 1 if lo >= 0 else (-1 if hi <= 0 else 0)


def integer_valued(a: np.ndarray) -> bool:
    """Every value an integer (a finite array; a small sample first, so that a float image
    answers at once)."""
    flat = a.reshape(-1) if a.flags.c_contiguous else None
    if flat is not None and flat.size > _SAMPLE:
        s = flat[:_SAMPLE]
        if not np.array_equal(s, np.rint(s)):
            return False
    return bool(np.array_equal(a, np.rint(a)))


def predicted_cost(t_fft: float, kernel: np.ndarray) -> float:
    """fft_cpu's predicted time with the check of rule 3 (one more transform where the kernel
    has both signs, as L then needs |x| transformed), times MIN_GAIN: 'auto' takes fft_cpu only
    where this is below direct's predicted time."""
    return t_fft * (1.0 if one_signed(kernel) else 2.0) * MIN_GAIN


class FftGuard:
    """The per-call part of the rule for one 'auto' plan on fft_cpu: `kernel` is the effective
    real kernel (float64; flipped for convolution), `kernel_imag` its imaginary part or None."""

    def __init__(self, kernel: np.ndarray, kernel_imag, ph: int, pw: int, precision: str):
        self.precision = "fp32" if precision == "fp16fp32" else precision
        self.max_range = MAX_RANGE[self.precision]
        self.real = kernel_imag is None or not np.any(kernel_imag)
        self.abs_kernel = (np.abs(kernel) if self.real
                           else np.hypot(kernel, kernel_imag))
        self.sign = one_signed(kernel) if self.real else 0
        self.integer = integer_valued(kernel) and (self.real or integer_valued(kernel_imag))
        self._shape = (ph, pw)
        self._abs_plan = None

    def runs_direct_first(self, parts) -> bool:
        """Rule 2 on the padded image's real parts (one array, or the real and imaginary parts
        of complex data): integers only with an integer kernel. (NaN/inf are tested by the
        caller, as before.)"""
        return self.integer and all(integer_valued(p) for p in parts)

    def _abs_correlation(self, a: np.ndarray) -> np.ndarray:
        from ._fft_cpu import FftCpu

        if self._abs_plan is None:
            self._abs_plan = FftCpu(self.abs_kernel, *self._shape, self.precision)
        p = self._abs_plan
        out = np.empty(p.out_shape, p.dtype)
        p.run(a, out)
        return out

    def unsafe(self, x: np.ndarray, out: np.ndarray, magnitude=None) -> list:
        """Rule 3: the images of x (one padded image, or a (B, H, W) stack) whose transform
        result `out` may hold outputs rounded beyond sqrt(eps) of their own scale. `magnitude`:
        |x| (complex data: its moduli), else computed from x."""
        stack = x.ndim == 3
        xs = x if stack else x[None]
        outs = out if stack else out[None]
        mags = None if magnitude is None else (magnitude if stack else magnitude[None])
        bad = []
        for i in range(xs.shape[0]):
            xi = xs[i]
            s = one_signed(xi) * self.sign if mags is None else 0
            if s:  # L = s * y, up to the transform's own rounding
                y = outs[i]
                lo, hi = (y.min(), y.max()) if s > 0 else (-y.max(), -y.min())
                lo, hi = float(lo), float(hi)
            else:
                m = np.abs(xi) if mags is None else mags[i]
                L = self._abs_correlation(m)
                lo, hi = float(L.min()), float(L.max())
            if hi > 0 and not lo * self.max_range >= hi:
                bad.append(i)
        return bad
