"""Inputs with no elements: correlate2d / convolve2d give scipy.signal's result (shape, dtype and
values) or raise its exception type, for every empty shape pair, mode, boundary and dtype of the
grid below. scipy's own tests cover empty inputs of the n-D functions only (fftconvolve,
oaconvolve: test_empty) and the empty fillvalue (TestConvolve2d::test_fillvalue_empty, run by
tests/test_scipy_signal.py); scipy 1.17 itself dies of SIGFPE (a division by zero in its C loop)
on an empty image with boundary 'wrap' or 'symm' and a non-empty output, where tensorconv raises
ValueError (the documented difference, correlate2d's Notes)."""

import itertools

import numpy as np
import pytest
import scipy.signal as ss

import tensorconv as tc

SHAPES = [(0, 0), (0, 3), (3, 0), (1, 0), (0, 1), (3, 3), (1, 1), (2, 5)]
PAIRS = [(a, b) for a, b in itertools.product(SHAPES, SHAPES) if 0 in a + b]
DTYPES = [(np.float64, 2.0), (np.int32, 3), (np.complex128, 1.5 - 1j), (np.float32, 0),
          (np.uint8, 1)]


def _scipy_crashes(s1, s2, mode, boundary):
    """Where scipy 1.17 divides by zero: boundary wrap/symm extending an image with no pixels
    into a non-empty output, by a kernel with rows (its loop over them reads the image modulo
    the image's extent; 'valid' mode extends nothing)."""
    if boundary == "fill" or mode == "valid" or 0 not in s1 or s2[0] == 0:
        return False
    shape = (s1[0] + s2[0] - 1, s1[1] + s2[1] - 1) if mode == "full" else s1
    return min(shape) > 0


@pytest.mark.parametrize("fn", ["correlate2d", "convolve2d"])
@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("s1,s2", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_matches_scipy(fn, mode, s1, s2):
    rng = np.random.default_rng(0)
    ours, theirs = getattr(tc, fn), getattr(ss, fn)
    checked = 0
    for (dtype, fill), boundary in itertools.product(DTYPES, ("fill", "wrap", "symm")):
        a = (rng.random(s1) * 4).astype(dtype)
        b = (rng.random(s2) * 4 + 1).astype(dtype)
        if _scipy_crashes(s1, s2, mode, boundary):
            with pytest.raises(ValueError, match="needs image pixels to extend"):
                ours(a, b, mode, boundary, fill)
            checked += 1
            continue
        try:
            ref = theirs(a, b, mode, boundary, fill)
        except Exception as e:  # scipy's exception type, and ours
            with pytest.raises(type(e)):
                ours(a, b, mode, boundary, fill)
            checked += 1
            continue
        out = ours(a, b, mode, boundary, fill)
        assert out.shape == ref.shape and out.dtype == ref.dtype, (out.shape, out.dtype,
                                                                   ref.shape, ref.dtype)
        np.testing.assert_allclose(out, ref, rtol=1e-15, atol=0)
        checked += 1
    assert checked == 15


def test_fill_times_taps():
    """An empty image with a fill: every 'full' output is fill * the sum of the taps (scipy's
    values; conjugated for correlation)."""
    k = np.array([[1 + 2j, 3 - 1j, 0.5j]])
    out = tc.correlate2d(np.zeros((0, 2)), k, "full", fillvalue=2.0)
    assert out.shape == (0, 4)
    out = tc.correlate2d(np.zeros((2, 0)), k, "full", fillvalue=2.0)
    assert out.shape == (2, 2)
    np.testing.assert_array_equal(out, np.full((2, 2), 2.0 * np.conj(k).sum()))
    np.testing.assert_array_equal(out, ss.correlate2d(np.zeros((2, 0)), k, "full", fillvalue=2))
    np.testing.assert_array_equal(tc.convolve2d(np.zeros((2, 0)), k, "full", fillvalue=2.0),
                                  np.full((2, 2), 2.0 * k.sum()))


def test_negative_dimensions_raise_value_error():
    with pytest.raises(ValueError, match="negative dimensions"):
        tc.correlate2d(np.zeros((0, 0)), np.zeros((0, 3)))
    with pytest.raises(ValueError):
        ss.correlate2d(np.zeros((0, 0)), np.zeros((0, 3)))


def test_precision_and_dtype_arguments():
    out = tc.correlate2d(np.ones((3, 3)), np.zeros((0, 2)), precision="fp32")
    assert out.dtype == np.float32 and out.shape == (2, 4) and not out.any()
    out = tc.correlate2d(np.ones((3, 3)), np.zeros((0, 2)), dtype=np.int16)
    assert out.dtype == np.int16 and out.shape == (2, 4)
    with pytest.raises(ValueError, match="complex data needs precision fp32 or fp64"):
        tc.correlate2d(np.ones((3, 3), complex), np.zeros((0, 2)), precision="fp16fp32")


def test_stacks():
    """batch=True: a stack of no images is an error (tests/test_stacks.py); images with no
    pixels give each image's empty-input result."""
    k = np.ones((3, 3))
    with pytest.raises(ValueError, match="stack of no images"):
        tc.correlate2d(np.zeros((0, 8, 8)), k, "same", batch=True)
    out = tc.convolve2d(np.zeros((2, 0, 4)), k, "full", fillvalue=1.5, batch=True)
    assert out.shape == (2, 2, 6)
    np.testing.assert_array_equal(out, np.full((2, 2, 6), 13.5))
