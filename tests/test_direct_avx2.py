"""CPU `direct` AVX2/FMA kernels against scipy (float64 reference) and against the portable
kernels (TENSORCONV_FORCE_PORTABLE=1): column tails below one vector, odd row counts, every
kernel size 1..15 and rectangular kernels."""

import numpy as np
import pytest
import scipy.signal

import tensorconv as tc

SHAPES = [((1, 1), (1, 1)), ((2, 9), (1, 2)), ((7, 40), (3, 3)), ((33, 70), (4, 7)),
          ((40, 37), (15, 15)), ((25, 100), (6, 1)), ((19, 61), (1, 13))]
BOUND = {"fp64": 1e-12, "fp32": 2e-6}


def _rel_max(out, ref):
    scale = max(float(np.abs(ref).max()), 1e-300)
    return float(np.abs(out.astype(np.float64) - ref).max()) / scale


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_direct_matches_scipy_and_portable(precision, monkeypatch):
    dtype = np.float64 if precision == "fp64" else np.float32
    rng = np.random.default_rng(21)
    shapes = SHAPES + [((23, 49), (k, k)) for k in range(1, 16)]
    for ishape, kshape in shapes:
        image = rng.standard_normal(ishape).astype(dtype)
        kernel = rng.standard_normal(kshape).astype(dtype)
        ref = scipy.signal.correlate2d(image.astype(np.float64), kernel.astype(np.float64),
                                       "valid")
        fast = tc.correlate2d(image, kernel, "valid", method="direct", precision=precision)
        monkeypatch.setenv("TENSORCONV_FORCE_PORTABLE", "1")
        slow = tc.correlate2d(image, kernel, "valid", method="direct", precision=precision)
        monkeypatch.delenv("TENSORCONV_FORCE_PORTABLE")
        assert fast.shape == ref.shape and fast.dtype == dtype
        assert _rel_max(fast, ref) <= BOUND[precision], (ishape, kshape)
        assert _rel_max(slow, ref) <= BOUND[precision], (ishape, kshape)
        assert _rel_max(fast, slow.astype(np.float64)) <= 2 * BOUND[precision]


def test_direct_fp64_real_images(usc_images):
    """fp64 on the USC-SIPI images, 'same' with symmetric boundaries: within 1e-12 of scipy."""
    kernel = np.random.default_rng(4).random((7, 7))
    for name, image in usc_images[:3]:
        ref = scipy.signal.correlate2d(image, kernel, "same", "symm")
        out = tc.correlate2d(image, kernel, "same", "symm", method="direct", precision="fp64")
        assert _rel_max(out, ref) <= 1e-12, name


def _direct_note():
    return next(m.note for m in tc.methods() if m.name == "direct")


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_direct_avx512_tiles(precision, monkeypatch):
    """AVX-512 tiles (4 rows x 6 vectors, masked column tails, row groups of 1..4) against scipy
    and against the AVX2 kernels (TENSORCONV_FORCE_AVX2=1) on widths around whole tiles."""
    if "AVX-512" not in _direct_note():
        pytest.skip(f"direct runs {_direct_note()!r} here, not AVX-512")
    dtype = np.float64 if precision == "fp64" else np.float32
    n = 16 if precision == "fp32" else 8
    rng = np.random.default_rng(22)
    for ocols in (1, n - 1, n, n + 1, 6 * n - 1, 6 * n, 6 * n + 1, 13 * n + 5):
        for orows, (kh, kw) in ((1, (1, 1)), (2, (3, 3)), (3, (2, 5)), (4, (7, 1)),
                                (5, (4, 4)), (6, (9, 17)), (11, (15, 15))):
            image = rng.standard_normal((orows + kh - 1, ocols + kw - 1)).astype(dtype)
            kernel = rng.standard_normal((kh, kw)).astype(dtype)
            ref = scipy.signal.correlate2d(image.astype(np.float64),
                                           kernel.astype(np.float64), "valid")
            fast = tc.correlate2d(image, kernel, "valid", method="direct")
            monkeypatch.setenv("TENSORCONV_FORCE_AVX2", "1")
            avx2 = tc.correlate2d(image, kernel, "valid", method="direct")
            monkeypatch.delenv("TENSORCONV_FORCE_AVX2")
            assert fast.shape == ref.shape == (orows, ocols)
            assert _rel_max(fast, ref) <= BOUND[precision], (orows, ocols, kh, kw)
            assert _rel_max(fast, avx2.astype(np.float64)) <= 2 * BOUND[precision]


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_direct_threaded_sizes(precision):
    """Above 2^23 multiply-adds the row groups are shared out over threads: an odd row count
    and a ragged last column tile, against scipy."""
    dtype = np.float64 if precision == "fp64" else np.float32
    rng = np.random.default_rng(23)
    image = rng.standard_normal((703, 690)).astype(dtype)
    kernel = rng.standard_normal((9, 10)).astype(dtype)
    assert (703 - 8) * (690 - 9) * 90 >= 2**23
    ref = scipy.signal.correlate2d(image.astype(np.float64), kernel.astype(np.float64), "valid")
    out = tc.correlate2d(image, kernel, "valid", method="direct")
    assert _rel_max(out, ref) <= BOUND[precision]
