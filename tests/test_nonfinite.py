"""NaN and ±inf stay local: for every correlate2d method × precision of the
registry, an output is NaN/±inf exactly where scipy.signal.correlate2d in float64 puts it (its
own window holds a non-finite value), in every mode, and the finite outputs keep the method's
accuracy bound (tests/bounds.py). cuFFT's `fft` is checked too: its staging zeroes non-finite
pixels and a device pass recomputes their windows (csrc/cuda/methods/fft/fft.cu). `fft_cpu` is exempt: its
transform spreads one NaN over the whole image, and `auto` never sends non-finite data to it
(tests/test_cpu_float.py)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal
from bounds import rel_l2_bound
from conftest import float_method_params

import tensorconv as tc
from tensorconv.metrics import relative_l2

SPECTRAL = {"fft_cpu"}  # exempt: the product of spectra mixes every pixel into every output
MODES = ("valid", "same", "full")


def _kernels(rng):
    """Kernel shapes that take each method's distinct paths: tiny, odd/even and non-square,
    rank 1 (separable's single fused pass), wider than a 16/32 tile and FIR's 64-wide block.
    Coefficients have mixed signs (so +inf × k gives -inf where scipy does) and magnitudes in
    [0.25, 1] (no coefficient rounds to zero in any storage format: 0 × inf would be NaN)."""
    def signed(shape):
        mag = rng.uniform(0.25, 1.0, shape)
        return np.where(rng.random(shape) < 0.5, -mag, mag)

    col, row = signed((9, 1)), signed((1, 7))
    return {
        "3x3": signed((3, 3)),
        "5x8": signed((5, 8)),
        "rank1_9x7": col @ row,
        "17x17": signed((17, 17)),
        "6x67": signed((6, 67)),
    }


def _image(rng, shape=(150, 173)):
    """Image in [0, 1) with NaN, +inf and -inf at the four corners, on each edge, inside, and a
    +inf beside a -inf (windows holding both are NaN in scipy)."""
    img = rng.random(shape)
    h, w = shape
    img[0, 0] = np.nan
    img[0, w - 1] = np.inf
    img[h - 1, 0] = -np.inf
    img[h - 1, w - 1] = np.inf
    img[0, w // 3] = -np.inf          # top edge
    img[h // 2, 0] = np.nan           # left edge
    img[h // 3, w - 1] = -np.inf      # right edge
    img[h - 1, w // 2] = np.nan       # bottom edge
    img[h // 2, w // 2] = np.inf      # inside, and a -inf three columns to its right
    img[h // 2, w // 2 + 3] = -np.inf
    img[40, 100] = np.nan             # inside
    img[100, 40] = -np.inf
    return img


def assert_same_nonfinite(got, ref, what):
    """The NaN mask, the inf mask and every inf's sign equal the float64 reference's."""
    got = np.asarray(got, dtype=np.float64)
    bad = np.isnan(got) != np.isnan(ref)
    assert not bad.any(), (f"{what}: NaN pattern differs at {bad.sum()} outputs, first "
                           f"{np.argwhere(bad)[:5].tolist()}")
    bad = np.isinf(got) != np.isinf(ref)
    assert not bad.any(), (f"{what}: inf pattern differs at {bad.sum()} outputs, first "
                           f"{np.argwhere(bad)[:5].tolist()}")
    inf = np.isinf(ref)
    assert np.array_equal(np.sign(got[inf]), np.sign(ref[inf])), f"{what}: sign of an inf"


@pytest.mark.parametrize("method,precision", float_method_params())
def test_nonfinite_stays_in_its_window(method, precision):
    if method in SPECTRAL:
        pytest.skip(f"{method} is spectral: NaN/inf spread over the whole transform by design "
                    "(exempt; auto avoids it for non-finite data)")
    rng = np.random.default_rng(2026)
    checked = 0
    for kname, kernel in _kernels(rng).items():
        image = _image(rng)
        clean = np.where(np.isfinite(image), image, 0.5)
        for mode in MODES:
            what = f"{method} {precision} kernel {kname} mode {mode}"
            ref = scipy.signal.correlate2d(image, kernel, mode)
            assert np.isnan(ref).any() and np.isinf(ref).any()  # the check has something to see
            got = tc.correlate2d(image, kernel, mode, method=method, precision=precision)
            assert got.shape == ref.shape, what
            assert_same_nonfinite(got, ref, what)
            got = np.asarray(got, dtype=np.float64)
            finite = np.isfinite(ref)
            # the finite outputs: the method's bound on signed data (relative L2), measured on
            # the same image with its non-finite pixels replaced (their windows are excluded)
            ref_clean = scipy.signal.correlate2d(clean, kernel, mode)
            err = relative_l2(got[finite], ref_clean[finite])
            assert err <= rel_l2_bound(method, precision), (what, err)
            checked += 1
    assert checked == len(MODES) * len(_kernels(rng))


@pytest.mark.parametrize("method,precision", float_method_params())
def test_nonfinite_kernel_coefficient(method, precision):
    """A NaN or ±inf coefficient is in every window: every output is NaN or ±inf exactly as in
    scipy (a window of positive pixels times inf is ±inf, fill zeros times inf are NaN)."""
    if method in SPECTRAL:
        pytest.skip(f"{method} is spectral: NaN/inf spread over the whole transform by design")
    rng = np.random.default_rng(7)
    image = rng.uniform(0.25, 1.0, (70, 90))
    for value in (np.nan, np.inf, -np.inf):
        kernel = rng.uniform(0.25, 1.0, (5, 6))
        kernel[2, 3] = value
        for mode in ("valid", "full"):
            ref = scipy.signal.correlate2d(image, kernel, mode)
            got = tc.correlate2d(image, kernel, mode, method=method, precision=precision)
            assert_same_nonfinite(got, ref, f"{method} {precision} kernel[2,3]={value} {mode}")


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_fft_nonfinite_when_the_image_is_the_transform_input(precision):
    """fp32/fp64 `fft` transforms an image whose shape is already a fast transform size in place
    of a staged copy (csrc/cuda/methods/fft/fft.cu): a non-finite pixel then reaches every output, and the
    repair must recompute all of them. 120 x 160 (2^3·3·5, 2^5·5) in 'valid' mode takes that path."""
    rng = np.random.default_rng(11)
    image = _image(rng, (120, 160))
    kernel = _kernels(rng)["5x8"]
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    got = np.asarray(tc.correlate2d(image, kernel, "valid", method="fft", precision=precision),
                     dtype=np.float64)
    assert_same_nonfinite(got, ref, f"fft {precision} direct path")
    clean = np.where(np.isfinite(image), image, 0.5)
    finite = np.isfinite(ref)
    err = relative_l2(got[finite], scipy.signal.correlate2d(clean, kernel, "valid")[finite])
    assert err <= rel_l2_bound("fft", precision), err
